//! Examples of histories the checker accepts and rejects, one model at a time, and of
//! what it reports: the minimal sub-history, the search limit, the report's lines.

use super::checker::check_with_budget;
use super::*;

/// The cluster's `POLL_MESSAGES_MAX`.
const PARTITION: PartitionModel = PartitionModel { poll_messages_max: 100 };
const GROUP: GroupModel = GroupModel { initial_generation: 0 };

/// An operation answered `output` at `complete`.
fn done<I, O>(client: usize, invoke: u64, complete: u64, input: I, output: O) -> Operation<I, O> {
    Operation {
        client,
        invoke_tick: invoke,
        complete_tick: Some(complete),
        input,
        output: Some(output),
    }
}

/// An operation whose outcome is unknown.
fn ambiguous<I, O>(client: usize, invoke: u64, input: I) -> Operation<I, O> {
    Operation {
        client,
        invoke_tick: invoke,
        complete_tick: None,
        input,
        output: None,
    }
}

/// `(client, invoke, complete)` of a group member's join of `member_id`, answered
/// `output`: the group histories' one-line form.
fn join(
    (client, invoke, complete): (usize, u64, u64),
    member_id: u32,
    output: GroupOutput,
) -> Operation<GroupInput, GroupOutput> {
    done(client, invoke, complete, GroupInput::Join { member_id }, output)
}

/// As [`join`], for a leave.
fn leave(
    (client, invoke, complete): (usize, u64, u64),
    member_id: u32,
    output: GroupOutput,
) -> Operation<GroupInput, GroupOutput> {
    done(client, invoke, complete, GroupInput::Leave { member_id }, output)
}

fn send(ids: &[u128]) -> PartitionInput {
    PartitionInput::Send { ids: ids.to_vec() }
}

fn appended(base_offset: u64, last_offset: u64) -> PartitionOutput {
    PartitionOutput::Appended {
        base_offset,
        last_offset,
    }
}

fn poll(offset: u64, count: u32) -> PartitionInput {
    PartitionInput::Poll { offset, count }
}

fn polled(next_offset: u64, messages: &[(u64, u128)]) -> PartitionOutput {
    PartitionOutput::Polled {
        next_offset,
        messages: messages.to_vec(),
    }
}

fn store(member_id: u32, generation: u64, offset: u64) -> GroupOffsetInput {
    GroupOffsetInput::Store {
        member_id,
        generation,
        offset,
    }
}

fn set_owner(member_id: u32, generation: u64) -> GroupOffsetInput {
    GroupOffsetInput::SetOwner { member_id, generation }
}

fn verdict<M: Model>(model: &M, history: &[Operation<M::Input, M::Output>]) -> Verdict {
    check(model, history, SEARCH_STATES_MAX).verdict
}

fn violation(minimal: &[usize]) -> Verdict {
    Verdict::Violation {
        minimal: minimal.to_vec(),
        minimal_is_one_minimal: true,
    }
}

#[test]
fn a_sequential_partition_history_is_linearizable() {
    let history = vec![
        done(0, 0, 5, send(&[10, 11]), appended(0, 1)),
        done(0, 6, 9, poll(0, 10), polled(2, &[(0, 10), (1, 11)])),
        done(0, 10, 12, poll(1, 1), polled(2, &[(1, 11)])),
        done(0, 29, 30, PartitionInput::Purge, PartitionOutput::Ok),
        done(0, 31, 32, poll(0, 10), polled(2, &[])),
        done(0, 33, 34, send(&[12]), appended(2, 2)),
        done(0, 35, 36, poll(0, 10), polled(3, &[(2, 12)])),
        done(0, 37, 38, poll(9, 10), polled(3, &[])),
    ];
    let result = check(&PARTITION, &history, SEARCH_STATES_MAX);
    assert_eq!(result.verdict, Verdict::Linearizable);
    assert_eq!(result.operations, history.len());
    assert_eq!(result.ambiguous, 0);
    assert_eq!(result.states_explored, history.len() as u64);
}

#[test]
fn a_sequential_group_offset_history_is_linearizable() {
    let history = vec![
        // No owner yet: anyone may write.
        done(0, 13, 15, store(1, 1, 2), GroupOffsetOutput::Ok),
        done(0, 19, 20, set_owner(1, 1), GroupOffsetOutput::Ok),
        done(0, 21, 22, set_owner(2, 1), GroupOffsetOutput::StaleGeneration),
        done(
            1,
            23,
            24,
            store(2, 1, 0),
            GroupOffsetOutput::StaleOwner { current_generation: 1 },
        ),
        done(0, 25, 26, store(1, 1, 1), GroupOffsetOutput::Ok),
        done(
            0,
            27,
            28,
            GroupOffsetInput::Delete {
                member_id: 1,
                generation: 1,
            },
            GroupOffsetOutput::Ok,
        ),
        // A hand-off fences the former owner out.
        done(1, 29, 30, set_owner(2, 2), GroupOffsetOutput::Ok),
        done(
            0,
            31,
            32,
            store(1, 1, 1),
            GroupOffsetOutput::StaleOwner { current_generation: 2 },
        ),
    ];
    let result = check(&GroupOffsetModel, &history, SEARCH_STATES_MAX);
    assert_eq!(result.verdict, Verdict::Linearizable);
    assert_eq!(result.states_explored, history.len() as u64);
}

#[test]
fn an_offset_beyond_the_log_is_never_a_right_answer_for_a_group_offset() {
    // The workload stores only offsets the log had reached before it sent the request.
    let history = vec![done(
        0,
        0,
        5,
        store(1, 0, 0),
        GroupOffsetOutput::OffsetBeyondLog { next_offset: 0 },
    )];
    assert_eq!(verdict(&GroupOffsetModel, &history), violation(&[0]));
}

#[test]
fn a_poll_returns_at_most_poll_messages_max_messages() {
    let model = PartitionModel { poll_messages_max: 2 };
    let sent = done(0, 0, 5, send(&[10, 11, 12]), appended(0, 2));
    let capped = done(0, 6, 9, poll(0, 10), polled(3, &[(0, 10), (1, 11)]));
    assert_eq!(verdict(&model, &[sent.clone(), capped]), Verdict::Linearizable);
    // One message short of what the rule gives is wrong, not a smaller answer. It is
    // wrong whether or not the send happened (next offset 3 with one message from
    // offset 0 fits no state), so the send is not context that matters.
    let short = done(0, 6, 9, poll(0, 10), polled(3, &[(0, 10)]));
    assert_eq!(verdict(&model, &[sent, short]), violation(&[1]));
}

#[test]
fn concurrent_sends_are_accepted_in_either_offset_order() {
    for (a, b) in [(appended(0, 0), appended(1, 2)), (appended(2, 2), appended(0, 1))] {
        let history = vec![
            done(0, 0, 10, send(&[1]), a.clone()),
            done(1, 5, 15, send(&[2, 3]), b),
            done(2, 20, 25, poll(0, 10), polled(3, &[])),
        ];
        // The poll's messages must follow the order the offsets chose.
        let PartitionOutput::Appended { base_offset, .. } = a else {
            unreachable!()
        };
        let messages: Vec<(u64, u128)> = if base_offset == 0 {
            vec![(0, 1), (1, 2), (2, 3)]
        } else {
            vec![(0, 2), (1, 3), (2, 1)]
        };
        let mut history = history;
        history[2].output = Some(polled(3, &messages));
        assert_eq!(verdict(&PARTITION, &history), Verdict::Linearizable, "{a:?}");
    }
}

#[test]
fn a_stale_poll_is_a_violation_whose_minimal_history_is_the_send_and_the_poll() {
    let history = vec![
        done(0, 0, 10, send(&[0xA]), appended(0, 0)),
        // Concurrent with the send: may miss it.
        done(1, 2, 8, poll(0, 10), polled(0, &[])),
        // Invoked after the send completed: must see it. The violation.
        done(2, 20, 25, poll(0, 10), polled(0, &[])),
        done(1, 26, 30, send(&[0xB]), appended(1, 1)),
        done(0, 40, 45, poll(0, 10), polled(2, &[(0, 0xA), (1, 0xB)])),
    ];
    let result = check(&PARTITION, &history, SEARCH_STATES_MAX);
    assert_eq!(result.verdict, violation(&[0, 2]));
    assert_eq!(result.operations, 5);
}

#[test]
fn a_stale_poll_after_many_sends_reports_the_send_it_missed() {
    // Deleting the earlier sends would leave the poll's ids 1 and 2 unexplained: a
    // deletion-minimal history would blame the poll alone. Unchecking keeps them as
    // context, and only the send the poll missed matters.
    let history = vec![
        done(0, 0, 5, send(&[1]), appended(0, 0)),
        done(0, 6, 9, send(&[2]), appended(1, 1)),
        done(0, 10, 15, send(&[3]), appended(2, 2)),
        done(1, 20, 25, poll(0, 10), polled(2, &[(0, 1), (1, 2)])),
    ];
    assert_eq!(verdict(&PARTITION, &history), violation(&[2, 3]));
    let result = check(&PARTITION, &history, SEARCH_STATES_MAX);
    let Verdict::Violation { minimal, .. } = result.verdict else {
        panic!("{result:?}")
    };
    assert_eq!(
        describe(&PARTITION, &history, &minimal),
        "client 0 [tick 10..15] Send { ids: [3] } -> Appended { base_offset: 2, last_offset: 2 }\n\
         client 1 [tick 20..25] Poll { offset: 0, count: 10 } -> Polled { next_offset: 2, messages: [(0, 1), (1, 2)] }"
    );
}

#[test]
fn a_poll_of_a_message_never_sent_is_a_violation_on_its_own() {
    let history = vec![
        done(0, 0, 5, send(&[1]), appended(0, 0)),
        done(0, 6, 9, send(&[2]), appended(1, 1)),
        done(1, 20, 25, poll(0, 10), polled(2, &[(0, 1), (1, 9)])),
    ];
    assert_eq!(verdict(&PARTITION, &history), violation(&[2]));
}

#[test]
fn two_sends_answered_at_one_offset_are_a_violation() {
    let history = vec![
        done(0, 0, 10, send(&[1]), appended(0, 0)),
        done(1, 5, 15, send(&[2]), appended(0, 0)),
    ];
    assert_eq!(verdict(&PARTITION, &history), violation(&[0, 1]));
}

#[test]
fn two_owners_both_winning_a_group_offset_is_a_violation() {
    let history = vec![
        done(0, 0, 5, set_owner(1, 1), GroupOffsetOutput::Ok),
        // Member 2 is not the owner: the fence must refuse it.
        done(1, 10, 15, store(2, 1, 0), GroupOffsetOutput::Ok),
        done(0, 12, 18, store(1, 1, 0), GroupOffsetOutput::Ok),
    ];
    assert_eq!(verdict(&GroupOffsetModel, &history), violation(&[0, 1]));

    // A former owner's write accepted after the hand-off completed: two owners won.
    let history = vec![
        done(0, 0, 5, set_owner(1, 1), GroupOffsetOutput::Ok),
        done(1, 10, 15, set_owner(2, 2), GroupOffsetOutput::Ok),
        done(
            0,
            20,
            25,
            GroupOffsetInput::Delete {
                member_id: 1,
                generation: 1,
            },
            GroupOffsetOutput::Ok,
        ),
    ];
    assert_eq!(verdict(&GroupOffsetModel, &history), violation(&[1, 2]));
}

#[test]
fn an_ambiguous_send_may_have_taken_effect() {
    let history = vec![
        ambiguous(0, 0, send(&[1])),
        done(1, 20, 25, poll(0, 10), polled(1, &[(0, 1)])),
    ];
    let result = check(&PARTITION, &history, SEARCH_STATES_MAX);
    assert_eq!(result.verdict, Verdict::Linearizable);
    assert_eq!(result.ambiguous, 1);
}

#[test]
fn an_ambiguous_send_may_never_have_taken_effect() {
    let history = vec![
        ambiguous(0, 0, send(&[1])),
        done(1, 10, 15, send(&[2]), appended(0, 0)),
        done(1, 20, 25, poll(0, 10), polled(1, &[(0, 2)])),
    ];
    assert_eq!(verdict(&PARTITION, &history), Verdict::Linearizable);
    // Or only later: it never constrains what comes after it.
    let mut later = history.clone();
    later.push(done(2, 30, 35, poll(0, 10), polled(2, &[(0, 2), (1, 1)])));
    assert_eq!(verdict(&PARTITION, &later), Verdict::Linearizable);
}

#[test]
fn an_ambiguous_send_seen_and_then_unseen_is_a_violation() {
    let history = vec![
        ambiguous(0, 0, send(&[1])),
        done(1, 20, 25, poll(0, 10), polled(1, &[(0, 1)])),
        done(1, 30, 35, poll(0, 10), polled(0, &[])),
    ];
    assert_eq!(verdict(&PARTITION, &history), violation(&[1, 2]));
}

#[test]
fn an_ambiguous_poll_is_dropped_before_the_search() {
    let history = vec![
        done(0, 0, 10, send(&[1]), appended(0, 0)),
        ambiguous(1, 5, poll(0, 10)),
        // Answered, but outcome unknown: still ambiguous.
        Operation {
            client: 2,
            invoke_tick: 6,
            complete_tick: Some(9),
            input: send(&[2]),
            output: None,
        },
    ];
    let result = check(&PARTITION, &history, SEARCH_STATES_MAX);
    assert_eq!(result.verdict, Verdict::Linearizable);
    assert_eq!((result.operations, result.ambiguous), (2, 1));
}

#[test]
fn a_poll_overlapping_a_send_may_or_may_not_see_it() {
    let sent = done(0, 10, 20, send(&[1]), appended(0, 0));
    let unseen = polled(0, &[]);
    let seen = polled(1, &[(0, 1)]);
    for (invoke, complete) in [(15, 25), (5, 15), (12, 18)] {
        for output in [&unseen, &seen] {
            let history = vec![sent.clone(), done(1, invoke, complete, poll(0, 10), output.clone())];
            assert_eq!(
                verdict(&PARTITION, &history),
                Verdict::Linearizable,
                "{invoke}..{complete} {output:?}"
            );
        }
    }
    // Intervals that touch at one tick are concurrent too.
    let touching = vec![sent.clone(), done(1, 20, 30, poll(0, 10), unseen.clone())];
    assert_eq!(verdict(&PARTITION, &touching), Verdict::Linearizable);
    let touching_before = vec![sent.clone(), done(1, 0, 10, poll(0, 10), seen.clone())];
    assert_eq!(verdict(&PARTITION, &touching_before), Verdict::Linearizable);
}

#[test]
fn a_poll_invoked_after_a_send_completed_must_see_it() {
    let sent = done(0, 10, 20, send(&[1]), appended(0, 0));
    let after = vec![sent.clone(), done(1, 21, 30, poll(0, 10), polled(0, &[]))];
    assert_eq!(verdict(&PARTITION, &after), violation(&[0, 1]));
    // One that completed before the send was invoked must not (the send is not context:
    // it comes after the poll's answer, so it cannot explain it).
    let before = vec![sent, done(1, 0, 9, poll(0, 10), polled(1, &[(0, 1)]))];
    assert_eq!(verdict(&PARTITION, &before), violation(&[1]));
}

#[test]
fn a_long_log_answers_polls_anywhere_and_drops_without_recursion() {
    // Deep enough that dropping the batch chain recursively would overflow a test
    // thread's stack, and that a poll near the start must take the jump pointers.
    let sends = 200_000u64;
    let mut state = PARTITION.init();
    for i in 0..sends {
        let input = send(&[u128::from(i)]);
        state = PARTITION
            .step(&state, &input, Some(&appended(i, i)))
            .expect("a send answered at the next offset");
    }
    for (offset, count) in [(0, 3), (7, 2), (sends / 2, 1), (sends - 2, 10), (sends, 10)] {
        let end = sends.min(offset + u64::from(count));
        let messages: Vec<(u64, u128)> = (offset..end).map(|o| (o, u128::from(o))).collect();
        let answer = polled(sends, &messages);
        assert!(
            PARTITION.step(&state, &poll(offset, count), Some(&answer)).is_some(),
            "poll({offset}, {count})"
        );
    }
    // One id off, or one message short, anywhere in the log is refused.
    let wrong = polled(sends, &[(7, 8)]);
    assert!(PARTITION.step(&state, &poll(7, 1), Some(&wrong)).is_none());
    let short = polled(sends, &[(sends / 2, u128::from(sends / 2))]);
    assert!(PARTITION.step(&state, &poll(sends / 2, 2), Some(&short)).is_none());
    drop(state);
}

#[test]
fn a_poll_far_back_in_a_long_history_is_linearizable() {
    let sends = 2_000u64;
    let mut history: Vec<_> = (0..sends)
        .map(|i| done(0, 2 * i, 2 * i + 1, send(&[u128::from(i)]), appended(i, i)))
        .collect();
    let at = 2 * sends;
    history.push(done(
        1,
        at,
        at + 1,
        poll(7, 3),
        polled(sends, &[(7, 7), (8, 8), (9, 9)]),
    ));
    let result = check(&PARTITION, &history, SEARCH_STATES_MAX);
    assert_eq!(result.verdict, Verdict::Linearizable);
    assert_eq!(result.states_explored, sends + 1);
}

#[test]
fn a_sequential_group_history_is_linearizable() {
    let model = GroupModel { initial_generation: 4 };
    let history = vec![
        join((0, 0, 5), 1, GroupOutput::Joined { generation: 5 }),
        done(0, 6, 9, GroupInput::Join { member_id: 1 }, GroupOutput::AlreadyMember),
        join((1, 10, 12), 2, GroupOutput::Joined { generation: 6 }),
        leave((0, 13, 15), 1, GroupOutput::Left { generation: 7 }),
        leave((0, 16, 18), 1, GroupOutput::MemberNotFound),
    ];
    assert_eq!(verdict(&model, &history), Verdict::Linearizable);
}

#[test]
fn two_concurrent_joins_answered_one_generation_are_a_violation() {
    let history = vec![
        join((0, 0, 10), 1, GroupOutput::Joined { generation: 1 }),
        join((1, 5, 15), 2, GroupOutput::Joined { generation: 1 }),
    ];
    assert_eq!(verdict(&GROUP, &history), violation(&[0, 1]));
    // Either order of distinct generations is fine.
    let mut ordered = history.clone();
    ordered[0].output = Some(GroupOutput::Joined { generation: 2 });
    assert_eq!(verdict(&GROUP, &ordered), Verdict::Linearizable);
}

#[test]
fn a_leave_of_a_member_nobody_joined_answered_left_is_a_violation() {
    let history = vec![
        join((0, 0, 10), 1, GroupOutput::Joined { generation: 1 }),
        leave((1, 20, 30), 2, GroupOutput::Left { generation: 2 }),
    ];
    assert_eq!(verdict(&GROUP, &history), violation(&[1]));
}

#[test]
fn a_sequential_user_history_is_linearizable() {
    let history = vec![
        done(0, 0, 5, UserInput::Create, UserOutput::Created { user_id: 3 }),
        done(1, 6, 8, UserInput::Create, UserOutput::NameAlreadyExists),
        done(1, 9, 10, UserInput::Delete { user_id: 2 }, UserOutput::UserNotFound),
        done(0, 11, 12, UserInput::Delete { user_id: 3 }, UserOutput::Deleted),
        done(0, 13, 14, UserInput::Delete { user_id: 3 }, UserOutput::UserNotFound),
        // An ambiguous create holds the name (or not) with an id no one knows.
        ambiguous(1, 15, UserInput::Create),
        done(0, 20, 22, UserInput::Create, UserOutput::NameAlreadyExists),
        done(0, 23, 24, UserInput::Delete { user_id: 3 }, UserOutput::UserNotFound),
    ];
    assert_eq!(verdict(&UserModel, &history), Verdict::Linearizable);
}

#[test]
fn two_creates_of_one_name_both_answered_created_are_a_violation() {
    let history = vec![
        done(0, 0, 10, UserInput::Create, UserOutput::Created { user_id: 1 }),
        done(1, 5, 15, UserInput::Create, UserOutput::Created { user_id: 2 }),
        done(0, 20, 30, UserInput::Delete { user_id: 1 }, UserOutput::Deleted),
    ];
    assert_eq!(verdict(&UserModel, &history), violation(&[0, 1]));
    // With the delete between them in real time, both creates are fine.
    let mut apart = history.clone();
    apart[1].invoke_tick = 31;
    apart[1].complete_tick = Some(40);
    assert_eq!(verdict(&UserModel, &apart), Verdict::Linearizable);
}

/// Twelve concurrent sends answered in reverse invoke order: linearizable, but the
/// search meets every wrong first choice before the right one.
fn wide_concurrent_sends() -> Vec<Operation<PartitionInput, PartitionOutput>> {
    let width = 12u64;
    (0..width)
        .map(|i| {
            let offset = width - 1 - i;
            done(i as usize, i, 100, send(&[u128::from(i)]), appended(offset, offset))
        })
        .collect()
}

#[test]
fn a_search_out_of_states_is_exhausted_not_linearizable() {
    let history = wide_concurrent_sends();
    let result = check(&PARTITION, &history, 5);
    assert_eq!(result.verdict, Verdict::Exhausted);
    assert_eq!(result.states_explored, 5);
    let full = check(&PARTITION, &history, SEARCH_STATES_MAX);
    assert_eq!(full.verdict, Verdict::Linearizable);
    assert!(full.states_explored > 5, "{full:?}");
}

#[test]
fn a_wide_violation_out_of_states_is_exhausted_not_a_violation() {
    // Eight commuting concurrent polls before an impossible send: proving it needs all
    // 2^8 subsets of polls.
    let mut history: Vec<_> = (0..8u64)
        .map(|i| done(i as usize, 0, 100, poll(0, 10), polled(0, &[])))
        .collect();
    history.push(done(9, 0, 100, send(&[1]), appended(5, 5)));
    assert_eq!(check(&PARTITION, &history, 20).verdict, Verdict::Exhausted);
    assert_eq!(verdict(&PARTITION, &history), violation(&[8]));
}

#[test]
fn a_minimization_out_of_budget_reports_the_history_reduced_so_far() {
    let history = vec![
        done(1, 0, 5, poll(0, 10), polled(0, &[])),
        done(0, 10, 20, send(&[1]), appended(0, 0)),
        done(1, 30, 35, poll(0, 10), polled(0, &[])),
    ];
    let result = check_with_budget(&PARTITION, &history, SEARCH_STATES_MAX, 0);
    assert_eq!(
        result.verdict,
        Verdict::Violation {
            minimal: vec![0, 1, 2],
            minimal_is_one_minimal: false,
        }
    );
    assert_eq!(verdict(&PARTITION, &history), violation(&[1, 2]));
}

#[test]
fn describe_writes_one_line_per_operation_in_invoke_order() {
    let history = vec![
        done(3, 1200, 1260, send(&[7]), appended(0, 0)),
        ambiguous(1, 1100, send(&[8])),
        done(2, 1300, 1310, poll(0, 1), polled(1, &[(0, 7)])),
    ];
    assert_eq!(
        describe(&PARTITION, &history, &[0, 1]),
        "client 1 [tick 1100..] Send { ids: [8] } -> unknown\n\
         client 3 [tick 1200..1260] Send { ids: [7] } -> Appended { base_offset: 0, last_offset: 0 }"
    );
}

#[test]
fn two_owners_set_at_one_generation_are_a_violation() {
    let history = vec![
        done(0, 0, 10, set_owner(1, 5), GroupOffsetOutput::Ok),
        done(1, 5, 15, set_owner(2, 5), GroupOffsetOutput::Ok),
    ];
    assert_eq!(verdict(&GroupOffsetModel, &history), violation(&[0, 1]));
    let mut refused = history.clone();
    refused[1].output = Some(GroupOffsetOutput::StaleGeneration);
    assert_eq!(verdict(&GroupOffsetModel, &refused), Verdict::Linearizable);
}

#[test]
fn an_ambiguous_join_may_have_happened() {
    let history = vec![
        ambiguous(0, 0, GroupInput::Join { member_id: 1 }),
        done(1, 20, 30, GroupInput::Join { member_id: 1 }, GroupOutput::AlreadyMember),
        join((1, 40, 50), 2, GroupOutput::Joined { generation: 2 }),
    ];
    assert_eq!(verdict(&GROUP, &history), Verdict::Linearizable);
}

#[test]
fn a_delete_never_matches_the_user_an_ambiguous_create_made() {
    // The model's assumption: a delete names only an id some create answered, and the
    // user an ambiguous create made has an id no one was told.
    let history = vec![
        ambiguous(0, 0, UserInput::Create),
        done(1, 20, 30, UserInput::Create, UserOutput::NameAlreadyExists),
        done(1, 40, 50, UserInput::Delete { user_id: 5 }, UserOutput::Deleted),
    ];
    assert_eq!(verdict(&UserModel, &history), violation(&[2]));
}

#[test]
fn a_history_of_ambiguous_operations_only_is_linearizable() {
    let history: Vec<Operation<PartitionInput, PartitionOutput>> = vec![
        ambiguous(0, 0, send(&[1])),
        ambiguous(1, 0, PartitionInput::Purge),
        ambiguous(2, 3, poll(0, 5)),
    ];
    let result = check(&PARTITION, &history, SEARCH_STATES_MAX);
    assert_eq!(result.verdict, Verdict::Linearizable);
    assert_eq!((result.operations, result.ambiguous), (2, 2));
}

#[test]
#[should_panic(expected = "operation 1 has an answer but no completion tick")]
fn an_answer_without_a_completion_tick_is_a_workload_bug() {
    let mut broken = done(0, 5, 6, poll(0, 1), polled(0, &[]));
    broken.complete_tick = None;
    check(
        &PARTITION,
        &[done(0, 0, 1, poll(0, 1), polled(0, &[])), broken],
        SEARCH_STATES_MAX,
    );
}

#[test]
fn checking_one_history_twice_gives_identical_results() {
    // A poll after twelve sends that sees three: wrong without any one of them, so the
    // poll alone is reported.
    let mut history = wide_concurrent_sends();
    history.push(done(20, 200, 210, poll(0, 100), polled(3, &[])));
    let first = check(&PARTITION, &history, SEARCH_STATES_MAX);
    let second = check(&PARTITION, &history, SEARCH_STATES_MAX);
    assert_eq!(first, second);
    assert_eq!(
        first,
        CheckResult {
            verdict: violation(&[12]),
            operations: 13,
            ambiguous: 0,
            states_explored: 12,
        }
    );
}
