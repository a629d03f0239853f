#!/usr/bin/env bash
# The partition-plane benchmark of issue #4: simulated ticks per wall-clock second,
# committed ops and replies per 1,000 ticks, and peak memory, for
# `--plane partition --faults none --ticks 100000` (3 replicas, 1 client), one process
# per seed on one core. The metadata plane's figures are printed next to it, for both
# storage models: `sim` (the production formats on SimStorage, the default) and
# `memory` (in-memory stores, like the reference simulator's).
#
#   scripts/bench-partition.sh [SEEDS...]      (default: 1 2 3)
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --locked -q -p simulator --bin workload-fuzz
seeds=("$@")
[ ${#seeds[@]} -gt 0 ] || seeds=(1 2 3)
for storage in sim memory; do
for plane in partition metadata; do
  echo "== --plane ${plane} --faults none --ticks 100000 --storage ${storage}"
  for seed in "${seeds[@]}"; do
    /usr/bin/time -f "peak_rss_kb=%M" target/release/workload-fuzz --seed "$seed" --plane "$plane" \
      --faults none --ticks 100000 --storage "$storage" 2>/tmp/bench-partition.err >/tmp/bench-partition.out || true
    awk -v seed="$seed" '/ticks\/s/ {tps=$4} /peak_rss_kb/ {split($1,a,"="); rss=a[2]} END {printf "seed %s: %s ticks/s, peak %.1f MB", seed, tps, rss/1024}' /tmp/bench-partition.err
    awk '/^ran/ {for (i=1;i<=NF;i++) if ($i ~ /^replies=/) {split($i,r,"="); printf ", %.1f replies per 1,000 ticks", r[2]/100}}
         /^compared:/ {for (i=1;i<=NF;i++) if ($i ~ /^commits=/) {split($i,c,"="); printf ", %.1f commits per 1,000 ticks", c[2]/100}}
         /^workload-fuzz: OK|^vacuous|^check failed/ {printf ", verdict: %s\n", $0}' /tmp/bench-partition.out
  done
done
done
