//! Metadata: ops, replies, session binds, the state snapshot.

#[allow(unused_imports)]
use crate::{memory::*, partition::*, storage_boot::*, storage_logs::*, support::*, vsr_node::*, wire::*};

// ---------------------------------------------------------------------------------------
// Metadata: ops, replies, session binds, the state snapshot
// ---------------------------------------------------------------------------------------

pub(crate) fn durability() -> impl Strategy<Value = Durability> {
    prop_oneof![Just(Durability::Replicated), Just(Durability::Persisted)]
}

pub(crate) fn permissions() -> impl Strategy<Value = Permissions> {
    (
        any::<[bool; 4]>(),
        prop::collection::btree_map(any::<u32>(), any::<[bool; 3]>(), 0..5),
    )
        .prop_map(|(global, streams)| Permissions {
            global: GlobalPermissions {
                manage_streams: global[0],
                read_streams: global[1],
                manage_users: global[2],
                read_users: global[3],
            },
            streams: streams
                .into_iter()
                .map(|(id, bits)| {
                    let stream = StreamPermissions {
                        manage_topics: bits[0],
                        read: bits[1],
                        write: bits[2],
                    };
                    (id, stream)
                })
                .collect(),
        })
}

/// Every metadata op, every field arbitrary.
pub(crate) fn metadata_op() -> impl Strategy<Value = MetadataOp> {
    let id = any::<u32>;
    prop_oneof![
        text().prop_map(|name| MetadataOp::CreateStream { name }).boxed(),
        (id(), text())
            .prop_map(|(stream_id, name)| MetadataOp::UpdateStream { stream_id, name })
            .boxed(),
        id().prop_map(|stream_id| MetadataOp::DeleteStream { stream_id })
            .boxed(),
        (id(), text(), id(), durability(), any::<u64>())
            .prop_map(
                |(stream_id, name, partitions, durability, message_expiry_micros)| MetadataOp::CreateTopic {
                    stream_id,
                    name,
                    partitions,
                    durability,
                    message_expiry_micros,
                }
            )
            .boxed(),
        (id(), id(), text(), durability(), any::<u64>())
            .prop_map(
                |(stream_id, topic_id, name, durability, message_expiry_micros)| MetadataOp::UpdateTopic {
                    stream_id,
                    topic_id,
                    name,
                    durability,
                    message_expiry_micros,
                }
            )
            .boxed(),
        (id(), id())
            .prop_map(|(stream_id, topic_id)| MetadataOp::DeleteTopic { stream_id, topic_id })
            .boxed(),
        (text(), text(), any::<bool>())
            .prop_map(|(username, password, active)| MetadataOp::CreateUser {
                username,
                password,
                active
            })
            .boxed(),
        (id(), prop::option::of(text()), prop::option::of(any::<bool>()))
            .prop_map(|(user_id, username, active)| MetadataOp::UpdateUser {
                user_id,
                username,
                active
            })
            .boxed(),
        id().prop_map(|user_id| MetadataOp::DeleteUser { user_id }).boxed(),
        (id(), text(), text())
            .prop_map(|(user_id, current_password, new_password)| MetadataOp::ChangePassword {
                user_id,
                current_password,
                new_password,
            })
            .boxed(),
        (id(), permissions())
            .prop_map(|(user_id, permissions)| MetadataOp::UpdatePermissions { user_id, permissions })
            .boxed(),
        (id(), text(), any::<u64>())
            .prop_map(|(user_id, name, expiry_micros)| MetadataOp::CreatePersonalAccessToken {
                user_id,
                name,
                expiry_micros,
            })
            .boxed(),
        (id(), text())
            .prop_map(|(user_id, name)| MetadataOp::DeletePersonalAccessToken { user_id, name })
            .boxed(),
        (id(), id(), text())
            .prop_map(|(stream_id, topic_id, name)| MetadataOp::CreateConsumerGroup {
                stream_id,
                topic_id,
                name
            })
            .boxed(),
        (id(), id(), id())
            .prop_map(|(stream_id, topic_id, group_id)| MetadataOp::DeleteConsumerGroup {
                stream_id,
                topic_id,
                group_id,
            })
            .boxed(),
        (text(), text())
            .prop_map(|(username, password)| MetadataOp::LoginUser { username, password })
            .boxed(),
        text()
            .prop_map(|token| MetadataOp::LoginWithPersonalAccessToken { token })
            .boxed(),
        (id(), id(), id())
            .prop_map(|(stream_id, topic_id, count)| MetadataOp::CreatePartitions {
                stream_id,
                topic_id,
                count
            })
            .boxed(),
        (id(), id(), id())
            .prop_map(|(stream_id, topic_id, count)| MetadataOp::DeletePartitions {
                stream_id,
                topic_id,
                count
            })
            .boxed(),
        (id(), id(), id(), id())
            .prop_map(
                |(stream_id, topic_id, group_id, member_id)| MetadataOp::JoinConsumerGroup {
                    stream_id,
                    topic_id,
                    group_id,
                    member_id,
                }
            )
            .boxed(),
        (id(), id(), id(), id())
            .prop_map(
                |(stream_id, topic_id, group_id, member_id)| MetadataOp::LeaveConsumerGroup {
                    stream_id,
                    topic_id,
                    group_id,
                    member_id,
                }
            )
            .boxed(),
    ]
}

/// Every metadata reply, every field arbitrary.
pub(crate) fn metadata_reply() -> impl Strategy<Value = MetadataReply> {
    let id = any::<u32>;
    // The fieldless replies are those whose code byte alone decodes, in code order.
    let fieldless = prop::sample::select(
        (0..=u8::MAX)
            .filter_map(|code| MetadataReply::decode(&[code]).ok())
            .collect::<Vec<_>>(),
    );
    prop_oneof![
        fieldless.boxed(),
        id().prop_map(|stream_id| MetadataReply::StreamCreated { stream_id })
            .boxed(),
        id().prop_map(|topic_id| MetadataReply::TopicCreated { topic_id })
            .boxed(),
        id().prop_map(|user_id| MetadataReply::UserCreated { user_id }).boxed(),
        text().prop_map(|token| MetadataReply::TokenCreated { token }).boxed(),
        (id(), any::<u64>(), any::<u128>())
            .prop_map(|(user_id, session, secret)| MetadataReply::LoggedIn {
                user_id,
                session,
                secret
            })
            .boxed(),
        id().prop_map(|group_id| MetadataReply::GroupCreated { group_id })
            .boxed(),
        id().prop_map(|first_partition_id| MetadataReply::PartitionsCreated { first_partition_id })
            .boxed(),
        any::<u64>()
            .prop_map(|generation| MetadataReply::Joined { generation })
            .boxed(),
        any::<u64>()
            .prop_map(|generation| MetadataReply::Left { generation })
            .boxed(),
        prop::sample::select(Limit::ALL.to_vec())
            .prop_map(|what| MetadataReply::LimitReached { what })
            .boxed(),
        id().prop_map(|user_id| MetadataReply::SessionBound { user_id }).boxed(),
    ]
}

/// Applies ops to a metadata state the way committed ops reach it.
pub(crate) struct MetadataLog {
    pub(crate) state: MetadataState,
    pub(crate) op: u64,
}

impl MetadataLog {
    pub(crate) fn new(entropy: u64) -> Self {
        Self {
            state: MetadataState::new("root password", entropy),
            op: 0,
        }
    }

    /// Apply `op` as the next committed op, sent by `client`; it must succeed.
    pub(crate) fn apply(&mut self, op: MetadataOp, client: u128) {
        self.op += 1;
        let context = MetadataContext {
            timestamp_micros: 1_000_000 + self.op * 1_000,
            op_number: self.op,
            view: 1 + self.op / 4,
            entropy: self.op.wrapping_mul(0x9E37_79B9_7F4A_7C15),
            client,
            session: 0,
        };
        let reply = self.state.apply(&op, &context);
        assert!(reply.is_ok(), "{op:?} was refused: {reply:?}");
    }
}

/// A metadata state with something of everything the snapshot encodes: streams, topics
/// (partitions created by two ops, one deleted), consumer groups with members, users
/// with permissions and tokens, and open sessions. `names` become extra streams.
pub(crate) fn metadata_state() -> impl Strategy<Value = MetadataState> {
    (
        any::<u64>(),
        prop::collection::btree_set(valid_name(), 0..4),
        1u32..5,
        0u32..3,
        any::<bool>(),
    )
        .prop_map(|(entropy, names, partitions, members, persisted)| {
            let mut log = MetadataLog::new(entropy);
            let durability = if persisted {
                Durability::Persisted
            } else {
                Durability::Replicated
            };
            log.apply(MetadataOp::CreateStream { name: "orders".into() }, 11);
            log.apply(
                MetadataOp::CreateTopic {
                    stream_id: 0,
                    name: "eu".into(),
                    partitions,
                    durability,
                    message_expiry_micros: 60_000_000,
                },
                11,
            );
            log.apply(
                MetadataOp::CreateConsumerGroup {
                    stream_id: 0,
                    topic_id: 0,
                    name: "billing".into(),
                },
                11,
            );
            for member_id in 0..members {
                log.apply(
                    MetadataOp::JoinConsumerGroup {
                        stream_id: 0,
                        topic_id: 0,
                        group_id: 0,
                        member_id: member_id * 7,
                    },
                    12,
                );
            }
            log.apply(
                MetadataOp::CreateUser {
                    username: "alice".into(),
                    password: "alice's password".into(),
                    active: true,
                },
                11,
            );
            log.apply(
                MetadataOp::UpdatePermissions {
                    user_id: 1,
                    permissions: Permissions {
                        global: GlobalPermissions::default(),
                        streams: BTreeMap::from([(
                            0,
                            StreamPermissions {
                                manage_topics: false,
                                read: true,
                                write: true,
                            },
                        )]),
                    },
                },
                11,
            );
            log.apply(
                MetadataOp::CreatePersonalAccessToken {
                    user_id: 1,
                    name: "ci".into(),
                    expiry_micros: 3_600_000_000,
                },
                11,
            );
            log.apply(
                MetadataOp::LoginUser {
                    username: "alice".into(),
                    password: "alice's password".into(),
                },
                13,
            );
            log.apply(
                MetadataOp::CreatePartitions {
                    stream_id: 0,
                    topic_id: 0,
                    count: 2,
                },
                11,
            );
            log.apply(
                MetadataOp::DeletePartitions {
                    stream_id: 0,
                    topic_id: 0,
                    count: 1,
                },
                11,
            );
            for name in names {
                if name != "orders" {
                    log.apply(MetadataOp::CreateStream { name }, 14);
                }
            }
            log.apply(
                MetadataOp::LoginUser {
                    username: "root".into(),
                    password: "root password".into(),
                },
                15,
            );
            log.state
        })
}

/// The metadata op codec.
const METADATA_OPS: Codec<MetadataOp, DecodeError> = Codec {
    encode: MetadataOp::encode,
    decode: MetadataOp::decode,
};

/// The metadata state's snapshot codec.
const METADATA_STATES: Codec<MetadataState, DecodeError> = Codec {
    encode: MetadataState::encode_state,
    decode: MetadataState::decode_state,
};

/// The metadata reply codec.
const METADATA_REPLIES: Codec<MetadataReply, DecodeError> = Codec {
    encode: MetadataReply::encode,
    decode: MetadataReply::decode,
};

proptest! {
    #![proptest_config(config())]

    #[test]
    fn metadata_ops_round_trip_through_their_encoding(op in metadata_op()) {
        METADATA_OPS.round_trips(&op)?;
    }

    #[test]
    fn random_bytes_never_panic_the_metadata_op_decoder(input in bytes(512), code in 0u8..24) {
        METADATA_OPS.canonical_alone_and_led(&input, code)?;
    }

    #[test]
    fn a_damaged_metadata_op_decodes_to_an_error_or_to_exactly_its_bytes(
        op in metadata_op(),
        donor in metadata_op(),
        damage in damage(),
    ) {
        let damaged = METADATA_OPS.damaged(&op, &donor.encode(), &damage)?;
        if damage.cut_to(op.encode().len()).is_some() {
            // Every op has a fixed shape after its code: a strict prefix never decodes.
            prop_assert!(MetadataOp::decode(&damaged).is_err());
        }
    }

    #[test]
    fn metadata_length_prefixes_beyond_their_bounds_are_refused_before_allocating(
        claim in (STRING_DECODE_BYTES_MAX as u64 + 1)..=u64::MAX,
        streams in (PERMISSION_STREAMS_MAX as u64 + 1)..=u64::MAX,
        tail in bytes(16),
    ) {
        // STRING_DECODE_BYTES_MAX bounds every string; PERMISSION_STREAMS_MAX the
        // per-stream permissions of UpdatePermissions (code 11: user id, global bits).
        let name = [&[1u8][..], &varint(claim), &tail].concat();
        check_too_long(MetadataOp::decode(&name), "stream name")?;
        let token = [&[4u8][..], &varint(claim), &tail].concat();
        check_too_long(MetadataReply::decode(&token), "token")?;
        let permissions = [&[11u8, 1, 0, 0, 0, 0][..], &varint(streams), &tail].concat();
        check_too_long(MetadataOp::decode(&permissions), "stream permission count")?;
    }

    #[test]
    fn metadata_replies_round_trip_through_their_encoding(reply in metadata_reply()) {
        METADATA_REPLIES.round_trips(&reply)?;
    }

    #[test]
    fn random_bytes_never_panic_the_metadata_reply_decoder(input in bytes(64), code in 0u8..90) {
        METADATA_REPLIES.canonical_alone_and_led(&input, code)?;
    }

    #[test]
    fn a_damaged_metadata_reply_decodes_to_an_error_or_to_exactly_its_bytes(
        reply in metadata_reply(),
        donor in metadata_reply(),
        damage in damage(),
    ) {
        METADATA_REPLIES.damaged(&reply, &donor.encode(), &damage)?;
    }

    #[test]
    fn session_binds_round_trip_and_any_other_length_is_refused(
        session in any::<u64>(),
        secret in any::<u128>(),
        input in bytes(64),
    ) {
        let bind = BindSession { session, secret };
        prop_assert_eq!(BindSession::decode(&bind.encode()), Ok(bind));
        match BindSession::decode(&input) {
            Ok(decoded) => prop_assert_eq!(decoded.encode(), input),
            Err(_) => prop_assert_ne!(input.len(), 24),
        }
    }

    #[test]
    fn metadata_states_round_trip_through_their_snapshot(state in metadata_state()) {
        let bytes = state.encode_state();
        let decoded = MetadataState::decode_state(&bytes).expect("a state's own snapshot decodes");
        prop_assert_eq!(decoded.digest(), state.digest());
        prop_assert_eq!(decoded, state);
    }

    #[test]
    fn random_bytes_never_panic_the_metadata_snapshot_decoder(input in bytes(4096)) {
        METADATA_STATES.canonical(&input)?;
    }

    #[test]
    fn a_damaged_metadata_snapshot_decodes_to_an_error_or_to_exactly_its_bytes(
        state in metadata_state(),
        donor in metadata_state(),
        damage in damage(),
    ) {
        // The snapshot has no checksum of its own (the store and the transfer carry
        // one): every state it decodes to must still encode to the damaged bytes, and
        // so pass every invariant `decode_state` checks.
        let damaged = METADATA_STATES.damaged(&state, &donor.encode_state(), &damage)?;
        if damage.cut_to(state.encode_state().len()).is_some() {
            prop_assert!(MetadataState::decode_state(&damaged).is_err(), "a cut snapshot decoded");
        }
    }

    #[test]
    fn metadata_snapshot_counts_beyond_their_bounds_are_refused_before_allocating(
        streams in (STREAMS_MAX as u64 + 1)..=u64::MAX,
        users in (USERS_MAX as u64 + 1)..=u64::MAX,
        sessions in (SESSIONS_MAX as u64 + 1)..=u64::MAX,
        tail in bytes(16),
    ) {
        let prefix = [0u8; 24]; // op numbers, next stream id, next user id
        let claim = [&prefix[..], &varint(streams), &tail].concat();
        check_too_long(MetadataState::decode_state(&claim), "stream count")?;
        // An empty stream list, then the user count.
        let claim = [&prefix[..], &[0], &varint(users), &tail].concat();
        check_too_long(MetadataState::decode_state(&claim), "user count")?;
        // A genesis state's snapshot ends with its session count: claim more.
        let genesis = MetadataState::new("root password", 7).encode_state();
        let (session_count, rest) = genesis.split_last().expect("ends with the session count");
        prop_assert_eq!(*session_count, 0);
        let claim = [rest, &varint(sessions), &tail].concat();
        check_too_long(MetadataState::decode_state(&claim), "session count")?;
    }
}
