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
#   PROFILE  the cargo profile the campaign runner is built with (default sweep:
#            release plus whole-program optimisation, 12-14% more runs per CPU-second
#            for a longer build; `release` builds faster and replays the same seeds)
#   NEMESIS_MINUTES  the nemesis stage after the campaign: real node processes under
#            real faults (`nemesis`, simulator/README.md "Testing a real cluster"), two runs a
#            minute, seeds from today's date; 0 skips it (default 20; never with
#            SHARD: the workflow runs it as a job of its own)
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

profile=${PROFILE:-sweep}
cargo build --profile "$profile" --locked -p simulator --bin campaign

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

echo "nightly: commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown), profile $profile, spec $spec, $minutes min, out $out"
status=0
"target/$profile/campaign" --spec "$spec" --minutes "$minutes" --out "$out" ${extra[@]+"${extra[@]}"} || status=$?

echo "nightly: report $out/report.html (campaign exit $status)"

nemesis_minutes=${NEMESIS_MINUTES:-20}
if [ -z "${SHARD:-}" ] && [ "$nemesis_minutes" != 0 ]; then
  scripts/install-test-tools.sh nemesis
  cargo build --release --locked -p cluster --bin node -p simulator --bin nemesis
  nemesis_status=0
  target/release/nemesis --nodes 3 --clients 4 --runs $((nemesis_minutes * 2)) --minutes "$nemesis_minutes" \
    --seed "$(date +%Y%m%d)000" --out "$out/nemesis" || nemesis_status=$?
  echo "nightly: nemesis report $out/nemesis/report.html (nemesis exit $nemesis_status)"
  if [ "$status" -eq 0 ]; then
    status=$nemesis_status
  fi
fi
exit "$status"
