//! What can go wrong: planned faults at a trace position, and the two ways a process
//! goes down.

use std::fmt;
use std::str::FromStr;

/// Probabilities are integer ratios over this scale (parts per million), so a value
/// in the options is exact, prints as written, and draws the same on every platform.
pub const PARTS_PER_MILLION: u32 = 1_000_000;

/// One fault, planned at the operation with trace position `position`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PlannedFault {
    /// Trace position of the operation that fails (0 is the first call).
    pub position: u64,
    /// How it fails.
    pub kind: FaultKind,
}

/// How a planned operation fails.
///
/// Tearing applies to the calls that move data: `write_at` and `append` land only a
/// strict prefix of their bytes (a whole number of sectors, possibly none), `sync`
/// makes only a subset of the dirty pages stable. Calls with nothing to tear (`open`,
/// `read_at`, `len`, `truncate`, `rename`, `remove`, `list`, `sync_dir`) treat
/// [`FaultKind::TornWithError`] as [`FaultKind::FailAfter`] and
/// [`FaultKind::TornSilent`] as success.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum FaultKind {
    /// Return an error; the operation has no effect.
    FailBefore,
    /// The operation takes full effect, then returns an error.
    FailAfter,
    /// Part of the operation takes effect, then it returns an error.
    TornWithError,
    /// Part of the operation takes effect and it reports success anyway.
    TornSilent,
}

impl FaultKind {
    /// Every kind, in sweep order.
    pub const ALL: [FaultKind; 4] = [
        FaultKind::FailBefore,
        FaultKind::FailAfter,
        FaultKind::TornWithError,
        FaultKind::TornSilent,
    ];

    /// The name the command line takes (`fail-before`, `fail-after`, `torn-error`,
    /// `torn-silent`).
    pub fn name(self) -> &'static str {
        match self {
            FaultKind::FailBefore => "fail-before",
            FaultKind::FailAfter => "fail-after",
            FaultKind::TornWithError => "torn-error",
            FaultKind::TornSilent => "torn-silent",
        }
    }
}

impl fmt::Display for FaultKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for FaultKind {
    type Err = UnknownName;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|kind| kind.name() == text)
            .ok_or_else(|| UnknownName::new("fault kind", text, Self::ALL.map(FaultKind::name).as_slice()))
    }
}

/// How the process using the storage goes down.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum CrashKind {
    /// The process dies; the kernel (and its page cache) lives on, so no written byte
    /// is lost, but every open handle is gone.
    Process,
    /// The machine loses power: only what was stable survives.
    PowerLoss,
}

impl CrashKind {
    /// Every kind, in sweep order.
    pub const ALL: [CrashKind; 2] = [CrashKind::Process, CrashKind::PowerLoss];

    /// The name the command line takes (`process`, `power-loss`).
    pub fn name(self) -> &'static str {
        match self {
            CrashKind::Process => "process",
            CrashKind::PowerLoss => "power-loss",
        }
    }
}

impl fmt::Display for CrashKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for CrashKind {
    type Err = UnknownName;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|kind| kind.name() == text)
            .ok_or_else(|| UnknownName::new("crash kind", text, Self::ALL.map(CrashKind::name).as_slice()))
    }
}

/// A name that is not one of a fixed set (a fault kind or crash kind on the command
/// line); the message lists the accepted names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownName {
    message: String,
}

impl UnknownName {
    fn new(what: &str, text: &str, accepted: &[&str]) -> Self {
        Self {
            message: format!("unknown {what} {text:?}; expected one of {}", accepted.join(", ")),
        }
    }
}

impl fmt::Display for UnknownName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for UnknownName {}
