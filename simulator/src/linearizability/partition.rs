//! The partition model: one object per partition's log (its consumer groups' offsets
//! and owners are objects of their own: `group_offset.rs`).
//!
//! The sequential rules are the cluster's own (`cluster/src/partition/state.rs` and
//! `poll.rs`): a send appends at the next offset; a poll answers the retained messages
//! from `max(offset, start)`, at most `min(count, poll_messages_max)` of them, and the
//! next offset; a purge drops every retained message and keeps the next offset.
//!
//! Does not model: time retention and `DeleteSegments` (they drop a prefix the client
//! cannot predict: a workload that uses them must not check its polls here), the poll's
//! payload byte cap (a poll answering fewer messages than the count rule allows is
//! rejected: keep 100 messages' payloads under the cap), consumer offsets and owners,
//! empty or oversized batches (a send's ids are never empty: asserted), payloads and
//! timestamps.
//!
//! State representation, chosen for the search's memo (hashed and compared at every
//! step, cloned for every state explored): the retained messages are a persistent chain
//! of batches (newest first, each sharing its older batches by `Rc`), so a send costs one
//! batch and every other step a few reference counts; a running fingerprint of the
//! retained ids in offset order stands in for them in `Hash`; `Eq` compares the
//! fingerprints first and walks the two chains only when all else is equal, stopping at
//! the first batch they share (exact, and cheap: states reached along different paths
//! share all but their newest batches; it compares batch by batch, so one log cut into
//! different batches would compare unequal, costing only a memo miss, and cannot happen
//! while ids are unique to a send). A purge drops the chain, so states that differ
//! only in messages no one can read again compare equal. Each batch keeps a jump
//! pointer (skew-binary: Myers' scheme), so finding the batch holding an offset takes
//! O(log batches) hops.

use std::fmt;
use std::hash::{Hash, Hasher};
use std::rc::Rc;

use super::Model;

/// What a client asks of a partition.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PartitionInput {
    /// Append a batch of messages with these ids (ids are unique across a run).
    Send {
        /// The messages' ids, in batch order; never empty.
        ids: Vec<u128>,
    },
    /// Poll from `offset`, at most `count` messages.
    Poll {
        /// The first offset wanted.
        offset: u64,
        /// The most messages wanted.
        count: u32,
    },
    /// Drop every retained message; the next offset is kept.
    Purge,
}

/// What a partition answers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PartitionOutput {
    /// A send's batch took these offsets.
    Appended {
        /// The first message's offset.
        base_offset: u64,
        /// The last message's offset.
        last_offset: u64,
    },
    /// next_offset = the log's next offset; messages = (offset, id) in offset order.
    Polled {
        /// The log's next offset.
        next_offset: u64,
        /// (offset, id) of every message returned, in offset order.
        messages: Vec<(u64, u128)>,
    },
    /// A purge done.
    Ok,
}

/// The partition's sequential specification.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PartitionModel {
    /// The most messages one poll returns, whatever it asks: the cluster's
    /// `POLL_MESSAGES_MAX` (100); the workload passes it.
    pub poll_messages_max: u32,
}

/// One partition's state as the model sees it (see the module documentation for the
/// representation).
#[derive(Clone)]
pub struct PartitionState {
    next_offset: u64,
    /// The first retained offset: every offset in `[start_offset, next_offset)` is retained.
    start_offset: u64,
    /// The newest retained batch; None when nothing is retained.
    retained: Option<Rc<Batch>>,
    /// [`fingerprint_step`] folded over the retained ids in offset order.
    fingerprint: u64,
}

/// One appended batch, linked to the batch before it.
struct Batch {
    base_offset: u64,
    ids: Box<[u128]>,
    /// Batches retained before this one.
    depth: u64,
    parent: Option<Rc<Batch>>,
    /// An older batch, some way up: `parent` or the parent's jump's jump.
    jump: Option<Rc<Batch>>,
}

impl Batch {
    fn new(parent: Option<Rc<Batch>>, base_offset: u64, ids: &[u128]) -> Batch {
        let depth = parent.as_ref().map_or(0, |parent| parent.depth + 1);
        // Myers' skew-binary jumps: jump twice as far when the parent's two jumps span
        // equal distances, else to the parent. Any ancestor is then O(log depth) hops away.
        let jump = parent.as_ref().map(|parent| match &parent.jump {
            Some(jump) => match &jump.jump {
                Some(jump_jump) if parent.depth - jump.depth == jump.depth - jump_jump.depth => jump_jump.clone(),
                _ => parent.clone(),
            },
            None => parent.clone(),
        });
        Batch {
            base_offset,
            ids: ids.into(),
            depth,
            parent,
            jump,
        }
    }
}

impl Drop for Batch {
    /// Unlink the chain one batch at a time. The default drop recurses down the chain
    /// until it meets a batch still held elsewhere: without the jump pointers a 200k
    /// batch log overflows a test thread's stack; with them it stays shallow, but
    /// nothing here should rest on that.
    fn drop(&mut self) {
        // The jump's target is also held through `parent`, so this drop never cascades.
        self.jump = None;
        let mut parent = self.parent.take();
        while let Some(batch) = parent {
            match Rc::try_unwrap(batch) {
                Ok(mut batch) => {
                    batch.jump = None;
                    parent = batch.parent.take();
                }
                Err(_shared) => break,
            }
        }
    }
}

/// Fold one id into a fingerprint (order matters). Collisions cost only search time:
/// `Eq` is exact.
fn fingerprint_step(fingerprint: u64, id: u128) -> u64 {
    let low = mix64(fingerprint ^ id as u64);
    mix64(low ^ (id >> 64) as u64 ^ 0x632b_e59b_d9b4_e019)
}

/// splitmix64's finalizer.
fn mix64(mut x: u64) -> u64 {
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

impl PartitionState {
    fn empty() -> Self {
        PartitionState {
            next_offset: 0,
            start_offset: 0,
            retained: None,
            fingerprint: 0,
        }
    }

    /// The retained batch holding `offset`, which must be retained.
    fn batch_holding(&self, offset: u64) -> &Batch {
        assert!(self.start_offset <= offset && offset < self.next_offset);
        let mut batch: &Batch = self.retained.as_deref().expect("a retained offset has a batch");
        while batch.base_offset > offset {
            batch = match &batch.jump {
                Some(jump) if jump.base_offset > offset => jump,
                // The oldest retained batch starts at `start_offset`, at or below `offset`.
                _ => batch
                    .parent
                    .as_deref()
                    .expect("the oldest batch starts at the start offset"),
            };
        }
        assert!(offset - batch.base_offset < batch.ids.len() as u64);
        batch
    }

    /// The messages a poll answers: from `from`, at most `limit`, in offset order.
    fn messages(&self, from: u64, limit: u64) -> Vec<(u64, u128)> {
        let end = from.saturating_add(limit).min(self.next_offset);
        if from >= end {
            return Vec::new();
        }
        let mut messages = Vec::with_capacity((end - from) as usize);
        let mut batch = self.batch_holding(end - 1);
        for offset in (from..end).rev() {
            while batch.base_offset > offset {
                batch = batch.parent.as_deref().expect("retained offsets are contiguous");
            }
            messages.push((offset, batch.ids[(offset - batch.base_offset) as usize]));
        }
        messages.reverse();
        messages
    }

    /// What the partition answers to `input` in this state.
    fn answer(&self, input: &PartitionInput, poll_messages_max: u32) -> PartitionOutput {
        match input {
            PartitionInput::Send { ids } => {
                assert!(!ids.is_empty(), "a send's ids are never empty");
                PartitionOutput::Appended {
                    base_offset: self.next_offset,
                    last_offset: self.next_offset + (ids.len() as u64 - 1),
                }
            }
            PartitionInput::Poll { offset, count } => PartitionOutput::Polled {
                next_offset: self.next_offset,
                messages: self.messages(
                    (*offset).max(self.start_offset),
                    u64::from((*count).min(poll_messages_max)),
                ),
            },
            PartitionInput::Purge => PartitionOutput::Ok,
        }
    }

    /// The state after `input` was answered `answer` (which [`Self::answer`] gave).
    fn after(&self, input: &PartitionInput, answer: &PartitionOutput) -> PartitionState {
        let mut next = self.clone();
        match (input, answer) {
            (PartitionInput::Send { ids }, PartitionOutput::Appended { last_offset, .. }) => {
                next.retained = Some(Rc::new(Batch::new(next.retained.take(), self.next_offset, ids)));
                next.fingerprint = ids
                    .iter()
                    .fold(self.fingerprint, |fingerprint, &id| fingerprint_step(fingerprint, id));
                next.next_offset = last_offset + 1;
            }
            (PartitionInput::Purge, PartitionOutput::Ok) => {
                next.start_offset = self.next_offset;
                next.retained = None;
                next.fingerprint = 0;
            }
            // Polls change nothing.
            _ => {}
        }
        next
    }
}

impl Model for PartitionModel {
    type State = PartitionState;
    type Input = PartitionInput;
    type Output = PartitionOutput;

    fn kind(&self) -> &'static str {
        "partition"
    }

    fn init(&self) -> PartitionState {
        PartitionState::empty()
    }

    fn step(
        &self,
        state: &PartitionState,
        input: &PartitionInput,
        output: Option<&PartitionOutput>,
    ) -> Option<PartitionState> {
        // A poll is answered without building its messages when its shape already differs.
        if let (PartitionInput::Poll { .. }, Some(output)) = (input, output) {
            match output {
                PartitionOutput::Polled { next_offset, .. } if *next_offset == state.next_offset => {}
                _ => return None,
            }
        }
        let answer = state.answer(input, self.poll_messages_max);
        if output.is_some_and(|output| *output != answer) {
            return None;
        }
        Some(state.after(input, &answer))
    }

    fn is_read(&self, input: &PartitionInput) -> bool {
        matches!(input, PartitionInput::Poll { .. })
    }
}

impl PartialEq for PartitionState {
    fn eq(&self, other: &Self) -> bool {
        self.next_offset == other.next_offset
            && self.start_offset == other.start_offset
            && self.fingerprint == other.fingerprint
            && same_batches(self.retained.as_ref(), other.retained.as_ref())
    }
}

impl Eq for PartitionState {}

/// Whether two chains hold the same batches (offsets and ids), walking back to the
/// first batch they share.
fn same_batches(mut a: Option<&Rc<Batch>>, mut b: Option<&Rc<Batch>>) -> bool {
    loop {
        match (a, b) {
            (None, None) => return true,
            (Some(x), Some(y)) if Rc::ptr_eq(x, y) => return true,
            (Some(x), Some(y)) if x.base_offset == y.base_offset && x.ids == y.ids => {
                a = x.parent.as_ref();
                b = y.parent.as_ref();
            }
            _ => return false,
        }
    }
}

impl Hash for PartitionState {
    /// Everything `Eq` compares, with the fingerprint for the retained ids.
    fn hash<H: Hasher>(&self, hasher: &mut H) {
        self.next_offset.hash(hasher);
        self.start_offset.hash(hasher);
        self.fingerprint.hash(hasher);
    }
}

impl fmt::Debug for PartitionState {
    /// A summary: the retained messages may be many.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PartitionState")
            .field("next_offset", &self.next_offset)
            .field("start_offset", &self.start_offset)
            .field("fingerprint", &format_args!("{:#018x}", self.fingerprint))
            .finish()
    }
}
