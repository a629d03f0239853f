#!/usr/bin/env bash
# cluster-bench against real node processes on loopback: a single node and a
# three-node cluster, each with a `replicated` and a `persisted` topic. Every run
# starts from empty data directories; the nodes are stopped afterwards.
#
#   scripts/bench-cluster.sh [cluster-bench flags...]
#
# Flags are passed to every cluster-bench run (e.g. --producers 8 --partitions 8
# --batches-per-producer 500). Prints each run's report and keeps the JSON reports in
# target/bench-cluster/. Data directories live in a temporary directory (on the disk
# that holds $TMPDIR, which is what `persisted` pays fsync on).
set -euo pipefail
cd "$(dirname "$0")/.."

cargo build --release --locked -p cluster --bin node --bin cluster-bench
out=target/bench-cluster
mkdir -p "$out"
work=$(mktemp -d)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

base=$((20000 + RANDOM % 20000))


run() {
  local nodes=$1 durability=$2
  shift 2
  local name="bench-$nodes-$durability-$$"
  local roster="" clients=""
  for i in $(seq 0 $((nodes - 1))); do
    local rport=$((base + 2 * i)) cport=$((base + 2 * i + 1))
    roster+="${roster:+,}127.0.0.1:$rport=127.0.0.1:$cport"
    clients+="${clients:+,}127.0.0.1:$cport"
  done
  pids=()
  # Every node proves itself with the same secret, as in production.
  head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$work/$name.secret"
  for i in $(seq 0 $((nodes - 1))); do
    local flags=(--cluster "$name" --data-dir "$work/$name/$i" --secret-file "$work/$name.secret")
    if [ "$nodes" -gt 1 ]; then
      flags+=(--replica "$i" --roster "$roster")
    else
      flags+=(--client-address "$clients")
    fi
    RUST_LOG=warn target/release/node "${flags[@]}" 2>"$work/$name-$i.log" &
    pids+=($!)
  done
  for i in $(seq 0 $((nodes - 1))); do
    # warn-level logs omit "node ready"; wait for the client port instead.
    local cport=$((base + 2 * i + 1))
    for _ in $(seq 1 500); do
      (exec 3<>"/dev/tcp/127.0.0.1/$cport") 2>/dev/null && break
      sleep 0.02
    done
  done
  echo "== $nodes node(s), $durability"
  target/release/cluster-bench --cluster "$name" --nodes "$clients" --durability "$durability" \
    --json "$out/$nodes-nodes-$durability.json" "$@"
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  pids=()
  base=$((base + 2 * nodes))
}

for nodes in 1 3; do
  for durability in replicated persisted; do
    run "$nodes" "$durability" "$@"
  done
done
