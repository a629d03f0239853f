//! The typed API of [`Client`]: metadata ops, partition ops, polls, status and the
//! cluster's metadata, each one request through [`Client::request`] and a decode of
//! its answer. The transport discipline is in the parent module.

use std::collections::BTreeMap;

use super::*;

impl Client {
    /// Apply a metadata op and return the op number it was applied at and the reply. An
    /// error outcome (a name taken, something missing) is [`Error::Metadata`].
    pub async fn metadata_op(&mut self, op: &MetadataOp) -> Result<(u64, MetadataReply), Error> {
        let reply = self.request(0, op.operation_code(), &op.encode()).await?;
        let decoded = MetadataReply::decode(&reply.body).map_err(|error| Error::UnexpectedReply {
            node: reply.node,
            group: 0,
            what: format!("metadata reply does not decode: {error:?}"),
        })?;
        if !decoded.is_ok() {
            return Err(Error::Metadata {
                op: reply.header.op,
                reply: decoded,
            });
        }
        Ok((reply.header.op, decoded))
    }

    fn unexpected<T>(node: usize, group: u64, what: impl std::fmt::Debug) -> Result<T, Error> {
        Err(Error::UnexpectedReply {
            node,
            group,
            what: format!("{what:?}"),
        })
    }

    /// Log in; on success every later request acts in the new session. Returns the
    /// user id.
    pub async fn login(&mut self, username: &str, password: &str) -> Result<u32, Error> {
        let op = MetadataOp::LoginUser {
            username: username.to_owned(),
            password: password.to_owned(),
        };
        match self.metadata_op(&op).await? {
            (_, MetadataReply::LoggedIn { user_id, .. }) => Ok(user_id),
            (_, other) => Self::unexpected(self.current, 0, other),
        }
    }

    /// Create a stream; returns its id.
    pub async fn create_stream(&mut self, name: &str) -> Result<u32, Error> {
        let op = MetadataOp::CreateStream { name: name.to_owned() };
        match self.metadata_op(&op).await? {
            (_, MetadataReply::StreamCreated { stream_id }) => Ok(stream_id),
            (_, other) => Self::unexpected(self.current, 0, other),
        }
    }

    /// Create a topic of `partitions` partitions in stream `stream_id` (messages kept
    /// forever); returns its id and its partitions' groups.
    pub async fn create_topic(
        &mut self,
        stream_id: u32,
        name: &str,
        partitions: u32,
        durability: Durability,
    ) -> Result<CreatedTopic, Error> {
        let op = MetadataOp::CreateTopic {
            stream_id,
            name: name.to_owned(),
            partitions,
            durability,
            message_expiry_micros: 0,
        };
        match self.metadata_op(&op).await? {
            (op, MetadataReply::TopicCreated { topic_id }) => Ok(CreatedTopic {
                topic_id,
                op,
                groups: (0..partitions).map(|p| partition_group_id(op, p)).collect(),
            }),
            (_, other) => Self::unexpected(self.current, 0, other),
        }
    }

    async fn partition_op(&mut self, group: u64, op: &PartitionOp) -> Result<PartitionReply, Error> {
        let reply = self.request(group, op.operation_code(), &op.encode()).await?;
        let decoded = PartitionReply::decode(&reply.body).map_err(|error| Error::UnexpectedReply {
            node: reply.node,
            group,
            what: format!("partition reply does not decode: {error:?}"),
        })?;
        if !decoded.outcome().is_success() {
            return Err(Error::Partition { group, reply: decoded });
        }
        Ok(decoded)
    }

    /// Append a batch to the partition of `group`; returns its first and last offsets.
    /// Checked here against the batch bounds (1 to `MESSAGES_PER_BATCH_MAX` messages,
    /// each at most `PAYLOAD_BYTES_MAX`, at most `BATCH_BYTES_MAX` in all).
    pub async fn send_messages(&mut self, group: u64, messages: Vec<Message>) -> Result<(u64, u64), Error> {
        if messages.is_empty() || messages.len() > MESSAGES_PER_BATCH_MAX {
            return Err(Error::InvalidRequest(format!(
                "a batch holds 1 to {MESSAGES_PER_BATCH_MAX} messages, not {}",
                messages.len()
            )));
        }
        if let Some(large) = messages.iter().find(|m| m.payload.len() > PAYLOAD_BYTES_MAX) {
            return Err(Error::InvalidRequest(format!(
                "a message of {} bytes exceeds PAYLOAD_BYTES_MAX ({PAYLOAD_BYTES_MAX})",
                large.payload.len()
            )));
        }
        let total: usize = messages.iter().map(|m| m.payload.len()).sum();
        if total > BATCH_BYTES_MAX {
            return Err(Error::InvalidRequest(format!(
                "a batch of {total} payload bytes exceeds BATCH_BYTES_MAX ({BATCH_BYTES_MAX})"
            )));
        }
        let current = self.current;
        match self
            .partition_op(group, &PartitionOp::SendMessages { messages })
            .await?
        {
            PartitionReply::Appended {
                base_offset,
                last_offset,
            } => Ok((base_offset, last_offset)),
            other => Self::unexpected(current, group, other),
        }
    }

    /// Store where `consumer` reads next in the partition of `group`.
    pub async fn store_consumer_offset(&mut self, group: u64, consumer: Consumer, offset: u64) -> Result<(), Error> {
        self.partition_op(group, &PartitionOp::StoreConsumerOffset { consumer, offset })
            .await
            .map(|_| ())
    }

    /// Read up to `count` messages from `offset` of the partition of `group` (served by
    /// its primary; at most `POLL_MESSAGES_MAX` per answer).
    pub async fn poll(&mut self, group: u64, offset: u64, count: u32) -> Result<PollReply, Error> {
        let body = PollRequest { offset, count }.encode();
        let reply = self.request(group, POLL_MESSAGES_CODE, &body).await?;
        PollReply::decode(&reply.body).map_err(|error| Error::UnexpectedReply {
            node: reply.node,
            group,
            what: format!("poll reply does not decode: {error:?}"),
        })
    }

    /// Ask node `node` (roster index) alone for its status of `group`: one attempt,
    /// within the status timeout, no session needed.
    pub async fn status(&mut self, node: usize, group: u64) -> Result<GroupStatus, Error> {
        let Some(address) = self.nodes.get(node).map(|slot| slot.address) else {
            return Err(Error::InvalidRequest(format!(
                "node {node} is not in the roster of {}",
                self.nodes.len()
            )));
        };
        self.request_number += 1;
        let number = self.request_number;
        self.stats.requests += 1;
        let frame = wire::seal_header(self.request_header(group, GROUP_STATUS_CODE, number), &[]);
        // One attempt, asked for explicitly: dial now even if a redial is backing off.
        self.write_to(node, &frame, true)
            .await
            .map_err(|error| Error::Unreachable { node, address, error })?;
        let waited = self.config.status_timeout;
        let until = crate::runtime::monotonic_now() + waited;
        loop {
            let event = match tokio::time::timeout_at(until, self.inbox.recv()).await {
                Ok(Some(event)) => event,
                Ok(None) => return Err(Error::InvalidRequest("the client's inbox closed".into())),
                Err(_) => {
                    return Err(Error::Timeout {
                        node,
                        address,
                        waited_ms: u64::try_from(waited.as_millis()).unwrap_or(u64::MAX),
                    });
                }
            };
            let (from, frame) = match event {
                Inbound::Closed {
                    node: closed,
                    generation,
                    error,
                } => {
                    if self.on_closed(closed, generation, &error) && closed == node {
                        return Err(Error::Unreachable {
                            node,
                            address,
                            error: error.to_string(),
                        });
                    }
                    continue;
                }
                Inbound::Frame { node, frame } => (node, frame),
            };
            let Ok((reply, body)) = wire::open(&frame) else {
                self.stats.frames_rejected += 1;
                continue;
            };
            if reply.client != self.id || reply.request > number || from != node {
                self.stats.frames_rejected += 1;
                continue;
            }
            if reply.request < number {
                self.stats.replies_stale += 1;
                continue;
            }
            if reply.command != Command::Reply || reply.operation != GROUP_STATUS_CODE {
                return Self::unexpected(node, group, (reply.command, Refusal::decode(body)));
            }
            self.stats.replies += 1;
            return GroupStatus::decode(body).map_err(|error| Error::UnexpectedReply {
                node,
                group,
                what: format!("status does not decode: {error:?}"),
            });
        }
    }

    /// Every node's status of the metadata group, and for every partition any node's
    /// directory lists, every node's status of its group (who it takes for primary).
    /// Nodes that did not answer for the metadata group are not asked again.
    pub async fn cluster_metadata(&mut self) -> ClusterMetadata {
        let mut nodes = Vec::with_capacity(self.nodes.len());
        for node in 0..self.nodes.len() {
            let status = self.status(node, 0).await;
            nodes.push(NodeReport {
                node,
                address: self.nodes[node].address,
                status,
            });
        }
        let mut entries: BTreeMap<u64, PartitionEntry> = BTreeMap::new();
        for report in &nodes {
            if let Ok(status) = &report.status {
                for entry in &status.partitions {
                    entries.entry(entry.group).or_insert(*entry);
                }
            }
        }
        let mut partitions = Vec::with_capacity(entries.len());
        for entry in entries.into_values() {
            let mut views = Vec::with_capacity(nodes.len());
            for report in &nodes {
                let view = match &report.status {
                    Err(error) => Err(error.clone()),
                    Ok(_) => self.status(report.node, entry.group).await.map(|status| status.hosted),
                };
                views.push(view);
            }
            partitions.push(PartitionReport { entry, views });
        }
        ClusterMetadata { nodes, partitions }
    }
}
