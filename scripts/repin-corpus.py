#!/usr/bin/env python3
"""Re-pin the seed corpus after a change that moved every schedule.

A corpus line (seeds/*.jsonl) that names `marks` must still reach them; the seeds test
fails a line whose run no longer does (seeds/README.md). This script does the re-pin
the README describes, for every such line at once:

1. replays each `workload-fuzz` line that names marks on the release build and reads
   its `coverage:` line;
2. for each line that misses a mark, runs `campaign --explore --target-marks <its
   marks>` over the line's own flags (`--plane`/`--faults`/`--shards` become
   `--planes`/`--profiles`/`--node-shards`), on seeds from `--seeds-from`, one line
   after another, `--minutes` each;
3. with `--write`, replaces the line's command with the first run that reached them all
   (every flag, `--branch` points included) and adds a `repinned` note. Without
   `--write` it only prints what it would do.

A line no search re-finds is left alone and named at the end: widen the search (other
flags, more minutes) or follow the README. Check that each re-pinned line's `test`
still covers its bug; this script cannot.

Usage: scripts/repin-corpus.py [--write] [--minutes M] [--seeds-from N] [--reason TEXT]
Needs `cargo build --release -p simulator --bin campaign --bin workload-fuzz` first.
"""

import argparse
import glob
import json
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FUZZ = os.path.join(ROOT, "target", "release", "workload-fuzz")
CAMPAIGN = os.path.join(ROOT, "target", "release", "campaign")
# workload-fuzz flags whose campaign spelling differs.
RENAMED = {"--plane": "--planes", "--faults": "--profiles", "--shards": "--node-shards"}


def reached_marks(command):
    """The coverage marks a corpus command's run reaches."""
    out = subprocess.run([FUZZ] + command.split()[1:], capture_output=True, text=True).stdout
    line = next((l for l in out.splitlines() if l.startswith("coverage:")), "")
    return set(re.findall(r" ([a-z_]+\.[a-z_]+)=", line))


def campaign_flags(command):
    """The line's flags as campaign takes them, without its seed and branch points."""
    args, flags, i = command.split()[1:], [], 0
    while i < len(args):
        if args[i] in ("--seed", "--branch"):
            i += 2
            continue
        flags.append(RENAMED.get(args[i], args[i]))
        i += 1
    return flags


def search(value, minutes, first_seed, out_dir):
    """The first run of the line's flags that reaches every mark, or None."""
    cmd = [CAMPAIGN, "--explore", "--target-marks", ",".join(value["marks"]),
           "--seeds", f"{first_seed}..{first_seed + 999_999}", "--minutes", str(minutes),
           "--jobs", str(os.cpu_count() or 1), "--no-shrink", "--out", out_dir]
    subprocess.run(cmd + campaign_flags(value["command"]), capture_output=True, text=True)
    try:
        with open(os.path.join(out_dir, "report.json")) as report:
            found = json.load(report)["explore"]["first_reaching_targets"]
    except (OSError, KeyError, ValueError):
        return None
    if not isinstance(found, str) or " -- " not in found:
        return None
    return "workload-fuzz " + found.split(" -- ", 1)[1]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--write", action="store_true", help="rewrite the corpus files")
    parser.add_argument("--minutes", type=float, default=1.5, help="search budget per line")
    parser.add_argument("--seeds-from", type=int, default=40_000_000,
                        help="first seed searched; each line searches its own million after it")
    parser.add_argument("--reason", default="a change moved every schedule",
                        help="what changed, for the `repinned` note: it completes \"<old seed> no longer "
                             "reached it once ...\"")
    parser.add_argument("--date", default=None, help="the note's date (default: today)")
    args = parser.parse_args()
    for binary in (FUZZ, CAMPAIGN):
        if not os.access(binary, os.X_OK):
            sys.exit(f"repin-corpus: {binary} is missing; build it with cargo build --release -p simulator")
    date = args.date or subprocess.run(["date", "+%Y-%m-%d"], capture_output=True, text=True).stdout.strip()
    unfound, searched = [], 0
    for path in sorted(glob.glob(os.path.join(ROOT, "seeds", "*.jsonl"))):
        lines = open(path).read().splitlines()
        changed = False
        for number, text in enumerate(lines, 1):
            if not text.strip():
                continue
            value = json.loads(text)
            if not value.get("marks") or not value["command"].startswith("workload-fuzz "):
                continue
            missing = [m for m in value["marks"] if m not in reached_marks(value["command"])]
            where = f"{os.path.basename(path)}:{number}"
            if not missing:
                print(f"{where}: reaches {', '.join(value['marks'])}")
                continue
            first_seed = args.seeds_from + searched * 1_000_000
            searched += 1
            print(f"{where}: misses {', '.join(missing)}; searching seeds {first_seed}.. for {args.minutes} min")
            found = search(value, args.minutes, first_seed, f"/tmp/repin-corpus-{os.getpid()}-{searched}")
            if found is None:
                unfound.append(where)
                print(f"{where}: not found")
                continue
            old = re.search(r"--seed \d+( --branch \S+)?", value["command"]).group(0)
            print(f"{where}: found {found}")
            value["command"] = found
            value["repinned"] = (f"{date}: {old} no longer reached it once {args.reason}; found again with "
                                 f"campaign --explore --target-marks {','.join(value['marks'])}")
            lines[number - 1] = json.dumps(value)
            changed = True
        if changed and args.write:
            with open(path, "w") as out:
                out.write("\n".join(lines) + "\n")
    if unfound:
        print("not re-pinned (widen the search, or see seeds/README.md): " + ", ".join(unfound))
        sys.exit(1)


if __name__ == "__main__":
    main()
