#!/usr/bin/env bash
# Run workload-fuzz for seeds FIRST..LAST on each given fault profile and stop at the
# first failure, printing its repro line. A stand-in for the `campaign` runner until
# it exists; extra workload-fuzz flags can be given in FUZZ_FLAGS.
#
#   scripts/sweep.sh 1 100 none light heavy swarm
#   FUZZ_FLAGS="--ticks 20000 --clients 4" scripts/sweep.sh 1 500 heavy
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -lt 3 ]; then
  echo "usage: scripts/sweep.sh FIRST LAST PROFILE [PROFILE...]" >&2
  exit 2
fi
first=$1 last=$2
shift 2
cargo build --release --locked -p simulator --bin workload-fuzz
bin=target/release/workload-fuzz
runs=0 vacuous=0
start=$(date +%s)
for profile in "$@"; do
  for seed in $(seq "$first" "$last"); do
    # shellcheck disable=SC2086 # FUZZ_FLAGS is a list of flags on purpose.
    if out=$("$bin" --seed "$seed" --faults "$profile" ${FUZZ_FLAGS:-} 2>/dev/null); then
      runs=$((runs + 1))
    else
      code=$?
      if [ "$code" -eq 3 ]; then
        vacuous=$((vacuous + 1))
        echo "vacuous: --seed $seed --faults $profile"
        continue
      fi
      echo "$out" | tail -n 5
      echo "sweep: seed $seed on profile $profile exited $code" >&2
      exit 1
    fi
  done
done
echo "sweep: $vacuous vacuous runs, $(( $(date +%s) - start )) s"
echo "sweep: $runs passed, 0 failed"
[ "$vacuous" -eq 0 ]
