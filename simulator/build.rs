//! Stamp the binaries with the commit they were built from: a seed replays only on the
//! build that produced it, so campaign reports record it and `campaign merge` refuses to
//! mix builds. Outside a git checkout (a source tarball) the stamp says so.
//!
//! The stamp is `<commit>` or `<commit>-dirty`, dirty when a file the binaries are
//! built from differs from the commit ([`BUILT_FROM`]). The script reruns when HEAD
//! moves or one of those files changes, and never on git's index: `git status` rewrites
//! the index whenever a file's timestamps changed (a `touch`, a checkout), and a rerun
//! on that recompiled the whole simulator crate for nothing. Its own `git status` runs
//! with `--no-optional-locks`, so it writes nothing either.

use std::process::Command;

/// What the binaries are built from, relative to the repository's top: a change to any
/// of these marks the stamp dirty (and reruns this script). Scripts, docs, seeds and
/// tests are not in the binaries, so they neither dirty the stamp nor rebuild it.
const BUILT_FROM: [&str; 8] = [
    "Cargo.toml",
    "Cargo.lock",
    "cluster/Cargo.toml",
    "cluster/src",
    "simulator/Cargo.toml",
    "simulator/build.rs",
    "simulator/src",
    "fault-profiles",
];

fn git(args: &[&str]) -> Option<String> {
    let output = Command::new("git")
        .arg("--no-optional-locks")
        .args(["-C", ".."])
        .args(args)
        .output()
        .ok()?;
    output
        .status
        .success()
        .then(|| String::from_utf8_lossy(&output.stdout).trim().to_owned())
}

fn main() {
    let commit = git(&["rev-parse", "--short=12", "HEAD"]).unwrap_or_else(|| "unknown-commit".to_owned());
    let mut status = vec!["status", "--porcelain", "--untracked-files=no", "--"];
    status.extend(BUILT_FROM);
    let dirty = git(&status).is_some_and(|changed| !changed.is_empty());
    let stamp = if dirty { format!("{commit}-dirty") } else { commit };
    println!("cargo:rustc-env=SIMULATOR_BUILD_COMMIT={stamp}");
    // Re-stamp when HEAD moves (a commit, a checkout) or a file the binaries are built
    // from changes. Only paths that exist are named: cargo takes a missing one as
    // changed at every build (a checkout without packed refs, say, would rebuild the
    // crate every time). A worktree keeps its HEAD apart from the shared refs.
    let git_dir = git(&["rev-parse", "--absolute-git-dir"]);
    let common_dir = git(&["rev-parse", "--path-format=absolute", "--git-common-dir"]).or_else(|| git_dir.clone());
    let mut watched: Vec<String> = BUILT_FROM.iter().map(|path| format!("../{path}")).collect();
    if let Some(dir) = &git_dir {
        watched.push(format!("{dir}/HEAD"));
    }
    if let Some(dir) = &common_dir {
        watched.push(format!("{dir}/refs/heads"));
        watched.push(format!("{dir}/packed-refs"));
    }
    for path in watched.iter().filter(|path| std::path::Path::new(path).exists()) {
        println!("cargo:rerun-if-changed={path}");
    }
}
