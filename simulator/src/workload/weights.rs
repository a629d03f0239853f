//! [`ActionWeights`]: how often each action is drawn, and [`Plane`]: the named weight
//! tables the fuzz run chooses between.
//!
//! One table, `PLANE_WEIGHTS`, gives every action its weight on every plane drawn by
//! weight: a row per action, checked at compile time, so an appended action must be
//! given a weight on each plane on purpose. The table is part of the seed contract like
//! the action order: changing a weight changes what every recorded seed of that plane
//! replays.

use crate::rng::SimRng;

use super::actions::Action;
use super::outcome::Outcome;

/// Relative weights of the actions, indexed in [`Action::ALL`] order, and of an
/// action's success among its aims.
///
/// An action draw maps one `below(total)` to an action by walking the weights in that
/// order, so with equal weights the draw is a uniform index. An aim draw is uniform
/// over the action's remaining declared outcomes when the success weight is 1 (one
/// `index` draw, as the metadata plane always drew); above 1, the action's success
/// (its first declared outcome) weighs that much against 1 for each other outcome.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ActionWeights {
    weights: [u32; Action::COUNT],
    success_weight: u32,
    partitions_budget: u64,
    warm_up: WarmUp,
}

/// What a client does before it draws by weight: the one outcome that defines its
/// plane, reached as directly as the shadow allows, so that a run under faults that
/// let only a handful of requests through still tests what its plane is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WarmUp {
    /// Draw by weight from the first request.
    None,
    /// Until some metadata create succeeded: create a stream.
    MetadataCreate,
    /// Until the client holds a partition: create a stream, then a topic; then until
    /// some send was appended: send to one.
    PartitionAppend,
    /// Until the client holds a partition: as above; then until the owner fence has
    /// refused a stale owner: create a consumer group, join members, hand the
    /// partition to one, and write as another.
    OwnerHandOff,
}

/// Partitions one client creates at most on the planes that write messages: every
/// partition is a VSR group on every replica, ticked every tick, so an unbounded
/// namespace would make a long run slower the longer it runs (and most of its groups
/// idle). Eight keep several partitions per topic and several topics in play.
pub const PARTITION_PLANE_PARTITIONS_BUDGET: u64 = 8;

/// The same bound for the planes that also churn topics and groups (mixed, uniform,
/// lifecycle): deletes free room, so the bound is rarely reached but still caps cost.
pub const CHURN_PLANE_PARTITIONS_BUDGET: u64 = 16;

/// The success weight of the planes that build deep state before they test what
/// defines them (a partition needs a stream and a topic; a stale owner needs a topic,
/// a group, a member and a hand-off): each step of the chain then succeeds about three
/// times in five it is drawn instead of one in four, which brings a lone client to
/// the defining outcomes in well under half the requests.
pub const DEEP_PLANE_SUCCESS_WEIGHT: u32 = 4;

impl ActionWeights {
    /// Every action with weight 1, every aim alike.
    pub fn uniform() -> Self {
        Self {
            weights: [1; Action::COUNT],
            success_weight: 1,
            partitions_budget: u64::MAX,
            warm_up: WarmUp::None,
        }
    }

    /// Each action weighted by `weight(action)`, every aim alike.
    pub fn from_fn(weight: impl Fn(Action) -> u32) -> Self {
        let mut weights = [0; Action::COUNT];
        for action in Action::ALL {
            weights[*action as usize] = weight(*action);
        }
        Self {
            weights,
            success_weight: 1,
            partitions_budget: u64::MAX,
            warm_up: WarmUp::None,
        }
    }

    /// The same weights, with an action's success weighing `weight` among its aims
    /// (at least 1: every declared outcome stays reachable).
    pub fn with_success_weight(self, weight: u32) -> Self {
        Self {
            success_weight: weight.max(1),
            ..self
        }
    }

    /// How much an action's success weighs among its aims.
    /// The same weights, creating at most `budget` partitions per client: creates aimed
    /// at success are not drawn beyond it (predictions are unaffected).
    pub fn with_partitions_budget(self, budget: u64) -> Self {
        Self {
            partitions_budget: budget,
            ..self
        }
    }

    /// The same weights, warming up with `warm_up` first.
    pub fn with_warm_up(self, warm_up: WarmUp) -> Self {
        Self { warm_up, ..self }
    }

    /// What a client does before it draws by weight.
    pub fn warm_up(&self) -> WarmUp {
        self.warm_up
    }

    /// Most partitions one client creates (`u64::MAX`: no bound beyond the cluster's).
    pub fn partitions_budget(&self) -> u64 {
        self.partitions_budget
    }

    /// How much more often an action's success is aimed at than each of its errors.
    pub fn success_weight(&self) -> u32 {
        self.success_weight
    }

    /// Draw the index in `aims` of the next aim to try for `action`. `aims` is what
    /// is left of its declared outcomes (the success, while left, still first).
    pub fn pick_aim(&self, action: Action, aims: &[Outcome], rng: &mut SimRng) -> usize {
        let success_left = aims.first().is_some_and(|aim| action.outcomes().first() == Some(aim));
        if self.success_weight <= 1 || !success_left {
            return rng.index(aims.len());
        }
        // usize -> u64 is lossless on every supported target.
        let others = aims.len() as u64 - 1;
        let draw = rng.below(u64::from(self.success_weight) + others);
        // Below the success weight: the success; above: one of the others, uniformly.
        draw.checked_sub(u64::from(self.success_weight))
            .map_or(0, |other| 1 + other as usize)
    }

    /// The table of the plane named `name` ("metadata", "partition", "mixed",
    /// "uniform", "lifecycle"), or `None` for a plane the workload does not drive.
    pub fn for_plane(name: &str) -> Option<Self> {
        Plane::from_name(name).map(Plane::weights)
    }

    /// The metadata plane's mix (see [`Plane::Metadata`]).
    pub fn metadata_plane() -> Self {
        Plane::Metadata.weights()
    }

    /// The weight of `action`.
    pub fn weight(&self, action: Action) -> u32 {
        self.weights[action as usize]
    }

    fn total(&self) -> u64 {
        self.weights.iter().map(|w| u64::from(*w)).sum()
    }

    /// A weighted draw, or `None` if every weight is 0.
    pub fn pick(&self, rng: &mut SimRng) -> Option<Action> {
        let total = self.total();
        if total == 0 {
            return None;
        }
        let mut draw = rng.below(total);
        for action in Action::ALL {
            let weight = u64::from(self.weight(*action));
            if draw < weight {
                return Some(*action);
            }
            draw -= weight;
        }
        None
    }
}

impl Default for ActionWeights {
    fn default() -> Self {
        Self::uniform()
    }
}

/// A workload plane: a weight table, and the outcomes without which a run of it tested
/// nothing (`MetadataWorkload::defining_outcome_missing`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Plane {
    /// Metadata only: streams, topics, users, tokens, groups.
    Metadata,
    /// Messages: mostly sends, polls and offsets, with the creates that make partitions.
    Partition,
    /// Both planes at once.
    Mixed,
    /// Every action alike (each weighs 1).
    Uniform,
    /// Things replaced while messages flow: topics created and deleted, partitions
    /// handed between consumer group members, former owners fenced off.
    Lifecycle,
}

impl Plane {
    /// Every plane.
    pub const ALL: [Plane; 5] = [
        Plane::Metadata,
        Plane::Partition,
        Plane::Mixed,
        Plane::Uniform,
        Plane::Lifecycle,
    ];

    /// Its name, as the fuzz run's `--plane` spells it.
    pub fn name(self) -> &'static str {
        match self {
            Plane::Metadata => "metadata",
            Plane::Partition => "partition",
            Plane::Mixed => "mixed",
            Plane::Uniform => "uniform",
            Plane::Lifecycle => "lifecycle",
        }
    }

    /// The plane named `name`.
    pub fn from_name(name: &str) -> Option<Plane> {
        Plane::ALL.into_iter().find(|plane| plane.name() == name)
    }

    /// Its weight table. The metadata plane draws aims uniformly (as its recorded seeds
    /// always did); the others reach partitions, so they weigh successes by
    /// [`DEEP_PLANE_SUCCESS_WEIGHT`] (uniform too: every action weighs 1 there, and
    /// with uniform aims a lone client needs a few hundred requests to see an append).
    pub fn weights(self) -> ActionWeights {
        // A deep plane: successes weigh more, the partitions a client makes are
        // bounded, and it warms up towards its defining outcome.
        let deep = |weights: ActionWeights, partitions_budget: u64, warm_up: WarmUp| {
            weights
                .with_success_weight(DEEP_PLANE_SUCCESS_WEIGHT)
                .with_partitions_budget(partitions_budget)
                .with_warm_up(warm_up)
        };
        match self {
            Plane::Metadata => ActionWeights::from_fn(column(METADATA)).with_warm_up(WarmUp::MetadataCreate),
            Plane::Uniform => deep(
                ActionWeights::uniform(),
                CHURN_PLANE_PARTITIONS_BUDGET,
                WarmUp::PartitionAppend,
            ),
            Plane::Partition => deep(
                ActionWeights::from_fn(column(PARTITION)),
                PARTITION_PLANE_PARTITIONS_BUDGET,
                WarmUp::PartitionAppend,
            ),
            Plane::Mixed => deep(
                ActionWeights::from_fn(column(MIXED)),
                CHURN_PLANE_PARTITIONS_BUDGET,
                WarmUp::PartitionAppend,
            ),
            Plane::Lifecycle => deep(
                ActionWeights::from_fn(column(LIFECYCLE)),
                CHURN_PLANE_PARTITIONS_BUDGET,
                WarmUp::OwnerHandOff,
            ),
        }
    }
}

/// Each action's weight on the planes that draw by weight, one row per action in
/// [`Action::ALL`] order (checked at compile time below, so an appended action must be
/// given a weight on every plane on purpose), columns [`METADATA`], [`PARTITION`],
/// [`MIXED`] and [`LIFECYCLE`]:
///
/// - metadata: creates outweigh updates, which outweigh deletes, so the metadata grows
///   deep enough (streams with topics with groups) for every action to find targets.
///   The actions appended for partitions weigh 0 here, so the metadata plane's recorded
///   seeds draw the same ops as before they existed.
/// - partition: sends and polls dominate, offsets follow; streams and topics are
///   created (never deleted) often enough for every client to have partitions early;
///   groups get members and owners so group offsets are exercised; purges and segment
///   deletions are rare, so polls mostly find messages. `SendOversizedBatch` and
///   `PurgeTopic` weigh 0: half a megabyte per request, journaled on every replica, was
///   most of a 100,000-tick run's memory at weight 1; and a purge is a plan of one
///   request per partition, so under heavy faults and crashes, where a run gets a dozen
///   requests through, one purge could take them all. The churn planes keep both.
/// - mixed: the metadata plane's weights for its actions (a test holds it to that), and
///   the partition actions weighted so about two requests in five go to partitions.
/// - lifecycle: topics created and deleted (so partition groups come and go), consumer
///   groups joined and their partitions handed to new owners, former owners writing
///   after the hand-off (which the fence must refuse), the owners storing offsets, and
///   sends throughout.
#[rustfmt::skip]
const PLANE_WEIGHTS: [(Action, [u32; 4]); Action::COUNT] = [
    //                                metadata, partition, mixed, lifecycle
    (Action::CreateStream,              [ 4,  3,  4,  3]),
    (Action::UpdateStream,              [ 2,  0,  2,  0]),
    (Action::DeleteStream,              [ 1,  0,  1,  0]),
    (Action::CreateTopic,               [ 4,  5,  4,  4]),
    (Action::UpdateTopic,               [ 2,  0,  2,  0]),
    (Action::DeleteTopic,               [ 1,  0,  1,  1]),
    (Action::CreateUser,                [ 4,  1,  4,  0]),
    (Action::UpdateUser,                [ 2,  0,  2,  0]),
    (Action::DeleteUser,                [ 1,  0,  1,  0]),
    (Action::ChangePassword,            [ 2,  0,  2,  0]),
    (Action::UpdatePermissions,         [ 2,  0,  2,  0]),
    (Action::CreatePersonalAccessToken, [ 3,  0,  3,  0]),
    (Action::DeletePersonalAccessToken, [ 2,  0,  2,  0]),
    (Action::CreateConsumerGroup,       [ 3,  1,  3,  4]),
    (Action::DeleteConsumerGroup,       [ 2,  0,  2,  0]),
    (Action::LoginUser,                 [ 2,  0,  2,  0]),
    (Action::SendMessages,              [ 0, 12,  6,  4]),
    (Action::PollMessages,              [ 0,  8,  4,  1]),
    (Action::StoreConsumerOffset,       [ 0,  4,  2,  3]),
    (Action::DeleteConsumerOffset,      [ 0,  1,  1,  1]),
    (Action::StoreStaleOwnerOffset,     [ 0,  0,  1,  4]),
    (Action::JoinConsumerGroup,         [ 0,  1,  2,  6]),
    (Action::LeaveConsumerGroup,        [ 0,  0,  1,  2]),
    (Action::SetGroupOwner,             [ 0,  1,  2,  6]),
    (Action::CreatePartitions,          [ 0,  1,  1,  0]),
    (Action::DeletePartitions,          [ 0,  0,  1,  0]),
    (Action::PurgeStream,               [ 0,  0,  1,  0]),
    (Action::PurgeTopic,                [ 0,  0,  1,  0]),
    (Action::DeleteSegments,            [ 0,  1,  1,  0]),
    (Action::SendOversizedBatch,        [ 0,  0,  1,  0]),
    (Action::RequestAsUser,             [ 2,  1,  2,  0]),
];

/// The metadata plane's column of [`PLANE_WEIGHTS`].
const METADATA: usize = 0;
/// The partition plane's column.
const PARTITION: usize = 1;
/// The mixed plane's column.
const MIXED: usize = 2;
/// The lifecycle plane's column.
const LIFECYCLE: usize = 3;

// Row `i` of the table is the action at position `i` of `Action::ALL`.
const _: () = {
    let mut row = 0;
    while row < Action::COUNT {
        assert!(
            PLANE_WEIGHTS[row].0 as usize == row,
            "PLANE_WEIGHTS rows follow Action::ALL"
        );
        row += 1;
    }
};

/// The weights of one column of [`PLANE_WEIGHTS`].
fn column(column: usize) -> impl Fn(Action) -> u32 {
    move |action| PLANE_WEIGHTS[action as usize].1[column]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mixed_plane_weighs_each_metadata_action_as_the_metadata_plane_does() {
        for (action, weights) in PLANE_WEIGHTS {
            if weights[METADATA] > 0 {
                assert_eq!(weights[MIXED], weights[METADATA], "{action:?}");
            }
        }
    }
}
