//! Admission: what a shard checks before a client's request reaches its group, and
//! `BindSession`, which it answers itself.
//!
//! In order, for a request to a group whose replica here is a primary in a started
//! view (a backup refuses on its own, naming the primary):
//! 1. Logins pass: they need no session, and the metadata group authorises nothing
//!    else without one.
//! 2. If the node's applied metadata is older than the newest metadata op the client
//!    has seen (the request's `commit`), the request waits here, at most
//!    [`PARK_WAIT_TICKS`], and is then refused `TransientNotAccepted`: it is never
//!    judged against metadata the client knows to be stale.
//! 3. The sender must be bound to the client's current session, and the request must
//!    name that session in its `context` (`Unbound` otherwise): a delayed or replayed
//!    frame sent in an older session never acts as the newer one.
//! 4. A partition request needs its permission on the partition's stream
//!    (`PermissionDenied`, or `Unauthenticated` for a deleted or deactivated user). A
//!    metadata op is authorised when it is applied instead (`metadata::authorize`).
//!
//! A `BindSession` (group 0) is answered by shard 0 from the applied metadata, after
//! the same wait: `SessionBound` (and the sender is bound) or `SessionRefused`. A
//! login's `LoggedIn` reply binds the sender it is sent to on the node that answers it,
//! as a login on a connection authenticates that connection.

use super::*;
use crate::metadata::{BIND_SESSION_CODE, BindSession, MetadataOp, MetadataReply};
use crate::node::access::Denied;
use crate::node::status::{GROUP_STATUS_CODE, GroupStatus, HostedGroup, PartitionEntry, STATUS_PARTITIONS_MAX};
use crate::partition::need_of_operation;

/// Most requests one shard holds while its node's metadata catches up. A client keeps
/// one request in flight, so this is a burst of clients that all saw a newer op than
/// this node; past it they are refused at once and resend later.
pub const PARKED_REQUESTS_MAX: usize = 64;

/// Ticks a request waits for the node's metadata to reach what its client has seen:
/// 300 ticks (3 s), the reference's bound. Metadata that far behind is repairing or
/// transferring state; the client does better trying again later or elsewhere.
pub const PARK_WAIT_TICKS: u64 = 300;

/// A request waiting for this node's metadata.
#[derive(Debug)]
pub(super) struct Parked {
    from: ProcessId,
    frame: Vec<u8>,
    /// The shard tick at which it is refused if still waiting.
    until_tick: u64,
}

impl<P: StoreProvider> Shard<P> {
    /// Check a client request that landed on its owner shard; true if it may go on to
    /// its group (otherwise it was answered here, or parked with a copy of `frame`).
    pub(super) fn admit(&mut self, from: ProcessId, header: &Header, frame: &[u8]) -> bool {
        let metadata_group = header.group == METADATA_GROUP;
        if header.operation == GROUP_STATUS_CODE {
            self.answer_status(from, header);
            return false;
        }
        if metadata_group && header.operation == BIND_SESSION_CODE {
            return self.on_bind(from, header, frame);
        }
        if metadata_group && MetadataOp::is_login_operation(header.operation) {
            return true;
        }
        let leads = if metadata_group {
            self.metadata
                .as_ref()
                .is_some_and(|replica| replica.is_primary() && replica.status() == Status::Normal)
        } else {
            self.partitions
                .get(&header.group)
                .is_some_and(|replica| replica.is_primary() && replica.status() == Status::Normal)
        };
        if !leads {
            return true;
        }
        if self.behind(header) {
            return self.park(from, header, frame);
        }
        // Bound to the session the request was sent in: a request from an older session
        // (a delayed or replayed frame) must not act as the client's current one.
        let bound = self.bindings.borrow().session_of(from, header.client);
        let Some(session) = bound.filter(|session| u128::from(*session) == header.context) else {
            self.deny(from, header, Denied::Unbound);
            return false;
        };
        let need = if metadata_group {
            None
        } else {
            let stream_id = self
                .directory
                .borrow()
                .partitions
                .get(&header.group)
                .map(|spec| spec.stream_id);
            stream_id.and_then(|stream_id| need_of_operation(header.operation, stream_id))
        };
        let verdict = self.access.borrow().authorize(header.client, session, need);
        match verdict {
            Ok(()) => true,
            Err(denied) => {
                self.deny(from, header, denied);
                false
            }
        }
    }

    /// Whether the node's applied metadata is older than what the client has seen.
    fn behind(&self, header: &Header) -> bool {
        header.commit > self.access.borrow().applied_op
    }

    /// Hold the request for the node's metadata; false (not admitted) either way.
    fn park(&mut self, from: ProcessId, header: &Header, frame: &[u8]) -> bool {
        if self.parked.len() >= PARKED_REQUESTS_MAX {
            self.stats.requests_parked_full += 1;
            self.refuse_request(from, header, ClientError::TransientNotAccepted);
            return false;
        }
        self.stats.requests_parked += 1;
        self.parked.push_back(Parked {
            from,
            frame: frame.to_vec(),
            until_tick: self.ticks + PARK_WAIT_TICKS,
        });
        false
    }

    /// Each tick: retry the parked requests the metadata has caught up for, refuse the
    /// ones that waited too long, keep the rest (in arrival order).
    pub(super) fn unpark(&mut self, realtime_micros: u64) {
        if self.parked.is_empty() {
            return;
        }
        let parked = std::mem::take(&mut self.parked);
        for request in parked {
            let Some(header) = request
                .frame
                .get(..HEADER_BYTES)
                .and_then(|bytes| Header::decode_verified(bytes).ok())
            else {
                unreachable!("a parked frame was verified when it arrived");
            };
            if !self.behind(&header) {
                self.on_frame(request.from, request.frame, realtime_micros);
            } else if self.ticks >= request.until_tick {
                self.stats.requests_parked_expired += 1;
                crate::cover!(ParkedRequestExpired);
                self.refuse_request(request.from, &header, ClientError::TransientNotAccepted);
            } else {
                self.parked.push_back(request);
            }
        }
    }

    fn deny(&mut self, from: ProcessId, header: &Header, denied: Denied) {
        let error = match denied {
            Denied::Unbound => {
                self.stats.requests_unbound += 1;
                crate::cover!(SessionUnboundRefused);
                ClientError::Unbound
            }
            Denied::Unauthenticated => {
                self.stats.requests_denied += 1;
                ClientError::Unauthenticated
            }
            Denied::PermissionDenied => {
                self.stats.requests_denied += 1;
                ClientError::PermissionDenied
            }
        };
        self.refuse_request(from, header, error);
    }

    /// A `Refused` frame from this node for `request`, naming this replica as the one
    /// to try again (the refusal is about the client, not about who leads).
    fn refuse_request(&mut self, to: ProcessId, request: &Header, error: ClientError) {
        let mut sender = Header::new(Command::Refused);
        sender.cluster = self.config.cluster;
        sender.group = request.group;
        sender.replica = self.config.replica;
        let frame = seal_refusal(sender, request, self.config.replica, error);
        self.outbox.push(Outgoing { to, frame });
    }

    /// Shard 0: bind the sender to the session it presents, from the applied metadata.
    /// Answered or parked here: never admitted to the group.
    fn on_bind(&mut self, from: ProcessId, header: &Header, frame: &[u8]) -> bool {
        // Routing verified the header only; the body is read here, so verify it too (a
        // corrupted bind must be dropped and resent, not refused as a wrong secret).
        let Ok(bind) = crate::wire::open(frame)
            .map_err(|_| ())
            .and_then(|(_, body)| BindSession::decode(body).map_err(|_| ()))
        else {
            self.stats.frames_rejected += 1;
            return false;
        };
        if self.behind(header) {
            return self.park(from, header, frame);
        }
        let grant = self
            .access
            .borrow()
            .grants
            .get(&header.client)
            .filter(|grant| grant.session == bind.session && grant.secret == bind.secret)
            .map(|grant| grant.user_id);
        let reply = match grant {
            Some(user_id) => {
                self.bindings.borrow_mut().bind(from, header.client, bind.session);
                self.stats.binds += 1;
                MetadataReply::SessionBound { user_id }
            }
            None => {
                self.stats.binds_refused += 1;
                let access = self.access.borrow();
                let known = access.grants.get(&header.client).map(|grant| grant.session);
                tracing::debug!(
                    replica = self.config.replica,
                    client = header.client,
                    session = bind.session,
                    known,
                    applied = access.applied_op,
                    seen = header.commit,
                    "bind refused"
                );
                MetadataReply::SessionRefused
            }
        };
        self.answer_here(from, header, &reply.encode());
        false
    }

    /// Answer `request` from this node, without a consensus round (a bind, a status):
    /// a `Reply` for the request's group and operation, naming the node's applied
    /// metadata op as its `commit` (the client remembers the newest it has seen).
    fn answer_here(&mut self, to: ProcessId, request: &Header, body: &[u8]) {
        let mut answer = Header::answering(Command::Reply, request, self.config.replica);
        answer.cluster = self.config.cluster;
        answer.commit = self.access.borrow().applied_op;
        let frame = crate::wire::seal_header(answer, body);
        self.outbox.push(Outgoing { to, frame });
    }

    /// Answer a status request for a group this shard owns, from its own replica (see
    /// `node::status`). Never admitted to the group, never parked: it asks for this
    /// node's opinion as it is now.
    fn answer_status(&mut self, from: ProcessId, header: &Header) {
        self.stats.status_answered += 1;
        let replicas = self.config.replicas;
        let hosted = if header.group == METADATA_GROUP {
            self.metadata.as_ref().map(|replica| HostedGroup::of(replica, 0))
        } else {
            self.partitions
                .get(&header.group)
                .map(|replica| HostedGroup::of(replica, replica.state_machine().state().next_offset()))
        };
        debug_assert!(hosted.is_none_or(|hosted| hosted.primary < replicas));
        let (partitions, partitions_truncated) = if header.group == METADATA_GROUP {
            let directory = self.directory.borrow();
            let entries: Vec<PartitionEntry> = directory
                .partitions
                .values()
                .take(STATUS_PARTITIONS_MAX)
                .map(|spec| PartitionEntry {
                    group: spec.group,
                    stream_id: spec.stream_id,
                    topic_id: spec.topic_id,
                    partition_id: spec.partition_id,
                    durability: spec.durability,
                })
                .collect();
            (entries, directory.partitions.len() > STATUS_PARTITIONS_MAX)
        } else {
            (Vec::new(), false)
        };
        let status = GroupStatus {
            replica: self.config.replica,
            group: header.group,
            hosted,
            partitions,
            partitions_truncated,
        };
        self.answer_here(from, header, &status.encode());
    }

    /// Shard 0: take the metadata replica's frames to send. A login's `LoggedIn` reply
    /// binds the sender it goes to: the session was opened for that sender, so it need
    /// not bind here again (it binds on the other nodes it reaches, and here after a
    /// restart).
    pub(super) fn drain_metadata_outbox(&mut self) {
        let Some(metadata) = self.metadata.as_mut() else { return };
        for out in metadata.drain_outbox() {
            if let Some((client, session)) = logged_in(&out.frame) {
                self.bindings.borrow_mut().bind(out.to, client, session);
            }
            self.outbox.push(out);
        }
    }

    /// Shard 0: bring the access view up to the applied metadata (the op number always;
    /// the grants when the machine says access may have changed).
    pub(super) fn publish_access(&mut self) {
        let Some(metadata) = self.metadata.as_ref() else { return };
        let machine = metadata.state_machine();
        let mut access = self.access.borrow_mut();
        access.applied_op = metadata.commit_min();
        if access.version != Some(machine.access_version()) {
            access.rebuild(machine.state(), machine.access_version());
        }
    }
}

/// The client and session of a `LoggedIn` reply frame; `None` for any other frame. The
/// replica just sealed it, so the header is read without re-checking its checksum (this
/// runs for every frame the metadata replica sends).
fn logged_in(frame: &[u8]) -> Option<(u128, u64)> {
    let header = Header::decode(frame.get(..HEADER_BYTES)?).ok()?;
    if header.command != Command::Reply || header.group != METADATA_GROUP {
        return None;
    }
    if !MetadataOp::is_login_operation(header.operation) {
        return None;
    }
    match MetadataReply::decode(frame.get(HEADER_BYTES..)?) {
        Ok(MetadataReply::LoggedIn { session, .. }) => Some((header.client, session)),
        _ => None,
    }
}
