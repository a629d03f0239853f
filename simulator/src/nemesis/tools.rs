//! The Debian tools the nemesis drives, found (or named as missing) before a run.
//!
//! - `ip` (iproute2): network namespaces, veth links, routes cut and restored;
//! - `fiu-run` and `fiu-ctrl` (fiu-utils, libfiu): a node started with libfiu's POSIX
//!   preload, its fdatasync, pwrite and pread failed and healed at run time;
//! - libfaketime (faketime): a node started with its clocks offset or drifting;
//! - `kill` (procps): the signals.
//!
//! `scripts/install-test-tools.sh nemesis` installs them.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::faults::{Category, FaultKind};

/// libfaketime's multi-threaded build (a node runs tokio's blocking pool beside its
/// runtime thread), where Debian puts it.
pub const LIBFAKETIME_PATHS: &[&str] = &[
    "/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1",
    "/usr/lib/aarch64-linux-gnu/faketime/libfaketimeMT.so.1",
];

/// What this machine offers the nemesis.
#[derive(Clone, Debug)]
pub struct Tools {
    /// `ip netns add` works here (root, iproute2, a kernel with namespaces).
    pub namespaces: Result<(), String>,
    /// `fiu-run` and `fiu-ctrl` on the PATH.
    pub fiu: Result<(), String>,
    /// libfaketime's library.
    pub faketime: Result<PathBuf, String>,
}

fn runs(program: &str, args: &[&str]) -> bool {
    Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success())
}

fn on_path(program: &str) -> bool {
    std::env::var_os("PATH").is_some_and(|paths| std::env::split_paths(&paths).any(|dir| dir.join(program).is_file()))
}

impl Tools {
    /// Look for every tool; `probe_namespace` names a namespace to create and delete
    /// as the test that namespaces can be made.
    pub fn find(probe_namespace: &str) -> Tools {
        let namespaces = if !on_path("ip") {
            Err("`ip` (iproute2) is not on the PATH".to_owned())
        } else if !runs("ip", &["netns", "add", probe_namespace]) {
            Err(format!(
                "`ip netns add {probe_namespace}` failed (namespaces need root and a kernel that allows them)"
            ))
        } else {
            let _ = runs("ip", &["netns", "del", probe_namespace]);
            Ok(())
        };
        let fiu = match (on_path("fiu-run"), on_path("fiu-ctrl")) {
            (true, true) => Ok(()),
            _ => Err("fiu-run / fiu-ctrl (Debian fiu-utils) are not on the PATH".to_owned()),
        };
        let faketime = LIBFAKETIME_PATHS
            .iter()
            .map(Path::new)
            .find(|path| path.is_file())
            .map(Path::to_path_buf)
            .ok_or_else(|| format!("libfaketime (Debian faketime) is not installed: none of {LIBFAKETIME_PATHS:?}"));
        Tools {
            namespaces,
            fiu,
            faketime,
        }
    }

    /// Why `kind` cannot run here, if it cannot.
    pub fn missing_for(&self, kind: FaultKind) -> Option<String> {
        let need = match kind.category() {
            Category::Process => Ok(()),
            Category::Network => self.namespaces.clone(),
            Category::Disk => self.fiu.clone(),
            Category::Clock => self.faketime.clone().map(|_| ()),
        };
        need.err()
    }
}
