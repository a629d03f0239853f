//! The metadata state machine: what the metadata VSR group replicates.
//!
//! Models: streams, topics and their partitions (each with the VSR group id that
//! replicates it), consumer groups and their members, users, permissions and personal
//! access tokens, changed only by [`MetadataState::apply`], which is a pure function of the
//! state, the op and its [`ApplyContext`]. Every replica that applies the same
//! committed ops with the same contexts reaches the same state, byte for byte (compare
//! with [`MetadataState::digest`]). Ids come from counters held in the state; time and
//! randomness come from the context, assigned once by the primary and replicated in
//! the prepare. A failed op changes nothing except the applied op number.
//!
//! Sessions are part of the state: a login opens one for the client that sent it
//! (`sessions.rs`), and [`MetadataState::apply_request`] authorises every other op
//! against its client's session before applying it (`authorize.rs`).
//!
//! Does not model: request deduplication (the client table), partition data
//! (messages, offsets: the partition plane), placement of partition groups on
//! replicas, or the consensus that orders ops.

use std::collections::{BTreeMap, BTreeSet};

use super::credentials::{derive_salt, derive_token, hash_password, hash_token};
use super::entities::{ConsumerGroup, Partition, PersonalAccessToken, Stream, Topic, User};
use super::group_id::{PARTITION_GROUP_OP_LIMIT, partition_group_id};
use super::limits::{
    CONSUMER_GROUPS_PER_TOPIC_MAX, Limit, MEMBERS_PER_GROUP_MAX, PARTITIONS_PER_TOPIC_MAX, PARTITIONS_TOTAL_MAX,
    PERMISSION_STREAMS_MAX, STREAMS_MAX, TOKENS_PER_USER_MAX, TOPICS_PER_STREAM_MAX, USERS_MAX,
};
use super::name::{is_valid_name, is_valid_password};
use super::ops::{Durability, MetadataOp};
use super::permissions::Permissions;
use super::reply::MetadataReply;
use super::sessions::{Session, Sessions, derive_session_secret};

/// The root user's id. Root exists from genesis, holds every permission, and can be
/// neither deleted, deactivated, nor have its permissions changed.
pub const ROOT_USER_ID: u32 = 0;

/// The root user's name at genesis.
pub const ROOT_USERNAME: &str = "root";

/// What the primary fixes for an op when it prepares it, replicated with the op so
/// every replica applies it identically.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ApplyContext {
    /// The op's timestamp from the prepare header, assigned by the primary: creation
    /// times and token expiry are judged against it, never against a local clock.
    pub timestamp_micros: u64,
    /// The op's number in the metadata log. Strictly increasing across applied ops;
    /// 0 is genesis and is never applied. Partitions an op creates take their group
    /// ids from it (`partition_group_id`).
    pub op_number: u64,
    /// The view of the prepare header that carried the op. Partitions an op creates
    /// record it as `created_in_view`: their groups start in that view.
    pub view: u64,
    /// Seeded randomness drawn by the primary for this op (salts, tokens, session
    /// secrets).
    pub entropy: u64,
    /// The client id that sent the op (the prepare header's `client`): a login opens
    /// its session for this client.
    pub client: u128,
    /// The session the client sent the op in (the request header's `context`): any op
    /// but a login is authorised only if that is still the client's session.
    pub session: u64,
}

/// Internal result: `Err` carries the error reply, and nothing has been changed.
type Applied = Result<MetadataReply, MetadataReply>;

/// The replicated metadata. See the module docs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MetadataState {
    pub(super) streams: BTreeMap<u32, Stream>,
    pub(super) users: BTreeMap<u32, User>,
    pub(super) next_stream_id: u32,
    pub(super) next_user_id: u32,
    pub(super) op_number_applied: u64,
    /// The number of the latest applied op that created or removed a partition; 0 at
    /// genesis. See [`MetadataState::partitions_changed_at`].
    pub(super) partitions_changed_at: u64,
    /// Open sessions by client id (see `sessions.rs`).
    pub(super) sessions: Sessions,
}

impl MetadataState {
    /// The genesis state: no streams, and the root user with `root_password`, salted
    /// from `entropy`. Every replica must be booted with the same two values (they come
    /// from the cluster's configuration).
    ///
    /// Panics if `root_password` is empty or longer than `PASSWORD_BYTES_MAX`: that is a
    /// boot configuration error, not input.
    pub fn new(root_password: &str, entropy: u64) -> Self {
        assert!(
            is_valid_password(root_password),
            "the root password must be 1 to PASSWORD_BYTES_MAX bytes"
        );
        let salt = derive_salt(entropy, 0);
        let root = User {
            id: ROOT_USER_ID,
            username: ROOT_USERNAME.to_owned(),
            password_hash: hash_password(salt, root_password),
            salt,
            active: true,
            created_at_micros: 0,
            permissions: Permissions::full(),
            tokens: BTreeMap::new(),
        };
        Self {
            streams: BTreeMap::new(),
            users: BTreeMap::from([(ROOT_USER_ID, root)]),
            next_stream_id: 0,
            next_user_id: ROOT_USER_ID + 1,
            op_number_applied: 0,
            partitions_changed_at: 0,
            sessions: Sessions::default(),
        }
    }

    /// Apply one committed op sent by `ctx.client`, if that client may: the entry point
    /// of the state machine. A refused op (see [`MetadataState::authorize`]) changes
    /// nothing but the applied op number and answers `Unauthenticated` or
    /// `PermissionDenied`.
    ///
    /// Panics like [`MetadataState::apply`].
    pub fn apply_request(&mut self, op: &MetadataOp, ctx: &ApplyContext) -> MetadataReply {
        if let Err(refused) = self.authorize(ctx.client, ctx.session, op) {
            assert!(
                ctx.op_number > self.op_number_applied,
                "metadata op {} applied twice",
                ctx.op_number
            );
            self.op_number_applied = ctx.op_number;
            return refused;
        }
        self.apply(op, ctx)
    }

    /// Apply one committed op and say how it went, without authorising it (see
    /// [`MetadataState::apply_request`]).
    ///
    /// Panics if `ctx.op_number` is not above the last applied op number: applying ops
    /// out of order or twice is a bug in the caller, and continuing would fork replicas.
    pub fn apply(&mut self, op: &MetadataOp, ctx: &ApplyContext) -> MetadataReply {
        assert!(
            ctx.op_number > self.op_number_applied,
            "metadata op {} applied after op {}",
            ctx.op_number,
            self.op_number_applied
        );
        self.op_number_applied = ctx.op_number;
        let applied = match op {
            MetadataOp::CreateStream { name } => self.create_stream(name, ctx),
            MetadataOp::UpdateStream { stream_id, name } => self.update_stream(*stream_id, name),
            MetadataOp::DeleteStream { stream_id } => self.delete_stream(*stream_id, ctx),
            MetadataOp::CreateTopic {
                stream_id,
                name,
                partitions,
                durability,
                message_expiry_micros,
            } => self.create_topic(*stream_id, name, *partitions, *durability, *message_expiry_micros, ctx),
            MetadataOp::UpdateTopic {
                stream_id,
                topic_id,
                name,
                durability,
                message_expiry_micros,
            } => self.update_topic(*stream_id, *topic_id, name, *durability, *message_expiry_micros, ctx),
            MetadataOp::DeleteTopic { stream_id, topic_id } => self.delete_topic(*stream_id, *topic_id, ctx),
            MetadataOp::CreateUser {
                username,
                password,
                active,
            } => self.create_user(username, password, *active, ctx),
            MetadataOp::UpdateUser {
                user_id,
                username,
                active,
            } => self.update_user(*user_id, username.as_deref(), *active),
            MetadataOp::DeleteUser { user_id } => self.delete_user(*user_id),
            MetadataOp::ChangePassword {
                user_id,
                current_password,
                new_password,
            } => self.change_password(*user_id, current_password, new_password, ctx),
            MetadataOp::UpdatePermissions { user_id, permissions } => self.update_permissions(*user_id, permissions),
            MetadataOp::CreatePersonalAccessToken {
                user_id,
                name,
                expiry_micros,
            } => self.create_token(*user_id, name, *expiry_micros, ctx),
            MetadataOp::DeletePersonalAccessToken { user_id, name } => self.delete_token(*user_id, name),
            MetadataOp::CreateConsumerGroup {
                stream_id,
                topic_id,
                name,
            } => self.create_group(*stream_id, *topic_id, name, ctx),
            MetadataOp::DeleteConsumerGroup {
                stream_id,
                topic_id,
                group_id,
            } => self.delete_group(*stream_id, *topic_id, *group_id),
            MetadataOp::LoginUser { username, password } => {
                let user_id = self.login_user(username, password);
                user_id.map(|user_id| self.open_session(user_id, ctx))
            }
            MetadataOp::LoginWithPersonalAccessToken { token } => {
                let user_id = self.login_with_token(token, ctx);
                user_id.map(|user_id| self.open_session(user_id, ctx))
            }
            MetadataOp::CreatePartitions {
                stream_id,
                topic_id,
                count,
            } => self.create_partitions(*stream_id, *topic_id, *count, ctx),
            MetadataOp::DeletePartitions {
                stream_id,
                topic_id,
                count,
            } => self.delete_partitions(*stream_id, *topic_id, *count, ctx),
            MetadataOp::JoinConsumerGroup {
                stream_id,
                topic_id,
                group_id,
                member_id,
            } => self.join_group(*stream_id, *topic_id, *group_id, *member_id),
            MetadataOp::LeaveConsumerGroup {
                stream_id,
                topic_id,
                group_id,
                member_id,
            } => self.leave_group(*stream_id, *topic_id, *group_id, *member_id),
        };
        applied.unwrap_or_else(|error| error)
    }

    // ---- streams ----

    fn create_stream(&mut self, name: &str, ctx: &ApplyContext) -> Applied {
        check_name(name)?;
        if self.streams.values().any(|stream| stream.name == name) {
            return Err(MetadataReply::NameAlreadyExists);
        }
        check_room(self.streams.len(), STREAMS_MAX, Limit::Streams)?;
        let stream_id = take_id(&mut self.next_stream_id)?;
        self.streams.insert(
            stream_id,
            Stream {
                id: stream_id,
                name: name.to_owned(),
                created_at_micros: ctx.timestamp_micros,
                topics: BTreeMap::new(),
                next_topic_id: 0,
            },
        );
        Ok(MetadataReply::StreamCreated { stream_id })
    }

    fn update_stream(&mut self, stream_id: u32, name: &str) -> Applied {
        check_name(name)?;
        if !self.streams.contains_key(&stream_id) {
            return Err(MetadataReply::StreamNotFound);
        }
        if self.streams.values().any(|s| s.id != stream_id && s.name == name) {
            return Err(MetadataReply::NameAlreadyExists);
        }
        self.stream_mut(stream_id)?.name = name.to_owned();
        Ok(MetadataReply::Ok)
    }

    /// Deletes the stream's topics and groups too, and every user's permissions on it
    /// (ids are never reused, but a dangling entry would still count against
    /// `PERMISSION_STREAMS_MAX`). Moves `partitions_changed_at` only if the stream had
    /// topics (every topic has a partition; an empty stream removes none).
    fn delete_stream(&mut self, stream_id: u32, ctx: &ApplyContext) -> Applied {
        let stream = self.streams.remove(&stream_id).ok_or(MetadataReply::StreamNotFound)?;
        for user in self.users.values_mut() {
            user.permissions.streams.remove(&stream_id);
        }
        if !stream.topics.is_empty() {
            self.partitions_changed_at = ctx.op_number;
        }
        Ok(MetadataReply::Ok)
    }

    // ---- topics ----

    fn create_topic(
        &mut self,
        stream_id: u32,
        name: &str,
        partitions: u32,
        durability: Durability,
        message_expiry_micros: u64,
        ctx: &ApplyContext,
    ) -> Applied {
        check_name(name)?;
        if !(1..=PARTITIONS_PER_TOPIC_MAX).contains(&partitions) {
            return Err(MetadataReply::InvalidPartitionCount);
        }
        let partitions_total = self.partition_count();
        let stream = self.stream_mut(stream_id)?;
        if stream.topics.values().any(|topic| topic.name == name) {
            return Err(MetadataReply::NameAlreadyExists);
        }
        check_room(stream.topics.len(), TOPICS_PER_STREAM_MAX, Limit::TopicsPerStream)?;
        check_partitions_room(partitions_total, partitions)?;
        // Before take_id: a refused op must leave the topic counter alone.
        let partitions = new_partitions(0, partitions, message_expiry_micros, ctx)?;
        let topic_id = take_id(&mut stream.next_topic_id)?;
        stream.topics.insert(
            topic_id,
            Topic {
                id: topic_id,
                name: name.to_owned(),
                created_at_micros: ctx.timestamp_micros,
                partitions,
                durability,
                message_expiry_micros,
                consumer_groups: BTreeMap::new(),
                next_group_id: 0,
            },
        );
        self.partitions_changed_at = ctx.op_number;
        Ok(MetadataReply::TopicCreated { topic_id })
    }

    fn update_topic(
        &mut self,
        stream_id: u32,
        topic_id: u32,
        name: &str,
        durability: Durability,
        message_expiry_micros: u64,
        ctx: &ApplyContext,
    ) -> Applied {
        check_name(name)?;
        let stream = self.stream_mut(stream_id)?;
        if !stream.topics.contains_key(&topic_id) {
            return Err(MetadataReply::TopicNotFound);
        }
        if stream.topics.values().any(|t| t.id != topic_id && t.name == name) {
            return Err(MetadataReply::NameAlreadyExists);
        }
        let topic = stream.topics.get_mut(&topic_id).ok_or(MetadataReply::TopicNotFound)?;
        let durability_changed = topic.durability != durability;
        topic.name = name.to_owned();
        topic.durability = durability;
        topic.message_expiry_micros = message_expiry_micros;
        if durability_changed {
            // The directory carries each partition's durability, which its store acts on.
            self.partitions_changed_at = ctx.op_number;
        }
        Ok(MetadataReply::Ok)
    }

    /// Removes the topic's partitions and consumer groups with it.
    fn delete_topic(&mut self, stream_id: u32, topic_id: u32, ctx: &ApplyContext) -> Applied {
        let stream = self.stream_mut(stream_id)?;
        stream.topics.remove(&topic_id).ok_or(MetadataReply::TopicNotFound)?;
        self.partitions_changed_at = ctx.op_number;
        Ok(MetadataReply::Ok)
    }

    // ---- partitions ----

    /// Appends `count` partitions with ids from the topic's current partition count on.
    fn create_partitions(&mut self, stream_id: u32, topic_id: u32, count: u32, ctx: &ApplyContext) -> Applied {
        let partitions_total = self.partition_count();
        let topic = self.topic_mut(stream_id, topic_id)?;
        let first_partition_id = partition_len(topic);
        if count == 0 || u64::from(first_partition_id) + u64::from(count) > u64::from(PARTITIONS_PER_TOPIC_MAX) {
            return Err(MetadataReply::InvalidPartitionCount);
        }
        check_partitions_room(partitions_total, count)?;
        let partitions = new_partitions(first_partition_id, count, topic.message_expiry_micros, ctx)?;
        topic.partitions.extend(partitions);
        self.partitions_changed_at = ctx.op_number;
        Ok(MetadataReply::PartitionsCreated { first_partition_id })
    }

    /// Removes the topic's `count` highest-numbered partitions; a topic keeps at least
    /// one, so `count` must be below its partition count.
    fn delete_partitions(&mut self, stream_id: u32, topic_id: u32, count: u32, ctx: &ApplyContext) -> Applied {
        let topic = self.topic_mut(stream_id, topic_id)?;
        let current = partition_len(topic);
        if count == 0 || count >= current {
            return Err(MetadataReply::InvalidPartitionCount);
        }
        // current - count < current <= PARTITIONS_PER_TOPIC_MAX: fits a usize.
        topic.partitions.truncate((current - count) as usize);
        self.partitions_changed_at = ctx.op_number;
        Ok(MetadataReply::Ok)
    }

    // ---- consumer groups ----

    fn create_group(&mut self, stream_id: u32, topic_id: u32, name: &str, ctx: &ApplyContext) -> Applied {
        check_name(name)?;
        let topic = self.topic_mut(stream_id, topic_id)?;
        if topic.consumer_groups.values().any(|group| group.name == name) {
            return Err(MetadataReply::NameAlreadyExists);
        }
        check_room(
            topic.consumer_groups.len(),
            CONSUMER_GROUPS_PER_TOPIC_MAX,
            Limit::ConsumerGroupsPerTopic,
        )?;
        let group_id = take_id(&mut topic.next_group_id)?;
        topic.consumer_groups.insert(
            group_id,
            ConsumerGroup {
                id: group_id,
                name: name.to_owned(),
                created_at_micros: ctx.timestamp_micros,
                members: BTreeSet::new(),
                generation: 0,
            },
        );
        Ok(MetadataReply::GroupCreated { group_id })
    }

    fn delete_group(&mut self, stream_id: u32, topic_id: u32, group_id: u32) -> Applied {
        let topic = self.topic_mut(stream_id, topic_id)?;
        topic
            .consumer_groups
            .remove(&group_id)
            .ok_or(MetadataReply::GroupNotFound)?;
        Ok(MetadataReply::Ok)
    }

    fn join_group(&mut self, stream_id: u32, topic_id: u32, group_id: u32, member_id: u32) -> Applied {
        let group = self.group_mut(stream_id, topic_id, group_id)?;
        if group.members.contains(&member_id) {
            return Err(MetadataReply::AlreadyMember);
        }
        check_room(group.members.len(), MEMBERS_PER_GROUP_MAX, Limit::MembersPerGroup)?;
        group.members.insert(member_id);
        Ok(MetadataReply::Joined {
            generation: bump_generation(group),
        })
    }

    fn leave_group(&mut self, stream_id: u32, topic_id: u32, group_id: u32, member_id: u32) -> Applied {
        let group = self.group_mut(stream_id, topic_id, group_id)?;
        if !group.members.remove(&member_id) {
            return Err(MetadataReply::MemberNotFound);
        }
        Ok(MetadataReply::Left {
            generation: bump_generation(group),
        })
    }

    // ---- users ----

    fn create_user(&mut self, username: &str, password: &str, active: bool, ctx: &ApplyContext) -> Applied {
        check_name(username)?;
        check_password(password)?;
        if self.user_by_name(username).is_some() {
            return Err(MetadataReply::NameAlreadyExists);
        }
        check_room(self.users.len(), USERS_MAX, Limit::Users)?;
        let user_id = take_id(&mut self.next_user_id)?;
        let salt = derive_salt(ctx.entropy, ctx.op_number);
        self.users.insert(
            user_id,
            User {
                id: user_id,
                username: username.to_owned(),
                password_hash: hash_password(salt, password),
                salt,
                active,
                created_at_micros: ctx.timestamp_micros,
                permissions: Permissions::default(),
                tokens: BTreeMap::new(),
            },
        );
        Ok(MetadataReply::UserCreated { user_id })
    }

    fn update_user(&mut self, user_id: u32, username: Option<&str>, active: Option<bool>) -> Applied {
        if let Some(username) = username {
            check_name(username)?;
        }
        if !self.users.contains_key(&user_id) {
            return Err(MetadataReply::UserNotFound);
        }
        if user_id == ROOT_USER_ID && active == Some(false) {
            return Err(MetadataReply::CannotModifyRoot);
        }
        if let Some(username) = username
            && self.users.values().any(|u| u.id != user_id && u.username == username)
        {
            return Err(MetadataReply::NameAlreadyExists);
        }
        let user = self.user_mut(user_id)?;
        if let Some(username) = username {
            user.username = username.to_owned();
        }
        if let Some(active) = active {
            user.active = active;
        }
        Ok(MetadataReply::Ok)
    }

    fn delete_user(&mut self, user_id: u32) -> Applied {
        if user_id == ROOT_USER_ID {
            return Err(MetadataReply::CannotModifyRoot);
        }
        self.users.remove(&user_id).ok_or(MetadataReply::UserNotFound)?;
        Ok(MetadataReply::Ok)
    }

    fn change_password(&mut self, user_id: u32, current: &str, new: &str, ctx: &ApplyContext) -> Applied {
        check_password(new)?;
        let user = self.user_mut(user_id)?;
        if hash_password(user.salt, current) != user.password_hash {
            return Err(MetadataReply::InvalidCredentials);
        }
        user.salt = derive_salt(ctx.entropy, ctx.op_number);
        user.password_hash = hash_password(user.salt, new);
        Ok(MetadataReply::Ok)
    }

    fn update_permissions(&mut self, user_id: u32, permissions: &Permissions) -> Applied {
        if user_id == ROOT_USER_ID {
            return Err(MetadataReply::CannotModifyRoot);
        }
        if !self.users.contains_key(&user_id) {
            return Err(MetadataReply::UserNotFound);
        }
        if permissions.streams.len() > PERMISSION_STREAMS_MAX {
            return Err(MetadataReply::LimitReached {
                what: Limit::PermissionStreams,
            });
        }
        if permissions.streams.keys().any(|id| !self.streams.contains_key(id)) {
            return Err(MetadataReply::StreamNotFound);
        }
        self.user_mut(user_id)?.permissions = permissions.clone();
        Ok(MetadataReply::Ok)
    }

    // ---- personal access tokens ----

    /// `expiry_micros` is a lifetime counted from the op's timestamp; 0 = never. A
    /// lifetime that overflows the clock never expires either.
    fn create_token(&mut self, user_id: u32, name: &str, expiry_micros: u64, ctx: &ApplyContext) -> Applied {
        check_name(name)?;
        let user = self.user_mut(user_id)?;
        if user.tokens.contains_key(name) {
            return Err(MetadataReply::NameAlreadyExists);
        }
        check_room(user.tokens.len(), TOKENS_PER_USER_MAX, Limit::TokensPerUser)?;
        let token = derive_token(ctx.entropy, ctx.op_number, user_id, name);
        let expires_at_micros = match expiry_micros {
            0 => None,
            lifetime => ctx.timestamp_micros.checked_add(lifetime),
        };
        user.tokens.insert(
            name.to_owned(),
            PersonalAccessToken {
                name: name.to_owned(),
                token_hash: hash_token(&token),
                created_at_micros: ctx.timestamp_micros,
                expires_at_micros,
            },
        );
        Ok(MetadataReply::TokenCreated { token })
    }

    fn delete_token(&mut self, user_id: u32, name: &str) -> Applied {
        let user = self.user_mut(user_id)?;
        user.tokens.remove(name).ok_or(MetadataReply::TokenNotFound)?;
        Ok(MetadataReply::Ok)
    }

    // ---- logins (they open a session) ----

    /// An unknown username and a wrong password give the same answer, so a login does
    /// not reveal which usernames exist. Inactivity is reported only to someone who
    /// knows the password.
    fn login_user(&self, username: &str, password: &str) -> Result<u32, MetadataReply> {
        let user = self.user_by_name(username).ok_or(MetadataReply::InvalidCredentials)?;
        if hash_password(user.salt, password) != user.password_hash {
            return Err(MetadataReply::InvalidCredentials);
        }
        if !user.active {
            return Err(MetadataReply::UserInactive);
        }
        Ok(user.id)
    }

    /// Scans every user's tokens (bounded by `USERS_MAX` x `TOKENS_PER_USER_MAX`) in id
    /// then name order; an unknown token is `InvalidCredentials`.
    fn login_with_token(&self, token: &str, ctx: &ApplyContext) -> Result<u32, MetadataReply> {
        let token_hash = hash_token(token);
        let (user, pat) = self
            .users
            .values()
            .find_map(|user| {
                user.tokens
                    .values()
                    .find(|pat| pat.token_hash == token_hash)
                    .map(|pat| (user, pat))
            })
            .ok_or(MetadataReply::InvalidCredentials)?;
        if pat.is_expired_at(ctx.timestamp_micros) {
            return Err(MetadataReply::TokenExpired);
        }
        if !user.active {
            return Err(MetadataReply::UserInactive);
        }
        Ok(user.id)
    }

    /// Open the session of a login that succeeded as `user_id` (see `sessions.rs`).
    fn open_session(&mut self, user_id: u32, ctx: &ApplyContext) -> MetadataReply {
        let session = Session {
            id: ctx.op_number,
            user_id,
            secret: derive_session_secret(ctx.entropy, ctx.op_number, ctx.client),
        };
        self.sessions.open(ctx.client, session);
        MetadataReply::LoggedIn {
            user_id,
            session: session.id,
            secret: session.secret,
        }
    }

    // ---- lookups ----

    fn stream_mut(&mut self, stream_id: u32) -> Result<&mut Stream, MetadataReply> {
        self.streams.get_mut(&stream_id).ok_or(MetadataReply::StreamNotFound)
    }

    fn topic_mut(&mut self, stream_id: u32, topic_id: u32) -> Result<&mut Topic, MetadataReply> {
        self.stream_mut(stream_id)?
            .topics
            .get_mut(&topic_id)
            .ok_or(MetadataReply::TopicNotFound)
    }

    fn group_mut(&mut self, stream_id: u32, topic_id: u32, group_id: u32) -> Result<&mut ConsumerGroup, MetadataReply> {
        self.topic_mut(stream_id, topic_id)?
            .consumer_groups
            .get_mut(&group_id)
            .ok_or(MetadataReply::GroupNotFound)
    }

    fn user_mut(&mut self, user_id: u32) -> Result<&mut User, MetadataReply> {
        self.users.get_mut(&user_id).ok_or(MetadataReply::UserNotFound)
    }

    /// Streams by id.
    pub fn streams(&self) -> &BTreeMap<u32, Stream> {
        &self.streams
    }

    /// One stream.
    pub fn stream(&self, stream_id: u32) -> Option<&Stream> {
        self.streams.get(&stream_id)
    }

    /// One topic.
    pub fn topic(&self, stream_id: u32, topic_id: u32) -> Option<&Topic> {
        self.stream(stream_id)?.topics.get(&topic_id)
    }

    /// Users by id (root included).
    pub fn users(&self) -> &BTreeMap<u32, User> {
        &self.users
    }

    /// One user.
    pub fn user(&self, user_id: u32) -> Option<&User> {
        self.users.get(&user_id)
    }

    /// The user named `username` (a linear scan, bounded by `USERS_MAX`).
    pub fn user_by_name(&self, username: &str) -> Option<&User> {
        self.users.values().find(|user| user.username == username)
    }

    /// The number of the last op applied (0 at genesis).
    pub fn op_number_applied(&self) -> u64 {
        self.op_number_applied
    }

    /// The number of the latest applied op that created or removed any partition
    /// (a successful `CreateTopic`, `DeleteTopic`, `CreatePartitions` or
    /// `DeletePartitions`, or a `DeleteStream` of a stream that had topics) or changed
    /// a topic's durability (an `UpdateTopic` that did); 0 at
    /// genesis. A failed op never moves it. A node keeps the value it last reconciled
    /// its partition groups at and reconciles again when this differs.
    pub fn partitions_changed_at(&self) -> u64 {
        self.partitions_changed_at
    }

    /// Every partition as (stream id, topic id, topic, partition), in stream, topic
    /// then partition id order.
    pub fn partitions(&self) -> impl Iterator<Item = (u32, u32, &Topic, &Partition)> {
        self.streams.iter().flat_map(|(stream_id, stream)| {
            stream.topics.iter().flat_map(move |(topic_id, topic)| {
                topic
                    .partitions
                    .iter()
                    .map(move |partition| (*stream_id, *topic_id, topic, partition))
            })
        })
    }

    /// Partitions across every topic of every stream.
    pub fn partition_count(&self) -> u64 {
        self.streams
            .values()
            .flat_map(|stream| stream.topics.values())
            .map(|topic| u64::from(partition_len(topic)))
            .sum()
    }

    /// A 128-bit checksum of the canonical encoding of the whole state (the snapshot
    /// bytes): equal on two replicas exactly when their states are equal, up to hash
    /// collisions. For comparing replicas with each other and with a shadow model.
    pub fn digest(&self) -> u128 {
        crate::wire::checksum(&self.encode_state())
    }

    /// One line of counts, for logs and reports.
    pub fn summary(&self) -> String {
        let topics = self.streams.values().map(|s| s.topics.len()).sum::<usize>();
        let groups = self
            .streams
            .values()
            .flat_map(|s| s.topics.values())
            .map(|t| t.consumer_groups.len())
            .sum::<usize>();
        let members = self
            .streams
            .values()
            .flat_map(|s| s.topics.values())
            .flat_map(|t| t.consumer_groups.values())
            .map(|g| g.members.len())
            .sum::<usize>();
        let tokens = self.users.values().map(|u| u.tokens.len()).sum::<usize>();
        format!(
            "op={} streams={} topics={} partitions={} partitions_changed_at={} groups={} members={} users={} tokens={}",
            self.op_number_applied,
            self.streams.len(),
            topics,
            self.partition_count(),
            self.partitions_changed_at,
            groups,
            members,
            self.users.len(),
            tokens
        )
    }
}

fn check_name(name: &str) -> Result<(), MetadataReply> {
    if is_valid_name(name) {
        Ok(())
    } else {
        Err(MetadataReply::InvalidName)
    }
}

fn check_password(password: &str) -> Result<(), MetadataReply> {
    if is_valid_password(password) {
        Ok(())
    } else {
        Err(MetadataReply::InvalidPassword)
    }
}

/// `LimitReached` unless one more entity fits beside `len` existing ones.
fn check_room(len: usize, max: usize, what: Limit) -> Result<(), MetadataReply> {
    if len < max {
        Ok(())
    } else {
        Err(MetadataReply::LimitReached { what })
    }
}

/// `LimitReached { PartitionsTotal }` unless `adding` more partitions fit beside the
/// cluster's `total`.
fn check_partitions_room(total: u64, adding: u32) -> Result<(), MetadataReply> {
    if total + u64::from(adding) <= PARTITIONS_TOTAL_MAX {
        Ok(())
    } else {
        Err(MetadataReply::LimitReached {
            what: Limit::PartitionsTotal,
        })
    }
}

/// The partitions `first_id..first_id + count` as the op `ctx` creates them: group ids
/// from its op number, starting in its view, with the topic's message expiry as of
/// this op. `LimitReached { Ids }` if the op number is
/// too large to form a group id (see `PARTITION_GROUP_OP_LIMIT`). The caller has
/// checked that the ids stay below `PARTITIONS_PER_TOPIC_MAX`.
fn new_partitions(
    first_id: u32,
    count: u32,
    message_expiry_micros: u64,
    ctx: &ApplyContext,
) -> Result<Vec<Partition>, MetadataReply> {
    if ctx.op_number >= PARTITION_GROUP_OP_LIMIT {
        return Err(MetadataReply::LimitReached { what: Limit::Ids });
    }
    Ok((first_id..first_id + count)
        .map(|id| Partition {
            id,
            group_id: partition_group_id(ctx.op_number, id),
            created_in_view: ctx.view,
            message_expiry_micros,
        })
        .collect())
}

/// A topic's partition count. Never above `PARTITIONS_PER_TOPIC_MAX` (a u32): apply
/// and snapshot decoding both keep it there, so the conversion is lossless.
fn partition_len(topic: &Topic) -> u32 {
    topic.partitions.len() as u32
}

/// Add one to a consumer group's generation and return the new value. Cannot overflow:
/// each join or leave is its own op, so a generation never exceeds the number of the op
/// that last changed it (snapshot decoding checks that too), and op numbers are u64.
fn bump_generation(group: &mut ConsumerGroup) -> u64 {
    group.generation += 1;
    group.generation
}

/// Take the next id from `counter`, or `LimitReached { Ids }` if the counter is spent
/// (the counter is left unchanged then). `u32::MAX` itself is never handed out, so a
/// counter never wraps and an id is never reused.
fn take_id(counter: &mut u32) -> Result<u32, MetadataReply> {
    let id = *counter;
    *counter = id
        .checked_add(1)
        .ok_or(MetadataReply::LimitReached { what: Limit::Ids })?;
    Ok(id)
}
