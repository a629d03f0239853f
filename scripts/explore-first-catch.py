#!/usr/bin/env python3
"""Time to first catch of planted bugs, explore against plain: issue #45's second measure.

For each test-only break (`--break-storage NAME`, default: those on rare paths) and
each of `--ranges` fresh seed ranges (a million seeds each, from `--seeds-from`), runs
the spec with the break twice at once, one core each, until the first failing run
(`--stop-after-failures 1`) or `--minutes`:

  plain    the spec with every `--explore` taken out;
  explore  the spec with `--explore` for every sub-campaign.

It prints, per break, each range's seconds to the first catch on both sides (from
report.json: the earliest `finished_seconds` of a failing run; a side that caught
nothing prints `>` its budget) and whether explore's catch was a branched run, then the
medians. Both sides run at once on their own core, so seconds are CPU-seconds too.

Usage:
  scripts/explore-first-catch.py --seeds-from 130000000 [--ranges 5] [--minutes 1.5]
      [--breaks view-change-waits-for-every-replica,answer-queries-unconfirmed,...]
      [--spec scripts/nightly.spec] [--out DIR]
  scripts/explore-first-catch.py --seeds-from 332000000 --rates 1
      (each break's plain catch rate: which are on rare paths, under 1%)

Runs target/release/campaign (build it first: `cargo build --release`). Use seed
ranges no earlier measurement used.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from importlib import import_module  # noqa: E402

vs_plain = import_module("explore-vs-plain")

# The breaks the issue names, and every other whose plain catch rate on the nightly
# spec is under 1% (`--rates`, 2026-12-07, one minute of plain runs each, seeds 332M:
# answer-queries-unconfirmed 0.41%, install-unverified-transfer 0.77%,
# repair-one-op-a-round 0 of 248 runs; every other break 7.7% or more, and
# view-change-waits-for-every-replica, named though no rare path here, 16.6%).
BREAKS = ("view-change-waits-for-every-replica,answer-queries-unconfirmed,install-unverified-transfer,"
          "repair-one-op-a-round")

# Every test-only break (`workload-fuzz --break-storage`), for `--rates`.
ALL_BREAKS = ("keep-going-after-failed-write,cut-damage-as-torn-tail,read-error-as-end-of-file,"
              "ack-persisted-before-publish,skip-wal-checksums,install-unverified-transfer,"
              "view-change-waits-for-every-replica,install-checkpoint-without-client-table,"
              "answer-queries-unconfirmed,repair-one-op-a-round,leave-view-after-ten-windows,transfer-tiny-chunks")


def rates(args, work, plain_spec):
    """Each break's plain catch rate (failing runs over runs) in `--rates` minutes of
    the spec, two breaks at a time (one core each): which breaks are on rare paths."""
    breaks = ALL_BREAKS.split(",")
    for pair in range(0, len(breaks), 2):
        running = []
        for broken in breaks[pair:pair + 2]:
            out = os.path.join(work, f"rate-{broken}")
            command = [vs_plain.CAMPAIGN, "--spec", plain_spec, "--seeds", f"{args.seeds_from}..{args.seeds_from + 999_999}",
                       "--minutes", str(args.rates), "--jobs", "1", "--no-shrink", "--break-storage", broken,
                       "--out", out]
            running.append((broken, out, subprocess.Popen(command, stdout=open(out + ".log", "w"),
                                                          stderr=subprocess.STDOUT)))
        for broken, out, process in running:
            process.wait()
            report = json.load(open(os.path.join(out, "report.json")))
            failed = sum(run["verdict"] == "fail" for run in report["runs"])
            total = len(report["runs"])
            rate = 100 * failed / max(1, total)
            print(f"  {broken:42} {failed:5} of {total:5} runs failed  {rate:6.2f}%"
                  f"{'   (under 1%: a rare path)' if rate < 1 else ''}")


def start(spec, seeds, minutes, out, explore, broken):
    command = [vs_plain.CAMPAIGN, "--spec", spec, "--seeds", seeds, "--minutes", str(minutes), "--jobs", "1",
               "--no-shrink", "--stop-after-failures", "1", "--break-storage", broken, "--out", out]
    if explore:
        command.append("--explore")
    return subprocess.Popen(command, stdout=open(out + ".log", "w"), stderr=subprocess.STDOUT)


def first_catch(report_dir):
    report = json.load(open(os.path.join(report_dir, "report.json")))
    failing = [run for run in report["runs"] if run["verdict"] == "fail"]
    if not failing:
        return None, None, len(report["runs"])
    first = min(failing, key=lambda run: run["finished_seconds"])
    return first["finished_seconds"], first["command"], len(report["runs"])


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds-from", type=int, required=True)
    parser.add_argument("--ranges", type=int, default=5)
    parser.add_argument("--minutes", type=float, default=1.5)
    parser.add_argument("--breaks", default=BREAKS)
    parser.add_argument("--spec", default=os.path.join(vs_plain.ROOT, "scripts", "nightly.spec"))
    parser.add_argument("--out", default=None)
    parser.add_argument("--rates", type=float, default=None, metavar="MINUTES",
                        help="instead: print every break's plain catch rate in MINUTES of the spec each")
    args = parser.parse_args()
    if not os.access(vs_plain.CAMPAIGN, os.X_OK):
        sys.exit(f"{vs_plain.CAMPAIGN} is missing: run `cargo build --release` first")
    work = args.out or tempfile.mkdtemp(prefix="explore-first-catch-")
    os.makedirs(work, exist_ok=True)
    plain_spec, explore_spec = vs_plain.spec_variants(args.spec, work)
    print(f"reports under {work}")
    if args.rates is not None:
        rates(args, work, plain_spec)
        return
    summary = {}
    for broken in args.breaks.split(","):
        print(f"\n{broken}")
        times = {"plain": [], "explore": []}
        for index in range(args.ranges):
            low = args.seeds_from + index * 1_000_000
            seeds = f"{low}..{low + 999_999}"
            sides = {
                "plain": start(plain_spec, seeds, args.minutes, os.path.join(work, f"{broken}-r{index}-plain"), False,
                               broken),
                "explore": start(explore_spec, seeds, args.minutes, os.path.join(work, f"{broken}-r{index}-explore"),
                                 True, broken),
            }
            row = []
            commands = {}
            for side, process in sides.items():
                process.wait()
                seconds, command, runs = first_catch(os.path.join(work, f"{broken}-r{index}-{side}"))
                commands[side] = command
                times[side].append(seconds if seconds is not None else float("inf"))
                shown = f"{seconds:6.1f} s" if seconds is not None else f">{args.minutes * 60:5.0f} s"
                branched = " (branched)" if command and "--branch" in command else ""
                row.append(f"{side} {shown}{branched} after {runs} runs")
            # A root caught by both sides is the same run (same seed, same flags): explore
            # found it no sooner than its roots' pace allowed (stop 64: 11 of 20 catches of two breaks).
            if commands["plain"] and commands["plain"] == commands["explore"]:
                row.append("the same root run")
            print(f"  {seeds}: " + "; ".join(row))
        medians = {side: statistics.median(values) for side, values in times.items()}
        faster = sum(e <= p for p, e in zip(times["plain"], times["explore"]))
        print(f"  medians: plain {medians['plain']:.1f} s, explore {medians['explore']:.1f} s "
              f"(explore as fast or faster in {faster} of {args.ranges})")
        summary[broken] = times
    with open(os.path.join(work, "summary.json"), "w") as out:
        json.dump(summary, out, indent=1, default=str)


if __name__ == "__main__":
    main()
