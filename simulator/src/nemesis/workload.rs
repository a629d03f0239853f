//! The nemesis's clients: K tasks, each a production [`Client`] with one request in
//! flight, sending batches and polling partitions while the faults run.
//!
//! Two modes, as in the simulator:
//! - **exact**: client `c` alone writes partition `c`, so it knows the offset each
//!   acknowledged batch must get: the first batch after an acknowledged one lands at
//!   the next offset, or, after sends of unknown outcome, at most that many messages
//!   later. Its polls must show its acknowledged messages at their offsets.
//! - **contended**: every client sends to and polls every one of a few shared
//!   partitions; each partition's history (invoke and answer times in wall-clock
//!   milliseconds) goes to the linearizability checker at the end.
//!
//! Message ids are unique per run (`client << 64 | sequence`), so a message found in a
//! log names the send it came from. A send the client library reports *not accepted*
//! certainly had no effect: its ids must never appear. One of *unknown outcome* may
//! appear at most once.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;
use std::time::{Duration, Instant};

use cluster::client::{Client, Error};
use cluster::partition::{Message, POLL_MESSAGES_MAX, PollReply};

use crate::linearizability::{Operation, PartitionInput, PartitionOutput};
use crate::rng::SimRng;

/// The most think time between two requests of one client, in milliseconds: enough
/// that four clients make a few hundred requests a second, not so many that a
/// 30-second contended history outgrows the checker's search.
pub const CLIENT_THINK_MS_MAX: u64 = 20;
/// The most messages in one batch: small, so a history holds many batches.
pub const BATCH_MESSAGES_MAX: u64 = 3;
/// Payload bytes per message (the id is in the message's own field; the payload only
/// gives the batch a size). 100 messages stay far under the poll reply's byte cap.
pub const PAYLOAD_BYTES: usize = 16;

/// The workload mode of a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// One partition per client.
    Exact,
    /// Shared partitions, judged by the linearizability checker.
    Contended,
}

impl Mode {
    /// The mode's name in flags and reports.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Exact => "exact",
            Mode::Contended => "contended",
        }
    }
}

/// One acknowledged send.
#[derive(Clone, Debug)]
pub struct Acked {
    /// The partition's group.
    pub group: u64,
    /// The client.
    pub client: usize,
    /// The batch's ids.
    pub ids: Vec<u128>,
    /// The offset the first took.
    pub base_offset: u64,
}

/// What every client recorded, shared by the tasks.
#[derive(Default)]
pub struct Recorded {
    /// Acknowledged sends.
    pub acked: Vec<Acked>,
    /// Ids of sends of unknown outcome.
    pub unknown: Vec<u128>,
    /// Ids of sends the cluster certainly never took.
    pub not_accepted: Vec<u128>,
    /// Per partition group: its history (contended mode).
    pub histories: BTreeMap<u64, Vec<Operation<PartitionInput, PartitionOutput>>>,
    /// Milliseconds since the run's start of every successful request (any client).
    pub successes_ms: Vec<u64>,
    /// Milliseconds since the run's start of every acknowledged send (a cluster that
    /// answers polls but takes no write is not available).
    pub writes_ms: Vec<u64>,
    /// Per client: when its last send was acknowledged, milliseconds.
    pub last_write_ms: BTreeMap<usize, u64>,
    /// Per client: when each of its sends was acknowledged, milliseconds, in order (a
    /// fault's cost is how long the clients it stalled waited, not whether some other
    /// client on a healthy partition carried on).
    pub writes_by_client_ms: BTreeMap<usize, Vec<u64>>,
    /// Per client: why its sends have failed since its last acknowledged one (the
    /// latest failure; none if its last send was acknowledged), for a liveness failure
    /// to say what the clients were told.
    pub last_send_failure: BTreeMap<usize, String>,
    /// Requests sent, answered or not.
    pub requests: u64,
    /// Polls whose answers were checked against an exact shadow.
    pub polls_checked: u64,
    /// What went wrong that no fault explains (a check failed mid-run, an answer no
    /// client may get): each fails the run.
    pub violations: Vec<String>,
}

/// The shared state of the workload.
pub struct Workload {
    /// The run's start.
    pub start: Instant,
    /// What the clients recorded.
    pub recorded: RefCell<Recorded>,
    /// Set when the clients must stop after their request in flight.
    pub stop: RefCell<bool>,
    /// Requests the run may send in all.
    pub requests_max: u64,
}

impl Workload {
    /// Milliseconds since the run's start.
    pub fn now_ms(&self) -> u64 {
        u64::try_from(self.start.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    fn go_on(&self) -> bool {
        !*self.stop.borrow() && self.recorded.borrow().requests < self.requests_max
    }
}

/// Per client, in exact mode: where its partition's next message must land.
struct ExactShadow {
    /// The offset after the last acknowledged batch.
    next: u64,
    /// Messages sent since then whose outcome is unknown (each may have landed).
    unknown_messages: u64,
    /// Every acknowledged message of this client: offset -> id.
    known: BTreeMap<u64, u128>,
}

/// One client's own view of the run: who it is, how many messages it sent, where its
/// partitions end as far as it has seen.
struct ClientView {
    /// The client's number (the high half of its message ids, less one).
    index: usize,
    /// The workload mode.
    mode: Mode,
    /// Messages sent so far (the low half of the last id).
    sequence: u64,
    /// Exact mode: where its own partition's next message must land.
    shadow: ExactShadow,
    /// The highest next offset seen per group (where a poll aims).
    seen_next: BTreeMap<u64, u64>,
}

/// Run client `index` of a run until told to stop: `groups` are the partitions it
/// writes (exact: its own, first; contended: all shared).
pub async fn client_task(
    workload: Rc<Workload>,
    mut client: Client,
    index: usize,
    mode: Mode,
    groups: Vec<u64>,
    seed: u64,
) {
    let mut rng = SimRng::new(seed ^ ((index as u64 + 1) << 40));
    let mut view = ClientView {
        index,
        mode,
        sequence: 0,
        shadow: ExactShadow {
            next: 0,
            unknown_messages: 0,
            known: BTreeMap::new(),
        },
        seen_next: BTreeMap::new(),
    };
    while workload.go_on() {
        tokio::time::sleep(Duration::from_millis(rng.below(CLIENT_THINK_MS_MAX + 1))).await;
        let group = match mode {
            Mode::Exact => groups[0],
            Mode::Contended => groups[rng.index(groups.len())],
        };
        workload.recorded.borrow_mut().requests += 1;
        if rng.below(100) < 75 {
            send(&workload, &mut client, &mut rng, &mut view, group).await;
        } else {
            poll(&workload, &mut client, &mut rng, &mut view, group).await;
        }
    }
}

/// Send a batch of up to [`BATCH_MESSAGES_MAX`] fresh ids to `group` and record the
/// outcome: acknowledged (checked against the exact shadow), not accepted, or unknown;
/// in contended mode, the send joins the partition's history unless it certainly had
/// no effect.
async fn send(workload: &Workload, client: &mut Client, rng: &mut SimRng, view: &mut ClientView, group: u64) {
    let index = view.index;
    let count = rng.range_inclusive(1, BATCH_MESSAGES_MAX);
    let ids: Vec<u128> = (0..count)
        .map(|_| {
            view.sequence += 1;
            (((index as u128) + 1) << 64) | u128::from(view.sequence)
        })
        .collect();
    let messages = ids
        .iter()
        .map(|&id| Message {
            id,
            payload: id.to_le_bytes().to_vec(),
        })
        .collect();
    let invoke = workload.now_ms();
    let result = client.send_messages(group, messages).await;
    let complete = workload.now_ms();
    let mut recorded = workload.recorded.borrow_mut();
    let output = match result {
        Ok((base_offset, last_offset)) => {
            record_ack(&mut recorded, view, group, &ids, (base_offset, last_offset), complete);
            Some(PartitionOutput::Appended {
                base_offset,
                last_offset,
            })
        }
        Err(error @ Error::NotAccepted { .. }) => {
            recorded.last_send_failure.insert(index, error.to_string());
            recorded.not_accepted.extend(&ids);
            return;
        }
        Err(error @ Error::NotCommitted { .. }) => {
            recorded.last_send_failure.insert(index, error.to_string());
            recorded.unknown.extend(&ids);
            view.shadow.unknown_messages += ids.len() as u64;
            None
        }
        Err(other) => {
            recorded
                .violations
                .push(format!("client {index}: a send to group {group:#x} failed: {other}"));
            recorded.unknown.extend(&ids);
            view.shadow.unknown_messages += ids.len() as u64;
            None
        }
    };
    if view.mode == Mode::Contended {
        recorded.histories.entry(group).or_default().push(Operation {
            client: index,
            invoke_tick: invoke,
            complete_tick: output.as_ref().map(|_| complete),
            input: PartitionInput::Send { ids },
            output,
        });
    }
}

/// Record an acknowledged send of `ids` at `offsets` (base, last), answered at
/// `complete`: the batch must fill exactly its offsets and, in exact mode, start where
/// the shadow says the partition's next message may land.
fn record_ack(
    recorded: &mut Recorded,
    view: &mut ClientView,
    group: u64,
    ids: &[u128],
    (base_offset, last_offset): (u64, u64),
    complete: u64,
) {
    let index = view.index;
    recorded.successes_ms.push(complete);
    recorded.writes_ms.push(complete);
    recorded.last_write_ms.insert(index, complete);
    recorded.writes_by_client_ms.entry(index).or_default().push(complete);
    // A failure before this success is not what the client is told now.
    recorded.last_send_failure.remove(&index);
    if last_offset + 1 - base_offset != ids.len() as u64 {
        recorded.violations.push(format!(
            "client {index}: a batch of {} messages was acknowledged at offsets {base_offset}..={last_offset}",
            ids.len()
        ));
    }
    if view.mode == Mode::Exact {
        let shadow = &mut view.shadow;
        let low = shadow.next;
        let high = shadow.next + shadow.unknown_messages;
        if base_offset < low || base_offset > high {
            recorded.violations.push(format!(
                "client {index} (alone on group {group:#x}): a batch was acknowledged at offset \
                 {base_offset}, but its partition's next offset had to be in {low}..={high} \
                 ({} sends of unknown outcome before it)",
                shadow.unknown_messages
            ));
        }
        for (i, id) in ids.iter().enumerate() {
            shadow.known.insert(base_offset + i as u64, *id);
        }
        shadow.next = last_offset + 1;
        shadow.unknown_messages = 0;
    }
    view.seen_next.insert(group, last_offset + 1);
    recorded.acked.push(Acked {
        group,
        client: index,
        ids: ids.to_vec(),
        base_offset,
    });
}

/// Poll `group` from an offset drawn up to the highest next offset seen, and check or
/// record the answer: in exact mode against the shadow, in contended mode as a history
/// operation. A poll that got no answer constrains nothing.
async fn poll(workload: &Workload, client: &mut Client, rng: &mut SimRng, view: &mut ClientView, group: u64) {
    let index = view.index;
    let top = view.seen_next.get(&group).copied().unwrap_or(0);
    let offset = rng.below(top + 1);
    let count = rng.range_inclusive(1, POLL_MESSAGES_MAX as u64) as u32;
    let invoke = workload.now_ms();
    let result = client.poll(group, offset, count).await;
    let complete = workload.now_ms();
    let mut recorded = workload.recorded.borrow_mut();
    match result {
        Ok(reply) => {
            recorded.successes_ms.push(complete);
            let next = view.seen_next.entry(group).or_default();
            *next = (*next).max(reply.next_offset);
            if view.mode == Mode::Exact {
                check_poll(&mut recorded, view, group, &reply);
            }
            if view.mode == Mode::Contended {
                let output = PartitionOutput::Polled {
                    next_offset: reply.next_offset,
                    messages: reply.messages.iter().map(|m| (m.offset, m.id)).collect(),
                };
                recorded.histories.entry(group).or_default().push(Operation {
                    client: index,
                    invoke_tick: invoke,
                    complete_tick: Some(complete),
                    input: PartitionInput::Poll { offset, count },
                    output: Some(output),
                });
            }
        }
        // A poll that got no answer constrains nothing.
        Err(Error::NotAccepted { .. } | Error::NotCommitted { .. }) => {}
        Err(other) => recorded
            .violations
            .push(format!("client {index}: a poll of group {group:#x} failed: {other}")),
    }
}

/// Exact mode: a poll's answer must reach past the client's own acknowledged messages
/// and show each of them at its offset.
fn check_poll(recorded: &mut Recorded, view: &ClientView, group: u64, reply: &PollReply) {
    let index = view.index;
    let shadow = &view.shadow;
    recorded.polls_checked += 1;
    if reply.next_offset < shadow.next {
        recorded.violations.push(format!(
            "client {index}: a poll of group {group:#x} answered next offset {}, below {} \
             where its own acknowledged messages end",
            reply.next_offset, shadow.next
        ));
    }
    for message in &reply.messages {
        if let Some(id) = shadow.known.get(&message.offset)
            && *id != message.id
        {
            recorded.violations.push(format!(
                "client {index}: a poll of group {group:#x} found id {:#x} at offset {}, where \
                 its acknowledged message {id:#x} is",
                message.id, message.offset
            ));
        }
    }
}
