//! The histories of the contended run: per shared object, every operation a client
//! invoked on it (the tick it was sent, the tick its answer came or none, the answer or
//! an unknown outcome), and the end-of-run check of each against its model.
//!
//! An operation whose answer never came (given up on after `TransientNotCommitted`, or
//! still open when the run ended) is ambiguous: the checker lets it take effect at any
//! point after it was invoked, or never. An operation refused for its session before
//! anything was prepared is voided: it is kept out of the history, as it never took
//! effect.

use std::collections::BTreeMap;
use std::fmt;

use crate::linearizability::{
    self, CheckResult, GroupInput, GroupModel, GroupOffsetInput, GroupOffsetModel, GroupOffsetOutput, GroupOutput,
    Model, Operation, PartitionInput, PartitionModel, PartitionOutput, SEARCH_STATES_MAX, UserInput, UserModel,
    UserOutput, Verdict,
};

/// A shared object: the unit a history is checked by.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum ObjectKey {
    /// The partition replicated by this VSR group: its log (sends, polls, purges).
    Partition(u64),
    /// One consumer group's offset and owner on the partition replicated by a VSR
    /// group: (that group, the consumer group's id).
    GroupOffset(u64, u32),
    /// The consumer group with this id.
    Group(u32),
    /// The pool user name with this index.
    User(usize),
}

/// An operation's input, by object kind.
#[derive(Clone, Debug)]
pub enum Input {
    /// On a partition's log.
    Partition(PartitionInput),
    /// On a group's offset and owner on a partition.
    GroupOffset(GroupOffsetInput),
    /// On a consumer group.
    Group(GroupInput),
    /// On a user name.
    User(UserInput),
}

/// An answer, by object kind.
#[derive(Clone, Debug)]
pub enum Output {
    /// From a partition's log.
    Partition(PartitionOutput),
    /// From a group's offset and owner on a partition.
    GroupOffset(GroupOffsetOutput),
    /// From a consumer group.
    Group(GroupOutput),
    /// From a user name.
    User(UserOutput),
}

/// Operations recorded for objects of one kind, by object; a voided one is `None`.
type Recorded<K, I, O> = BTreeMap<K, Vec<Option<Operation<I, O>>>>;

/// Every shared object's history.
#[derive(Clone, Debug, Default)]
pub struct Histories {
    partitions: Recorded<u64, PartitionInput, PartitionOutput>,
    group_offsets: Recorded<(u64, u32), GroupOffsetInput, GroupOffsetOutput>,
    groups: Recorded<u32, GroupInput, GroupOutput>,
    users: Recorded<usize, UserInput, UserOutput>,
}

fn open<I, O>(input: I, client: usize, tick: u64) -> Option<Operation<I, O>> {
    Some(Operation {
        client,
        invoke_tick: tick,
        complete_tick: None,
        input,
        output: None,
    })
}

fn finish<I, O>(slot: &mut Option<Operation<I, O>>, tick: u64, output: O) {
    let operation = slot.as_mut().expect("only an open operation completes");
    assert!(
        operation.output.is_none() && operation.complete_tick.is_none(),
        "an operation completes once"
    );
    assert!(tick >= operation.invoke_tick);
    operation.complete_tick = Some(tick);
    operation.output = Some(output);
}

/// The history of one object, found by key.
fn slot<'a, K: Ord, I, O>(
    map: &'a mut Recorded<K, I, O>,
    key: &K,
    index: usize,
) -> Option<&'a mut Option<Operation<I, O>>> {
    map.get_mut(key)?.get_mut(index)
}

fn input_of<K: Ord, I: Clone, O>(map: &Recorded<K, I, O>, key: &K, index: usize) -> Option<I> {
    map.get(key)?.get(index)?.as_ref().map(|op| op.input.clone())
}

impl Histories {
    /// Record that `client` invoked `input` on `object` at `tick`; returns its index in
    /// the object's history.
    pub fn invoke(&mut self, object: ObjectKey, input: Input, client: usize, tick: u64) -> usize {
        fn push<K: Ord, I, O>(map: &mut Recorded<K, I, O>, key: K, operation: Option<Operation<I, O>>) -> usize {
            let history = map.entry(key).or_default();
            history.push(operation);
            history.len() - 1
        }
        match (object, input) {
            (ObjectKey::Partition(group), Input::Partition(input)) => {
                push(&mut self.partitions, group, open(input, client, tick))
            }
            (ObjectKey::GroupOffset(partition, group), Input::GroupOffset(input)) => {
                push(&mut self.group_offsets, (partition, group), open(input, client, tick))
            }
            (ObjectKey::Group(group), Input::Group(input)) => push(&mut self.groups, group, open(input, client, tick)),
            (ObjectKey::User(name), Input::User(input)) => push(&mut self.users, name, open(input, client, tick)),
            (object, input) => panic!("{input:?} is not an operation on {object:?}"),
        }
    }

    /// The input of the operation at `index` of `object`'s history.
    pub fn input(&self, object: ObjectKey, index: usize) -> Option<Input> {
        match object {
            ObjectKey::Partition(group) => input_of(&self.partitions, &group, index).map(Input::Partition),
            ObjectKey::GroupOffset(partition, group) => {
                input_of(&self.group_offsets, &(partition, group), index).map(Input::GroupOffset)
            }
            ObjectKey::Group(group) => input_of(&self.groups, &group, index).map(Input::Group),
            ObjectKey::User(name) => input_of(&self.users, &name, index).map(Input::User),
        }
    }

    /// The operation at `index` of `object`'s history was answered at `tick`.
    pub fn complete(&mut self, object: ObjectKey, index: usize, tick: u64, output: Output) {
        const RECORDED: &str = "only a recorded operation completes";
        match (object, output) {
            (ObjectKey::Partition(group), Output::Partition(output)) => {
                finish(slot(&mut self.partitions, &group, index).expect(RECORDED), tick, output)
            }
            (ObjectKey::GroupOffset(partition, group), Output::GroupOffset(output)) => finish(
                slot(&mut self.group_offsets, &(partition, group), index).expect(RECORDED),
                tick,
                output,
            ),
            (ObjectKey::Group(group), Output::Group(output)) => {
                finish(slot(&mut self.groups, &group, index).expect(RECORDED), tick, output)
            }
            (ObjectKey::User(name), Output::User(output)) => {
                finish(slot(&mut self.users, &name, index).expect(RECORDED), tick, output)
            }
            (object, output) => panic!("{output:?} is not an answer from {object:?}"),
        }
    }

    /// The operation at `index` of `object`'s history will get no answer (given up on,
    /// or its answer made no sense): it stays open, an unknown outcome.
    pub fn abandon(&self, object: ObjectKey, index: usize) {
        assert!(
            self.input(object, index).is_some(),
            "only a recorded operation is abandoned"
        );
    }

    /// The operation at `index` of `object`'s history never took effect: drop it.
    pub fn void(&mut self, object: ObjectKey, index: usize) {
        let taken = match object {
            ObjectKey::Partition(group) => slot(&mut self.partitions, &group, index).map(|s| s.take().is_some()),
            ObjectKey::GroupOffset(partition, group) => {
                slot(&mut self.group_offsets, &(partition, group), index).map(|s| s.take().is_some())
            }
            ObjectKey::Group(group) => slot(&mut self.groups, &group, index).map(|s| s.take().is_some()),
            ObjectKey::User(name) => slot(&mut self.users, &name, index).map(|s| s.take().is_some()),
        };
        assert_eq!(taken, Some(true), "only a recorded operation is voided");
    }

    /// Settle what can be settled of the ambiguous sends to the partition replicated by
    /// `group`, from `final_log` (its messages as (offset, id) after the drain, read at
    /// `tick`, when nothing is outstanding) and from what the polls returned, the way a
    /// final read settles indeterminate writes in a Jepsen history:
    /// - a send whose ids all sit at consecutive offsets (in the final log, or in a
    ///   poll's answer when a purge came after it) took effect there: it is given
    ///   that `Appended` answer, completed at `tick` (it may still be ordered anywhere
    ///   after it was invoked);
    /// - a send none of whose ids is there, when no purge could have come after it,
    ///   never took effect: it is voided;
    /// - and when the sends with a known answer account for every offset the log
    ///   ever handed out (`final_next_offset`), none of the sends still unknown took
    ///   effect (a purge drops messages, never offsets): they are voided too;
    /// - anything else stays ambiguous.
    ///
    /// Also checks that no message id sits in the final log twice, that a message a poll
    /// returned is in the final log at the same offset unless a purge came after the
    /// poll (else it was lost), that no batch was cut (some of its ids there, others
    /// not, or not consecutive), and that the known sends do not account for more
    /// offsets than the log handed out: `Err` names it.
    pub fn settle_sends(
        &mut self,
        group: u64,
        final_log: &[(u64, u128)],
        final_next_offset: u64,
        tick: u64,
    ) -> Result<Settled, String> {
        let mut final_offsets: BTreeMap<u128, u64> = BTreeMap::new();
        for (offset, id) in final_log {
            if let Some(earlier) = final_offsets.insert(*id, *offset) {
                return Err(format!(
                    "partition group {group:#x}: message {id:#x} sits in the final log twice, at offsets {earlier} and {offset}"
                ));
            }
        }
        let Some(history) = self.partitions.get_mut(&group) else {
            return Ok(Settled::default());
        };
        // The latest point a purge may take effect: its answer, or (ambiguous) never.
        let purge_until: Option<u64> = history
            .iter()
            .flatten()
            .filter(|op| matches!(op.input, PartitionInput::Purge))
            .map(|op| {
                if op.output.is_some() {
                    op.complete_tick.unwrap_or(u64::MAX)
                } else {
                    u64::MAX
                }
            })
            .max();
        let mut offsets = final_offsets.clone();
        // What the polls saw: each message a poll returned was appended at that offset.
        // One the final log lacks must have been purged after that poll was sent, or it
        // was lost.
        for op in history.iter().flatten() {
            let Some(PartitionOutput::Polled { messages, .. }) = &op.output else {
                continue;
            };
            for (offset, id) in messages {
                match final_offsets.get(id) {
                    Some(at) if at != offset => {
                        return Err(format!(
                            "partition group {group:#x}: a poll by client {} at tick {} saw message {id:#x} at offset \
                             {offset}, the final log holds it at {at}",
                            op.client, op.invoke_tick
                        ));
                    }
                    Some(_) => {}
                    None if purge_until.is_some_and(|until| until >= op.invoke_tick) => {
                        offsets.insert(*id, *offset);
                    }
                    None => {
                        return Err(format!(
                            "partition group {group:#x}: a poll by client {} at tick {} saw message {id:#x} at offset \
                             {offset}; the final log lacks it, and no purge came after that poll",
                            op.client, op.invoke_tick
                        ));
                    }
                }
            }
        }
        let mut settled = Settled::default();
        for slot in history.iter_mut() {
            let Some(op) = slot else { continue };
            let PartitionInput::Send { ids } = &op.input else {
                continue;
            };
            if op.output.is_some() {
                continue;
            }
            // A batch is appended whole and purged whole, so the final log holds all of
            // it or none; a poll may have returned any part of it.
            let in_final = ids.iter().filter(|id| final_offsets.contains_key(id)).count();
            if in_final != 0 && in_final != ids.len() {
                return Err(format!(
                    "partition group {group:#x}: a send's batch {ids:x?} is only partly in the final log ({in_final} of \
                     {} messages)",
                    ids.len()
                ));
            }
            let found: Vec<(usize, u64)> = ids
                .iter()
                .enumerate()
                .filter_map(|(index, id)| offsets.get(id).map(|offset| (index, *offset)))
                .collect();
            let Some(&(first_index, first_offset)) = found.first() else {
                if purge_until.is_none_or(|until| until < op.invoke_tick) {
                    *slot = None;
                    settled.never_took_effect += 1;
                }
                continue;
            };
            let base = first_offset.checked_sub(first_index as u64).ok_or_else(|| {
                format!("partition group {group:#x}: a send's batch {ids:x?} was seen at offsets {found:?}")
            })?;
            if found.iter().any(|&(index, offset)| offset != base + index as u64) {
                return Err(format!(
                    "partition group {group:#x}: a send's batch {ids:x?} was seen at offsets that are not consecutive: \
                     {found:?} (message index, offset)"
                ));
            }
            op.complete_tick = Some(tick.max(op.invoke_tick));
            op.output = Some(PartitionOutput::Appended {
                base_offset: base,
                last_offset: base + ids.len() as u64 - 1,
            });
            settled.took_effect += 1;
        }
        let known: u64 = history
            .iter()
            .flatten()
            .filter_map(|op| match op.output {
                Some(PartitionOutput::Appended {
                    base_offset,
                    last_offset,
                }) => Some(last_offset + 1 - base_offset),
                _ => None,
            })
            .sum();
        if known > final_next_offset {
            return Err(format!(
                "partition group {group:#x}: acknowledged and settled sends account for {known} offsets, but the final \
                 log handed out only {final_next_offset}"
            ));
        }
        if known == final_next_offset {
            for slot in history.iter_mut() {
                if slot
                    .as_ref()
                    .is_some_and(|op| op.output.is_none() && matches!(op.input, PartitionInput::Send { .. }))
                {
                    *slot = None;
                    settled.never_took_effect += 1;
                }
            }
        }
        Ok(settled)
    }

    /// Operations recorded, voided ones left out.
    pub fn operations(&self) -> usize {
        fn count<K, I, O>(map: &Recorded<K, I, O>) -> usize {
            map.values().flatten().filter(|op| op.is_some()).count()
        }
        count(&self.partitions) + count(&self.group_offsets) + count(&self.groups) + count(&self.users)
    }

    /// Check every object's history on its own, each search bounded by
    /// [`SEARCH_STATES_MAX`] states. `given_up` is the number of requests given up on
    /// (reported beside the ambiguous operations, which also count those still open).
    pub fn check(&self, poll_messages_max: u32, given_up: u64, settled: Settled) -> LinearizabilityReport {
        let mut report = LinearizabilityReport {
            given_up,
            settled,
            ..LinearizabilityReport::default()
        };
        check_kind(
            &mut report,
            &PartitionModel { poll_messages_max },
            &self.partitions,
            |key| format!("partition group {key:#x}"),
        );
        check_kind(
            &mut report,
            &GroupOffsetModel,
            &self.group_offsets,
            |(partition, group)| format!("consumer group {group} on partition group {partition:#x}"),
        );
        check_kind(
            &mut report,
            &GroupModel { initial_generation: 0 },
            &self.groups,
            |key| format!("consumer group {key}"),
        );
        check_kind(&mut report, &UserModel, &self.users, |key| {
            format!("user name {}", super::draw::user_name(key))
        });
        report
    }
}

fn check_kind<K: Copy, M: Model>(
    report: &mut LinearizabilityReport,
    model: &M,
    histories: &Recorded<K, M::Input, M::Output>,
    name: impl Fn(K) -> String,
) {
    let kind = report.kinds.entry(model.kind()).or_default();
    for (key, recorded) in histories {
        let history: Vec<Operation<M::Input, M::Output>> = recorded.iter().flatten().cloned().collect();
        if history.is_empty() {
            continue;
        }
        let result: CheckResult = linearizability::check(model, &history, SEARCH_STATES_MAX);
        report.histories += 1;
        report.operations += result.operations as u64;
        report.ambiguous += result.ambiguous as u64;
        report.states_explored += result.states_explored;
        kind.histories += 1;
        match result.verdict {
            Verdict::Linearizable => kind.linearizable += 1,
            Verdict::Exhausted => {
                kind.exhausted += 1;
                report.undecided.get_or_insert_with(|| {
                    format!(
                        "{}: the search gave up after {} states ({} operations, {} ambiguous)",
                        name(*key),
                        result.states_explored,
                        result.operations,
                        result.ambiguous
                    )
                });
            }
            Verdict::Violation {
                minimal,
                minimal_is_one_minimal,
            } => {
                kind.violations += 1;
                report.violation.get_or_insert_with(|| {
                    format!(
                        "{} ({}) has no linearization: {} of its {} operations cannot be ordered{}:\n{}",
                        name(*key),
                        model.kind(),
                        minimal.len(),
                        result.operations,
                        if minimal_is_one_minimal {
                            ""
                        } else {
                            " (reduced, not proven minimal)"
                        },
                        linearizability::describe(model, &history, &minimal)
                    )
                });
            }
        }
    }
}

/// What [`Histories::settle_sends`] settled.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Settled {
    /// Ambiguous sends found in the final log: they took effect.
    pub took_effect: u64,
    /// Ambiguous sends not in it, with no purge after them: they never did.
    pub never_took_effect: u64,
}

/// Per object kind: histories checked and their verdicts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KindCounts {
    /// Histories checked.
    pub histories: u64,
    /// Found linearizable.
    pub linearizable: u64,
    /// Found not linearizable.
    pub violations: u64,
    /// Undecided: the search ran out of states.
    pub exhausted: u64,
}

/// What the check compared and found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LinearizabilityReport {
    /// Object histories checked.
    pub histories: u64,
    /// Operations in them.
    pub operations: u64,
    /// Of those, with an unknown outcome.
    pub ambiguous: u64,
    /// Requests given up on after `TransientNotCommitted`.
    pub given_up: u64,
    /// Ambiguous sends the final logs settled (see [`Histories::settle_sends`]).
    pub settled: Settled,
    /// Search states explored, all histories.
    pub states_explored: u64,
    /// Per object kind, in name order.
    pub kinds: BTreeMap<&'static str, KindCounts>,
    /// The first violation: the object and its minimal failing sub-history.
    pub violation: Option<String>,
    /// The first history the search could not decide.
    pub undecided: Option<String>,
}

impl fmt::Display for LinearizabilityReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "linearizability: histories={} operations={} ambiguous={} given_up={} settled_by_final_log={}+{} states={}",
            self.histories,
            self.operations,
            self.ambiguous,
            self.given_up,
            self.settled.took_effect,
            self.settled.never_took_effect,
            self.states_explored
        )?;
        for (kind, counts) in &self.kinds {
            let verdict = if counts.violations > 0 {
                "VIOLATED"
            } else if counts.exhausted > 0 {
                "undecided"
            } else if counts.histories == 0 {
                "none"
            } else {
                "ok"
            };
            write!(f, " {}={verdict}({})", kind.replace(' ', "_"), counts.histories)?;
        }
        Ok(())
    }
}
