#!/usr/bin/env bash
# Replay check: run every seed of a workload-fuzz command twice and compare the two
# stdouts byte for byte (stdout is a pure function of the flags and the build).
#
#   scripts/replay-check.sh FIRST LAST -- FLAGS...     e.g.
#   scripts/replay-check.sh 1 300 -- --plane partition --faults heavy --shards 3 --ticks 6000
#
# Prints one line per mismatch and a total; exits 1 if any seed differed.
set -euo pipefail
cd "$(dirname "$0")/.."
first=$1 last=$2
shift 3
cargo build --release --locked -q -p simulator --bin workload-fuzz
bin=target/release/workload-fuzz
export bin
check() {
  local seed=$1; shift
  local a b
  a=$("$bin" --seed "$seed" "$@" 2>/dev/null | sha256sum) || true
  b=$("$bin" --seed "$seed" "$@" 2>/dev/null | sha256sum) || true
  if [ "$a" != "$b" ]; then echo "seed $seed: stdout differs between two runs"; fi
}
export -f check
mismatches=$(seq "$first" "$last" | xargs -P "$(nproc)" -I{} bash -c 'check "$@"' _ {} "$@")
if [ -n "$mismatches" ]; then
  echo "$mismatches"
  echo "replay check: $(echo "$mismatches" | wc -l) of $((last - first + 1)) seeds differed"
  exit 1
fi
echo "replay check: $((last - first + 1)) seeds, every stdout byte-identical across two runs"
