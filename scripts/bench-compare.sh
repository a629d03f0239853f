#!/usr/bin/env bash
# Issue #21's benchmark: the same simulator runs on two builds, side by side, measured
# in one sitting on this machine, so a change is judged by a ratio and not by figures
# taken on different days (absolute ticks/s move from machine to machine and hour to
# hour).
#
#   scripts/bench-compare.sh BASE [NEW]     git revisions (NEW: default HEAD)
#   ROUNDS=5 SEEDS="1 2 3" scripts/bench-compare.sh HEAD~4
#
# Each revision is checked out in a temporary worktree and built once into its own
# target dir (target/bench-<commit>, kept for the next comparison). Then every
# configuration runs for every seed, BASE and NEW alternating, ROUNDS times (default 3):
#   partition --faults none, 10,000 and 100,000 ticks, sim disk and --storage memory;
#   metadata --faults none --no-quiesce, 10,000 and 100,000 ticks, sim disk
#     and memory (cost must grow linearly with the ticks);
#   metadata --faults heavy --ticks 10000 (faults on the hot paths).
# It prints, per configuration, the median ticks/s and peak RSS of each build, the
# ratio NEW/BASE of the medians, the paired ratio (each NEW run over the BASE run of the
# same seed just before it: a pair shares the machine's load of the moment, so its
# median drifts less from sitting to sitting) with the middle half of the pairs'
# ratios (25th to 75th percentile), and whether the two builds printed the same output (a faster run
# should still be the same run; a difference is named, not hidden): `same`, `same
# schedule` (schedule and reply hashes equal, the report's text not), or `DIFFERS`.
#
# CAMPAIGN=1 adds #21's campaign throughput: `campaign --profiles
# none,light,heavy,swarm --planes partition,uniform --seeds 1..200 --node-shards 2
# --ticks 10000` once per build (CAMPAIGN_SEEDS overrides the seed range), with its
# wall time, runs/s, and CPU use (user+sys over wall: 200% is both cores busy).
#
# BASE_PROFILE and NEW_PROFILE pick each build's cargo profile (default release;
# NEW_PROFILE=sweep measures what the nightly runs).
set -euo pipefail
cd "$(dirname "$0")/.."

if [ $# -lt 1 ] || [ $# -gt 2 ]; then
  echo "usage: scripts/bench-compare.sh BASE [NEW]   (git revisions; NEW defaults to HEAD)" >&2
  exit 2
fi
rounds=${ROUNDS:-3}
read -r -a seeds <<<"${SEEDS:-1 2 3}"
repo=$(pwd)

build() { # REV PROFILE -> prints the workload-fuzz binary's path
  local rev=$1 profile=$2 commit dir target
  commit=$(git rev-parse --verify --quiet "$rev^{commit}") || {
    echo "bench-compare: '$rev' is not a revision of this repository" >&2
    exit 2
  }
  target=$repo/target/bench-${commit:0:12}
  if [ ! -x "$target/$profile/workload-fuzz" ] || [ ! -x "$target/$profile/campaign" ]; then
    dir=$(mktemp -d /tmp/bench-compare.XXXXXX)
    git worktree add --detach -q "$dir/src" "$commit"
    echo "bench-compare: building $rev (${commit:0:12}, profile $profile) into $target" >&2
    (cd "$dir/src" && CARGO_TARGET_DIR=$target cargo build --profile "$profile" --locked -q -p simulator --bin workload-fuzz --bin campaign) >&2
    git worktree remove --force "$dir/src"
    rm -rf "$dir"
  fi
  echo "$target/$profile/workload-fuzz"
}

base_bin=$(build "$1" "${BASE_PROFILE:-release}")
new_bin=$(build "${2:-HEAD}" "${NEW_PROFILE:-release}")
work=$(mktemp -d /tmp/bench-compare-run.XXXXXX)
trap 'rm -rf "$work"' EXIT

# One run: prints "ticks_per_s peak_kb" and keeps stdout in $work/out.<tag>.
measure() { # BIN TAG ARGS...
  local bin=$1 tag=$2
  shift 2
  /usr/bin/time -f "peak_kb=%M" "$bin" "$@" >"$work/out.$tag" 2>"$work/err.$tag" || true
  awk '/ticks\/s/ {for (i=1;i<=NF;i++) if ($(i+1) ~ /^ticks\/s/) tps=$i} /peak_kb=/ {split($1,a,"="); kb=a[2]}
       END {gsub(/,/, "", tps); print (tps == "" ? 0 : tps), (kb == "" ? 0 : kb)}' "$work/err.$tag"
}

median() { sort -n | awk '{a[NR]=$1} END {print (NR ? a[int((NR+1)/2)] : 0)}'; }

# "median (25th-75th percentile)" of the numbers on stdin, as ratios.
spread() {
  sort -n | awk '{a[NR]=$1} END {
    if (!NR) { print "-"; exit }
    printf "%.2fx (%.2f-%.2f)", a[int((NR+1)/2)], a[int((NR+3)/4)], a[int((3*NR+3)/4)]
  }'
}

configs=(
  "partition sim 10k|--plane partition --faults none --ticks 10000"
  "partition sim 100k|--plane partition --faults none --ticks 100000"
  "partition memory 10k|--plane partition --faults none --ticks 10000 --storage memory"
  "partition memory 100k|--plane partition --faults none --ticks 100000 --storage memory"
  "metadata sim 10k|--plane metadata --faults none --no-quiesce --ticks 10000"
  "metadata sim 100k|--plane metadata --faults none --no-quiesce --ticks 100000"
  "metadata memory 10k|--plane metadata --faults none --no-quiesce --ticks 10000 --storage memory"
  "metadata memory 100k|--plane metadata --faults none --no-quiesce --ticks 100000 --storage memory"
  "metadata heavy 10k|--plane metadata --faults heavy --ticks 10000"
)

printf '%-22s %14s %14s %7s %20s %10s %10s  %s\n' "configuration" "base ticks/s" "new ticks/s" "ratio" "paired (middle half)" "base MB" "new MB" "output"
for config in "${configs[@]}"; do
  name=${config%%|*}
  read -r -a args <<<"${config#*|}"
  : >"$work/base.tps"; : >"$work/new.tps"; : >"$work/base.kb"; : >"$work/new.kb"; : >"$work/ratios"
  same=same
  for _ in $(seq "$rounds"); do
    for seed in "${seeds[@]}"; do
      read -r base_tps kb < <(measure "$base_bin" base --seed "$seed" "${args[@]}")
      echo "$base_tps" >>"$work/base.tps"; echo "$kb" >>"$work/base.kb"
      read -r tps kb < <(measure "$new_bin" new --seed "$seed" "${args[@]}")
      echo "$tps" >>"$work/new.tps"; echo "$kb" >>"$work/new.kb"
      awk -v b="$base_tps" -v n="$tps" 'BEGIN {if (b > 0) print n / b}' >>"$work/ratios"
      if ! cmp -s "$work/out.base" "$work/out.new"; then
        # The schedule and every reply the same, the printed report not (a new line or
        # counter): named apart from a run that took another course.
        if [ "$(grep -o 'schedule_hash=[^ ]* reply_hash=[^ ]*' "$work/out.base")" = \
          "$(grep -o 'schedule_hash=[^ ]* reply_hash=[^ ]*' "$work/out.new")" ]; then
          [ "$same" = same ] && same="same schedule (seed $seed report differs)"
        else
          same="DIFFERS (seed $seed)"
        fi
      fi
    done
  done
  b=$(median <"$work/base.tps"); n=$(median <"$work/new.tps")
  bk=$(median <"$work/base.kb"); nk=$(median <"$work/new.kb")
  paired=$(spread <"$work/ratios")
  awk -v name="$name" -v b="$b" -v n="$n" -v bk="$bk" -v nk="$nk" -v same="$same" -v paired="$paired" \
    'BEGIN {printf "%-22s %14.0f %14.0f %6.2fx %20s %10.1f %10.1f  %s\n", name, b, n, (b > 0 ? n / b : 0), paired, bk / 1024, nk / 1024, same}'
done
echo "(medians over ${#seeds[@]} seeds x $rounds rounds, base and new alternating; base $1, new ${2:-HEAD})"

if [ "${CAMPAIGN:-0}" = 1 ]; then
  seeds_range=${CAMPAIGN_SEEDS:-1..200}
  printf '\n%-22s %10s %10s %8s %8s\n' "campaign" "wall s" "runs" "runs/s" "cpu"
  for side in base new; do
    bin=$base_bin
    [ "$side" = new ] && bin=$new_bin
    out="$work/campaign-$side"
    /usr/bin/time -f "%e %P" -o "$work/time-$side" "$(dirname "$bin")/campaign" --profiles none,light,heavy,swarm \
      --planes partition,uniform --seeds "$seeds_range" --node-shards 2 --ticks 10000 --out "$out" \
      >"$work/campaign-$side.log" 2>&1 || true
    read -r wall cpu <"$work/time-$side"
    runs=$(grep -c '"seed"' "$out/report.json" 2>/dev/null || echo 0)
    awk -v side="$side" -v wall="$wall" -v runs="$runs" -v cpu="$cpu" \
      'BEGIN {printf "%-22s %10.1f %10d %8.1f %8s\n", side, wall, runs, (wall > 0 ? runs / wall : 0), cpu}'
  done
fi
