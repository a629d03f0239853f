//! `CreateStream`: a stream with a name unique among streams.

use std::collections::BTreeMap;

use cluster::metadata::{MetadataReply, is_valid_name};

use crate::rng::SimRng;
use crate::workload::outcome::{Outcome, OutcomeSet};
use crate::workload::request::{Answered, Plan, Request};
use crate::workload::scope::{Global, Room, Scope};
use crate::workload::shadow::{self, STREAM_PREFIX, Shadow, ShadowStream};

/// The action's name.
pub const NAME: &str = "CreateStream";

/// Outcomes it can produce (`LimitReached`: `STREAMS_MAX` streams, or the id counter spent).
pub const OUTCOMES: &[Outcome] = outcomes!(Ok, NameAlreadyExists, InvalidName, LimitReached);

/// Whether one more stream fits: the cluster's room, and (alone, where the counter is
/// exact) an id left.
fn room(scope: &Scope<'_>) -> Room {
    if !scope.shared() && scope.shadow.next_stream_id == u32::MAX {
        Room::Full
    } else {
        scope.room(Global::Streams, 1)
    }
}

/// `Ok`: a fresh pool name; `NameAlreadyExists`: a name one of the client's streams
/// holds; `InvalidName`: an invalid one; `LimitReached`: a fresh name once the
/// streams are certainly full.
pub fn generate(scope: &Scope<'_>, rng: &mut SimRng, aim: Outcome) -> Option<Plan> {
    let shadow = scope.shadow;
    let name = match aim {
        Outcome::Ok if room(scope) != Room::Full => {
            scope.fresh_name(STREAM_PREFIX, rng, |n| shadow.stream_name_taken(n))?
        }
        Outcome::LimitReached if room(scope) == Room::Full => {
            scope.fresh_name(STREAM_PREFIX, rng, |n| shadow.stream_name_taken(n))?
        }
        Outcome::NameAlreadyExists => {
            let names: Vec<&str> = shadow
                .streams
                .values()
                .filter(|s| scope.owns_stream(s))
                .map(|s| s.name.as_str())
                .collect();
            (*shadow::pick(&names, rng)?).to_owned()
        }
        Outcome::InvalidName => shadow::invalid_name(rng),
        _ => return None,
    };
    metadata_plan!(CreateStream { name })
}

/// Checks in the state machine's order: name, uniqueness, room, id counter.
pub fn predict(scope: &Scope<'_>, request: &Request) -> OutcomeSet {
    let_metadata_op!(CreateStream { name } = request);
    if !is_valid_name(name) {
        Outcome::InvalidName.into()
    } else if scope.shadow.stream_name_taken(name) {
        Outcome::NameAlreadyExists.into()
    } else {
        super::within(room(scope))
    }
}

/// `StreamCreated`: the stream exists under the id the cluster assigned, owned by the
/// client that created it.
pub fn observe(shadow: &mut Shadow, answered: &Answered<'_>) {
    let_metadata_answer!(CreateStream { name }, reply = answered);
    match reply {
        MetadataReply::StreamCreated { stream_id } => {
            if shadow.streams.contains_key(stream_id) {
                shadow.note_mismatch(format!("{NAME} got stream id {stream_id}, which a live stream holds"));
            }
            shadow.assign_stream_id(*stream_id, NAME);
            shadow.streams.insert(
                *stream_id,
                ShadowStream {
                    name: name.clone(),
                    topics: BTreeMap::new(),
                    next_topic_id: 0,
                    owner: answered.client,
                },
            );
        }
        other => super::unexpected_reply(shadow, NAME, other),
    }
}
