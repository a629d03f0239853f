//! The state checker: replicas must agree on every committed op.
//!
//! It keeps the canonical chain of committed ops (op -> checksum) built from what
//! replicas apply, and checks each newly applied op against it in both directions
//! (same op number iff same checksum: one op committed at two positions is caught as
//! well as two ops at one position), and that each committed header's parent is the
//! checksum of the op before it. For every op it records which replicas committed it and
//! which one did first, in which incarnation, so a report can tell two replicas that
//! disagree from one replica that disagrees with its own earlier life, in a fixed size
//! per op (restarts do not grow it). The chain lives in an op table (pages of
//! consecutive ops), as committed ops are consecutive but for the rare ones no replica
//! was seen applying.
//!
//! Bounded for soak runs: the chain forgets the ops below the lowest journal floor any
//! replica of the group was last seen with ([`StateChecker::note_floor`]), keeping the
//! op at it. A replica applies ops below that floor again only after losing its
//! checkpoint (a damaged one boots the group from the root); such an op is checked
//! against the replica's own previous op (the parent link must hold), and the first
//! op it applies at or above the floor against the chain. Since every header names its
//! parent's checksum, that one comparison vouches for every op below it: a replica
//! that applied a wrong op there fails when it reaches the floor, not before.

use std::collections::BTreeMap;
use std::num::NonZeroU8;

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

/// One op of the canonical chain.
#[derive(Clone, Copy, Debug)]
struct Link {
    /// Its header checksum.
    checksum: u128,
    /// The incarnation of the replica that committed it first.
    first_incarnation: u64,
    /// That replica ([`NOBODY`] until a replica's commit of it passes every check).
    first_replica: u8,
    /// Every replica that committed it, one bit each, and [`LINK_BIT`] always: never
    /// zero, so a slot of the chain needs no tag to say it is empty.
    replicas: NonZeroU8,
}

/// The bit every [`Link::replicas`] holds (above every replica's).
const LINK_BIT: u8 = 0x80;

/// No replica (the root's first witness).
const NOBODY: u8 = u8::MAX;

// A slot of the chain (a link or nothing) stays the checksum and one word.
const _: () = assert!(std::mem::size_of::<Option<Link>>() <= 32);
const _: () = assert!(
    cluster::vsr::constants::REPLICAS_MAX <= 7,
    "a replica is one bit of `Link::replicas`"
);

impl Link {
    fn new(checksum: u128) -> Self {
        Self {
            checksum,
            first_incarnation: 0,
            first_replica: NOBODY,
            replicas: NonZeroU8::new(LINK_BIT).expect("not zero"),
        }
    }
}

/// The canonical chain and who committed what.
#[derive(Debug)]
pub struct StateChecker {
    canonical: OpTable<Link>,
    /// Ops below this were forgotten (the lowest floor of every replica seen; the op
    /// at it is kept, so the op above can be checked against its parent).
    forgotten_below: u64,
    /// Each replica's journal floor when last seen (absent: never seen).
    floors: BTreeMap<usize, u64>,
    /// Links forgotten below the floor (the root among them), still counted as commits.
    links_forgotten: u64,
    op_of_checksum: BTreeMap<u128, u64>,
    root: u128,
    ops_compared: u64,
}

impl StateChecker {
    /// A checker for a group whose op 0 has checksum `root`.
    pub fn new(root: u128) -> Self {
        let mut canonical = OpTable::new();
        canonical.insert(0, Link::new(root));
        Self {
            canonical,
            forgotten_below: 0,
            floors: BTreeMap::new(),
            links_forgotten: 0,
            op_of_checksum: BTreeMap::from([(root, 0)]),
            root,
            ops_compared: 0,
        }
    }

    /// Ops in the canonical chain (excluding the root), forgotten ones included.
    pub fn commits(&self) -> u64 {
        self.canonical.len() as u64 + self.links_forgotten - 1
    }

    /// `replica` (of `replicas` in the group) holds its journal floor at `floor`: the
    /// chain may forget what lies below every replica's floor.
    pub fn note_floor(&mut self, replica: usize, replicas: usize, floor: u64) {
        self.floors.insert(replica, floor);
        if self.floors.len() < replicas {
            return;
        }
        let lowest = self.floors.values().copied().min().unwrap_or(0);
        if lowest > self.forgotten_below {
            for link in self.canonical.remove_below(lowest) {
                self.op_of_checksum.remove(&link.checksum);
                self.links_forgotten += 1;
            }
            self.forgotten_below = lowest;
        }
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

    /// Check that `replica` (in `incarnation`) applied `committed`; `own_previous` is
    /// the checksum of the op below it as that replica holds it (read only for an op
    /// below the forgotten floor).
    pub fn on_commit(
        &mut self,
        replica: usize,
        incarnation: u64,
        committed: CommittedOp,
        own_previous: impl FnOnce() -> Option<u128>,
    ) -> Result<(), String> {
        let op = committed.op;
        assert!(op > 0, "op 0 is the root, never applied");
        if op < self.forgotten_below {
            return match own_previous() {
                Some(previous) if previous != committed.parent => Err(format!(
                    "committed op {op} on replica {replica} (incarnation {incarnation:#x}) has parent {:#034x}, but \
                     its own op {} is {previous:#034x} (below the chain's floor {}, applied again)",
                    committed.parent,
                    op - 1,
                    self.forgotten_below
                )),
                _ => Ok(()),
            };
        }
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
                self.canonical.insert(op, Link::new(committed.checksum));
                self.op_of_checksum.insert(committed.checksum, op);
            }
        }
        // The op below, from the chain, or from the replica itself at the floor (the
        // chain forgot it).
        let previous = match self.canonical.get(op - 1) {
            Some(link) => Some(link.checksum),
            None if op - 1 < self.forgotten_below => own_previous(),
            None => None,
        };
        if let Some(previous) = previous
            && previous != committed.parent
        {
            return Err(format!(
                "committed op {op} on replica {replica} has parent {:#034x}, but op {} is {previous:#034x}",
                committed.parent,
                op - 1
            ));
        }
        self.add_witness(op, replica, incarnation);
        Ok(())
    }

    /// Record that `replica` (in `incarnation`) committed `op` (held in the chain).
    fn add_witness(&mut self, op: u64, replica: usize, incarnation: u64) {
        let link = self.canonical.get_mut(op).expect("a committed op is in the chain");
        let replica = u8::try_from(replica).expect("at most REPLICAS_MAX replicas");
        if link.first_replica == NOBODY {
            link.first_replica = replica;
            link.first_incarnation = incarnation;
        }
        link.replicas |= 1 << replica;
        debug_assert!(link.replicas.get() & LINK_BIT != 0);
    }

    /// Who committed `op`, for a report: every replica, and which one first.
    fn witnesses(&self, op: u64) -> String {
        let Some(link) = self.canonical.get(op).filter(|link| link.first_replica != NOBODY) else {
            return "nobody".to_owned();
        };
        let replicas: Vec<String> = (0..7)
            .filter(|r| link.replicas.get() & (1 << r) != 0)
            .map(|r| r.to_string())
            .collect();
        format!(
            "replicas {{{}}}, first {}@{:#x}",
            replicas.join(", "),
            link.first_replica,
            link.first_incarnation
        )
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
            checker.on_commit(replica, 0, op(1, 1, 100), || None).expect("agree");
            checker.on_commit(replica, 0, op(2, 2, 1), || None).expect("agree");
        }
        assert_eq!(checker.commits(), 2);
        assert_eq!(checker.ops_compared(), 6);
    }

    #[test]
    fn two_checksums_at_one_op_are_caught_naming_the_witnesses() {
        let mut checker = StateChecker::new(100);
        checker.on_commit(1, 7, op(1, 1, 100), || None).expect("first");
        let error = checker.on_commit(0, 9, op(1, 2, 100), || None).expect_err("divergence");
        assert!(
            error.contains("disagree on committed op 1") && error.contains("1@0x7"),
            "{error}"
        );
    }

    #[test]
    fn witnesses_name_every_replica_once_and_the_first_with_its_incarnation() {
        let mut checker = StateChecker::new(100);
        for (replica, incarnation) in [(2, 5), (0, 9), (2, 5), (0, 3)] {
            checker
                .on_commit(replica, incarnation, op(1, 1, 100), || None)
                .expect("agree");
            checker
                .on_commit(replica, incarnation, op(2, 2, 1), || None)
                .expect("agree");
        }
        assert_eq!(checker.witnesses(1), "replicas {0, 2}, first 2@0x5");
        assert_eq!(checker.witnesses(2), checker.witnesses(1));
        assert_eq!(checker.witnesses(0), "nobody");
        assert_eq!(checker.witnesses(7), "nobody");
        let error = checker.on_commit(1, 1, op(2, 3, 1), || None).expect_err("divergence");
        assert!(error.contains("(committed by replicas {0, 2}, first 2@0x5)"), "{error}");
    }

    #[test]
    fn one_checksum_at_two_ops_is_caught() {
        let mut checker = StateChecker::new(100);
        checker.on_commit(0, 0, op(1, 1, 100), || None).expect("first");
        let error = checker
            .on_commit(1, 0, op(2, 1, 1), || None)
            .expect_err("same prepare twice");
        assert!(error.contains("two positions"), "{error}");
    }

    #[test]
    fn a_broken_parent_link_is_caught() {
        let mut checker = StateChecker::new(100);
        checker.on_commit(0, 0, op(1, 1, 100), || None).expect("first");
        let error = checker.on_commit(0, 0, op(2, 2, 55), || None).expect_err("bad parent");
        assert!(error.contains("has parent"), "{error}");
    }

    #[test]
    fn the_chain_forgets_below_every_replicas_floor_and_checks_an_op_there_by_its_parent() {
        let mut checker = StateChecker::new(100);
        for n in 1..=10 {
            checker
                .on_commit(
                    0,
                    0,
                    op(n, n.into(), u128::from(n - 1).max(100 * u128::from(n == 1))),
                    || None,
                )
                .expect("agree");
        }
        checker.note_floor(0, 2, 6);
        assert_eq!(
            checker.canonical(3),
            Some(3),
            "one replica's floor alone forgets nothing"
        );
        checker.note_floor(1, 2, 4);
        assert_eq!(checker.canonical(3), None, "below both floors");
        assert_eq!(
            checker.canonical(4),
            Some(4),
            "the lowest floor is kept for its parent link"
        );
        assert_eq!(checker.commits(), 10, "forgotten ops still count");
        checker
            .on_commit(1, 0, op(5, 5, 4), || None)
            .expect("an op above the floor is checked as before");
        checker
            .on_commit(1, 5, op(2, 2, 1), || Some(1))
            .expect("applied again from a lost checkpoint");
        let error = checker
            .on_commit(1, 5, op(3, 33, 22), || Some(2))
            .expect_err("its own parent link broken");
        assert!(error.contains("its own op 2") && error.contains("floor 4"), "{error}");
        // A replica that applied a wrong op 3 below the floor is caught at op 4: the
        // canonical op 4 names another parent than its own op 3.
        let error = checker
            .on_commit(2, 5, op(4, 4, 3), || Some(33))
            .expect_err("its history below the floor");
        assert!(error.contains("has parent"), "{error}");
        let error = checker
            .on_commit(1, 0, op(6, 66, 5), || None)
            .expect_err("still compared above it");
        assert!(error.contains("disagree on committed op 6"), "{error}");
    }
}
