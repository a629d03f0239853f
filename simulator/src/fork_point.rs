//! Branching by `fork(2)`: the children of one splitpoint share their parent's whole
//! prefix, so the prefix is run once and each child is a copy of the process taken
//! where its timeline branches.
//!
//! A batch is a parent timeline's children that differ only in the salt of their last
//! branch point (same seed, same flags, same earlier points, the same tick): up to that
//! tick they are the same run, draw for draw. [`arm`] names the tick and the timelines
//! of every sibling but the first; the first runs as usual. As the harness is about to
//! take the branch point at that tick ([`at_branch_point`]), this thread forks once per
//! sibling, one at a time: the copy swaps in its sibling's timeline, runs to the end,
//! and hands its result back through a pipe ([`exit_child`]); the original waits for
//! it, then forks the next, and finally goes on as the first sibling. A copy is
//! exactly the run that sibling makes from scratch: every choice stream's state, the
//! coverage and first-reach records, and the checks' state are in the copied memory,
//! and the branch point reseeds the streams from there as it would have.
//!
//! One copy runs at a time, so a batch uses one core, as `--jobs` promises. What it
//! saves is the prefix: a batch of `n` children runs it once instead of `n` times.
//!
//! What it does not do: keep a copy's printed output (a campaign discards it), or run
//! anywhere but Linux-like systems with `fork`. A copy that cannot be made, or that
//! exits without a result, or takes longer than [`FORK_CHILD_WAIT_SECONDS_MIN`] (or
//! [`FORK_CHILD_WAIT_PREFIX_FACTOR`] times the prefix) is reported as missing, and the
//! caller runs that sibling from scratch: slower, never different.
//!
//! Why fork from a worker thread is safe here: the copy has only this thread; it never
//! takes a lock another thread may have held (no stdout, no campaign state; the run
//! prints into a buffer and a run's panics are recorded quietly), allocates through
//! glibc's malloc (which re-initialises its locks in the copy), and leaves with
//! `_exit`, running no destructor.

#![allow(
    clippy::disallowed_methods,
    reason = "the wall clock bounds how long a parent waits for a copy; a copy that overruns is made \
              again from scratch, so no run's result depends on it"
)]

use std::cell::{Cell, RefCell};
use std::io::Read;
use std::os::fd::{FromRawFd, OwnedFd};
use std::time::{Duration, Instant};

use crate::timeline::Branches;

/// The shortest a parent waits for one copy's result, in seconds, before it gives up
/// on it (kills it and runs that sibling from scratch). A copy runs one simulated run
/// from the branch point on: the nightly's longest, a 200,000-tick soak run, takes
/// about 10 s on this machine. A copy that outlives this is stuck, which should never
/// happen; the wait bounds what it costs if it does.
pub const FORK_CHILD_WAIT_SECONDS_MIN: u64 = 60;

/// A parent also waits up to this many times the time its prefix took: a copy's rest
/// of the run is rarely longer than a whole run, and a whole run is rarely 20 times
/// its prefix when the branch point is late.
pub const FORK_CHILD_WAIT_PREFIX_FACTOR: u32 = 20;

/// A batch armed on this thread: the tick its siblings branch at, their timelines
/// (siblings `1..`), and what became of each.
struct Batch {
    tick: u64,
    siblings: Vec<Branches>,
    /// Per sibling `1..`: its result's bytes, once its copy handed them back.
    results: Vec<Option<Vec<u8>>>,
    /// When the run of the batch started (the prefix's time bounds the wait).
    started: Instant,
}

thread_local! {
    /// The tick a batch is armed at on this thread (`u64::MAX`: none), checked on every
    /// step: one compare where a run has no batch.
    static ARMED_TICK: Cell<u64> = const { Cell::new(u64::MAX) };
    static BATCH: RefCell<Option<Batch>> = const { RefCell::new(None) };
    /// In a copy: which sibling it is and the pipe its result goes into.
    static CHILD: RefCell<Option<(usize, OwnedFd)>> = const { RefCell::new(None) };
    /// Copies whose results this thread collected, ever (see [`copies_collected`]).
    static COLLECTED: Cell<u64> = const { Cell::new(0) };
}

/// How many copies' results this thread has collected so far: what shows a batch was
/// made by forking, not by the from-scratch fallback.
pub fn copies_collected() -> u64 {
    COLLECTED.with(Cell::get)
}

/// Arm a batch on this thread: the next run made here branches at `tick`, and
/// `siblings` are the timelines of the other children of the same splitpoint (each the
/// first's, with another salt at `tick`).
pub fn arm(tick: u64, siblings: Vec<Branches>) {
    debug_assert!(
        siblings
            .iter()
            .all(|branches| branches.points().last().is_some_and(|point| point.tick == tick))
    );
    let count = siblings.len();
    BATCH.with(|batch| {
        *batch.borrow_mut() = Some(Batch {
            tick,
            siblings,
            results: vec![None; count],
            started: Instant::now(),
        })
    });
    ARMED_TICK.with(|armed| armed.set(tick));
}

/// Disarm this thread's batch and return each sibling's (`1..`) result bytes, `None`
/// for one that has none (the run never reached the tick, or the copy failed).
pub fn disarm() -> Vec<Option<Vec<u8>>> {
    ARMED_TICK.with(|armed| armed.set(u64::MAX));
    BATCH.with(|batch| batch.borrow_mut().take().map(|batch| batch.results).unwrap_or_default())
}

/// In a copy: which sibling it is (`1..`); `None` in the original process.
pub fn child_index() -> Option<usize> {
    CHILD.with(|child| child.borrow().as_ref().map(|(index, _)| *index))
}

/// In a copy: hand `result` back to the parent and leave the process at once (no
/// destructor runs: the memory is a copy of the parent's, which owns it).
pub fn exit_child(result: &[u8]) -> ! {
    let fd = CHILD.with(|child| child.borrow_mut().take().map(|(_, fd)| fd));
    if let Some(fd) = fd {
        let mut file = std::fs::File::from(fd);
        // Its length first: the parent stops reading once it has it all, without
        // waiting for the pipe to close (another worker's copy, forked while this
        // pipe was open, holds its write end until that copy exits). A parent that
        // stopped listening gets nothing: it runs the sibling itself.
        let _ = std::io::Write::write_all(&mut file, &(result.len() as u64).to_le_bytes())
            .and_then(|()| std::io::Write::write_all(&mut file, result));
    }
    // SAFETY: `_exit` ends this process without touching any shared state; it has no
    // preconditions.
    unsafe { libc::_exit(0) }
}

/// The harness is about to take the branch point at `tick` with `branches`: if a batch
/// is armed at that tick, make each sibling's copy here (the copy returns with
/// `branches` swapped for its own and runs on; the original returns once every copy
/// is done, as the first sibling).
pub fn at_branch_point(tick: u64, branches: &mut Branches) {
    if ARMED_TICK.with(Cell::get) != tick {
        return;
    }
    ARMED_TICK.with(|armed| armed.set(u64::MAX));
    let Some(mut batch) = BATCH.with(|batch| batch.borrow_mut().take()) else {
        return;
    };
    debug_assert_eq!(batch.tick, tick);
    let wait =
        Duration::from_secs(FORK_CHILD_WAIT_SECONDS_MIN).max(batch.started.elapsed() * FORK_CHILD_WAIT_PREFIX_FACTOR);
    for index in 0..batch.siblings.len() {
        match fork_sibling(index + 1) {
            Forked::Child => {
                *branches = batch.siblings[index].clone();
                // The copy makes no copies of its own.
                return;
            }
            Forked::Parent(pid, pipe) => {
                batch.results[index] = collect(pid, pipe, wait);
                COLLECTED.with(|collected| collected.set(collected.get() + u64::from(batch.results[index].is_some())));
            }
            Forked::Failed => {}
        }
    }
    BATCH.with(|slot| *slot.borrow_mut() = Some(batch));
}

enum Forked {
    Child,
    Parent(libc::pid_t, OwnedFd),
    Failed,
}

/// Fork a copy that will be sibling `index`, with a pipe from it to the parent.
fn fork_sibling(index: usize) -> Forked {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: `fds` is a writable array of two ints, as pipe2 requires.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Forked::Failed;
    }
    // SAFETY: both descriptors were just opened by pipe2 and are owned by nobody else.
    let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    // SAFETY: fork has no preconditions; see the module doc for why the copy, which
    // has only this thread, touches no lock another thread may hold.
    match unsafe { libc::fork() } {
        -1 => Forked::Failed,
        0 => {
            drop(read);
            CHILD.with(|child| *child.borrow_mut() = Some((index, write)));
            Forked::Child
        }
        pid => {
            drop(write);
            Forked::Parent(pid, read)
        }
    }
}

/// Read copy `pid`'s result from `pipe` (its length, then that many bytes), waiting at
/// most `wait`; reap the copy (killing it if it overran). `None` if it handed back no
/// whole result or did not exit cleanly.
fn collect(pid: libc::pid_t, pipe: OwnedFd, wait: Duration) -> Option<Vec<u8>> {
    let deadline = Instant::now() + wait;
    let mut file = std::fs::File::from(pipe);
    let mut bytes = Vec::new();
    let mut buffer = [0u8; 64 * 1024];
    let complete = loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break false;
        }
        let mut poll = libc::pollfd {
            fd: std::os::fd::AsRawFd::as_raw_fd(&file),
            events: libc::POLLIN,
            revents: 0,
        };
        let timeout_ms = libc::c_int::try_from(left.as_millis())
            .unwrap_or(libc::c_int::MAX)
            .max(1);
        // SAFETY: `poll` points to one valid pollfd.
        let ready = unsafe { libc::poll(&mut poll, 1, timeout_ms) };
        if ready < 0 {
            if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            break false;
        }
        if ready == 0 {
            continue;
        }
        match file.read(&mut buffer) {
            Ok(0) => break false,
            Ok(read) => {
                bytes.extend_from_slice(&buffer[..read]);
                if result_length(&bytes).is_some_and(|length| bytes.len() as u64 >= RESULT_LENGTH_BYTES + length) {
                    break true;
                }
            }
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => break false,
        }
    };
    let mut status = 0;
    if !complete {
        // SAFETY: `pid` is our own child, not yet reaped.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
    let reaped = loop {
        // SAFETY: `pid` is our own child; `status` is a valid int to write.
        let reaped = unsafe { libc::waitpid(pid, &mut status, 0) };
        if reaped >= 0 || std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
            break reaped;
        }
    };
    let exited_cleanly = reaped == pid && libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0;
    let length = result_length(&bytes)?;
    (complete && exited_cleanly && bytes.len() as u64 == RESULT_LENGTH_BYTES + length && length > 0)
        .then(|| bytes.split_off(RESULT_LENGTH_BYTES as usize))
}

/// Bytes of the length a copy writes before its result.
const RESULT_LENGTH_BYTES: u64 = 8;

/// The result length a copy announced at the start of `bytes`, once it is all there.
fn result_length(bytes: &[u8]) -> Option<u64> {
    let prefix: [u8; RESULT_LENGTH_BYTES as usize] = bytes.get(..RESULT_LENGTH_BYTES as usize)?.try_into().ok()?;
    Some(u64::from_le_bytes(prefix))
}
