#!/usr/bin/env bash
# CI's nemesis smoke test: real node processes under real faults, about three to seven minutes.
#
# 1. Two runs (one exact, one contended) of 3 nodes and 4 clients with every fault kind
#    (each in its own network namespace; libfiu and libfaketime installed by
#    scripts/install-test-tools.sh nemesis): must pass, inject every kind, and write a
#    report with the nemesis section.
# 2. The planted bug: nodes started with the test-only --test-break
#    wal-drop-last-record (each start forgets the last record of every log) under kills
#    of the whole cluster: every run must fail, by a lost acknowledged message, a node's
#    assertion or a wedge (see below), and the loss is looked for in up to 3 runs.
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
# once after a kill-all: more than the fault model allows, so ops can be gone from
# every disk. Real processes are not scheduled the same way twice, so seed 7 shows one
# of three faces (counted over 9 runs on this machine: 6, 2 and 1):
#   loss: the checker finds an acknowledged message in no log (the face this step
#     exists to show on real processes);
#   assertion: the lost op sits below ops the cluster still holds and a node's own
#     assertion stops it ("a complete log lacks a committed op"); the node exits with
#     status 101 and the nemesis reports the crash with the panic's message;
#   wedge: the metadata group lost the ops that logged the clients in, and no send is
#     acknowledged after the heal (a liveness failure; the pass runs above, with the
#     same fault kinds and no planted bug, show the faults alone do not do this).
# Every run must fail with one of the three; a pass, a vacuous run or any other failure
# fails the step. Runs are repeated (at most 3) until one shows the loss, so the loss
# check is exercised in all but about one CI run in 27; if none does, the bug was still
# caught every time, and the step passes saying by what.
faces=()
for attempt in 1 2 3; do
  status=0
  log="$out/break-$attempt.log"
  target/release/nemesis --nodes 3 --clients 4 --runs 1 --seed 7 --run-seconds 8 --faults kill-all,kill \
    --node-break wal-drop-last-record --out "$out/break-$attempt" >"$log" 2>&1 || status=$?
  tail -5 "$log"
  face=""
  if [ "$status" -eq 1 ]; then
    if grep -q "lost: message" "$log"; then
      face="loss"
    elif grep -q "crash: node [0-9]* panicked at .*lacks a committed op" "$log"; then
      face="assertion"
    elif grep -q "^nemesis: fail seed 7: liveness: " "$log"; then
      face="wedge"
    fi
  fi
  if [ -z "$face" ]; then
    echo "nemesis-smoke: FAIL: the planted bug was not caught (attempt $attempt, exit $status; $log)" >&2
    exit 1
  fi
  faces+=("attempt $attempt: $face")
  echo "nemesis-smoke: attempt $attempt caught the planted bug ($face)"
  if [ "$face" = loss ]; then
    break
  fi
done
echo "nemesis-smoke: the planted bug was caught in every run (${faces[*]})"
