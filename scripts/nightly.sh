#!/usr/bin/env bash
# The nightly seed campaign on one machine: scripts/nightly.spec (every plane and
# profile, crashes with primaries, power loss, small journals, several clients, shards
# and replica counts, in weighted sub-campaigns; the marks it must reach), for a fixed
# time budget. The CI workflow and the Kubernetes Job run the same spec, sharded.
# Writes report.json and report.html under $OUT and exits non-zero when the campaign
# does (1: a run failed, was vacuous or invalid, or, for a whole campaign, a required
# coverage mark was never reached (a shard leaves that check to `campaign merge`); 2:
# bad input).
#
# Environment knobs:
#   MINUTES  time budget in minutes; runs not started by then are counted as
#            `not_started` in the report (default 30)
#   OUT      report directory (default reports/nightly-YYYYMMDD, today's date)
#   SEEDS    seed range, inclusive, overriding the spec's (default: the spec's)
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
spec=scripts/nightly.spec

cargo build --release --locked -p simulator --bin campaign

extra=()
if [ -n "${SEEDS:-}" ]; then
  extra+=(--seeds "$SEEDS")
fi
if [ -n "${JOBS:-}" ]; then
  extra+=(--jobs "$JOBS")
fi
if [ -n "${SHARD:-}" ]; then
  extra+=(--shard "$SHARD")
fi

echo "nightly: commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown), spec $spec, $minutes min, out $out"
status=0
target/release/campaign --spec "$spec" --minutes "$minutes" --out "$out" ${extra[@]+"${extra[@]}"} || status=$?

echo "nightly: report $out/report.html (campaign exit $status)"
exit "$status"
