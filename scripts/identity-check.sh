#!/usr/bin/env bash
# Behaviour unchanged? Runs one fixed set of simulator configurations (every plane and
# profile, crashes, power loss, disk faults, outages, contended clients, `--shared`, a
# recorded schedule, a trace, a shrink and a small campaign) with the binaries in a
# directory and writes what each printed, less wall-clock figures, to an output
# directory. Given two output directories it compares them file by file.
#
#   scripts/identity-check.sh run BIN_DIR OUT_DIR     # BIN_DIR holds workload-fuzz, campaign
#   scripts/identity-check.sh compare OUT_A OUT_B     # exit 1 on any difference
#
# A refactoring that says "behaviour unchanged" runs it on the build before and after
# (copy the release binaries of the base aside first) and reports `compare`'s last line.
set -euo pipefail

usage() {
  echo "usage: $0 run BIN_DIR OUT_DIR | compare OUT_A OUT_B" >&2
  exit 2
}

# Each configuration: a name, then workload-fuzz's flags.
configs=(
  "partition-none|--seed 1 --plane partition --faults none --ticks 20000"
  "metadata-heavy-crashes|--seed 2 --plane metadata --faults heavy --clients 2 --crash-prob 0.01 --restart-prob 0.05 --crash-primary"
  "uniform-swarm-moments-buggify|--seed 3 --plane uniform --faults swarm --crash-prob 0.01 --restart-prob 0.05 --crash-primary --crash-moments --buggify"
  "mixed-light-small-journal-power|--seed 4 --plane mixed --faults light --replicas 5 --shards 2 --journal-slots 80 --ring-entries 80 --crash-prob 0.02 --restart-prob 0.02 --power-loss-prob 0.3 --crash-primary"
  "partition-heavy-memory|--seed 5 --plane partition --faults heavy --storage memory --crash-prob 0.01 --restart-prob 0.05"
  "lifecycle-split|--seed 6 --plane lifecycle --faults split --crash-prob 0.01 --restart-prob 0.05"
  "contended-heavy|--seed 7 --plane contended --faults heavy --clients 4 --crash-prob 0.01 --restart-prob 0.05 --crash-primary --shards 2"
  "partition-swarm-clients|--seed 8 --plane partition --faults swarm --clients 3 --crash-prob 0.01 --restart-prob 0.05 --crash-primary"
  "echo-heavy|--seed 9 --plane echo --faults heavy"
  "uniform-disk-faults|--seed 10 --plane uniform --faults light --disk-error-prob 0.001 --disk-corruption-prob 0.5 --disk-slow-prob 0.001 --crash-prob 0.01 --restart-prob 0.05"
  "partition-outages|--seed 11 --plane partition --faults light --power-outage-prob 0.0005 --ticks 15000 --crash-prob 0.005 --restart-prob 0.05"
  "mixed-shared-heavy|--seed 12 --plane mixed --shared --faults heavy --clients 4 --crash-prob 0.01 --restart-prob 0.05 --crash-primary"
  "metadata-no-quiesce-unsafe|--seed 13 --plane metadata --faults heavy --storage-faults unsafe --no-quiesce --crash-prob 0.01 --restart-prob 0.05"
  "partition-no-liveness-corruption|--seed 14 --plane partition --faults light --no-liveness --packet-corruption 0.05 --crash-prob 0.01 --restart-prob 0.05 --heal-before-quiesce"
)

strip_wall() {
  # Wall-clock figures (stderr is not kept at all; a few stdout lines carry timings).
  grep -v -E '^(wall|elapsed|took)[: ]|ticks/s|runs/s|seconds of wall| in [0-9.]+ ?s\b' || true
}

run() {
  local bin=$1 out=$2
  mkdir -p "$out"
  local entry name flags status
  for entry in "${configs[@]}"; do
    name=${entry%%|*}
    flags=${entry#*|}
    status=0
    # shellcheck disable=SC2086 # flags is a flag list without spaces inside values
    "$bin/workload-fuzz" $flags > "$out/$name.raw" 2> /dev/null || status=$?
    strip_wall < "$out/$name.raw" > "$out/$name.txt"
    rm "$out/$name.raw"
    echo "exit $status" >> "$out/$name.txt"
  done

  # A recorded schedule, replayed, and a trace of the run.
  local tmp
  tmp=$(mktemp -d)
  flags=(--seed 15 --plane mixed --faults heavy --clients 2 --crash-prob 0.01 --restart-prob 0.05 --crash-primary --ticks 8000)
  status=0
  "$bin/workload-fuzz" "${flags[@]}" --record-faults "$tmp/faults.jsonl" --trace "$tmp/trace.json" \
    > /dev/null 2>&1 || status=$?
  cp "$tmp/faults.jsonl" "$out/record-faults.jsonl"
  cp "$tmp/trace.json" "$out/trace.json"
  "$bin/workload-fuzz" "${flags[@]}" --faults-from "$tmp/faults.jsonl" 2> /dev/null \
    | strip_wall | sed "s#$tmp#TMP#g" > "$out/faults-from.txt" || true

  # A shrink of the planted failure (deterministic: bounded in runs, not seconds).
  local seed=
  local shrink_flags=(--plane metadata --faults light --ticks 5000 --clients 2 --crash-prob 0.002
    --restart-prob 0.01 --break-check)
  for candidate in $(seq 1 60); do
    status=0
    "$bin/workload-fuzz" --seed "$candidate" "${shrink_flags[@]}" > /dev/null 2>&1 || status=$?
    if [ "$status" = 1 ]; then seed=$candidate; break; fi
  done
  echo "planted failure seed: ${seed:-none}" > "$out/shrink.txt"
  if [ -n "$seed" ]; then
    "$bin/workload-fuzz" --seed "$seed" "${shrink_flags[@]}" --shrink --shrink-seconds 100000 \
      --shrink-runs 60 --shrink-dir "$tmp" 2> /dev/null | strip_wall | sed "s#$tmp#TMP#g" \
      >> "$out/shrink.txt" || true
  fi

  # A small campaign: its report's runs, sorted, without timings.
  "$bin/campaign" --profiles none,light,heavy,swarm --planes partition,metadata,contended --seeds 1..6 \
    --crash-prob 0.01 --restart-prob 0.05 --crash-primary --ticks 4000 --out "$tmp/campaign" \
    > /dev/null 2>&1 || true
  if [ -f "$tmp/campaign/report.json" ]; then
    python3 - "$tmp/campaign/report.json" "$tmp" > "$out/campaign.txt" << 'EOF'
import json, sys
report = json.load(open(sys.argv[1]))
def scrub(value):
    # Timings and paths are not behaviour.
    if isinstance(value, dict):
        return {k: scrub(v) for k, v in value.items()
                if not any(t in k for t in ("wall", "seconds", "elapsed", "per_second", "started", "finished", "cpu"))}
    if isinstance(value, list):
        return [scrub(v) for v in value]
    if isinstance(value, str):
        return value.replace(sys.argv[2], "TMP")
    return value
runs = report.get("runs", [])
for run in sorted((json.dumps(scrub(r), sort_keys=True) for r in runs)):
    print(run)
print("runs:", len(runs))
EOF
  else
    echo "no report" > "$out/campaign.txt"
  fi
  rm -rf "$tmp"
  echo "wrote $(find "$out" -type f | wc -l) files to $out"
}

compare() {
  local a=$1 b=$2 diffs=0 files=0 f
  for f in "$a"/*; do
    files=$((files + 1))
    if ! cmp -s "$f" "$b/$(basename "$f")"; then
      echo "DIFFERS: $(basename "$f")"
      diffs=$((diffs + 1))
    fi
  done
  echo "identity: $files files compared, $diffs differ"
  [ "$diffs" = 0 ]
}

case "${1:-}" in
  run) [ $# = 3 ] || usage; run "$2" "$3" ;;
  compare) [ $# = 3 ] || usage; compare "$2" "$3" ;;
  *) usage ;;
esac
