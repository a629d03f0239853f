//! The client table (each client's newest committed request and its reply) is
//! replicated state like the state machine: replicas that applied the same ops must
//! hold the same entries, or a client's resend executes twice on one of them. The
//! checkpoint check and the end-of-run oracle compare it.
//!
//! The bug is planted through the test-only `--break-storage
//! install-checkpoint-without-client-table`: installing a checkpoint (at boot, or from
//! a state transfer) restores the state machine but keeps the replica's old client
//! table. The states still agree; only the client tables show it, before any resend
//! does.

mod common;

use simulator::fuzz::Verdict;

/// Small journals (checkpoints every few dozen ops, state transfers) with crashes and
/// restarts, so replicas install checkpoints at boot and from peers.
const FLAGS: &str = "--ticks 6000 --plane partition --faults light --clients 4 --shards 2 --journal-slots 80 --ring-entries 80 --crash-prob 0.01 --restart-prob 0.05 --power-loss-prob 0.3";

/// Seeds to try before concluding the comparison never catches the planted bug.
const SEEDS_TRIED_MAX: u64 = 20;

fn run(seed: u64, extra: &[&str]) -> (Verdict, String) {
    common::fuzz(seed, &[&common::flags(FLAGS)[..], extra].concat())
}

#[test]
fn a_checkpoint_installed_without_its_client_table_is_caught_by_comparing_client_tables() {
    let broken = ["--break-storage", "install-checkpoint-without-client-table"];
    let caught = (1..=SEEDS_TRIED_MAX).find_map(|seed| match run(seed, &broken) {
        (Verdict::Failed(reason), _) if reason.contains("client table") => Some((seed, reason)),
        _ => None,
    });
    let Some((seed, reason)) = caught else {
        panic!(
            "no seed of 1..={SEEDS_TRIED_MAX} failed a client-table comparison with checkpoints installed without \
             their client tables"
        );
    };
    assert!(
        reason.contains("deduplication entries and replies"),
        "the failure says what differs: {reason}"
    );
    // The same seed with checkpoints installed whole passes, having compared states.
    let (fixed, output) = run(seed, &[]);
    assert_eq!(fixed, Verdict::Pass, "seed {seed} without the planted bug\n{output}");
}
