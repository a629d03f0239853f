//! The adversary fault class (`simulator/src/adversary.rs`): a party on the network that
//! is not a replica sends forged votes, impossible numbers, forged prepares, replays,
//! another cluster's frames and batches. The cluster must refuse every one, unread, and
//! stay safe and live; the harness checks each tick that every frame handed to a live
//! node was refused.

mod common;

use simulator::fuzz::Verdict;

const ATTACKED: &str = "--ticks 5000 --plane mixed --faults light --clients 2 --shards 2 --crash-prob 0.01 \
                        --restart-prob 0.05 --crash-primary --adversary-prob 0.05";

#[test]
fn every_frame_the_adversary_lands_on_a_replica_is_refused_and_the_cluster_stays_safe_and_live() {
    for seed in 1..=4 {
        let (verdict, text) = common::fuzz(seed, &common::flags(ATTACKED));
        assert_eq!(verdict, Verdict::Pass, "seed {seed}:\n{text}");
        let sent = common::counter_on(&text, "adversary:", "sent");
        let reached = common::counter_on(&text, "adversary:", "reached_a_replica");
        let refused = common::counter_on(&text, "adversary:", "refused");
        // 5,000 ticks at 0.05 a tick: about 250 frames, every kind among them.
        assert!(sent > 100, "seed {seed}: {sent} sent");
        assert!(
            reached > 0 && reached <= sent,
            "seed {seed}: {reached} of {sent} reached a replica"
        );
        assert_eq!(refused, reached, "seed {seed}");
        for kind in [
            "forged_votes",
            "forged_numbers",
            "forged_prepares",
            "replays",
            "foreign_cluster",
            "batches",
        ] {
            assert!(
                common::counter_on(&text, "adversary:", kind) > 0,
                "seed {seed}: no {kind}:\n{text}"
            );
        }
    }
}

#[test]
fn a_run_with_an_adversary_replays_byte_for_byte() {
    let (_, first) = common::fuzz(7, &common::flags(ATTACKED));
    let (_, second) = common::fuzz(7, &common::flags(ATTACKED));
    assert_eq!(first, second);
    assert!(
        first.contains("adversary_forged_frame_probability=0.05"),
        "the banner says the adversary is on:\n{first}"
    );
}

#[test]
fn without_an_adversary_a_run_is_the_run_it_always_was() {
    let plain = "--ticks 3000 --plane mixed --faults light --crash-prob 0.01 --restart-prob 0.05 --crash-primary";
    let (_, without) = common::fuzz(3, &common::flags(plain));
    assert!(
        !without.contains("adversary"),
        "no adversary line, no banner field:\n{without}"
    );
    let mut zero = common::flags(plain);
    zero.extend(["--adversary-prob", "0"]);
    let (_, with_zero) = common::fuzz(3, &zero);
    // Only the repro command differs (it names the flag given).
    let strip = |text: &str| {
        text.lines()
            .filter(|line| !line.contains("reproduce with") && !line.starts_with("wall:"))
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert_eq!(strip(&without), strip(&with_zero));
}
