#!/usr/bin/env python3
"""Measure what each campaign configuration buys per CPU second, to choose the nightly
mix (scripts/nightly.spec) from figures instead of guesses.

For every configuration (plane x profile x clients, plus the variants below), run SEEDS
workload-fuzz seeds on the release binary and report, per CPU second of run time:
requests answered, coverage marks reached (sum over runs), and the distinct marks the
configuration reached at all. Runs go JOBS at a time.

    cargo build --release -p simulator --bin workload-fuzz
    scripts/measure-mix.py                 # SEEDS=20 JOBS=2 TICKS=10000
    SEEDS=40 scripts/measure-mix.py > mix.txt

Figures move from machine to machine; compare rows of one run only.
"""

import concurrent.futures
import itertools
import os
import re
import subprocess
import sys

SEEDS = int(os.environ.get("SEEDS", "20"))
JOBS = int(os.environ.get("JOBS", "2"))
TICKS = os.environ.get("TICKS", "10000")
FIRST_SEED = int(os.environ.get("FIRST_SEED", "500000"))
BINARY = os.environ.get("BINARY", "target/release/workload-fuzz")

CRASHES = ["--crash-prob", "0.01", "--restart-prob", "0.05", "--crash-primary"]
POWER = ["--power-loss-prob", "0.3"]
SMALL_JOURNALS = ["--journal-slots", "80", "--ring-entries", "80"]


def configurations():
    for plane, profile, clients in itertools.product(
        ["metadata", "partition", "mixed", "uniform", "lifecycle"],
        ["none", "light", "heavy", "swarm"],
        [1, 4, 8],
    ):
        shards = [] if plane == "metadata" else ["--shards", "2"]
        yield (f"{plane} {profile} c{clients}", ["--plane", plane, "--faults", profile,
               "--clients", str(clients)] + shards + CRASHES + POWER)
    for plane in ["uniform", "partition", "lifecycle"]:
        for profile in ["light", "heavy", "swarm"]:
            yield (f"{plane} {profile} c4 small-journals", ["--plane", plane, "--faults", profile,
                   "--clients", "4", "--shards", "2"] + CRASHES + POWER + SMALL_JOURNALS)


def run(flags, seed):
    command = [BINARY, "--seed", str(seed), "--ticks", TICKS] + flags
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    out = result.stdout
    wall = re.search(r"wall: ([0-9.]+) s", result.stderr + out)
    replies = re.search(r"^workload: requests=\d+ replies=(\d+)", out, re.M)
    marks = re.search(r"^coverage: reached \d+ of \d+ marks:(.*)$", out, re.M)
    names = set()
    if marks:
        names = {item.split("=")[0] for item in marks.group(1).split()}
    ok = "OK (seed" in out
    return (float(wall.group(1)) if wall else 0.0, int(replies.group(1)) if replies else 0, names, ok,
            " ".join(command))


def main():
    rows = []
    configs = list(configurations())
    with concurrent.futures.ThreadPoolExecutor(max_workers=JOBS) as pool:
        futures = {
            name: [pool.submit(run, flags, FIRST_SEED + i) for i in range(SEEDS)]
            for name, flags in configs
        }
        for name, _ in configs:
            results = [future.result() for future in futures[name]]
            seconds = sum(r[0] for r in results) or 1e-9
            replies = sum(r[1] for r in results)
            hits = sum(len(r[2]) for r in results)
            distinct = set().union(*(r[2] for r in results))
            failed = [r[4] for r in results if not r[3]]
            rows.append((name, distinct))
            print(f"{name:40} cpu {seconds:6.1f} s  replies/s {replies / seconds:7.0f}  "
                  f"mark-hits/s {hits / seconds:6.1f}  distinct marks {len(distinct):2}  "
                  f"not ok {len(failed)}", flush=True)
            for command in failed[:2]:
                print(f"    not ok: {command}", flush=True)
    print("\nrare marks (reached by at most 6 configurations) and where:")
    by_mark = {}
    for name, distinct in rows:
        for mark in distinct:
            by_mark.setdefault(mark, []).append(name)
    for mark, names in sorted(by_mark.items(), key=lambda item: len(item[1])):
        if len(names) <= 6:
            print(f"  {mark:42} {len(names)}: {'; '.join(names)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
