//! Stamp the binaries with the commit they were built from: a seed replays only on the
//! build that produced it, so campaign reports record it and `campaign merge` refuses to
//! mix builds. Outside a git checkout (a source tarball) the stamp says so.

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let output = Command::new("git").args(args).output().ok()?;
    output
        .status
        .success()
        .then(|| String::from_utf8_lossy(&output.stdout).trim().to_owned())
}

fn main() {
    let commit = git(&["rev-parse", "--short=12", "HEAD"]).unwrap_or_else(|| "unknown-commit".to_owned());
    let dirty = git(&["status", "--porcelain", "--untracked-files=no"]).is_some_and(|status| !status.is_empty());
    let stamp = if dirty { format!("{commit}-dirty") } else { commit };
    println!("cargo:rustc-env=SIMULATOR_BUILD_COMMIT={stamp}");
    // Re-stamp when HEAD moves or the index changes.
    println!("cargo:rerun-if-changed=../.git/HEAD");
    println!("cargo:rerun-if-changed=../.git/index");
    println!("cargo:rerun-if-changed=../.git/refs/heads");
    println!("cargo:rerun-if-changed=../.git/packed-refs");
}
