#!/usr/bin/env bash
# The nightly seed sweep on one machine: every built-in fault profile x the metadata
# plane x seeds 1..100000, with crashes and restarts (primaries included), for a fixed
# time budget. Writes report.json and report.html under $OUT and exits non-zero when the
# campaign does (1: a run failed, was vacuous or invalid; 2: bad input).
#
# Environment knobs:
#   MINUTES  time budget in minutes; runs not started by then are counted as
#            `not_started` in the report (default 30)
#   OUT      report directory (default reports/nightly-YYYYMMDD, today's date)
#   SEEDS    seed range, inclusive (default 1..100000)
#   JOBS     parallel runs (default: every core)
#   SHARD    run only shard K/N of the campaign, e.g. 3/8 (default: the whole campaign)
#
#   scripts/nightly.sh
#   MINUTES=5 OUT=/tmp/nightly scripts/nightly.sh
#
# Seeds replay only on the build that ran them: keep the commit next to the report.
set -euo pipefail
cd "$(dirname "$0")/.."

minutes=${MINUTES:-30}
out=${OUT:-reports/nightly-$(date +%Y%m%d)}
seeds=${SEEDS:-1..100000}

cargo build --release --locked -p simulator --bin campaign

extra=()
if [ -n "${JOBS:-}" ]; then
  extra+=(--jobs "$JOBS")
fi
if [ -n "${SHARD:-}" ]; then
  extra+=(--shard "$SHARD")
fi

echo "nightly: commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown), seeds $seeds, $minutes min, out $out"
status=0
target/release/campaign \
  --profiles none,light,heavy,swarm \
  --planes metadata \
  --seeds "$seeds" \
  --minutes "$minutes" \
  --crash-prob 0.01 \
  --restart-prob 0.05 \
  --crash-primary \
  --out "$out" \
  ${extra[@]+"${extra[@]}"} || status=$?

echo "nightly: report $out/report.html (campaign exit $status)"
exit "$status"
