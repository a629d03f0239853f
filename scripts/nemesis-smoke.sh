#!/usr/bin/env bash
# CI's nemesis smoke test: real node processes under real faults, about three minutes.
#
# 1. Two runs (one exact, one contended) of 3 nodes and 4 clients with every fault kind
#    (each in its own network namespace; libfiu and libfaketime installed by
#    scripts/install-test-tools.sh nemesis): must pass, inject every kind, and write a
#    report with the nemesis section.
# 2. The planted bug: nodes started with the test-only --test-break
#    wal-drop-last-record (each start forgets the last record of every log) under kills
#    of the whole cluster: the run must fail, and say an acknowledged message was lost.
#
# Needs root (namespaces; without them the harness says so and drops network faults).
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-test-tools.sh nemesis
cargo build --release --locked -p cluster --bin node -p simulator --bin nemesis

out=${OUT:-$(mktemp -d /tmp/nemesis-smoke.XXXXXX)}
echo "nemesis-smoke: output in $out"

echo "--- two runs, every fault kind"
status=0
target/release/nemesis --nodes 3 --clients 4 --runs 2 --seed 42 --run-seconds 15 --out "$out/pass" || status=$?
if [ "$status" -ne 0 ]; then
  echo "nemesis-smoke: FAIL: the nemesis runs exited $status (see the repro lines above and $out/pass)" >&2
  exit 1
fi
python3 - "$out/pass/report.json" <<'PY'
import json, sys
report = json.load(open(sys.argv[1]))
summary = report.get("nemesis")
assert summary, "report.json has no nemesis section"
runs = len(report["runs"])
assert runs == 2 and all(r["verdict"] == "pass" for r in report["runs"]), report["runs"]
kinds = summary["faults_by_kind"]
missing = [k for k in ["kill", "kill-all", "pause-primary", "terminate", "rolling-restart",
                       "fsync-primary", "write-error", "read-error", "clock-offset", "clock-drift"]
           if kinds.get(k, 0) < runs]
if summary["namespaces"]:
    missing += [k for k in ["isolate", "one-way", "cut-link", "split"] if kinds.get(k, 0) < runs]
assert not missing, f"fault kinds injected fewer than once per run: {missing} ({kinds})"
acked = sum(r["stats"]["acked_messages"] for r in summary["runs"])
assert acked > 0, "no message acknowledged"
print(f"nemesis-smoke: 2 runs passed; {sum(kinds.values())} faults over {len(kinds)} kinds; "
      f"{acked} acknowledged messages found; namespaces: {summary['namespaces']}")
PY

echo "--- the planted bug (--node-break wal-drop-last-record) must be caught"
# The planted bug drops the last record of every log at every start, on every node at
# once after a kill-all: more than the fault model allows, so an op can be gone from
# every disk. It is caught in one of two ways: the checker finds an acknowledged
# message lost (what this step asserts), or the lost op sits below ops the cluster
# still holds and the group refuses to commit past a hole no replica can repair (a
# liveness failure: the protocol choosing safety). Real processes are not scheduled
# the same way twice, so seed 7 gives the first about 16 times in 17 (seeds 8, 9 and 10
# wedged in every run tried); a wedge proves nothing about the loss check, so it earns one more run
# of the same seed, which must report the loss.
caught=""
for attempt in 1 2; do
  status=0
  log="$out/break-$attempt.log"
  target/release/nemesis --nodes 3 --clients 4 --runs 1 --seed 7 --run-seconds 8 --faults kill-all,kill \
    --node-break wal-drop-last-record --out "$out/break-$attempt" >"$log" 2>&1 || status=$?
  tail -5 "$log"
  if [ "$status" -eq 1 ] && grep -q "lost: message" "$log"; then
    caught=$attempt
    break
  fi
  if [ "$attempt" = 1 ] && [ "$status" -eq 1 ] && grep -q "liveness:" "$log"; then
    echo "nemesis-smoke: the planted bug wedged the cluster (a liveness failure, its other face); once more"
    continue
  fi
  echo "nemesis-smoke: FAIL: the planted bug was not caught as a lost acknowledged message (attempt $attempt, exit $status; $log)" >&2
  exit 1
done
if [ -z "$caught" ]; then
  echo "nemesis-smoke: FAIL: the planted bug was not caught as a lost acknowledged message in 2 attempts ($out/break-*.log)" >&2
  exit 1
fi
echo "nemesis-smoke: the planted bug was caught (attempt $caught: exit 1, an acknowledged message lost)"
