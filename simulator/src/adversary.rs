//! The adversary: a party on the network that is not a replica, injecting well-formed
//! frames into the replicas' inboxes.
//!
//! Models: someone who can reach every node and knows the wire format and the cluster
//! (it watches the traffic), but holds no replica's identity. In the simulator the
//! network names every packet's true sender (what the peer handshake of
//! `cluster::runtime::handshake` gives real nodes), so the adversary's frames arrive
//! from its own process id, one past the clients. What it sends, drawn per injection:
//! - **forged votes**: StartViewChange, LeaveView, DoViewChange and StartView in a
//!   view ahead of the cluster's, naming a real replica as sender;
//! - **forged numbers**: the same with a view past `wire::VIEW_MAX` (2^64-1 among them),
//!   or an op past `wire::OP_MAX`: no honest frame holds one;
//! - **forged prepares and commits** for a watched group, ops ahead of its head;
//! - **replays**: a frame a replica really sent earlier (an older view, an older
//!   incarnation), re-sent verbatim;
//! - **another cluster's frames**: a watched frame re-sealed under another cluster id;
//! - **batches** of watched frames, as a node's liveness batch.
//!
//! The cluster must act on none: every frame is refused unread by the shard it enters
//! (a protocol frame from a process that is not a replica), or refused at decode (a
//! number out of range). The harness counts, per replica and incarnation, what was
//! delivered and what the node refused, and fails the run on the first difference.
//!
//! Does not model: forged peer handshakes (the TCP transport's; the hostile-input suite
//! `cluster/tests/hostile.rs` attacks them on real nodes), an adversary on the path that
//! drops or alters honest packets (the network's own faults do that), or a replica that
//! lies (VSR tolerates crashes, not Byzantine replicas).
//!
//! Its randomness is its own stream, seeded apart from every other, and it draws only
//! when its probability is above zero: a run without it is the run it always was.

use std::collections::VecDeque;

use cluster::wire::{self, Command, HEADER_BYTES, Header, OP_MAX, VIEW_MAX};

use crate::rng::SimRng;

/// Frames the adversary keeps from what it watched, to replay and re-seal: enough to
/// span several views and groups, few enough to cost nothing.
pub const ADVERSARY_WATCHED_FRAMES_MAX: usize = 64;

/// One frame in this many that a replica sends is watched (kept): a sample across the
/// run rather than only its last burst.
pub const ADVERSARY_WATCH_ONE_IN: u64 = 16;

/// The salt the adversary's seed is derived with from the run's root seed (its own
/// stream, so the other children of `SimSeeds` stay what they were).
pub const ADVERSARY_SEED_SALT: u64 = 0xad5e_7a27_f00d_0001;

/// What the adversary sends, by kind (the counts in a run's `adversary:` line).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AdversaryStats {
    /// Votes and view messages in a view ahead of the cluster's.
    pub forged_votes: u64,
    /// Frames holding a view or op past what any honest frame holds.
    pub forged_numbers: u64,
    /// Prepares and commits ahead of a watched group's head.
    pub forged_prepares: u64,
    /// Watched frames re-sent verbatim.
    pub replays: u64,
    /// Watched frames re-sealed under another cluster id.
    pub foreign_cluster: u64,
    /// Batches of watched frames.
    pub batches: u64,
}

impl AdversaryStats {
    /// Every frame sent.
    pub fn total(&self) -> u64 {
        self.forged_votes
            + self.forged_numbers
            + self.forged_prepares
            + self.replays
            + self.foreign_cluster
            + self.batches
    }
}

/// A frame the adversary made, and whether a header decode refuses it on its own
/// (a number out of range) rather than the shard's rule on who may speak.
pub struct Forged {
    /// The frame.
    pub frame: Vec<u8>,
    /// Whether its numbers are out of range (refused at decode).
    pub out_of_range: bool,
}

/// The adversary of one run.
pub struct Adversary {
    rng: SimRng,
    probability: f64,
    watched: VecDeque<Vec<u8>>,
    stats: AdversaryStats,
}

impl Adversary {
    /// Reseed what the adversary sends and when, for a branch of the run (see
    /// [`crate::timeline`]).
    pub fn branch(&mut self, key: crate::timeline::BranchKey) {
        self.rng.branch(key);
    }

    /// An adversary that injects a frame with `probability` per tick, drawing from its
    /// own stream of `root_seed`.
    pub fn new(root_seed: u64, probability: f64) -> Self {
        Self {
            rng: SimRng::new(root_seed ^ ADVERSARY_SEED_SALT),
            probability,
            watched: VecDeque::new(),
            stats: AdversaryStats::default(),
        }
    }

    /// What it sent so far.
    pub fn stats(&self) -> AdversaryStats {
        self.stats
    }

    /// The probability of an injection per tick.
    pub fn probability(&self) -> f64 {
        self.probability
    }

    /// See a frame a replica sent (a sample of them is kept to replay).
    pub fn watch(&mut self, frame: &[u8]) {
        if frame.len() < HEADER_BYTES || self.rng.below(ADVERSARY_WATCH_ONE_IN) != 0 {
            return;
        }
        if self.watched.len() >= ADVERSARY_WATCHED_FRAMES_MAX {
            self.watched.pop_front();
        }
        self.watched.push_back(frame.to_vec());
    }

    /// This tick's frame, if the adversary sends one; `None` until it has watched a
    /// frame (it learns the cluster id and the groups from the traffic).
    pub fn forge(&mut self) -> Option<Forged> {
        if !self.rng.chance(self.probability) || self.watched.is_empty() {
            return None;
        }
        let pick = self.rng.index(self.watched.len());
        let model = self.watched[pick].clone();
        let header = Header::decode(&model[..HEADER_BYTES]).ok()?;
        let forged = match self.rng.below(6) {
            0 => {
                self.stats.forged_votes += 1;
                let command = [
                    Command::StartViewChange,
                    Command::LeaveView,
                    Command::DoViewChange,
                    Command::StartView,
                ][self.rng.index(4)];
                let mut vote = Header::new(command);
                vote.cluster = header.cluster;
                vote.group = header.group;
                vote.replica = header.replica;
                vote.view = header.view + 1 + self.rng.below(1_000);
                vote.log_view = header.log_view;
                vote.op = header.op;
                vote.commit = header.commit.min(header.op);
                Forged {
                    frame: wire::seal_header(vote, &[]),
                    out_of_range: false,
                }
            }
            1 => {
                self.stats.forged_numbers += 1;
                let mut vote = Header::new(Command::StartViewChange);
                vote.cluster = header.cluster;
                vote.group = header.group;
                vote.replica = header.replica;
                if self.rng.chance(0.5) {
                    vote.view = [u64::MAX, VIEW_MAX + 1, VIEW_MAX + 1 + self.rng.below(1 << 20)][self.rng.index(3)];
                } else {
                    vote.view = header.view;
                    vote.op = [u64::MAX, OP_MAX + 1][self.rng.index(2)];
                }
                Forged {
                    frame: wire::seal_header(vote, &[]),
                    out_of_range: true,
                }
            }
            2 => {
                self.stats.forged_prepares += 1;
                let command = if self.rng.chance(0.5) {
                    Command::Prepare
                } else {
                    Command::Commit
                };
                let mut prepare = Header::new(command);
                prepare.cluster = header.cluster;
                prepare.group = header.group;
                prepare.replica = header.replica;
                prepare.view = header.view;
                prepare.op = header.op + 1 + self.rng.below(8);
                prepare.commit = header.commit;
                prepare.parent = u128::from(self.rng.next_u64());
                let body = vec![0u8; self.rng.index(64)];
                Forged {
                    frame: wire::seal_header(prepare, &body),
                    out_of_range: false,
                }
            }
            3 => {
                self.stats.replays += 1;
                Forged {
                    frame: model,
                    out_of_range: false,
                }
            }
            4 => {
                self.stats.foreign_cluster += 1;
                let body = &model[HEADER_BYTES..];
                let mut foreign = header;
                foreign.cluster = header.cluster ^ (1 + self.rng.below(u64::MAX - 1));
                Forged {
                    frame: wire::seal_header(foreign, body),
                    out_of_range: false,
                }
            }
            _ => {
                self.stats.batches += 1;
                // Any watched frames, batchable or not (a node's own batches carry only
                // header-only and view-change frames; the adversary is not held to that).
                let count = 2 + self.rng.index(3);
                let mut body = Vec::new();
                for _ in 0..count {
                    let frame = &self.watched[self.rng.index(self.watched.len())];
                    if body.len() + frame.len() <= wire::batch::BATCH_BODY_BYTES_MAX {
                        body.extend_from_slice(frame);
                    }
                }
                let mut batch = Header::new(Command::Batch);
                batch.cluster = header.cluster;
                Forged {
                    frame: wire::seal_header(batch, &body),
                    out_of_range: false,
                }
            }
        };
        Some(forged)
    }

    /// The replica a frame goes to, drawn from the adversary's stream among `up` ones.
    pub fn target(&mut self, up: &[usize]) -> Option<usize> {
        (!up.is_empty()).then(|| up[self.rng.index(up.len())])
    }

    /// The shard of a replica of `shards` the frame enters on.
    pub fn entry_shard(&mut self, shards: usize) -> usize {
        if shards > 1 { self.rng.index(shards) } else { 0 }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn watched_frame() -> Vec<u8> {
        let mut header = Header::new(Command::Commit);
        header.cluster = 42;
        header.group = 7;
        header.replica = 1;
        header.view = 3;
        header.op = 10;
        header.commit = 9;
        wire::seal_header(header, &[])
    }

    #[test]
    fn it_forges_nothing_before_it_has_watched_traffic_and_every_kind_after() {
        let mut adversary = Adversary::new(5, 1.0);
        assert!(adversary.forge().is_none(), "nothing to learn the cluster from yet");
        for _ in 0..ADVERSARY_WATCH_ONE_IN * 8 {
            adversary.watch(&watched_frame());
        }
        let mut out_of_range = 0;
        for _ in 0..600 {
            let forged = adversary.forge().expect("probability 1");
            let decoded = Header::decode_verified(&forged.frame[..HEADER_BYTES]);
            assert_eq!(decoded.is_err(), forged.out_of_range, "{decoded:?}");
            out_of_range += u64::from(forged.out_of_range);
        }
        let stats = adversary.stats();
        assert_eq!(stats.total(), 600);
        assert_eq!(stats.forged_numbers, out_of_range);
        for (kind, count) in [
            ("votes", stats.forged_votes),
            ("numbers", stats.forged_numbers),
            ("prepares", stats.forged_prepares),
            ("replays", stats.replays),
            ("foreign", stats.foreign_cluster),
            ("batches", stats.batches),
        ] {
            assert!(count > 50, "{kind}: {count} of 600");
        }
    }

    #[test]
    fn the_same_seed_forges_the_same_frames() {
        let run = || {
            let mut adversary = Adversary::new(9, 0.5);
            for _ in 0..200 {
                adversary.watch(&watched_frame());
            }
            (0..100)
                .filter_map(|_| adversary.forge().map(|forged| forged.frame))
                .collect::<Vec<_>>()
        };
        assert_eq!(run(), run());
    }
}
