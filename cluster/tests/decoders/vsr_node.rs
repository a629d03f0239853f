//! VSR and node: the client table, refusal bodies, group status answers.

#[allow(unused_imports)]
use crate::{memory::*, metadata::*, partition::*, storage_boot::*, storage_logs::*, support::*, wire::*};

// ---------------------------------------------------------------------------------------
// VSR and node: the client table, refusal bodies, group status answers
// ---------------------------------------------------------------------------------------

pub(crate) fn client_table() -> impl Strategy<Value = ClientTable> {
    prop::collection::btree_map(any::<u128>(), (any::<u64>(), any::<u64>(), bytes(64)), 0..6).prop_map(|clients| {
        let mut table = ClientTable::default();
        for (client, (request, op, reply)) in clients {
            table.record(client, request, op, reply, Some(ProcessId(3)));
        }
        table
    })
}

pub(crate) fn group_status() -> impl Strategy<Value = GroupStatus> {
    let status = prop::sample::select(vec![Status::Normal, Status::ViewChange, Status::Recovering]);
    let hosted = (status, any::<[u64; 6]>(), any::<u8>(), any::<u128>()).prop_map(
        |(status, [view, commit, commit_max, head, next_offset, _], primary, state_digest)| HostedGroup {
            status,
            view,
            primary,
            commit,
            commit_max,
            head,
            state_digest,
            next_offset,
        },
    );
    let entry = (any::<u64>(), any::<[u32; 3]>(), durability()).prop_map(
        |(group, [stream_id, topic_id, partition_id], durability)| PartitionEntry {
            group,
            stream_id,
            topic_id,
            partition_id,
            durability,
        },
    );
    (
        any::<u8>(),
        any::<u64>(),
        prop::option::of(hosted),
        prop::collection::vec(entry, 0..5),
        any::<bool>(),
    )
        .prop_map(
            |(replica, group, hosted, partitions, partitions_truncated)| GroupStatus {
                replica,
                group,
                hosted,
                partitions,
                partitions_truncated,
            },
        )
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn client_tables_round_trip_and_decode_canonically(
        table in client_table(),
        donor in client_table(),
        damage in damage(),
        input in bytes(1024),
    ) {
        // The table has no PartialEq: its canonical encoding stands for it.
        let bytes = table.encode();
        let decoded = ClientTable::decode(&bytes).expect("a table's own bytes decode");
        prop_assert_eq!(decoded.encode(), bytes.clone());
        prop_assert_eq!(decoded.len(), table.len());
        let damaged = damage.apply(&bytes, &donor.encode());
        check_canonical(&damaged, &ClientTable::decode(&damaged), ClientTable::encode)?;
        check_canonical(&input, &ClientTable::decode(&input), ClientTable::encode)?;
    }

    #[test]
    fn client_table_lengths_beyond_their_bounds_are_refused_before_allocating(
        clients in 8_193u64..=u64::MAX,
        reply in beyond(FRAME_BYTES_MAX as u64),
        tail in bytes(16),
    ) {
        // CLIENT_TABLE_CLIENTS_MAX (8,192) clients; a reply is one frame (FRAME_BYTES_MAX).
        check_too_long(ClientTable::decode(&[&varint(clients)[..], &tail].concat()), "client count")?;
        let claim = [&[1u8][..], &[0; 32], &varint(reply), &tail].concat();
        check_too_long(ClientTable::decode(&claim), "client reply")?;
    }

    #[test]
    fn refusal_bodies_decode_to_their_error_or_to_nothing(input in bytes(4)) {
        for error in [
            ClientError::TransientNotAccepted,
            ClientError::TransientNotCommitted,
            ClientError::Unbound,
            ClientError::PermissionDenied,
            ClientError::Unauthenticated,
        ] {
            prop_assert_eq!(ClientError::decode(&error.encode()), Some(error));
        }
        if let Some(error) = ClientError::decode(&input) {
            prop_assert_eq!(&error.encode()[..], &input[..]);
        }
    }

    #[test]
    fn group_statuses_round_trip_and_decode_canonically(
        status in group_status(),
        donor in group_status(),
        damage in damage(),
        input in bytes(256),
        partitions in beyond(STATUS_PARTITIONS_MAX as u64),
    ) {
        prop_assert_eq!(GroupStatus::decode(&status.encode()), Ok(status.clone()));
        let damaged = damage.apply(&status.encode(), &donor.encode());
        check_canonical(&damaged, &GroupStatus::decode(&damaged), GroupStatus::encode)?;
        check_canonical(&input, &GroupStatus::decode(&input), GroupStatus::encode)?;
        // STATUS_PARTITIONS_MAX bounds the partition list a status answer may claim.
        let claim = [&[0u8; 9][..], &[0, 0], &varint(partitions), &[0; 8]].concat();
        check_too_long(GroupStatus::decode(&claim), "partitions")?;
    }
}
