//! Tests of `view_change`.

use super::*;

fn header(op: u64, tag: u128) -> Header {
    let mut header = Header::new(Command::Prepare);
    header.op = op;
    header.context = tag;
    header.checksum = header.compute_checksum();
    header
}

fn log(commit: u64, head: u64, records: &[(u64, Option<Header>, bool)]) -> DoViewChangeLog {
    DoViewChangeLog {
        log_view: 1,
        head,
        commit,
        records: records
            .iter()
            .map(|(op, header, present)| {
                (
                    *op,
                    DoViewChangeRecord {
                        header: *header,
                        present: *present,
                    },
                )
            })
            .collect(),
        incomplete: false,
    }
}

#[test]
fn a_header_without_its_body_above_the_commit_point_counts_as_a_nack() {
    // Seed 211 in part 2: the replica journals before it acknowledges, so a header it
    // cannot serve above its commit point proves it never acknowledged the op.
    let op_56 = header(56, 1);
    let header_only = log(55, 56, &[(55, Some(header(55, 0)), true), (56, Some(op_56), false)]);
    assert!(header_only.nacks(&op_56));
    let holds_body = log(55, 56, &[(55, Some(header(55, 0)), true), (56, Some(op_56), true)]);
    assert!(!holds_body.nacks(&op_56));
    // At or below its commit point a missing body proves nothing.
    let committed = log(56, 56, &[(56, Some(op_56), false)]);
    assert!(!committed.nacks(&op_56));
}

#[test]
fn a_different_or_missing_header_is_a_nack_but_an_op_below_the_carried_window_is_not() {
    let op_10 = header(10, 1);
    let other = log(
        8,
        10,
        &[
            (8, Some(header(8, 0)), true),
            (9, Some(header(9, 0)), true),
            (10, Some(header(10, 2)), true),
        ],
    );
    assert!(
        other.nacks(&op_10),
        "another prepare at op 10 means this one was never held"
    );
    let short = log(8, 9, &[(8, Some(header(8, 0)), true), (9, Some(header(9, 0)), true)]);
    assert!(short.nacks(&op_10), "above the head: never had it");
    let windowed = log(0, 200, &[(150, Some(header(150, 0)), true)]);
    assert!(
        !windowed.nacks(&op_10),
        "below the carried window the sender holds something: unknown, not a nack"
    );
}
