//! The state behind a [`super::SimStorage`]: inodes, the buffered and stable
//! namespaces, the trace, the seeded random stream, and every rule of the model.

mod inspection;

use std::cell::Cell;
use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::ops::Bound;
use std::rc::Rc;

use cluster::seam::{OpenMode, validate_relative_path};

use super::fault::{CrashKind, FaultKind, PARTS_PER_MILLION};
use super::inode::{FILE_BYTES_MAX, Inode, PAGE_BYTES, SECTOR_BYTES};
use super::sim::SimStorageOptions;
use super::trace::{TraceEntry, TraceOp};
use crate::executor::Fnv1a64;
use crate::rng::SimRng;

/// Per traced call, the chance (parts per million) that background writeback flushes
/// one dirty page, or commits one directory's pending entries, when writeback is on.
/// One in four: often enough that short storage code sees writeback land between its
/// calls (and out of order), rarely enough that plenty is still dirty at a crash.
pub const WRITEBACK_CHANCE_PPM: u32 = 250_000;

/// Inode numbers: never reused, so a stale reference can never alias a new file.
pub(super) type InodeId = u64;

/// The directory part of `path` (`""` for a file in the root).
pub(super) fn parent(path: &str) -> &str {
    path.rfind('/').map_or("", |slash| &path[..slash])
}

/// The directories above `path`, outermost first: `a/b/c` gives `a`, `a/b`.
fn ancestors(path: &str) -> impl Iterator<Item = &str> {
    path.match_indices('/').map(move |(slash, _)| &path[..slash])
}

/// Key bounds of everything under `dir` (`""` is the root: everything). Keys starting
/// with `dir/` are exactly those in `[dir/, dir0)`, since `'0'` follows `'/'`.
fn under(dir: &str) -> (Bound<String>, Bound<String>) {
    if dir.is_empty() {
        (Bound::Unbounded, Bound::Unbounded)
    } else {
        (Bound::Included(format!("{dir}/")), Bound::Excluded(format!("{dir}0")))
    }
}

/// Whether `path` sits directly in `dir`.
fn directly_in(path: &str, dir: &str) -> bool {
    parent(path) == dir
}

fn not_found(path: &str) -> io::Error {
    io::Error::new(io::ErrorKind::NotFound, format!("{path}: no such file"))
}

fn file_too_large(path: &str, end: u64) -> io::Error {
    io::Error::new(
        io::ErrorKind::FileTooLarge,
        format!("{path}: {end} bytes is beyond FILE_BYTES_MAX ({FILE_BYTES_MAX})"),
    )
}

/// One traced call in progress: what it was, and the fault planned for it if any.
pub(super) struct Call {
    position: u64,
    op: TraceOp,
    path: Rc<str>,
    fault: Option<FaultKind>,
}

impl Call {
    fn injected(&self, what: &str) -> io::Error {
        io::Error::other(format!(
            "injected fault at trace position {} ({} {}): {what}",
            self.position, self.op, self.path
        ))
    }

    /// Finish a call with nothing to tear: after a successful effect, `FailAfter` and
    /// `TornWithError` return an error and `TornSilent` succeeds. A call that failed on
    /// its own returns its own error (it took no effect to fault).
    pub fn finish<T>(&self, result: io::Result<T>) -> io::Result<T> {
        let value = result?;
        match self.fault {
            Some(FaultKind::FailAfter) => Err(self.injected("failed after taking effect")),
            Some(FaultKind::TornWithError) => {
                Err(self.injected("torn with error (nothing to tear, so it took full effect)"))
            }
            _ => Ok(value),
        }
    }
}

/// Faults a [`super::SimStorage`] injected at random (its options' probabilities).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct InjectedFaults {
    /// Writes refused with an I/O error.
    pub write_errors: u64,
    /// Syncs refused with an I/O error (the file's dirty pages dropped).
    pub sync_errors: u64,
    /// Background writebacks that failed (dirty pages dropped, reported at a sync).
    pub writeback_failures: u64,
    /// Writes that landed at another offset of their file.
    pub misdirected_writes: u64,
    /// Stable bits flipped ([`super::SimStorage::corrupt_stable_bit`]).
    pub corruptions: u64,
    /// Pages torn by a power loss (a strict prefix of their sectors landed).
    pub torn_writes: u64,
    /// Reads refused with a transient I/O error.
    pub read_errors: u64,
    /// Slow calls (each stalled its process).
    pub slow_calls: u64,
    /// Not a fault: writes and syncs made while an error rate was on (each one a
    /// chance of an error), so a run can tell "no error came" from "none could".
    pub exposed_calls: u64,
}

impl InjectedFaults {
    /// Both counts added field by field (every field, so a new kind is summed too).
    pub fn plus(&self, other: &InjectedFaults) -> InjectedFaults {
        let InjectedFaults {
            write_errors,
            sync_errors,
            writeback_failures,
            misdirected_writes,
            corruptions,
            torn_writes,
            read_errors,
            slow_calls,
            exposed_calls,
        } = *other;
        InjectedFaults {
            write_errors: self.write_errors + write_errors,
            sync_errors: self.sync_errors + sync_errors,
            writeback_failures: self.writeback_failures + writeback_failures,
            misdirected_writes: self.misdirected_writes + misdirected_writes,
            corruptions: self.corruptions + corruptions,
            torn_writes: self.torn_writes + torn_writes,
            read_errors: self.read_errors + read_errors,
            slow_calls: self.slow_calls + slow_calls,
            exposed_calls: self.exposed_calls + exposed_calls,
        }
    }

    /// Every fault, of every kind.
    pub fn total(&self) -> u64 {
        // `exposed_calls` counts chances, not faults.
        self.write_errors
            + self.sync_errors
            + self.writeback_failures
            + self.misdirected_writes
            + self.corruptions
            + self.torn_writes
            + self.read_errors
            + self.slow_calls
    }
}

/// The random fault rates of a [`super::SimStorage`], in parts per million.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FaultRates {
    /// See [`super::SimStorageOptions::write_error_probability`].
    pub write_error_probability: u32,
    /// See [`super::SimStorageOptions::sync_error_probability`].
    pub sync_error_probability: u32,
    /// See [`super::SimStorageOptions::writeback_failure_probability`].
    pub writeback_failure_probability: u32,
    /// See [`super::SimStorageOptions::misdirected_write_probability`].
    pub misdirected_write_probability: u32,
    /// See [`super::SimStorageOptions::read_error_probability`].
    pub read_error_probability: u32,
    /// See [`super::SimStorageOptions::read_errors_in_a_row_max`].
    pub read_errors_in_a_row_max: u32,
    /// See [`super::SimStorageOptions::slow_probability`].
    pub slow_probability: u32,
    /// See [`super::SimStorageOptions::slow_ticks_max`].
    pub slow_ticks_max: u64,
}

/// Lookups of the dirty inodes between two checks of the kept set against a walk of
/// every inode (debug builds): often enough that a missed inode shows within a run,
/// rare enough that the walk it replaces stays a small cost.
const DIRTY_SET_CHECK_INTERVAL_LOOKUPS: u64 = 64;

/// Everything a SimStorage holds.
#[derive(Debug)]
pub(super) struct State {
    pub options: SimStorageOptions,
    rng: SimRng,
    inodes: BTreeMap<InodeId, Inode>,
    /// Every inode that may have dirty pages (a superset: each written or resized since
    /// the last time writeback looked, pruned then). Writeback picks among the dirty
    /// inodes at random before many calls; finding them by walking every inode cost
    /// time in proportion to the files on the disk, which a long metadata-plane run
    /// grows into the thousands (a tenth of a 100,000-tick run went to the walk).
    maybe_dirty: BTreeSet<InodeId>,
    /// Calls of `dirty_inodes` so far, for its periodic self-check.
    dirty_lookups: u64,
    next_inode: InodeId,
    /// The buffered namespace: what `open` and `list` see.
    names: BTreeMap<String, InodeId>,
    /// The stable namespace: what a power loss leaves (if the directories are stable).
    stable_names: BTreeMap<String, InodeId>,
    /// Buffered directories (the root `""` always exists and is not stored).
    dirs: BTreeSet<String>,
    /// Stable directories: each an entry of its parent made durable by `sync_dir`.
    stable_dirs: BTreeSet<String>,
    /// Directories whose buffered entries may differ from their stable ones, each with
    /// the entries (paths of files and subdirectories directly in it) changed since its
    /// last commit: a commit looks at those alone, so its cost is the changes it makes
    /// and not every file on the disk (a directory sync per file created would
    /// otherwise cost time quadratic in the files a long run accumulates).
    dirty_dirs: BTreeMap<String, BTreeSet<String>>,
    pub trace: Vec<TraceEntry>,
    pub operations: u64,
    /// Crashes so far; a handle opened in an earlier epoch is stale.
    pub crashes: u64,
    pub fault_injected: bool,
    pub injected: InjectedFaults,
    /// Reads failed since the last one that succeeded (bounded by
    /// `read_errors_in_a_row_max`).
    read_errors_in_a_row: u32,
    /// Ticks of stall slow calls added, not yet taken by the simulation.
    pub stall: Rc<Cell<u64>>,
}

impl State {
    pub fn new(options: SimStorageOptions) -> Self {
        Self {
            rng: SimRng::new(options.seed),
            options,
            inodes: BTreeMap::new(),
            maybe_dirty: BTreeSet::new(),
            dirty_lookups: 0,
            next_inode: 1,
            names: BTreeMap::new(),
            stable_names: BTreeMap::new(),
            dirs: BTreeSet::new(),
            stable_dirs: BTreeSet::new(),
            dirty_dirs: BTreeMap::new(),
            trace: Vec::new(),
            operations: 0,
            crashes: 0,
            fault_injected: false,
            injected: InjectedFaults::default(),
            read_errors_in_a_row: 0,
            stall: Rc::default(),
        }
    }

    /// Reseed the disk's draws for a branch of the run.
    pub fn branch(&mut self, key: crate::timeline::BranchKey) {
        self.rng.branch(key);
    }

    /// `true` with probability `ppm` parts per million; one draw.
    fn chance(&mut self, ppm: u32) -> bool {
        self.rng.below(u64::from(PARTS_PER_MILLION)) < u64::from(ppm)
    }

    fn coin(&mut self) -> bool {
        self.rng.below(2) == 0
    }

    // ---- calls -------------------------------------------------------------------

    /// Number and trace a call, give background writeback its chance, then refuse it
    /// if the process is past its halt, the handle is stale, or the call is planned to
    /// fail before taking effect.
    pub fn begin(&mut self, op: TraceOp, path: Rc<str>, opened_in: Option<u64>) -> io::Result<Call> {
        let position = self.operations;
        self.operations += 1;
        if self.options.record_trace {
            self.trace.push(TraceEntry {
                position,
                op,
                path: path.to_string(),
            });
        }
        if self.options.writeback {
            self.background_writeback();
        }
        if let Some(halt) = self.options.halt_after
            && position > halt
        {
            return Err(io::Error::other(format!(
                "trace position {position} ({op} {path}): the process is going down (halted after position {halt})"
            )));
        }
        if let Some(epoch) = opened_in
            && epoch != self.crashes
        {
            return Err(io::Error::other(format!(
                "{op} {path}: the handle belongs to a crashed process (opened before crash {})",
                epoch + 1
            )));
        }
        let fault = self
            .options
            .fault
            .filter(|planned| planned.position == position)
            .map(|planned| planned.kind);
        self.fault_injected |= fault.is_some();
        let call = Call {
            position,
            op,
            path,
            fault,
        };
        if fault == Some(FaultKind::FailBefore) {
            return Err(call.injected("failed before taking effect"));
        }
        Ok(call)
    }

    fn inode(&mut self, id: InodeId, path: &str) -> io::Result<&mut Inode> {
        // A live handle keeps its inode, so a miss is a bug here; say so, do not panic.
        self.inodes
            .get_mut(&id)
            .ok_or_else(|| io::Error::other(format!("{path}: inode {id} is gone (SimStorage bug)")))
    }

    // ---- namespace ---------------------------------------------------------------

    fn free_if_orphan(&mut self, id: InodeId) {
        if self
            .inodes
            .get(&id)
            .is_some_and(|inode| inode.links == 0 && inode.handles == 0)
        {
            self.inodes.remove(&id);
        }
    }

    fn relink(&mut self, added: Option<InodeId>, removed: Option<InodeId>) {
        if let Some(inode) = added.and_then(|id| self.inodes.get_mut(&id)) {
            inode.links += 1;
        }
        if let Some(id) = removed {
            if let Some(inode) = self.inodes.get_mut(&id) {
                inode.links = inode.links.saturating_sub(1);
            }
            self.free_if_orphan(id);
        }
    }

    /// Point the buffered entry `path` at `id` (or remove it).
    fn set_name(&mut self, path: &str, id: Option<InodeId>) {
        let old = match id {
            Some(id) => self.names.insert(path.to_owned(), id),
            None => self.names.remove(path),
        };
        self.note_changed_entry(path);
        self.relink(id, old);
    }

    /// The entry `path` of its directory may now differ from the stable one.
    fn note_changed_entry(&mut self, path: &str) {
        self.dirty_dirs
            .entry(parent(path).to_owned())
            .or_default()
            .insert(path.to_owned());
    }

    /// Point the stable entry `path` at `id` (or remove it).
    fn set_stable_name(&mut self, path: &str, id: Option<InodeId>) {
        let old = match id {
            Some(id) => self.stable_names.insert(path.to_owned(), id),
            None => self.stable_names.remove(path),
        };
        self.relink(id, old);
    }

    fn is_dir(&self, path: &str) -> bool {
        path.is_empty() || self.dirs.contains(path)
    }

    /// Refuse a path whose directories include a file.
    fn check_ancestors(&self, path: &str) -> io::Result<()> {
        match ancestors(path).find(|dir| self.names.contains_key(*dir)) {
            Some(file) => Err(io::Error::new(
                io::ErrorKind::NotADirectory,
                format!("{path}: {file} is a file, not a directory"),
            )),
            None => Ok(()),
        }
    }

    /// Refuse a directory argument that is not an existing directory.
    fn check_dir(&self, dir: &str) -> io::Result<()> {
        if !dir.is_empty() {
            validate_relative_path(dir)?;
            self.check_ancestors(dir)?;
        }
        if self.names.contains_key(dir) {
            return Err(io::Error::new(
                io::ErrorKind::NotADirectory,
                format!("{dir}: not a directory"),
            ));
        }
        if !self.is_dir(dir) {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!("{dir}: no such directory"),
            ));
        }
        Ok(())
    }

    pub fn open(&mut self, path: &str, mode: OpenMode) -> io::Result<InodeId> {
        validate_relative_path(path)?;
        self.check_ancestors(path)?;
        if self.dirs.contains(path) {
            let kind = match mode {
                OpenMode::CreateNew => io::ErrorKind::AlreadyExists,
                _ => io::ErrorKind::IsADirectory,
            };
            return Err(io::Error::new(kind, format!("{path}: is a directory")));
        }
        match (self.names.get(path), mode) {
            (Some(_), OpenMode::CreateNew) => Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!("{path}: already exists"),
            )),
            (Some(&id), _) => Ok(id),
            (None, OpenMode::Existing) => Err(not_found(path)),
            (None, _) => {
                for dir in ancestors(path) {
                    if self.dirs.insert(dir.to_owned()) {
                        self.note_changed_entry(dir);
                    }
                }
                let id = self.next_inode;
                self.next_inode += 1;
                self.inodes.insert(id, Inode::default());
                self.set_name(path, Some(id));
                Ok(id)
            }
        }
    }

    pub fn rename(&mut self, from: &str, to: &str) -> io::Result<()> {
        validate_relative_path(from)?;
        validate_relative_path(to)?;
        let Some(&id) = self.names.get(from) else {
            if self.dirs.contains(from) {
                return Err(io::Error::new(
                    io::ErrorKind::Unsupported,
                    format!("{from}: renaming a directory is not supported"),
                ));
            }
            return Err(not_found(from));
        };
        if from == to {
            return Ok(());
        }
        self.check_ancestors(to)?;
        if self.dirs.contains(to) {
            return Err(io::Error::new(
                io::ErrorKind::IsADirectory,
                format!("{to}: is a directory"),
            ));
        }
        if !self.is_dir(parent(to)) {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!("{to}: no such directory {}", parent(to)),
            ));
        }
        // Link the new name before unlinking the old, so the inode is never orphaned.
        self.set_name(to, Some(id));
        self.set_name(from, None);
        Ok(())
    }

    pub fn remove(&mut self, path: &str) -> io::Result<()> {
        validate_relative_path(path)?;
        if self.dirs.contains(path) {
            return Err(io::Error::new(
                io::ErrorKind::IsADirectory,
                format!("{path}: is a directory"),
            ));
        }
        if !self.names.contains_key(path) {
            return Err(not_found(path));
        }
        self.set_name(path, None);
        Ok(())
    }

    /// Remove the empty directory `dir` from the buffered namespace: its parent's
    /// entry changes, made stable by a `sync_dir` of the parent.
    pub fn remove_dir(&mut self, dir: &str) -> io::Result<()> {
        validate_relative_path(dir)?;
        if !self.dirs.contains(dir) {
            return Err(not_found(dir));
        }
        let holds_file = self.names.range::<String, _>(under(dir)).next().is_some();
        let holds_dir = self.dirs.range::<String, _>(under(dir)).next().is_some();
        if holds_file || holds_dir {
            return Err(io::Error::new(
                io::ErrorKind::DirectoryNotEmpty,
                format!("{dir}: not empty"),
            ));
        }
        self.dirs.remove(dir);
        self.note_changed_entry(dir);
        Ok(())
    }

    pub fn list(&self, dir: &str) -> io::Result<Vec<String>> {
        self.check_dir(dir)?;
        // BTreeMap order, restricted to one directory's direct children, is name order.
        Ok(self
            .names
            .range::<String, _>(under(dir))
            .filter(|(path, _)| directly_in(path, dir))
            .map(|(path, _)| path.rsplit_once('/').map_or(path.as_str(), |(_, name)| name).to_owned())
            .collect())
    }

    pub fn sync_dir(&mut self, dir: &str) -> io::Result<()> {
        self.check_dir(dir)?;
        self.commit_dir(dir);
        Ok(())
    }

    /// Make the buffered entries (files and subdirectories) directly in `dir` stable.
    /// Only the entries changed since the last commit can differ, so only those are
    /// looked at; files first, then subdirectories, each in name order.
    fn commit_dir(&mut self, dir: &str) {
        let Some(changed) = self.dirty_dirs.remove(dir) else {
            return;
        };
        for path in &changed {
            debug_assert!(directly_in(path, dir), "{path} noted as an entry of {dir}");
            let buffered = self.names.get(path).copied();
            if self.stable_names.get(path).copied() != buffered {
                self.set_stable_name(path, buffered);
            }
        }
        for sub in changed {
            if self.dirs.contains(&sub) {
                self.stable_dirs.insert(sub);
            } else if self.stable_dirs.remove(&sub) {
                // A directory whose removal is durable takes with it whatever stable
                // entries it still held (removed files whose directory was never
                // synced after): the disk cannot reach them any more.
                let orphaned: Vec<String> = self
                    .stable_names
                    .range::<String, _>(under(&sub))
                    .map(|(path, _)| path.clone())
                    .collect();
                for path in orphaned {
                    self.set_stable_name(&path, None);
                }
                let pending: Vec<String> = self
                    .dirty_dirs
                    .range::<String, _>(under(&sub))
                    .map(|(dir, _)| dir.clone())
                    .collect();
                for dir in pending.into_iter().chain([sub.clone()]) {
                    self.dirty_dirs.remove(&dir);
                }
            }
        }
    }

    // ---- handles and file calls --------------------------------------------------

    /// Count a new handle on `id`; returns the writeback-error counter it starts from.
    pub fn add_handle(&mut self, id: InodeId) -> u64 {
        self.inodes.get_mut(&id).map_or(0, |inode| {
            inode.handles += 1;
            inode.writeback_errors
        })
    }

    /// A handle of epoch `opened_in` was dropped.
    pub fn drop_handle(&mut self, id: InodeId, opened_in: u64) {
        if opened_in != self.crashes {
            return; // The crash already closed it.
        }
        if let Some(inode) = self.inodes.get_mut(&id) {
            inode.handles = inode.handles.saturating_sub(1);
        }
        self.free_if_orphan(id);
    }

    /// A transient read error, drawn for a `read_at` call not planned to fail; at most
    /// `read_errors_in_a_row_max` in a row.
    pub fn maybe_fail_read(&mut self, call: &Call) -> io::Result<()> {
        let error_ppm = self.options.read_error_probability;
        if call.fault.is_some() || error_ppm == 0 {
            return Ok(());
        }
        self.injected.exposed_calls += 1;
        if self.read_errors_in_a_row < self.options.read_errors_in_a_row_max && self.chance(error_ppm) {
            self.read_errors_in_a_row += 1;
            self.injected.read_errors += 1;
            return Err(io::Error::other(format!(
                "read {}: input/output error (injected transient read error)",
                call.path
            )));
        }
        self.read_errors_in_a_row = 0;
        Ok(())
    }

    pub fn read_at(&mut self, id: InodeId, path: &str, offset: u64, buf: &mut [u8]) -> io::Result<usize> {
        let start = usize::try_from(offset).unwrap_or(usize::MAX);
        Ok(self.inode(id, path)?.read(start, buf))
    }

    pub fn len(&mut self, id: InodeId, path: &str) -> io::Result<u64> {
        Ok(self.inode(id, path)?.len() as u64)
    }

    /// `write_at` (`offset` given) or `append` (`None`): returns the offset the caller
    /// asked for (or the end, for append), whatever tearing or misdirection did.
    /// A slow call, drawn for a write or sync not planned to fail: adds its stall.
    fn maybe_slow(&mut self, call: &Call) {
        let slow_ppm = self.options.slow_probability;
        if call.fault.is_some() || slow_ppm == 0 || self.options.slow_ticks_max == 0 {
            return;
        }
        if self.chance(slow_ppm) {
            self.injected.slow_calls += 1;
            let ticks = 1 + self.rng.below(self.options.slow_ticks_max);
            self.stall.set(self.stall.get() + ticks);
        }
    }

    pub fn write(&mut self, call: &Call, id: InodeId, offset: Option<u64>, data: &[u8]) -> io::Result<u64> {
        self.maybe_slow(call);
        let error_ppm = self.options.write_error_probability;
        self.injected.exposed_calls += u64::from(error_ppm > 0);
        if call.fault.is_none() && error_ppm > 0 && self.chance(error_ppm) {
            self.injected.write_errors += 1;
            return Err(io::Error::other(format!(
                "{} {}: input/output error (injected write error)",
                call.op, call.path
            )));
        }
        let misdirect_ppm = self.options.misdirected_write_probability;
        let len = self.inode(id, &call.path)?.len() as u64;
        let start = offset.unwrap_or(len);
        let end = start
            .checked_add(data.len() as u64)
            .ok_or_else(|| file_too_large(&call.path, u64::MAX))?;
        if end > FILE_BYTES_MAX {
            return Err(file_too_large(&call.path, end));
        }
        // Both fit: FILE_BYTES_MAX is far below usize::MAX.
        let (start_index, end_index) = (start as usize, end as usize);
        let torn = matches!(call.fault, Some(FaultKind::TornWithError | FaultKind::TornSilent));
        let landed = if torn && !data.is_empty() {
            let sectors = (data.len() - 1) / SECTOR_BYTES + 1;
            self.rng.index(sectors) * SECTOR_BYTES
        } else {
            data.len()
        };
        let mut target = start_index;
        if misdirect_ppm > 0 && self.chance(misdirect_ppm) && landed > 0 {
            let pages = (len as usize).max(end_index).div_ceil(PAGE_BYTES).max(1);
            let mut other = self.rng.index(pages) * PAGE_BYTES;
            if other == target {
                other += PAGE_BYTES;
            }
            if (other + landed) as u64 <= FILE_BYTES_MAX {
                target = other;
                self.injected.misdirected_writes += 1;
            }
        }
        self.inode(id, &call.path)?.write(target, &data[..landed]);
        self.maybe_dirty.insert(id);
        match call.fault {
            Some(FaultKind::TornWithError) => Err(call.injected(&format!(
                "torn write with error ({landed} of {} bytes landed)",
                data.len()
            ))),
            Some(FaultKind::FailAfter) => Err(call.injected("failed after taking effect")),
            _ => Ok(start),
        }
    }

    pub fn truncate(&mut self, id: InodeId, path: &str, len: u64) -> io::Result<()> {
        if len > FILE_BYTES_MAX {
            return Err(file_too_large(path, len));
        }
        // Fits: FILE_BYTES_MAX is far below usize::MAX.
        self.inode(id, path)?.resize(len as usize);
        self.maybe_dirty.insert(id);
        Ok(())
    }

    /// fdatasync through a handle whose last reported writeback-error count is `seen`.
    pub fn sync(&mut self, call: &Call, id: InodeId, seen: &Cell<u64>) -> io::Result<()> {
        self.maybe_slow(call);
        let error_ppm = self.options.sync_error_probability;
        self.injected.exposed_calls += u64::from(error_ppm > 0);
        if call.fault.is_none() && error_ppm > 0 && self.chance(error_ppm) {
            self.injected.sync_errors += 1;
            let inode = self.inode(id, &call.path)?;
            // The device refused the writeback: the pages are gone from the cache and
            // every other open handle hears of it at its next sync; this one now.
            inode.drop_dirty();
            seen.set(inode.writeback_errors);
            return Err(io::Error::other(format!(
                "sync {}: input/output error (injected sync error; the dirty pages were dropped)",
                call.path
            )));
        }
        match call.fault {
            Some(fault @ (FaultKind::TornWithError | FaultKind::TornSilent)) => {
                let pages: Vec<usize> = self.inode(id, &call.path)?.dirty_pages().collect();
                let mut chosen: Vec<usize> = pages.iter().copied().filter(|_| self.coin()).collect();
                if !chosen.is_empty() && chosen.len() == pages.len() {
                    // A strict subset: a torn sync always leaves something unstable.
                    chosen.remove(self.rng.index(chosen.len()));
                }
                let inode = self.inode(id, &call.path)?;
                for &page in &chosen {
                    inode.flush_page(page);
                }
                if fault == FaultKind::TornWithError {
                    return Err(call.injected(&format!(
                        "torn sync with error ({} of {} dirty pages made stable)",
                        chosen.len(),
                        pages.len()
                    )));
                }
                Ok(())
            }
            _ => {
                let inode = self.inode(id, &call.path)?;
                inode.sync();
                let errors = inode.writeback_errors;
                if call.fault == Some(FaultKind::FailAfter) {
                    return Err(call.injected("failed after taking effect"));
                }
                if errors != seen.get() {
                    seen.set(errors);
                    return Err(io::Error::other(format!(
                        "sync {}: writeback failed since this handle last synced; bytes written \
                         before the failure were lost (reported once per handle open at the time)",
                        call.path
                    )));
                }
                Ok(())
            }
        }
    }

    // ---- writeback and crashes ---------------------------------------------------

    /// The inodes with dirty pages, in ascending id (the order the random picks index).
    fn dirty_inodes(&mut self) -> Vec<InodeId> {
        let inodes = &self.inodes;
        self.maybe_dirty
            .retain(|id| inodes.get(id).is_some_and(Inode::is_dirty));
        let dirty: Vec<InodeId> = self.maybe_dirty.iter().copied().collect();
        self.dirty_lookups += 1;
        // Every so often, in debug builds (the simulator's), check the superset held
        // every dirty inode: a write path that forgot to note one would change which
        // pages writeback picks, silently.
        if cfg!(debug_assertions) && self.dirty_lookups.is_multiple_of(DIRTY_SET_CHECK_INTERVAL_LOOKUPS) {
            let scanned: Vec<InodeId> = self
                .inodes
                .iter()
                .filter(|(_, inode)| inode.is_dirty())
                .map(|(&id, _)| id)
                .collect();
            assert_eq!(dirty, scanned, "the dirty-inode set missed an inode");
        }
        dirty
    }

    /// One chance, before each call, that the kernel writes something back on its own:
    /// one dirty page of one inode, or the pending entries of one directory (a journal
    /// commit), each picked at random, so a later page can be stable before an
    /// earlier one and a rename before the data it names.
    fn background_writeback(&mut self) {
        if !self.chance(WRITEBACK_CHANCE_PPM) {
            return;
        }
        let inodes = self.dirty_inodes();
        let dirs = self.dirty_dirs.len();
        if inodes.is_empty() && dirs == 0 {
            return;
        }
        let pick = self.rng.index(inodes.len() + dirs);
        if let Some(&id) = inodes.get(pick) {
            let failure_ppm = self.options.writeback_failure_probability;
            let fails = failure_ppm > 0 && self.chance(failure_ppm);
            let Some(inode) = self.inodes.get(&id) else { return };
            let pages: Vec<usize> = inode.dirty_pages().collect();
            let page = pages.get(self.rng.index(pages.len().max(1))).copied();
            if let (Some(inode), Some(page)) = (self.inodes.get_mut(&id), page) {
                if fails {
                    self.injected.writeback_failures += 1;
                    inode.drop_dirty();
                } else {
                    inode.flush_page(page);
                }
            }
        } else if let Some(dir) = self.dirty_dirs.keys().nth(pick - inodes.len()).cloned() {
            self.commit_dir(&dir);
        }
    }

    /// See [`super::SimStorage::corrupt_stable_bit`].
    pub fn paths(&self) -> Vec<String> {
        self.names.keys().cloned().collect()
    }

    pub fn corrupt_stable_bit(&mut self, eligible: impl Fn(&str) -> bool) -> Option<(String, u64)> {
        let candidates: Vec<(String, InodeId)> = self
            .names
            .iter()
            .filter(|(path, id)| eligible(path) && self.inodes.get(id).is_some_and(|inode| !inode.stable.is_empty()))
            .map(|(path, &id)| (path.clone(), id))
            .collect();
        if candidates.is_empty() {
            return None;
        }
        let (path, id) = candidates[self.rng.index(candidates.len())].clone();
        let inode = self.inodes.get(&id)?;
        let dirty: BTreeSet<usize> = inode.dirty_pages().collect();
        let clean: Vec<usize> = (0..inode.stable.len().div_ceil(PAGE_BYTES))
            .filter(|page| !dirty.contains(page))
            .collect();
        if clean.is_empty() {
            return None;
        }
        let page = clean[self.rng.index(clean.len())];
        let page_len = (inode.stable.len() - page * PAGE_BYTES).min(PAGE_BYTES);
        let offset = page * PAGE_BYTES + self.rng.index(page_len);
        let bit = self.rng.index(8);
        let inode = self.inodes.get_mut(&id)?;
        inode.stable.flip_bit(offset, bit as u32);
        self.injected.corruptions += 1;
        Some((path, offset as u64))
    }

    /// Writeback of `path`'s inode fails (see [`Inode::drop_dirty`]).
    pub fn fail_writeback(&mut self, path: &str) -> io::Result<()> {
        validate_relative_path(path)?;
        let id = *self.names.get(path).ok_or_else(|| not_found(path))?;
        self.inode(id, path)?.drop_dirty();
        Ok(())
    }

    /// Flush every dirty page and commit every directory, as the kernel eventually does.
    pub fn writeback_all(&mut self) {
        for inode in self.inodes.values_mut() {
            inode.sync();
        }
        let dirs: Vec<String> = self.dirty_dirs.keys().cloned().collect();
        for dir in dirs {
            self.commit_dir(&dir);
        }
    }

    /// Writeback that happened at arbitrary times before a crash: each dirty page and
    /// each pending directory independently, with probability one half.
    fn writeback_some(&mut self) {
        for id in self.dirty_inodes() {
            let pages: Vec<usize> = self
                .inodes
                .get(&id)
                .map(|inode| inode.dirty_pages().collect())
                .unwrap_or_default();
            let chosen: Vec<usize> = pages.into_iter().filter(|_| self.coin()).collect();
            if let Some(inode) = self.inodes.get_mut(&id) {
                for page in chosen {
                    inode.flush_page(page);
                }
            }
        }
        let dirs: Vec<String> = self.dirty_dirs.keys().cloned().collect();
        for dir in dirs {
            if self.coin() {
                self.commit_dir(&dir);
            }
        }
    }

    pub fn crash(&mut self, kind: CrashKind) {
        if self.options.writeback {
            self.writeback_some();
        }
        if kind == CrashKind::PowerLoss {
            if self.options.torn_write_at_power_loss {
                self.tear_one_page();
            }
            self.lose_power();
        }
        for inode in self.inodes.values_mut() {
            inode.handles = 0;
        }
        self.inodes.retain(|_, inode| inode.links > 0);
        self.crashes += 1;
        self.options.fault = None;
        self.options.halt_after = None;
    }

    /// The power is cut mid-writeback: one random dirty page of one random dirty file
    /// lands only a strict, sector-aligned prefix (at least one sector).
    fn tear_one_page(&mut self) {
        let inodes = self.dirty_inodes();
        if inodes.is_empty() {
            return;
        }
        let id = inodes[self.rng.index(inodes.len())];
        let pages: Vec<usize> = self
            .inodes
            .get(&id)
            .map(|inode| inode.dirty_pages().collect())
            .unwrap_or_default();
        if pages.is_empty() {
            return;
        }
        let page = pages[self.rng.index(pages.len())];
        let sectors = 1 + self.rng.index(PAGE_BYTES / SECTOR_BYTES - 1);
        if let Some(inode) = self.inodes.get_mut(&id) {
            inode.tear_page(page, sectors);
            self.injected.torn_writes += 1;
        }
    }

    /// Only stable state survives: stable entries under stable directories, stable bytes.
    fn lose_power(&mut self) {
        let stable_dirs = &self.stable_dirs;
        let reachable = |path: &str| ancestors(path).all(|dir| stable_dirs.contains(dir));
        let dirs: BTreeSet<String> = stable_dirs.iter().filter(|dir| reachable(dir)).cloned().collect();
        let names: BTreeMap<String, InodeId> = self
            .stable_names
            .iter()
            .filter(|(path, _)| reachable(path))
            .map(|(path, &id)| (path.clone(), id))
            .collect();
        for inode in self.inodes.values_mut() {
            inode.lose_unstable();
            inode.links = 0;
        }
        for id in names.values() {
            if let Some(inode) = self.inodes.get_mut(id) {
                inode.links += 2; // its buffered and its stable entry
            }
        }
        self.dirs = dirs.clone();
        self.stable_dirs = dirs;
        self.names = names.clone();
        self.stable_names = names;
        self.dirty_dirs.clear();
    }
}
