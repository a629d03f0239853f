//! `CreateTopic`: a topic in a stream, with a partition count, durability and message
//! expiry. Its partitions' group ids come from the reply header's `op`.

use cluster::metadata::{
    MetadataReply, PARTITIONS_PER_TOPIC_MAX, TOPICS_PER_STREAM_MAX, is_valid_name, partition_group_id,
};

use crate::rng::SimRng;
use crate::workload::outcome::{Outcome, OutcomeSet};
use crate::workload::request::{Answered, Plan, Request};
use crate::workload::scope::{Global, Scope};
use crate::workload::shadow::{self, PARTITIONS_DRAW_MAX, Shadow, ShadowStream, ShadowTopic, TOPIC_PREFIX};

/// The action's name.
pub const NAME: &str = "CreateTopic";

/// Outcomes it can produce (`LimitReached`: the stream's topics full, the cluster's
/// partitions full, or the stream's topic id counter spent).
pub const OUTCOMES: &[Outcome] = outcomes!(Ok, NameAlreadyExists, StreamNotFound, InvalidName, InvalidPartitionCount, LimitReached);

fn topics_full(stream: &ShadowStream) -> bool {
    stream.topics.len() >= TOPICS_PER_STREAM_MAX || stream.next_topic_id == u32::MAX
}

fn name_taken(stream: &ShadowStream, name: &str) -> bool {
    stream.topics.values().any(|topic| topic.name == name)
}

fn fresh_topic_name(scope: &Scope<'_>, stream_id: u32, rng: &mut SimRng) -> Option<String> {
    let stream = scope.shadow.streams.get(&stream_id)?;
    scope.fresh_name(TOPIC_PREFIX, rng, |n| name_taken(stream, n))
}

fn small_partitions(rng: &mut SimRng) -> u32 {
    rng.range_inclusive(1, u64::from(PARTITIONS_DRAW_MAX)) as u32
}

/// `Ok`: a stream of the client's with room and a fresh name, 1 to
/// [`PARTITIONS_DRAW_MAX`] partitions (within the cluster's room); `NameAlreadyExists`:
/// a topic name the stream holds; `StreamNotFound`: an absent stream; `InvalidName`;
/// `InvalidPartitionCount`: 0 or above [`PARTITIONS_PER_TOPIC_MAX`]; `LimitReached`:
/// only when the shadow is at a bound (topics per stream, or fewer than a topic's
/// worth of partitions left even if no other client held any).
pub fn generate(scope: &Scope<'_>, rng: &mut SimRng, aim: Outcome) -> Option<Plan> {
    let shadow = scope.shadow;
    let left = scope.partitions_left();
    let has_fresh_name = |s: &ShadowStream| scope.has_fresh_name(TOPIC_PREFIX, |n| name_taken(s, n));
    let (stream_id, name, partitions) = match aim {
        Outcome::Ok => {
            let draw_max = u64::from(PARTITIONS_DRAW_MAX).min(scope.partitions_to_create());
            if draw_max == 0 {
                return None;
            }
            let stream_id = scope.pick_stream_where(rng, |s| !topics_full(s) && has_fresh_name(s))?;
            let name = fresh_topic_name(scope, stream_id, rng)?;
            // draw_max <= PARTITIONS_DRAW_MAX, so it fits.
            (stream_id, name, rng.range_inclusive(1, draw_max) as u32)
        }
        Outcome::NameAlreadyExists => {
            let stream_id = scope.pick_stream_where(rng, |s| !s.topics.is_empty())?;
            let names: Vec<&str> = shadow.streams[&stream_id]
                .topics
                .values()
                .map(|t| t.name.as_str())
                .collect();
            let name = (*shadow::pick(&names, rng)?).to_owned();
            (stream_id, name, small_partitions(rng))
        }
        Outcome::StreamNotFound => (
            scope.absent_stream_id(rng),
            scope.any_name(TOPIC_PREFIX, rng),
            small_partitions(rng),
        ),
        Outcome::InvalidName => {
            let stream_id = any_stream_id(scope, rng);
            (stream_id, shadow::invalid_name(rng), small_partitions(rng))
        }
        Outcome::InvalidPartitionCount => {
            let stream_id = any_stream_id(scope, rng);
            let partitions = if shadow::coin(rng) {
                0
            } else {
                PARTITIONS_PER_TOPIC_MAX + 1 + rng.below(u64::from(PARTITIONS_DRAW_MAX)) as u32
            };
            (stream_id, scope.any_name(TOPIC_PREFIX, rng), partitions)
        }
        Outcome::LimitReached => {
            if let Some(stream_id) = scope.pick_stream_where(rng, |s| topics_full(s) && has_fresh_name(s)) {
                let name = fresh_topic_name(scope, stream_id, rng)?;
                (stream_id, name, small_partitions(rng))
            } else if left < u64::from(PARTITIONS_PER_TOPIC_MAX) {
                let stream_id = scope.pick_stream_where(rng, |s| !topics_full(s) && has_fresh_name(s))?;
                let name = fresh_topic_name(scope, stream_id, rng)?;
                // left + 1 <= PARTITIONS_PER_TOPIC_MAX, so it fits.
                let partitions = rng.range_inclusive(left + 1, u64::from(PARTITIONS_PER_TOPIC_MAX)) as u32;
                (stream_id, name, partitions)
            } else {
                return None;
            }
        }
        _ => return None,
    };
    metadata_plan!(CreateTopic { stream_id, name, partitions, durability: shadow::durability(rng), message_expiry_micros: shadow::expiry(rng) })
}

/// One of the client's streams or an absent one, for aims decided before the stream
/// is looked up.
fn any_stream_id(scope: &Scope<'_>, rng: &mut SimRng) -> u32 {
    match scope.pick_stream(rng) {
        Some(id) if shadow::coin(rng) => id,
        _ => scope.absent_stream_id(rng),
    }
}

/// Checks in the state machine's order: name, partition count, stream, uniqueness,
/// topics per stream, partitions in the cluster, id counter.
pub fn predict(scope: &Scope<'_>, request: &Request) -> OutcomeSet {
    let_metadata_op!(CreateTopic { stream_id, name, partitions, .. } = request);
    if !is_valid_name(name) {
        return Outcome::InvalidName.into();
    }
    if !(1..=PARTITIONS_PER_TOPIC_MAX).contains(partitions) {
        return Outcome::InvalidPartitionCount.into();
    }
    let Some(stream) = scope.shadow.streams.get(stream_id) else {
        return Outcome::StreamNotFound.into();
    };
    if name_taken(stream, name) {
        Outcome::NameAlreadyExists.into()
    } else if topics_full(stream) {
        Outcome::LimitReached.into()
    } else {
        super::within(scope.room(Global::Partitions, u64::from(*partitions)))
    }
}

/// `TopicCreated`: the topic exists under the id the cluster assigned, with partitions
/// `0..count` replicated by groups `partition_group_id(reply op, id)`.
pub fn observe(shadow: &mut Shadow, answered: &Answered<'_>) {
    let_metadata_answer!(CreateTopic { stream_id, name, partitions, durability, message_expiry_micros }, reply = answered);
    match reply {
        MetadataReply::TopicCreated { topic_id } => {
            let created_at = answered.header.op;
            note_reused_groups(shadow, created_at, 0, *partitions);
            let Some(stream) = shadow.streams.get_mut(stream_id) else {
                return;
            };
            let assigned = shadow::advance_counter(&mut stream.next_topic_id, *topic_id);
            let mut topic = ShadowTopic::new(name.clone(), *durability, *message_expiry_micros);
            topic.add_partitions(*partitions, created_at);
            stream.topics.insert(*topic_id, topic);
            if let Err(predicted) = assigned {
                shadow.note_mismatch(format!(
                    "{NAME} in stream {stream_id} got topic id {topic_id}, the shadow predicted {predicted}"
                ));
            }
        }
        other => super::unexpected_reply(shadow, NAME, other),
    }
}

/// Note a creating op at `op` whose partitions `first..first + count` would get group
/// ids some live partition already has: op numbers are never reused, so that means the
/// reply header's `op` is not the op that created them.
pub fn note_reused_groups(shadow: &mut Shadow, op: u64, first: u32, count: u32) {
    let reused: Vec<u64> = (first..first.saturating_add(count))
        .map(|id| partition_group_id(op, id))
        .filter(|group| shadow.partition_by_group(*group).is_some())
        .collect();
    if op == 0 || !reused.is_empty() {
        shadow.note_mismatch(format!(
            "a reply at op {op} created partitions {first}..{} whose group ids {reused:?} are taken (or op 0 is genesis)",
            first.saturating_add(count)
        ));
    }
}
