//! The operation trace: every storage call, numbered in the order it was made.
//!
//! A trace position is what a [`super::PlannedFault`] and `halt_after` refer to, so the
//! same code run on the same storage numbers its calls the same way every time.

use std::fmt;

/// Which storage call an entry records.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum TraceOp {
    /// `DurableStorage::open`.
    Open,
    /// `DurableFile::read_at`.
    ReadAt,
    /// `DurableFile::write_at`.
    WriteAt,
    /// `DurableFile::append`.
    Append,
    /// `DurableFile::len`.
    Len,
    /// `DurableFile::sync`.
    Sync,
    /// `DurableFile::truncate`.
    Truncate,
    /// `DurableStorage::rename`.
    Rename,
    /// `DurableStorage::remove`.
    Remove,
    /// `DurableStorage::remove_dir`.
    RemoveDir,
    /// `DurableStorage::list`.
    List,
    /// `DurableStorage::sync_dir`.
    SyncDir,
}

impl TraceOp {
    /// The call's name as the traits spell it.
    pub fn name(self) -> &'static str {
        match self {
            TraceOp::Open => "open",
            TraceOp::ReadAt => "read_at",
            TraceOp::WriteAt => "write_at",
            TraceOp::Append => "append",
            TraceOp::Len => "len",
            TraceOp::Sync => "sync",
            TraceOp::Truncate => "truncate",
            TraceOp::Rename => "rename",
            TraceOp::Remove => "remove",
            TraceOp::RemoveDir => "remove_dir",
            TraceOp::List => "list",
            TraceOp::SyncDir => "sync_dir",
        }
    }
}

impl fmt::Display for TraceOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One storage call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceEntry {
    /// 0 for the first call on this storage, then 1, 2, ... (crashes do not reset it).
    pub position: u64,
    /// Which call.
    pub op: TraceOp,
    /// The path it named: for file calls the path the handle was opened with, for
    /// `rename` `"from -> to"`, for `list` and `sync_dir` the directory (`""` is the root).
    pub path: String,
}

impl fmt::Display for TraceEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {} {}", self.position, self.op, self.path)
    }
}
