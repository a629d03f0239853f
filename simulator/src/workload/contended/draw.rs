//! What a contended client asks for next: one operation on a shared object, drawn by
//! weight, aimed where other clients are working too.
//!
//! Every client draws from the same few objects (the shared topic's partitions, its
//! consumer groups, a small pool of user names and member ids), so requests race: two
//! sends to one partition, a poll beside a send, two members claiming one partition's
//! ownership at one generation, two clients creating one user name. Nothing here
//! predicts an answer; the history and the linearizability checker judge them. What a
//! client has seen (the newest offsets, the owner generations) only steers its draws
//! towards the interesting cases (polls near the head, hand-offs at the next
//! generation, writes by a former owner).
//!
//! Does not model: deleting segments (where a segment ends is not in the sequential
//! model), retention by time (the shared topic keeps messages forever), or consumer
//! offsets of single consumers (the group offsets carry the owner fence).

use std::collections::BTreeMap;

use cluster::partition::POLL_MESSAGES_MAX;

use crate::linearizability::GroupInput;
use crate::linearizability::GroupOffsetInput;
use crate::linearizability::PartitionInput;
use crate::linearizability::UserInput;
use crate::rng::SimRng;

/// Member ids the clients join and leave consumer groups with: fewer than the clients
/// of a crowded run, so joins collide (`AlreadyMember`) and leaves find others' members.
pub const MEMBER_POOL_SIZE: u32 = 6;

/// User names the clients create and delete (`shared-u0`..): small, so creates of one
/// name race and no run comes near the cluster's user limit.
pub const USER_NAME_POOL_SIZE: usize = 3;

/// Most messages in one contended send. Small batches keep many sends in flight per
/// partition, which is where offset assignment races.
pub const SEND_MESSAGES_MAX: u64 = 3;

/// Most messages a contended poll asks for, besides the occasional poll for more than
/// the cluster's cap ([`POLL_MESSAGES_MAX`]), which checks the cap.
pub const POLL_COUNT_MAX: u64 = 12;

/// Bytes of a contended message's payload at most; with [`POLL_MESSAGES_MAX`] of them a
/// poll reply stays far below the cluster's payload cap, so the model's one bound on a
/// poll (the message count) is the only one that applies.
pub const PAYLOAD_BYTES_MAX: usize = 24;

const _: () = assert!(POLL_MESSAGES_MAX * PAYLOAD_BYTES_MAX < cluster::partition::POLL_REPLY_PAYLOAD_BYTES_MAX);

/// The operation kinds and their weights: sends and polls dominate (the stale-read and
/// offset races live there), owner hand-offs and fenced offset writes follow, purges
/// are rare (each empties a partition).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    /// A send to a shared partition.
    Send,
    /// A poll of a shared partition.
    Poll,
    /// A group offset write, fenced by the owner.
    StoreOffset,
    /// A group offset delete, fenced by the owner.
    DeleteOffset,
    /// A partition's ownership handed to this client's member.
    SetOwner,
    /// Every message of a partition dropped.
    Purge,
    /// A member joins a shared consumer group.
    Join,
    /// A member leaves a shared consumer group.
    Leave,
    /// A pool user name created.
    CreateUser,
    /// A pool user deleted by the id a create answered.
    DeleteUser,
}

impl Kind {
    /// Every kind with its weight.
    pub const WEIGHTS: [(Kind, u64); 10] = [
        (Kind::Send, 28),
        (Kind::Poll, 28),
        (Kind::StoreOffset, 8),
        (Kind::DeleteOffset, 2),
        (Kind::SetOwner, 6),
        (Kind::Purge, 1),
        (Kind::Join, 6),
        (Kind::Leave, 5),
        (Kind::CreateUser, 4),
        (Kind::DeleteUser, 4),
    ];

    /// Its name in the run's counters.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Send => "send",
            Kind::Poll => "poll",
            Kind::StoreOffset => "store_offset",
            Kind::DeleteOffset => "delete_offset",
            Kind::SetOwner => "set_owner",
            Kind::Purge => "purge",
            Kind::Join => "join",
            Kind::Leave => "leave",
            Kind::CreateUser => "create_user",
            Kind::DeleteUser => "delete_user",
        }
    }

    fn pick(rng: &mut SimRng) -> Kind {
        let total: u64 = Kind::WEIGHTS.iter().map(|(_, weight)| weight).sum();
        let mut draw = rng.below(total);
        for (kind, weight) in Kind::WEIGHTS {
            if draw < weight {
                return kind;
            }
            draw -= weight;
        }
        unreachable!("the draw is below the total weight")
    }
}

/// The shared objects, as the setup created them.
#[derive(Clone, Debug)]
pub struct SharedObjects {
    /// The shared topic's partitions' VSR groups, in partition order.
    pub partitions: Vec<u64>,
    /// The shared consumer groups' ids (also the keys of their partition offsets and
    /// owners).
    pub groups: Vec<u32>,
    /// The shared stream and topic.
    pub stream_id: u32,
    /// See `stream_id`.
    pub topic_id: u32,
}

/// One drawn operation: on which object, and what.
#[derive(Clone, Debug)]
pub enum Drawn {
    /// On the log of the partition replicated by this group.
    Partition(u64, PartitionInput),
    /// On a consumer group's offset and owner on the partition replicated by a group:
    /// (that group, the consumer group's id).
    GroupOffset(u64, u32, GroupOffsetInput),
    /// On the consumer group with this id.
    Group(u32, GroupInput),
    /// On the user name with this pool index.
    User(usize, UserInput),
}

/// What one client has seen, to steer its draws.
#[derive(Clone, Debug, Default)]
pub struct Seen {
    /// Per partition group: the newest next offset an answer showed (the log has
    /// reached it: next offsets never go back).
    pub next_offset: BTreeMap<u64, u64>,
    /// Per (partition group, consumer group): the newest owner generation an answer
    /// showed, and whether this client's member holds it.
    pub owner: BTreeMap<(u64, u32), (u64, bool)>,
}

/// The payload of message `id`: a function of the id, so a poll can check the bytes
/// of every message it returns without keeping them.
pub fn payload_of(id: u128) -> Vec<u8> {
    let length = 8 + (id % (PAYLOAD_BYTES_MAX as u128 - 7)) as usize;
    id.to_le_bytes().iter().cycle().take(length).copied().collect()
}

/// The member id client `client` joins groups and claims ownership as.
pub fn own_member(client: usize) -> u32 {
    1 + (client as u32 % MEMBER_POOL_SIZE)
}

/// Draw the next operation of a client, and its kind (for the counters). `next_id`
/// hands out message ids; `user_ids` is the newest id a create answered per pool name
/// (any client's).
pub fn draw(
    rng: &mut SimRng,
    client: usize,
    shared: &SharedObjects,
    seen: &Seen,
    user_ids: &BTreeMap<usize, u32>,
    next_id: &mut dyn FnMut() -> u128,
) -> (Kind, Drawn) {
    let partition = shared.partitions[rng.index(shared.partitions.len())];
    let group = shared.groups[rng.index(shared.groups.len())];
    let head = seen.next_offset.get(&partition).copied().unwrap_or(0);
    let kind = Kind::pick(rng);
    let drawn = match kind {
        Kind::Send => {
            let count = 1 + rng.below(SEND_MESSAGES_MAX);
            let ids = (0..count).map(|_| next_id()).collect();
            Drawn::Partition(partition, PartitionInput::Send { ids })
        }
        Kind::Poll => {
            // Mostly near the head the client last saw (where a stale read shows),
            // sometimes from the start or past the head.
            let offset = match rng.below(8) {
                0 => 0,
                1 => head + 1 + rng.below(3),
                _ => head.saturating_sub(rng.below(POLL_COUNT_MAX)),
            };
            let count = if rng.below(16) == 0 {
                POLL_MESSAGES_MAX as u32 + 1 + rng.below(50) as u32
            } else {
                1 + rng.below(POLL_COUNT_MAX) as u32
            };
            Drawn::Partition(partition, PartitionInput::Poll { offset, count })
        }
        Kind::StoreOffset | Kind::DeleteOffset => {
            let (generation, owner) = seen.owner.get(&(partition, group)).copied().unwrap_or((0, false));
            // As the owner it believes it is, or (a former owner's write) at a
            // generation it held or saw, which the fence must refuse once another
            // member took over.
            let member_id = own_member(client);
            let generation = if owner || rng.below(2) == 0 {
                generation
            } else {
                generation.saturating_sub(rng.below(2))
            };
            let input = if kind == Kind::StoreOffset {
                // At or below a next offset an answer showed before this request (so
                // the log has reached it): the group offset is an object of its own,
                // checked apart from the log (see `GroupOffsetModel`).
                GroupOffsetInput::Store {
                    member_id,
                    generation,
                    offset: rng.below(head + 1),
                }
            } else {
                GroupOffsetInput::Delete { member_id, generation }
            };
            Drawn::GroupOffset(partition, group, input)
        }
        Kind::SetOwner => {
            let (generation, _) = seen.owner.get(&(partition, group)).copied().unwrap_or((0, false));
            // The next generation mostly (two clients that saw the same one race for
            // it), sometimes the one it saw (refused) or one further.
            let generation = match rng.below(8) {
                0 => generation,
                1 => generation + 2,
                _ => generation + 1,
            };
            Drawn::GroupOffset(
                partition,
                group,
                GroupOffsetInput::SetOwner {
                    member_id: own_member(client),
                    generation,
                },
            )
        }
        Kind::Purge => Drawn::Partition(partition, PartitionInput::Purge),
        Kind::Join => Drawn::Group(
            group,
            GroupInput::Join {
                member_id: 1 + rng.below(u64::from(MEMBER_POOL_SIZE)) as u32,
            },
        ),
        Kind::Leave => Drawn::Group(
            group,
            GroupInput::Leave {
                member_id: 1 + rng.below(u64::from(MEMBER_POOL_SIZE)) as u32,
            },
        ),
        Kind::CreateUser => Drawn::User(rng.index(USER_NAME_POOL_SIZE), UserInput::Create),
        Kind::DeleteUser => {
            let name = rng.index(USER_NAME_POOL_SIZE);
            match user_ids.get(&name) {
                Some(user_id) => Drawn::User(name, UserInput::Delete { user_id: *user_id }),
                // No id known for it yet: create it instead.
                None => Drawn::User(name, UserInput::Create),
            }
        }
    };
    (kind, drawn)
}

/// The pool user name with index `index`.
pub fn user_name(index: usize) -> String {
    format!("{}u{index}", super::SHARED_PREFIX)
}
