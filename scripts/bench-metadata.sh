#!/usr/bin/env bash
# The metadata-plane benchmark of issue #3: simulated ticks per wall-clock second, peak
# memory, and replies per 1,000 ticks, for 3 replicas on a perfect network over 4,000
# ticks, without and with crashes (primaries included). One process per seed, one core.
#
#   scripts/bench-metadata.sh [SEEDS...]      (default: 211 1 2 3 4 5 6 7 8 9)
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --locked -q -p simulator --bin workload-fuzz
seeds=("$@")
[ ${#seeds[@]} -gt 0 ] || seeds=(211 1 2 3 4 5 6 7 8 9)
for variant in "" "--crash-prob 0.02 --restart-prob 0.08 --crash-primary"; do
  echo "== --plane metadata --faults none --ticks 4000 ${variant}"
  for seed in "${seeds[@]}"; do
    # shellcheck disable=SC2086 # the variant is a list of flags on purpose
    /usr/bin/time -f "peak_rss_kb=%M" target/release/workload-fuzz --seed "$seed" --plane metadata \
      --faults none --ticks 4000 $variant 2>&1 >/tmp/bench-metadata.out \
      | awk -v seed="$seed" '/ticks\/s/ {tps=$4} /peak_rss_kb/ {split($1,a,"="); rss=a[2]} END {printf "seed %s: %s ticks/s, peak %.1f MB", seed, tps, rss/1024}'
    awk '/^ran/ {for (i=1;i<=NF;i++) if ($i ~ /^replies=/) {split($i,r,"="); printf ", %.1f replies per 1,000 ticks\n", r[2]/4}}' /tmp/bench-metadata.out
  done
done
