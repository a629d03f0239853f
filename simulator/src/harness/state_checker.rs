//! The state checker: replicas must agree on every committed op.
//!
//! It keeps the canonical chain of committed ops (op -> checksum) built from what
//! replicas apply, and checks each newly applied op against it in both directions
//! (same op number iff same checksum: one op committed at two positions is caught as
//! well as two ops at one position), and that each committed header's parent is the
//! checksum of the op before it. For every op it records which replica committed it in
//! which incarnation, so a report can tell two replicas that disagree from one replica
//! that disagrees with its own earlier life. Those witness sets are interned: most ops
//! are committed by the same few live replicas, so an op keeps an index into a table
//! of the distinct sets instead of a set of its own. The chain lives in an op table
//! (pages of consecutive ops), as committed ops are consecutive but for the rare ones
//! no replica was seen applying.

use std::collections::BTreeMap;
use std::num::NonZeroUsize;

use cluster::vsr::journal::OpTable;

use cluster::wire::Header;

/// A committed header as a replica reports it.
#[derive(Clone, Copy, Debug)]
pub struct CommittedOp {
    /// Op number.
    pub op: u64,
    /// Header checksum.
    pub checksum: u128,
    /// Parent checksum.
    pub parent: u128,
}

impl From<&Header> for CommittedOp {
    fn from(header: &Header) -> Self {
        Self {
            op: header.op,
            checksum: header.checksum,
            parent: header.parent,
        }
    }
}

impl From<Header> for CommittedOp {
    fn from(header: Header) -> Self {
        Self::from(&header)
    }
}

/// A replica in one incarnation: `(replica, incarnation)`.
type Witness = (usize, u64);

/// The index of a witness set in [`StateChecker`]'s table of them, plus one: never
/// zero, so a slot of the chain needs no room to say it is empty.
type WitnessSetId = NonZeroUsize;

/// The empty witness set's id (the root's, and an op's until a replica's commit of it
/// passes every check).
const NO_WITNESSES: WitnessSetId = NonZeroUsize::MIN;

/// One op of the canonical chain.
#[derive(Clone, Copy, Debug)]
struct Link {
    /// Its header checksum.
    checksum: u128,
    /// Who committed it.
    witnesses: WitnessSetId,
}

// A slot of the chain (a link or nothing) is the checksum and one word: the witness
// id's niche keeps the slot from growing a tag.
const _: () = assert!(std::mem::size_of::<Option<Link>>() <= 32);

/// The canonical chain and who committed what.
#[derive(Debug)]
pub struct StateChecker {
    canonical: OpTable<Link>,
    op_of_checksum: BTreeMap<u128, u64>,
    /// Every distinct witness set, each sorted, at its id less one; the first is the
    /// empty one ([`NO_WITNESSES`]).
    witness_sets: Vec<Box<[Witness]>>,
    /// The id of each set in `witness_sets`.
    witness_set_ids: BTreeMap<Box<[Witness]>, WitnessSetId>,
    /// The set one more witness makes of a set, once looked up: nearly every op goes
    /// through the same few steps (no one, then one replica, then two, ...), so the
    /// set's copy and the interning lookup happen once per distinct step, not per op.
    witness_steps: BTreeMap<(WitnessSetId, Witness), WitnessSetId>,
    root: u128,
    ops_compared: u64,
}

impl StateChecker {
    /// A checker for a group whose op 0 has checksum `root`.
    pub fn new(root: u128) -> Self {
        let none: Box<[Witness]> = Box::new([]);
        let mut canonical = OpTable::new();
        canonical.insert(
            0,
            Link {
                checksum: root,
                witnesses: NO_WITNESSES,
            },
        );
        Self {
            canonical,
            op_of_checksum: BTreeMap::from([(root, 0)]),
            witness_sets: vec![none.clone()],
            witness_set_ids: BTreeMap::from([(none, NO_WITNESSES)]),
            witness_steps: BTreeMap::new(),
            root,
            ops_compared: 0,
        }
    }

    /// Ops in the canonical chain (excluding the root).
    pub fn commits(&self) -> u64 {
        self.canonical.len() as u64 - 1
    }

    /// Committed ops checked against the chain (a replica re-applying after a restart
    /// counts again).
    pub fn ops_compared(&self) -> u64 {
        self.ops_compared
    }

    /// The canonical checksum at `op`.
    pub fn canonical(&self, op: u64) -> Option<u128> {
        self.canonical.get(op).map(|link| link.checksum)
    }

    /// Forget the chain above `op` (see `Harness::forget_commits_above`).
    pub fn forget_above(&mut self, op: u64) {
        for link in self.canonical.remove_above(op) {
            self.op_of_checksum.remove(&link.checksum);
        }
    }

    /// Check that `replica` (in `incarnation`) applied `committed`.
    pub fn on_commit(&mut self, replica: usize, incarnation: u64, committed: CommittedOp) -> Result<(), String> {
        let op = committed.op;
        assert!(op > 0, "op 0 is the root, never applied");
        self.ops_compared += 1;
        match self.canonical.get(op).map(|link| link.checksum) {
            Some(canonical) if canonical != committed.checksum => {
                return Err(format!(
                    "replicas disagree on committed op {op}: canonical checksum {canonical:#034x} (committed by {}) \
                     vs replica {replica}'s {:#034x} (incarnation {incarnation})",
                    self.witnesses(op),
                    committed.checksum
                ));
            }
            Some(_) => {}
            None => {
                if let Some(&other) = self.op_of_checksum.get(&committed.checksum) {
                    return Err(format!(
                        "one prepare committed at two positions: checksum {:#034x} is op {other} (committed by {}) \
                         and op {op} on replica {replica}",
                        committed.checksum,
                        self.witnesses(other)
                    ));
                }
                self.canonical.insert(
                    op,
                    Link {
                        checksum: committed.checksum,
                        witnesses: NO_WITNESSES,
                    },
                );
                self.op_of_checksum.insert(committed.checksum, op);
            }
        }
        if let Some(previous) = self.canonical.get(op - 1).map(|link| link.checksum)
            && previous != committed.parent
        {
            return Err(format!(
                "committed op {op} on replica {replica} has parent {:#034x}, but op {} is {previous:#034x}",
                committed.parent,
                op - 1
            ));
        }
        self.add_witness(op, (replica, incarnation));
        Ok(())
    }

    /// Record that `witness` committed `op` (held in the canonical chain).
    fn add_witness(&mut self, op: u64, witness: Witness) {
        let id = self
            .canonical
            .get(op)
            .expect("a committed op is in the chain")
            .witnesses;
        let id = match self.witness_steps.get(&(id, witness)) {
            Some(&next) => next,
            None => {
                let next = self.intern_with(id, witness);
                self.witness_steps.insert((id, witness), next);
                next
            }
        };
        self.canonical
            .get_mut(op)
            .expect("a committed op is in the chain")
            .witnesses = id;
    }

    /// The id of set `id` with `witness` in it (`id` itself if it holds it already).
    fn intern_with(&mut self, id: WitnessSetId, witness: Witness) -> WitnessSetId {
        let Err(at) = self.witness_set(id).binary_search(&witness) else {
            return id;
        };
        let mut set = self.witness_set(id).to_vec();
        set.insert(at, witness);
        let set = set.into_boxed_slice();
        match self.witness_set_ids.get(&set) {
            Some(&id) => id,
            None => {
                self.witness_sets.push(set.clone());
                let id = NonZeroUsize::new(self.witness_sets.len()).expect("a set was just pushed");
                self.witness_set_ids.insert(set, id);
                id
            }
        }
    }

    /// The witness set `id` names.
    fn witness_set(&self, id: WitnessSetId) -> &[Witness] {
        &self.witness_sets[id.get() - 1]
    }

    fn witnesses(&self, op: u64) -> String {
        let id = self.canonical.get(op).map_or(NO_WITNESSES, |link| link.witnesses);
        let parts: Vec<String> = self
            .witness_set(id)
            .iter()
            .map(|(r, i)| format!("{r}@{i:#x}"))
            .collect();
        format!("{{{}}}", parts.join(", "))
    }

    /// The root checksum.
    pub fn root(&self) -> u128 {
        self.root
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(op: u64, checksum: u128, parent: u128) -> CommittedOp {
        CommittedOp { op, checksum, parent }
    }

    #[test]
    fn agreeing_replicas_pass_and_are_counted() {
        let mut checker = StateChecker::new(100);
        for replica in 0..3 {
            checker.on_commit(replica, 0, op(1, 1, 100)).expect("agree");
            checker.on_commit(replica, 0, op(2, 2, 1)).expect("agree");
        }
        assert_eq!(checker.commits(), 2);
        assert_eq!(checker.ops_compared(), 6);
    }

    #[test]
    fn two_checksums_at_one_op_are_caught_naming_the_witnesses() {
        let mut checker = StateChecker::new(100);
        checker.on_commit(1, 7, op(1, 1, 100)).expect("first");
        let error = checker.on_commit(0, 9, op(1, 2, 100)).expect_err("divergence");
        assert!(
            error.contains("disagree on committed op 1") && error.contains("1@0x7"),
            "{error}"
        );
    }

    #[test]
    fn witnesses_are_named_in_order_once_each_and_ops_share_their_sets() {
        let mut checker = StateChecker::new(100);
        for (replica, incarnation) in [(2, 5), (0, 9), (2, 5), (0, 3)] {
            checker.on_commit(replica, incarnation, op(1, 1, 100)).expect("agree");
            checker.on_commit(replica, incarnation, op(2, 2, 1)).expect("agree");
        }
        assert_eq!(checker.witnesses(1), "{0@0x3, 0@0x9, 2@0x5}");
        assert_eq!(checker.witnesses(2), checker.witnesses(1));
        assert_eq!(checker.witnesses(0), "{}");
        assert_eq!(checker.witnesses(7), "{}");
        assert_eq!(
            checker.witness_sets.len(),
            4,
            "the empty set and three growing ones, shared by both ops"
        );
        let error = checker.on_commit(1, 1, op(2, 3, 1)).expect_err("divergence");
        assert!(error.contains("(committed by {0@0x3, 0@0x9, 2@0x5})"), "{error}");
    }

    #[test]
    fn one_checksum_at_two_ops_is_caught() {
        let mut checker = StateChecker::new(100);
        checker.on_commit(0, 0, op(1, 1, 100)).expect("first");
        let error = checker.on_commit(1, 0, op(2, 1, 1)).expect_err("same prepare twice");
        assert!(error.contains("two positions"), "{error}");
    }

    #[test]
    fn a_broken_parent_link_is_caught() {
        let mut checker = StateChecker::new(100);
        checker.on_commit(0, 0, op(1, 1, 100)).expect("first");
        let error = checker.on_commit(0, 0, op(2, 2, 55)).expect_err("bad parent");
        assert!(error.contains("has parent"), "{error}");
    }
}
