//! Simulated storage: two implementations of the cluster's storage seam
//! ([`cluster::seam::DurableStorage`]).
//!
//! - [`MemStorage`]: every write immediately durable, no faults. For code that only
//!   needs files to exist.
//! - [`SimStorage`]: what Linux durability depends on, with faults. For code whose
//!   correctness depends on what survives a crash.
//!
//! # The SimStorage model
//!
//! **Files.** Each file (inode) has buffered bytes (the page cache, what reads see)
//! and stable bytes (the platter), each with its own length. Writes change the buffered
//! bytes and mark pages ([`PAGE_BYTES`]) dirty. `DurableFile::sync` (fdatasync) makes
//! all of the inode's bytes and its length stable, but not its directory entry.
//!
//! **Directories.** The namespace exists twice too: buffered entries (path -> inode,
//! what `open` and `list` see) and stable ones. Creating a file, `rename` and `remove`
//! change the buffered entries only; `sync_dir(dir)` makes the entries directly in
//! `dir` stable, files and subdirectories alike. A directory is an entry of its parent:
//! a file created in a new directory `wal/` survives a power loss only once `wal/log`
//! is committed by `sync_dir("wal")` and `wal` itself by `sync_dir("")`. A rename
//! across directories is made stable per directory, by syncing each.
//!
//! **Crashes.** [`CrashKind::Process`] keeps everything (the kernel lives on) but makes
//! every open handle stale: any call on it fails saying it belongs to a crashed process.
//! [`CrashKind::PowerLoss`] keeps only stable state: the namespace becomes the stable
//! entries reachable through stable directories, each file its stable bytes, and files
//! no stable entry names vanish. After either, the planned fault and the halt are
//! cleared, so recovery runs fault-free unless a test arms a new fault.
//!
//! **Writeback.** With [`SimStorageOptions::writeback`] on, before each call there is a
//! chance ([`WRITEBACK_CHANCE_PPM`]) that the kernel writes back one random dirty page
//! of one random file, or commits one random directory's pending entries (a journal
//! commit), in any order: a later page can be stable while an earlier one is not, and
//! a rename can be stable before the bytes it names. Before a crash, a random half of
//! what is dirty is written back too. A page written back extends the stable length to
//! cover it; the page holding the end of the file carries the exact length; bytes in
//! between that were never written back read as zeros after a power loss.
//!
//! **Writeback failure.** [`SimStorage::fail_writeback`] (or, at random,
//! [`SimStorageOptions::writeback_failure_probability`]) drops a file's dirty pages
//! (reads see the stable bytes again; an extension is undone) and records the error
//! once for every handle open on it at that moment, as Linux's errseq does: that
//! handle's next `sync` fails naming "writeback failed", then the error is cleared for
//! it. A handle opened after the failure sees `sync` succeed over the lost bytes, which
//! is why fsync through a fresh descriptor is not a barrier. A `sync` that reports the
//! error still makes whatever is dirty now stable; an injected fault on a `sync` leaves
//! a pending error unreported.
//!
//! **Trace, faults, halt.** Every trait call gets a trace position (0, 1, 2, ... never
//! reset by a crash) and a [`TraceEntry`], whether it then succeeds or not. A
//! [`PlannedFault`] makes the call at its position fail ([`FaultKind`]): before taking
//! effect, after, or torn. A torn `write_at`/`append` lands a strict prefix of its
//! bytes, a whole number of [`SECTOR_BYTES`] sectors from the write's start (possibly
//! none), and the file grows only by what landed; a torn `sync` makes a strict random
//! subset of the dirty pages stable. Calls with nothing to tear treat `TornWithError`
//! as `FailAfter` and `TornSilent` as success. Injected errors are `ErrorKind::Other`
//! naming the position, call and path. With `halt_after`, every call past that position
//! fails before taking effect ("the process is going down"); those calls are still
//! traced. Order of checks in a call: trace, writeback chance, halt, stale handle,
//! fail-before, then the call itself (path validation first, then its effect).
//!
//! **Misdirected writes** (opt-in, [`SimStorageOptions::misdirected_write_probability`]):
//! a write lands at a random other page-aligned offset of the same file. This is beyond
//! what the protocol claims to survive.
//!
//! Everything random comes from one [`crate::rng::SimRng`] seeded by
//! [`SimStorageOptions::seed`]; the same seed and the same calls give the same trace and
//! the same state. Every future completes on its first poll, so callers can drive them
//! with `futures::FutureExt::now_or_never`. No input panics: bad paths, offsets beyond
//! [`FILE_BYTES_MAX`] and stale handles are I/O errors.
//!
//! **Random faults** (all off by default, each drawing nothing while its rate is 0):
//! writes refused with EIO before taking effect; syncs refused with EIO, which drop the
//! file's dirty pages and record the error for every open handle (errseq); and latent
//! corruption, one flipped bit of a stable byte under a clean page, injected on
//! request ([`SimStorage::corrupt_stable_bit`]). [`SimStorage::injected`] counts them.
//!
//! What it does not model: timestamps and other metadata, free space (`ENOSPC`),
//! read errors, sector tears during background writeback (a page is
//! written back whole), directories other than as containers (no rename or removal of
//! a directory), and concurrent writers racing inside one call.

mod fault;
mod inode;
mod sim;
mod stable;
mod state;
mod trace;

#[cfg(test)]
mod tests;

pub use cluster::seam::{MemFile, MemStorage};
pub use fault::{CrashKind, FaultKind, PARTS_PER_MILLION, PlannedFault, UnknownName};
pub use inode::{FILE_BYTES_MAX, PAGE_BYTES, SECTOR_BYTES};
pub use sim::{SimFile, SimStorage, SimStorageOptions};
pub use state::{FaultRates, InjectedFaults, WRITEBACK_CHANCE_PPM};
pub use trace::{TraceEntry, TraceOp};
