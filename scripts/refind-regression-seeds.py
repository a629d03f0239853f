#!/usr/bin/env python3
"""Find again the seeds the schedule-pinned regression tests need, after a change moved
their runs off the scenario (simulator/tests/regressions.rs says which test and why).

Some scenarios hang on a whole schedule, not on a bug a check still sees: a change to
the cluster that alters any packet, storage call or draw moves the run. The tests then
fail saying the scenario is gone, and their seed must be found again by the scan their
comment describes. This script is that scan:

  fail-stop  `a_fail_stopped_replica_outside_the_liveness_core_stays_down_through_the_phase`:
             a replica fail-stops in the last 100 ticks before the liveness phase (tick
             10,000) and the phase's core leaves it out, and the core settles.
  transfer   `a_transferred_reply_with_a_corrupted_header_is_caught_at_install_not_as_a_wedge`:
             with `--break-storage install-unverified-transfer` the run fails
             "checkpoint diverged", naming a cached reply that does not verify, while
             the same seed unbroken passes.

  unnamed-op-nacks  `an_op_no_authoritative_log_names_is_decided_by_nacks`: the swarm
             metadata replay reaches `vc.nack_quorum_drops_unnamed_op` and passes.
  far-behind `a_replica_restarted_far_behind_on_a_small_link_catches_up_within_the_bound`:
             a replica is 256 or more ops behind at the liveness phase's election
             (`ops_behind_max` on the `timeliness (liveness)` line) and the run passes.

It prints each seed that holds the scenario (and for fail-stop the schedule hash the
test pins). Usage:

  scripts/refind-regression-seeds.py fail-stop --seeds 6002641..6002900 [--first]
  scripts/refind-regression-seeds.py transfer --seeds 1..200 [--first]
  scripts/refind-regression-seeds.py unnamed-op-nacks --seeds 54..300 [--first]
  scripts/refind-regression-seeds.py far-behind --seeds 90000049..90000400 [--first]

Runs target/release/workload-fuzz (build it first: `cargo build --release`) with the
tests' flags, which the constants below copy: keep them in step.
"""

import argparse
import os
import re
import subprocess
import sys

FUZZ = os.path.join(os.path.dirname(__file__), "..", "target", "release", "workload-fuzz")

FAIL_STOP_FLAGS = (
    "--ticks 10000 --replicas 5 --clients 4 --plane metadata --faults light --crash-prob 0.01 "
    "--restart-prob 0.05 --power-loss-prob 0.3 --crash-primary"
).split()

TRANSFER_FLAGS = (
    "--ticks 15000 --clients 1 --shards 2 --plane uniform --faults light --crash-prob 0.02 "
    "--restart-prob 0.02 --power-loss-prob 0.3 --crash-primary --journal-slots 80 --ring-entries 80 "
    "--packet-corruption 0.05"
).split()

NACKS_FLAGS = (
    "--ticks 6000 --plane metadata --faults swarm --crash-prob 0.01 --restart-prob 0.05 --crash-primary"
).split()

FAR_BEHIND_FLAGS = (
    "--ticks 20000 --replicas 3 --clients 8 --shards 1 --plane metadata --faults swarm --min-replies 1 "
    "--min-commits 1 --min-ops-compared 1 --crash-prob 0.02 --restart-prob 0.002 --power-loss-prob 0.3 "
    "--storage sim --storage-faults budgeted --journal-slots 1024 --ring-entries 128 --ring-bytes 67108864 "
    "--crash-primary"
).split()

# Ops behind at the election the far-behind scenario asks for (the test checks a
# repair window, 128; twice that leaves room for the next change to move it).
FAR_BEHIND_OPS_MIN = 256

# The liveness phase begins at the end of the fault phase: tick 10,000 for these flags.
PHASE_TICK = 10000
# A fail-stop this close before the phase restarts (the supervisor waits 100 ticks)
# inside it.
FAIL_STOP_WINDOW_TICKS = 100


def run(flags, seed, env=None):
    result = subprocess.run(
        [FUZZ, "--seed", str(seed), *flags],
        capture_output=True,
        text=True,
        env=env,
    )
    return result.returncode, result.stdout + result.stderr


def fail_stop_holds(seed):
    env = dict(os.environ, RUST_LOG="info")
    code, text = run(FAIL_STOP_FLAGS, seed, env)
    if code != 0:
        return None
    core = re.search(r"^liveness: core \[([0-9, ]*)\] settled", text, re.M)
    if not core:
        return None
    members = {int(r) for r in core.group(1).split(",") if r.strip()}
    for tick, replica in re.findall(r"^tick\s+(\d+)\s+INFO fail-stop replica=(\d+)", text, re.M):
        tick, replica = int(tick), int(replica)
        if PHASE_TICK - FAIL_STOP_WINDOW_TICKS <= tick < PHASE_TICK and replica not in members:
            schedule = re.search(r"schedule_hash=(0x[0-9a-f]+)", text)
            return f"replica {replica} fail-stops at tick {tick}, core {sorted(members)}, schedule_hash={schedule.group(1) if schedule else '?'}"
    return None


def transfer_holds(seed):
    code, text = run(TRANSFER_FLAGS + ["--break-storage", "install-unverified-transfer"], seed)
    if code == 0:
        return None
    if not (
        "check failed: checkpoint diverged" in text
        and "holds a reply for client" in text
        and "not a frame that verifies" in text
    ):
        return None
    code, _ = run(TRANSFER_FLAGS, seed)
    if code != 0:
        return None
    return "broken run fails at install naming the reply; unbroken passes"


def unnamed_op_nacks_hold(seed):
    code, text = run(NACKS_FLAGS, seed)
    if code != 0 or "vc.nack_quorum_drops_unnamed_op=" not in text:
        return None
    return "reaches vc.nack_quorum_drops_unnamed_op and passes"


def far_behind_holds(seed):
    code, text = run(FAR_BEHIND_FLAGS, seed)
    line = re.search(r"^timeliness \(liveness\).*?ops_behind_max=(\d+)", text, re.M)
    if code != 0 or not line or int(line.group(1)) < FAR_BEHIND_OPS_MIN:
        return None
    return f"a replica {line.group(1)} ops behind at the liveness election; passes"


SCENARIOS = {
    "fail-stop": fail_stop_holds,
    "transfer": transfer_holds,
    "unnamed-op-nacks": unnamed_op_nacks_hold,
    "far-behind": far_behind_holds,
}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("scenario", choices=sorted(SCENARIOS))
    parser.add_argument("--seeds", required=True, help="A..B, inclusive")
    parser.add_argument("--first", action="store_true", help="stop at the first seed that holds it")
    args = parser.parse_args()
    try:
        low, high = (int(part) for part in args.seeds.split(".."))
    except ValueError:
        sys.exit(f"--seeds must be A..B, got {args.seeds!r}")
    if not os.path.exists(FUZZ):
        sys.exit(f"{FUZZ} is missing: run `cargo build --release` first")
    holds = SCENARIOS[args.scenario]
    found = 0
    for seed in range(low, high + 1):
        what = holds(seed)
        if what:
            found += 1
            print(f"seed {seed}: {what}", flush=True)
            if args.first:
                break
    print(f"{found} of the seeds {low}..{high} hold the {args.scenario} scenario")
    sys.exit(0 if found else 1)


if __name__ == "__main__":
    main()
