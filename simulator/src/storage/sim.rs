//! `SimStorage`: the fault-modelling [`DurableStorage`] (see the module doc of
//! [`super`] for the model).

use std::cell::{Cell, RefCell};
use std::io;
use std::rc::Rc;

use cluster::seam::{DurableFile, DurableStorage, OpenMode};

use super::fault::{CrashKind, FaultKind, PlannedFault};
use super::state::{FaultRates, InjectedFaults, InodeId, State};
use super::trace::{TraceEntry, TraceOp};

/// How a [`SimStorage`] behaves. Everything random is drawn from `seed`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SimStorageOptions {
    /// Seed of the storage's random stream (writeback order, tears, misdirection).
    pub seed: u64,
    /// Background writeback: before each call, a chance
    /// ([`super::WRITEBACK_CHANCE_PPM`]) that one random dirty page or one directory's
    /// pending entries become stable, and at a crash a random half of what is dirty.
    /// Off: nothing becomes stable except through `sync` and `sync_dir`.
    pub writeback: bool,
    /// One fault planned at a trace position.
    pub fault: Option<PlannedFault>,
    /// Every call after this trace position fails before taking effect ("the process
    /// is going down"); the calls are still traced and numbered.
    pub halt_after: Option<u64>,
    /// Parts per million ([`super::PARTS_PER_MILLION`]) of writes that land at another
    /// page-aligned offset of the same file. Beyond what the protocol claims to survive;
    /// 0 (the default) turns it off and draws nothing.
    pub misdirected_write_probability: u32,
    /// Parts per million of background writebacks (when `writeback` is on) that fail
    /// instead, as [`SimStorage::fail_writeback`] does. 0 (the default) draws nothing.
    pub writeback_failure_probability: u32,
    /// Parts per million of `write_at`/`append` calls that fail with an I/O error
    /// before taking effect (EIO on write). 0 (the default) draws nothing.
    pub write_error_probability: u32,
    /// Parts per million of `sync` calls that fail: the device refused the writeback,
    /// so the file's dirty pages are dropped (reads see the stable bytes again) and the
    /// error is recorded for every open handle, as Linux's errseq does; this handle
    /// reports it now. 0 (the default) draws nothing.
    pub sync_error_probability: u32,
    /// Parts per million of `read_at` calls that fail with a transient I/O error (EIO
    /// on read) before reading anything. At most `read_errors_in_a_row_max` reads fail
    /// in a row; the next one succeeds (a transient error clears when the reader tries
    /// again; an unreadable sector is damage, not this). 0 (the default) draws nothing.
    pub read_error_probability: u32,
    /// See `read_error_probability`.
    pub read_errors_in_a_row_max: u32,
    /// Parts per million of `write_at`/`append`/`sync` calls that are slow (a limping
    /// disk): each adds 1 to `slow_ticks_max` ticks, drawn, to the stall counter
    /// ([`SimStorage::stall_source`]), which the simulation turns into a pause of the
    /// process that made the call. The call itself completes as usual. 0 (the default)
    /// draws nothing.
    pub slow_probability: u32,
    /// See `slow_probability`.
    pub slow_ticks_max: u64,
    /// At a power loss, one dirty page (if any) was being written back and tears: a
    /// strict prefix of its sectors lands. `false` (the default) draws nothing.
    pub torn_write_at_power_loss: bool,
    /// Keep the trace entries (`true` by default). Off, [`SimStorage::trace`] is empty
    /// but positions still count, for long runs that only need faults and halts.
    pub record_trace: bool,
}

impl Default for SimStorageOptions {
    fn default() -> Self {
        Self {
            seed: 0,
            writeback: false,
            fault: None,
            halt_after: None,
            misdirected_write_probability: 0,
            writeback_failure_probability: 0,
            write_error_probability: 0,
            sync_error_probability: 0,
            read_error_probability: 0,
            read_errors_in_a_row_max: 0,
            slow_probability: 0,
            slow_ticks_max: 0,
            torn_write_at_power_loss: false,
            record_trace: true,
        }
    }
}

/// A simulated disk behind a page cache. Cloning shares the same disk (the simulator
/// keeps one per replica across crashes and hands it to the restarted replica).
#[derive(Clone, Debug)]
pub struct SimStorage {
    state: Rc<RefCell<State>>,
}

impl Default for SimStorage {
    fn default() -> Self {
        Self::new(SimStorageOptions::default())
    }
}

impl SimStorage {
    /// An empty disk.
    pub fn new(options: SimStorageOptions) -> Self {
        Self {
            state: Rc::new(RefCell::new(State::new(options))),
        }
    }

    /// Reseed the disk's draws (writeback order, tears, slow and failed calls) for a
    /// branch of the run (see [`crate::timeline`]).
    pub fn branch(&self, key: crate::timeline::BranchKey) {
        self.state.borrow_mut().branch(key);
    }

    /// The process goes down (`Process`: the page cache survives) or the machine loses
    /// power (`PowerLoss`: only stable state survives). Either way every open handle
    /// becomes stale, writeback (if on) first flushes a random subset of what is dirty,
    /// and the planned fault and the halt are cleared so recovery runs fault-free.
    pub fn crash(&self, kind: CrashKind) {
        self.state.borrow_mut().crash(kind);
    }

    /// Every call so far, in order.
    pub fn trace(&self) -> Vec<TraceEntry> {
        self.state.borrow().trace.clone()
    }

    /// Calls so far (the next call's trace position).
    pub fn operations(&self) -> u64 {
        self.state.borrow().operations
    }

    /// Crashes so far.
    pub fn crashes(&self) -> u64 {
        self.state.borrow().crashes
    }

    /// Whether the planned fault's position was reached (and the fault injected).
    pub fn fault_injected(&self) -> bool {
        self.state.borrow().fault_injected
    }

    /// Plan a fault (or none) from now on, e.g. one during recovery after a crash.
    pub fn arm_fault(&self, fault: Option<PlannedFault>) {
        self.state.borrow_mut().options.fault = fault;
    }

    /// Faults injected at random so far (the planned fault is not counted here).
    pub fn injected(&self) -> InjectedFaults {
        self.state.borrow().injected
    }

    /// Change the random fault rates from now on (e.g. none during a run's drain).
    pub fn set_fault_rates(&self, rates: FaultRates) {
        let mut state = self.state.borrow_mut();
        state.options.write_error_probability = rates.write_error_probability;
        state.options.sync_error_probability = rates.sync_error_probability;
        state.options.writeback_failure_probability = rates.writeback_failure_probability;
        state.options.misdirected_write_probability = rates.misdirected_write_probability;
        state.options.read_error_probability = rates.read_error_probability;
        state.options.read_errors_in_a_row_max = rates.read_errors_in_a_row_max;
        state.options.slow_probability = rates.slow_probability;
        state.options.slow_ticks_max = rates.slow_ticks_max;
    }

    /// The stall counter slow calls add to (see
    /// [`SimStorageOptions::slow_probability`]); the simulation takes it.
    pub fn stall_source(&self) -> Rc<Cell<u64>> {
        self.state.borrow().stall.clone()
    }

    /// The random fault rates in force now.
    pub fn fault_rates(&self) -> FaultRates {
        let state = self.state.borrow();
        FaultRates {
            write_error_probability: state.options.write_error_probability,
            sync_error_probability: state.options.sync_error_probability,
            writeback_failure_probability: state.options.writeback_failure_probability,
            misdirected_write_probability: state.options.misdirected_write_probability,
            read_error_probability: state.options.read_error_probability,
            read_errors_in_a_row_max: state.options.read_errors_in_a_row_max,
            slow_probability: state.options.slow_probability,
            slow_ticks_max: state.options.slow_ticks_max,
        }
    }

    /// Latent corruption: flip one bit of one random stable byte of one random file
    /// whose path `eligible` accepts (bit rot on the platter). A byte under a dirty
    /// page is not chosen (the cache holds the newer bytes there). Returns the path and
    /// offset, or `None` if no eligible file has a stable, clean byte.
    pub fn corrupt_stable_bit(&self, eligible: impl Fn(&str) -> bool) -> Option<(String, u64)> {
        self.state.borrow_mut().corrupt_stable_bit(eligible)
    }

    /// Stop the disk at trace position `position`, as a crash sweep steps through a
    /// call's positions: with `fault`, that call fails as the fault says; without, the
    /// process "goes down" there (every call after it fails, see `set_halt_after`).
    pub fn stop_at(&self, position: u64, fault: Option<FaultKind>) {
        match fault {
            None => self.set_halt_after(Some(position)),
            Some(kind) => self.arm_fault(Some(PlannedFault { position, kind })),
        }
    }

    /// Halt after a trace position (or never) from now on.
    pub fn set_halt_after(&self, halt_after: Option<u64>) {
        self.state.borrow_mut().options.halt_after = halt_after;
    }

    /// Writeback of the file at `path` fails, as an I/O error under the page cache
    /// would: its dirty pages are dropped (reads see the stable bytes again, an
    /// extension is undone) and every handle open on it now reports the failure from
    /// its next `sync`, once. Handles opened later never hear of it. Recorded even if
    /// nothing was dirty. Not a traced call.
    pub fn fail_writeback(&self, path: &str) -> io::Result<()> {
        self.state.borrow_mut().fail_writeback(path)
    }

    /// Flush every dirty page and commit every directory's entries, as the kernel
    /// eventually does when nothing crashes. Not a traced call.
    pub fn writeback_all(&self) {
        self.state.borrow_mut().writeback_all();
    }

    /// Total bytes held (buffered and stable copies), for memory accounting.
    pub fn bytes(&self) -> usize {
        self.state.borrow().bytes()
    }

    /// Every file's path now (the buffered namespace), sorted. Not a traced call.
    pub fn paths(&self) -> Vec<String> {
        self.state.borrow().paths()
    }

    /// Whether `path` names a file now (the buffered namespace).
    pub fn exists(&self, path: &str) -> bool {
        self.state.borrow().buffered_bytes(path).is_some()
    }

    /// Whether a power loss now would leave a file at `path`: a stable entry in a
    /// directory whose own entry (and its parents') is stable.
    pub fn exists_stable(&self, path: &str) -> bool {
        self.state.borrow().stable_inode(path).is_some()
    }

    /// Length of the file at `path` as reads see it.
    pub fn buffered_len(&self, path: &str) -> Option<u64> {
        self.buffered_bytes(path).map(|bytes| bytes.len() as u64)
    }

    /// Length a power loss now would leave at `path`.
    pub fn stable_len(&self, path: &str) -> Option<u64> {
        self.state
            .borrow()
            .stable_inode(path)
            .map(|inode| inode.stable.len() as u64)
    }

    /// Contents of the file at `path` as reads see them.
    pub fn buffered_bytes(&self, path: &str) -> Option<Vec<u8>> {
        self.state.borrow().buffered_bytes(path)
    }

    /// Contents a power loss now would leave at `path`.
    pub fn stable_bytes(&self, path: &str) -> Option<Vec<u8>> {
        self.state.borrow().stable_bytes(path)
    }

    /// Dirty page indices (offset / [`super::PAGE_BYTES`]) of the file at `path`,
    /// ascending; empty if it is clean or missing.
    pub fn dirty_pages(&self, path: &str) -> Vec<u64> {
        self.state.borrow().dirty_pages(path)
    }

    /// A hash of the whole disk state (namespaces, bytes, dirty pages, counters), to
    /// compare two runs for determinism.
    pub fn state_hash(&self) -> u64 {
        self.state.borrow().hash()
    }

    #[cfg(test)]
    pub(super) fn check_invariants(&self) -> Result<(), String> {
        self.state.borrow().check()
    }
}

impl DurableStorage for SimStorage {
    type File = SimFile;

    async fn open(&self, path: &str, mode: OpenMode) -> io::Result<SimFile> {
        let mut state = self.state.borrow_mut();
        // One copy of the path, shared by the handle and every call it makes.
        let path: Rc<str> = Rc::from(path);
        let call = state.begin(TraceOp::Open, Rc::clone(&path), None)?;
        let opened = state.open(&path, mode);
        let inode = call.finish(opened)?;
        let errors_seen = state.add_handle(inode);
        Ok(SimFile {
            state: self.state.clone(),
            inode,
            epoch: state.crashes,
            path,
            errors_seen: Cell::new(errors_seen),
        })
    }

    async fn rename(&self, from: &str, to: &str) -> io::Result<()> {
        let mut state = self.state.borrow_mut();
        let call = state.begin(TraceOp::Rename, Rc::from(format!("{from} -> {to}")), None)?;
        let renamed = state.rename(from, to);
        call.finish(renamed)
    }

    async fn remove(&self, path: &str) -> io::Result<()> {
        let mut state = self.state.borrow_mut();
        let call = state.begin(TraceOp::Remove, Rc::from(path), None)?;
        let removed = state.remove(path);
        call.finish(removed)
    }

    async fn remove_dir(&self, dir: &str) -> io::Result<()> {
        let mut state = self.state.borrow_mut();
        let call = state.begin(TraceOp::RemoveDir, Rc::from(dir), None)?;
        let removed = state.remove_dir(dir);
        call.finish(removed)
    }

    async fn list(&self, dir: &str) -> io::Result<Vec<String>> {
        let mut state = self.state.borrow_mut();
        let call = state.begin(TraceOp::List, Rc::from(dir), None)?;
        call.finish(state.list(dir))
    }

    async fn sync_dir(&self, dir: &str) -> io::Result<()> {
        let mut state = self.state.borrow_mut();
        let call = state.begin(TraceOp::SyncDir, Rc::from(dir), None)?;
        let synced = state.sync_dir(dir);
        call.finish(synced)
    }
}

/// An open file of a [`SimStorage`]. Handles to one file share its bytes; a handle
/// opened before a crash fails every call afterwards.
#[derive(Debug)]
pub struct SimFile {
    state: Rc<RefCell<State>>,
    inode: InodeId,
    /// The crash count when it was opened.
    epoch: u64,
    /// Shared with each call's [`super::state::Call`]: a file call clones no string.
    path: Rc<str>,
    /// The inode's writeback-error count this handle last reported (Linux errseq).
    errors_seen: Cell<u64>,
}

impl SimFile {
    /// The path this handle was opened with.
    pub fn path(&self) -> &str {
        &self.path
    }
}

impl Drop for SimFile {
    fn drop(&mut self) {
        // try_borrow: a drop must never panic, even if something still holds the state.
        if let Ok(mut state) = self.state.try_borrow_mut() {
            state.drop_handle(self.inode, self.epoch);
        }
    }
}

impl DurableFile for SimFile {
    async fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<usize> {
        let mut state = self.state.borrow_mut();
        let call = state.begin(TraceOp::ReadAt, Rc::clone(&self.path), Some(self.epoch))?;
        state.maybe_fail_read(&call)?;
        let read = state.read_at(self.inode, &self.path, offset, buf);
        call.finish(read)
    }

    async fn write_at(&self, offset: u64, data: &[u8]) -> io::Result<()> {
        let mut state = self.state.borrow_mut();
        let call = state.begin(TraceOp::WriteAt, Rc::clone(&self.path), Some(self.epoch))?;
        state.write(&call, self.inode, Some(offset), data).map(drop)
    }

    async fn append(&self, data: &[u8]) -> io::Result<u64> {
        let mut state = self.state.borrow_mut();
        let call = state.begin(TraceOp::Append, Rc::clone(&self.path), Some(self.epoch))?;
        state.write(&call, self.inode, None, data)
    }

    async fn len(&self) -> io::Result<u64> {
        let mut state = self.state.borrow_mut();
        let call = state.begin(TraceOp::Len, Rc::clone(&self.path), Some(self.epoch))?;
        let len = state.len(self.inode, &self.path);
        call.finish(len)
    }

    async fn sync(&self) -> io::Result<()> {
        let mut state = self.state.borrow_mut();
        let call = state.begin(TraceOp::Sync, Rc::clone(&self.path), Some(self.epoch))?;
        state.sync(&call, self.inode, &self.errors_seen)
    }

    async fn truncate(&self, len: u64) -> io::Result<()> {
        let mut state = self.state.borrow_mut();
        let call = state.begin(TraceOp::Truncate, Rc::clone(&self.path), Some(self.epoch))?;
        let truncated = state.truncate(self.inode, &self.path, len);
        call.finish(truncated)
    }
}
