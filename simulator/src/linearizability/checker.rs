//! The search for a linearization (the minimization of a history that has none is in
//! `minimize.rs`).
//!
//! The search is Wing & Gong's with Lowe's memo, as Porcupine runs it, with answered
//! operations tried before ambiguous ones at each point (see `search`):
//! - every operation becomes a call event and a return event, sorted by tick; at one
//!   tick calls come before returns, so operations whose intervals touch at a tick are
//!   concurrent (real-time order is strict: A precedes B iff A returned before B's tick);
//!   an ambiguous operation's return is after everything;
//! - the events sit in a doubly linked list. Scanning from its head, every call met
//!   before the first return belongs to an operation that may go next: all operations
//!   that must precede it are already linearized. Linearizing one lifts its call and
//!   return out of the list and pushes (operation, previous state) on a stack; meeting a
//!   return means its operation cannot be put off any longer, so the search backtracks:
//!   it pops the last choice, puts its events back (dancing links: the list is restored
//!   in exactly reverse order) and tries the next call after it;
//! - a memo of (set of linearized operations, state) pairs already reached prunes every
//!   repeat: the same set in the same state has the same future, and it failed before
//!   (a success ends the search).
//!
//! Costs: one memo entry per state explored, so the memo is bounded by the search's
//! `states_max`. The set is a bitset hashed incrementally (each operation's bit flips a
//! fixed 64-bit key into the set's hash: O(1) per step); stored entries keep it trimmed
//! of the all-ones words before and the zero words after (linearized operations are
//! nearly a prefix by invoke order), so an entry costs about a state, not the history.
//! The memo is a hash table of this module's own (open addressing, a fixed hasher):
//! nothing ever iterates it, so no hash order can reach a result.
//!
//! Does not model: partial results across objects (each object's history is checked on
//! its own), or any parallelism.

use std::hash::{Hash, Hasher};

use super::minimize::{MINIMIZE_STATES_MAX, Minimizer};
use super::{CheckResult, Model, Operation, Verdict};

/// States explored per object history before the search gives up (`Exhausted`). A
/// history a correct cluster produces is linearized in about one state per operation
/// (backtracking only within windows of truly concurrent or ambiguous operations), so
/// this leaves about three orders of magnitude over a run's longest per-object
/// histories (thousands of operations). The cost of running out, measured on a partition
/// history in release: about 0.75 s and 225 bytes per state (a memo entry of 80 bytes,
/// its bitset words, the batch a send's state adds), so about 230 MB, freed when `check`
/// returns. Twice this would still be fast, but a campaign runs one simulation per
/// worker thread, and several workers exhausting at once must still fit in memory.
pub const SEARCH_STATES_MAX: u64 = 1_000_000;

/// Check one object's history against `model`, exploring at most `states_max` states
/// (pass [`SEARCH_STATES_MAX`] unless testing the limit).
///
/// Panics if the history breaks the [`Operation`] invariant (a workload bug), if the
/// model's step fails an ambiguous operation, or if `states_max` does not fit the memo's
/// u32 indices.
pub fn check<M: Model>(model: &M, history: &[Operation<M::Input, M::Output>], states_max: u64) -> CheckResult {
    check_with_budget(model, history, states_max, MINIMIZE_STATES_MAX)
}

/// [`check`] with the minimization's budget given (tests run it out).
pub(super) fn check_with_budget<M: Model>(
    model: &M,
    history: &[Operation<M::Input, M::Output>],
    states_max: u64,
    minimize_states_max: u64,
) -> CheckResult {
    assert!(
        states_max < u64::from(MEMO_EMPTY),
        "states_max {states_max} over the memo's indices"
    );
    for (index, op) in history.iter().enumerate() {
        if let Some(complete_tick) = op.complete_tick {
            assert!(
                complete_tick >= op.invoke_tick,
                "{} history: operation {index} completes at tick {complete_tick} before its invoke tick {}",
                model.kind(),
                op.invoke_tick
            );
        } else {
            assert!(
                op.output.is_none(),
                "{} history: operation {index} has an answer but no completion tick",
                model.kind()
            );
        }
    }
    // Ambiguous reads constrain nothing; the rest in invoke order (ties by index), the
    // order prefixes are cut in and the minimal sub-history is reported in.
    let mut ops: Vec<usize> = (0..history.len())
        .filter(|&index| history[index].output.is_some() || !model.is_read(&history[index].input))
        .collect();
    ops.sort_by_key(|&index| (history[index].invoke_tick, index));
    let ambiguous = ops.iter().filter(|&&index| history[index].output.is_none()).count();

    let entries: Vec<Entry> = ops
        .iter()
        .map(|&index| Entry {
            index,
            mode: Mode::Checked,
        })
        .collect();
    let search = search(model, history, &entries, states_max);
    let verdict = match search.outcome {
        Outcome::Linearizable => Verdict::Linearizable,
        Outcome::Exhausted => {
            // Undecided as a whole; a cut of it may still be proven to fail.
            let mut minimizer = Minimizer::new(model, history, &ops, states_max, minimize_states_max);
            match minimizer.probe() {
                Some((minimal, minimal_is_one_minimal)) => Verdict::Violation {
                    minimal,
                    minimal_is_one_minimal,
                },
                None => Verdict::Exhausted,
            }
        }
        Outcome::NotLinearizable => {
            let mut minimizer = Minimizer::new(model, history, &ops, states_max, minimize_states_max);
            let (minimal, minimal_is_one_minimal) = minimizer.minimize();
            Verdict::Violation {
                minimal,
                minimal_is_one_minimal,
            }
        }
    };
    CheckResult {
        verdict,
        operations: ops.len(),
        ambiguous,
        states_explored: search.states_explored,
    }
}

/// The operations at `indices` of `history`, one line each, sorted by invoke tick:
/// `client 3 [tick 1200..1260] <input> -> <output>`, or for an ambiguous one
/// `client 3 [tick 1200..] <input> -> unknown`. Lines are joined by newlines, with none
/// after the last. `_model` only fixes the types.
pub fn describe<M: Model>(_model: &M, history: &[Operation<M::Input, M::Output>], indices: &[usize]) -> String {
    let mut sorted = indices.to_vec();
    sorted.sort_by_key(|&index| (history[index].invoke_tick, index));
    let lines: Vec<String> = sorted
        .iter()
        .map(|&index| {
            let op = &history[index];
            match (&op.output, op.complete_tick) {
                (Some(output), Some(complete_tick)) => format!(
                    "client {} [tick {}..{}] {:?} -> {:?}",
                    op.client, op.invoke_tick, complete_tick, op.input, output
                ),
                _ => format!(
                    "client {} [tick {}..] {:?} -> unknown",
                    op.client, op.invoke_tick, op.input
                ),
            }
        })
        .collect();
    lines.join("\n")
}

/// One operation as a search sees it.
#[derive(Clone, Copy, Debug)]
pub(super) struct Entry {
    /// Its index in the history.
    pub(super) index: usize,
    pub(super) mode: Mode,
}

/// How a search treats an operation's answer. An operation without an answer is
/// ambiguous (its effect at any time after its invocation, or never) whatever its mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Mode {
    /// Its answer must be the model's.
    Checked,
    /// It took effect within its interval with whatever answer (the minimization's
    /// weakening): it steps as answered where the model agrees, else as if ambiguous.
    Unchecked,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Outcome {
    Linearizable,
    NotLinearizable,
    Exhausted,
}

pub(super) struct Search {
    pub(super) outcome: Outcome,
    pub(super) states_explored: u64,
}

/// Search for a linearization of `entries` (sorted by invoke tick).
pub(super) fn search<M: Model>(
    model: &M,
    history: &[Operation<M::Input, M::Output>],
    entries: &[Entry],
    states_max: u64,
) -> Search {
    let mut list = EventList::new(history, entries);
    let mut state = model.init();
    let mut linearized = Linearized::new(entries.len());
    let mut memo: Memo<M::State> = Memo::new();
    // (call node, the pass it was chosen in, the state before it) per operation
    // linearized, innermost last.
    let mut stack: Vec<(usize, Pass, M::State)> = Vec::new();
    let mut states_explored = 0u64;
    let ambiguous = |local: usize| history[entries[local].index].output.is_none();

    // The candidates at each point are the calls met before the first return. They are
    // tried in two passes: the answered ones first, then the ambiguous ones. Both
    // passes together try every candidate, so the search is as complete as one pass;
    // but an ambiguous operation (which may take effect at any point, or never) is put
    // in only where no answered one can go, instead of at the first point it could:
    // eager placement made the search try every subset of a history's ambiguous sends
    // at every point (a run with 16 ambiguous operations ran out of a million states).
    let mut pass = Pass::Answered;
    let mut node = list.first();
    while list.first() != NIL {
        // The list always ends with a return (each call's return follows it), and a
        // return stops the scan, so the scan never runs off the end.
        assert_ne!(node, NIL);
        let Node { kind, op: local, .. } = list.nodes[node];
        match kind {
            Kind::Call => {
                if ambiguous(local) != (pass == Pass::Ambiguous) {
                    node = list.nodes[node].next;
                    continue;
                }
                let Some(next_state) = step(model, &state, &history[entries[local].index], entries[local].mode) else {
                    node = list.nodes[node].next;
                    continue;
                };
                linearized.flip(local);
                let hash = memo_hash(linearized.hash, &next_state);
                match memo.find(hash, &linearized, &next_state) {
                    Probe::Found => {
                        // Reached before, and failed then.
                        linearized.flip(local);
                        node = list.nodes[node].next;
                    }
                    Probe::Vacant(slot) => {
                        if states_explored == states_max {
                            return Search {
                                outcome: Outcome::Exhausted,
                                states_explored,
                            };
                        }
                        states_explored += 1;
                        memo.insert(slot, hash, linearized.key(), next_state.clone());
                        stack.push((node, pass, std::mem::replace(&mut state, next_state)));
                        list.lift(node);
                        node = list.first();
                        pass = Pass::Answered;
                    }
                }
            }
            Kind::Return if pass == Pass::Answered => {
                // Every answered candidate was tried here: now the ambiguous ones.
                pass = Pass::Ambiguous;
                node = list.first();
            }
            Kind::Return => {
                let Some((call, chosen_in, previous)) = stack.pop() else {
                    return Search {
                        outcome: Outcome::NotLinearizable,
                        states_explored,
                    };
                };
                state = previous;
                linearized.flip(list.nodes[call].op);
                list.unlift(call);
                node = list.nodes[call].next;
                pass = chosen_in;
            }
        }
    }
    assert_eq!(stack.len(), entries.len());
    assert_eq!(memo.len() as u64, states_explored);
    Search {
        outcome: Outcome::Linearizable,
        states_explored,
    }
}

/// Which candidates a scan of the search tries (see `search`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Pass {
    /// Operations with an answer.
    Answered,
    /// Ambiguous operations.
    Ambiguous,
}

/// One operation's step from `state` (see [`Mode`]); None if it cannot go here.
fn step<M: Model>(model: &M, state: &M::State, op: &Operation<M::Input, M::Output>, mode: Mode) -> Option<M::State> {
    let ambiguous = || {
        let stepped = model.step(state, &op.input, None);
        assert!(
            stepped.is_some(),
            "{} model: an ambiguous step must always succeed",
            model.kind()
        );
        stepped
    };
    match (&op.output, mode) {
        (None, _) => ambiguous(),
        (Some(output), Mode::Checked) => model.step(state, &op.input, Some(output)),
        (Some(output), Mode::Unchecked) => model.step(state, &op.input, Some(output)).or_else(ambiguous),
    }
}

/// The end of the event list.
const NIL: usize = usize::MAX;
/// The list's sentinel node; the events follow it.
const HEAD: usize = 0;

/// Calls sort before returns at the same tick: operations touching at a tick are concurrent.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    Call,
    Return,
}

/// An event's time: an ambiguous operation's return sorts after every tick.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Time {
    Tick(u64),
    Never,
}

#[derive(Clone, Copy, Debug)]
struct Node {
    kind: Kind,
    /// The operation's position in the searched entries.
    op: usize,
    /// A call's return node (a return's is its call's).
    partner: usize,
    prev: usize,
    next: usize,
}

/// The doubly linked list of events, in arrays.
struct EventList {
    nodes: Vec<Node>,
}

impl EventList {
    fn new<I, O>(history: &[Operation<I, O>], entries: &[Entry]) -> Self {
        let mut events: Vec<(Time, Kind, usize)> = Vec::with_capacity(2 * entries.len());
        for (local, entry) in entries.iter().enumerate() {
            let op = &history[entry.index];
            events.push((Time::Tick(op.invoke_tick), Kind::Call, local));
            let complete = match (&op.output, op.complete_tick) {
                (Some(_), Some(tick)) => Time::Tick(tick),
                _ => Time::Never,
            };
            events.push((complete, Kind::Return, local));
        }
        events.sort_unstable();

        let sentinel = Node {
            kind: Kind::Return,
            op: usize::MAX,
            partner: NIL,
            prev: NIL,
            next: NIL,
        };
        let mut nodes = vec![sentinel; events.len() + 1];
        let mut call_node = vec![NIL; entries.len()];
        for (position, &(_, kind, local)) in events.iter().enumerate() {
            let node = position + 1;
            nodes[node] = Node {
                kind,
                op: local,
                partner: NIL,
                prev: node - 1,
                next: if node == events.len() { NIL } else { node + 1 },
            };
            match kind {
                Kind::Call => call_node[local] = node,
                Kind::Return => {
                    let call = call_node[local];
                    assert_ne!(call, NIL, "a return sorts after its call");
                    nodes[call].partner = node;
                    nodes[node].partner = call;
                }
            }
        }
        nodes[HEAD].next = if events.is_empty() { NIL } else { 1 };
        EventList { nodes }
    }

    fn first(&self) -> usize {
        self.nodes[HEAD].next
    }

    /// Take a call and its return out of the list. Their own links are kept for `unlift`.
    fn lift(&mut self, call: usize) {
        assert_eq!(self.nodes[call].kind, Kind::Call);
        let ret = self.nodes[call].partner;
        self.unlink(call);
        self.unlink(ret);
    }

    /// Undo the latest `lift` still in effect (of `call`): the reverse steps, in reverse.
    fn unlift(&mut self, call: usize) {
        let ret = self.nodes[call].partner;
        self.relink(ret);
        self.relink(call);
    }

    fn unlink(&mut self, node: usize) {
        let Node { prev, next, .. } = self.nodes[node];
        self.nodes[prev].next = next;
        if next != NIL {
            self.nodes[next].prev = prev;
        }
    }

    fn relink(&mut self, node: usize) {
        let Node { prev, next, .. } = self.nodes[node];
        self.nodes[prev].next = node;
        if next != NIL {
            self.nodes[next].prev = node;
        }
    }
}

/// The set of linearized operations: a bitset and its incremental hash.
struct Linearized {
    words: Vec<u64>,
    /// The XOR of `op_key` over the members.
    hash: u64,
}

/// A [`Linearized`] as the memo stores it: `full_words` words of all ones, then `rest`,
/// then zeros. Canonical (`rest` starts with a word that is not all ones and ends with a
/// nonzero one), so equal sets store equal keys.
struct LinearizedKey {
    full_words: usize,
    rest: Box<[u64]>,
}

impl Linearized {
    fn new(ops: usize) -> Self {
        Linearized {
            words: vec![0; ops.div_ceil(64)],
            hash: 0,
        }
    }

    fn flip(&mut self, op: usize) {
        self.words[op / 64] ^= 1 << (op % 64);
        self.hash ^= op_key(op);
    }

    fn key(&self) -> LinearizedKey {
        let full_words = self.words.iter().take_while(|&&word| word == u64::MAX).count();
        let end = self
            .words
            .iter()
            .rposition(|&word| word != 0)
            .map_or(0, |last| last + 1);
        LinearizedKey {
            full_words,
            rest: self.words[full_words..end.max(full_words)].into(),
        }
    }

    fn matches(&self, key: &LinearizedKey) -> bool {
        let (full, rest) = self.words.split_at(key.full_words.min(self.words.len()));
        full.len() == key.full_words
            && full.iter().all(|&word| word == u64::MAX)
            && rest.len() >= key.rest.len()
            && rest[..key.rest.len()] == *key.rest
            && rest[key.rest.len()..].iter().all(|&word| word == 0)
    }
}

/// A fixed pseudo-random key per operation (splitmix64 of its position).
fn op_key(op: usize) -> u64 {
    mix64((op as u64).wrapping_add(0x9e37_79b9_7f4a_7c15))
}

/// splitmix64's finalizer: every input bit reaches every output bit.
fn mix64(mut x: u64) -> u64 {
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// The memo's hash of a (set, state) pair.
fn memo_hash<S: Hash>(set_hash: u64, state: &S) -> u64 {
    let mut hasher = WordHasher(set_hash);
    state.hash(&mut hasher);
    hasher.finish()
}

/// A fixed hasher (FxHash's word step, splitmix's finish): deterministic and cheap. Its
/// values decide only where the memo probes, never any result.
struct WordHasher(u64);

impl Hasher for WordHasher {
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.write_u64(u64::from_le_bytes(word));
        }
    }

    fn write_u64(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }

    fn finish(&self) -> u64 {
        mix64(self.0)
    }
}

/// An empty memo slot.
const MEMO_EMPTY: u32 = u32::MAX;
/// The memo's first table size, in slots (a power of two; it doubles as it fills): 4 KiB
/// covers the many small histories without growing, and a full memo of
/// [`SEARCH_STATES_MAX`] entries is ten doublings away.
const MEMO_SLOTS_INITIAL: usize = 1024;

/// Where a (set, state) pair is in the memo.
enum Probe {
    /// Present: reached before.
    Found,
    /// Absent; this free slot is where to insert it.
    Vacant(usize),
}

struct MemoEntry<S> {
    hash: u64,
    linearized: LinearizedKey,
    state: S,
}

/// The set of (linearized, state) pairs reached: entries in insertion order, found
/// through an open-addressed table of their indices (linear probing, at most 3/4 full).
/// Never iterated for a result.
struct Memo<S> {
    entries: Vec<MemoEntry<S>>,
    slots: Vec<u32>,
}

impl<S: Eq> Memo<S> {
    fn new() -> Self {
        Memo {
            entries: Vec::new(),
            slots: vec![MEMO_EMPTY; MEMO_SLOTS_INITIAL],
        }
    }

    fn len(&self) -> usize {
        self.entries.len()
    }

    fn find(&self, hash: u64, linearized: &Linearized, state: &S) -> Probe {
        let mask = self.slots.len() - 1;
        let mut slot = hash as usize & mask;
        loop {
            let index = self.slots[slot];
            if index == MEMO_EMPTY {
                return Probe::Vacant(slot);
            }
            let entry = &self.entries[index as usize];
            if entry.hash == hash && entry.state == *state && linearized.matches(&entry.linearized) {
                return Probe::Found;
            }
            slot = (slot + 1) & mask;
        }
    }

    /// Insert at the slot `find` gave (no insert in between).
    fn insert(&mut self, slot: usize, hash: u64, linearized: LinearizedKey, state: S) {
        assert_eq!(self.slots[slot], MEMO_EMPTY);
        let index = u32::try_from(self.entries.len()).expect("states_max is checked below u32::MAX");
        assert_ne!(index, MEMO_EMPTY);
        self.slots[slot] = index;
        self.entries.push(MemoEntry {
            hash,
            linearized,
            state,
        });
        if self.entries.len() * 4 > self.slots.len() * 3 {
            self.grow();
        }
    }

    fn grow(&mut self) {
        self.slots = vec![MEMO_EMPTY; self.slots.len() * 2];
        let mask = self.slots.len() - 1;
        for (index, entry) in self.entries.iter().enumerate() {
            let mut slot = entry.hash as usize & mask;
            while self.slots[slot] != MEMO_EMPTY {
                slot = (slot + 1) & mask;
            }
            self.slots[slot] = index as u32;
        }
    }
}
