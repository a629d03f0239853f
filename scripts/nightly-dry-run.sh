#!/usr/bin/env bash
# Dry run of the nightly campaign's three callers, on this machine, in about a minute:
# the EXACT command lines of
#   - .github/workflows/nightly.yml: the `run:` script of the shards job's "Run shard"
#     step for every matrix shard, then the merge job's "Merge" and "Fail on failures"
#     scripts on the shard reports, passed along as the artifact steps would;
#   - scripts/k8s-campaign-job.yaml: the Job container's `sh -c` script for every
#     JOB_COMPLETION_INDEX, then `campaign merge` of the shard directories (the merge
#     the Job's header comment gives);
#   - scripts/nightly.sh itself, with SHARD=1/8;
# each with a time budget of DRY_MINUTES (default 0.03 minutes: about 2 s a shard).
# DRY_KEEP=1 keeps the temp directory (checkouts, logs, reports) and prints its path.
# The scripts are read out of the YAML files (scripts/nightly-config-helper.py, with
# PyYAML from target/validators/venv), never copied here: an edited workflow or Job is
# run as edited. Only what a runner would supply is filled in (see each section).
#
# It runs the already-built target/release/campaign and builds nothing (building is CI's
# job, before these command lines run). Shards run one after another (the campaign uses
# every core). One PASS/FAIL line per check, then `N passed, N failed`; exits 0 only if
# every check passed (2 if it cannot start). A tiny budget legitimately misses required
# coverage marks, so `campaign merge` exiting 1 is accepted; 2 (bad input: overlapping
# shards, different builds or specs) is not.
#
#   scripts/install-validators.sh   # once: the venv with PyYAML
#   scripts/nightly-dry-run.sh
#
# The step_* and k8s_* variables come from the step.sh / container.sh files the helper
# writes, which this script sources:
# shellcheck disable=SC1090,SC1091,SC2154
set -euo pipefail

DRY_MINUTES=${DRY_MINUTES:-0.03}
STEP_TIMEOUT=${STEP_TIMEOUT:-120} # seconds; a command line that ignores the budget is cut off

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
workflow=${NIGHTLY_WORKFLOW:-.github/workflows/nightly.yml} # overridable to test this script
job=${NIGHTLY_K8S_JOB:-scripts/k8s-campaign-job.yaml}
spec=scripts/nightly.spec
known=reports/known-signatures.txt
campaign_bin=$repo/target/release/campaign
py=$repo/target/validators/venv/bin/python
helper=("$py" "$repo/scripts/nightly-config-helper.py")

if [ ! -x "$campaign_bin" ]; then
  echo "nightly-dry-run.sh: $campaign_bin is missing: build it first" \
    "(cargo build --release --locked -p simulator --bin campaign)" >&2
  exit 2
fi
if ! "$py" -c 'import yaml' >/dev/null 2>&1; then
  echo "nightly-dry-run.sh: no PyYAML in target/validators/venv (run scripts/install-validators.sh)" >&2
  exit 2
fi
for f in "$workflow" "$job" "$spec" "$known" scripts/nightly.sh; do
  [ -f "$f" ] || { echo "nightly-dry-run.sh: $f is missing" >&2; exit 2; }
done

start=$SECONDS
tmp=$(mktemp -d)
if [ -n "${DRY_KEEP:-}" ]; then
  trap 'echo "nightly dry run: kept $tmp"' EXIT
else
  trap 'rm -rf "$tmp"' EXIT
fi
trap 'exit 130' INT
trap 'exit 143' TERM
# shellcheck source=scripts/lib/tally.sh
. "$(dirname "$0")/lib/tally.sh"

# Every command line starts from this environment, not the caller's (an exported
# MINUTES, SHARD or OUT would change what runs): only what a runner would have.
base_env=(PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME="$tmp/home"
  LANG=C.UTF-8 TMPDIR="$tmp")
mkdir -p "$tmp/home"

# One build for every shard and merge, as in CI (every job builds the same commit):
# target/release/campaign may be rebuilt while this runs, and merge refuses reports of
# different builds. (nightly.sh runs target/<profile>/campaign itself.)
cp -p "$campaign_bin" "$tmp/campaign"
campaign_bin=$tmp/campaign

# A directory laid out like a checkout after the build step: the built binary (the copy
# above), the spec and the known signatures, linked from this repository.
make_checkout() {
  mkdir -p "$1/target/release" "$1/target/sweep" "$1/scripts" "$1/reports"
  ln -s "$campaign_bin" "$1/target/release/campaign"
  # The workflow's shards build with the sweep profile (same code, same seeds): the
  # release binary stands in for it.
  ln -s "$campaign_bin" "$1/target/sweep/campaign"
  ln -s "$repo/$spec" "$1/$spec"
  ln -s "$repo/$known" "$1/$known"
}

# The spec's sub-campaign names, in order (`sub NAME WEIGHT FLAGS...` lines).
spec_subs=$(sed -e 's/#.*//' "$spec" | awk '$1 == "sub" { print $2 }' | paste -sd' ' -)

# report_facts DIR SHARD: one line about DIR/report.json, `OK text` or `BAD text`.
# SHARD `K N`: a shard's report: shard [K, N], at least one run, sub_campaigns = the
# spec's sub lines. SHARD `merged`: shard null, runs from more than one sub-campaign,
# sub_campaigns = the spec's sub lines.
report_facts() {
  if [ ! -f "$1/report.json" ]; then
    echo "BAD no report.json in ${1#"$tmp"/}"
    return
  fi
  "$py" - "$1/report.json" "$2" "$spec_subs" <<'EOF'
import json, sys
path, shard, subs = sys.argv[1], sys.argv[2], sys.argv[3].split()
try:
    r = json.load(open(path))
except Exception as e:
    print(f"BAD report.json does not parse: {e}")
    sys.exit()
runs = r.get("runs") or []
verdicts = {}
for run in runs:
    verdicts[run.get("verdict")] = verdicts.get(run.get("verdict"), 0) + 1
names = [s.get("name") for s in r.get("sub_campaigns") or []]
ran = sorted({str(run.get("campaign")) for run in runs},
             key=lambda n: names.index(n) if n in names else len(names))
bad = []
if shard == "merged":
    if r.get("shard") is not None:
        bad.append(f"shard {r.get('shard')}, want null")
    if len(ran) < 2:
        bad.append("runs from fewer than 2 sub-campaigns")
else:
    want = [int(x) for x in shard.split()]
    if r.get("shard") != want:
        bad.append(f"shard {r.get('shard')}, want {want}")
    if not runs:
        bad.append("no runs")
if names != subs:
    bad.append(f"sub_campaigns {names} != the spec's sub lines {subs}")
v = ", ".join(f"{n} {k}" for k, n in sorted(verdicts.items(), key=str))
text = (f"report.json: shard {r.get('shard')}, {len(runs)} runs ({v}) from "
        f"{len(ran)} sub-campaigns ({' '.join(ran)}); sub_campaigns = the spec's {len(subs)} sub lines")
print(("BAD " + "; ".join(bad) + " -- " if bad else "OK ") + text)
# Runs that did not pass: findings of the simulator, not of the command lines; shown
# (under the line) with their repro command, they do not fail the check.
for run in runs:
    if run.get("verdict") != "pass":
        print(f"note: {run.get('campaign')}: {run.get('verdict')}, signature {run.get('signature')}: "
              f"{run.get('command')}")
EOF
}

# check_report WHAT DIR SHARD [quiet]: report_facts as a PASS/FAIL line, and its notes
# (runs that did not pass) under it unless quiet (a shard's runs are noted when merged).
check_report() {
  local facts first
  facts=$(report_facts "$2" "$3")
  first=${facts%%$'\n'*}
  case $first in
    OK\ *) pass "$1: ${first#OK }" ;;
    *) fail "$1: ${first#BAD }" ;;
  esac
  [ "$facts" = "$first" ] || [ "${4:-}" = quiet ] || printf '%s\n' "${facts#*$'\n'}" | sed 's/^/      /'
}

# The plan of a report (planned runs and each sub-campaign's weight and flags): the same
# for the three callers' shard 1/8 when they run the same campaign.
plan_of() {
  "$py" -c 'import json, sys; r = json.load(open(sys.argv[1]))
print(r.get("planned"), [(s.get("name"), s.get("weight"), s.get("flags")) for s in r.get("sub_campaigns") or []])' \
    "$1/report.json" 2>/dev/null || echo "no report in $1"
}

# run_logged LOG CMD...: run CMD with a timeout, output to LOG; sets rc.
run_logged() {
  local log=$1
  shift
  rc=0
  timeout "$STEP_TIMEOUT" "$@" >"$log" 2>&1 || rc=$?
}

# The first line of a script with its `\`-continued lines joined: the command it runs.
command_of() { sed -e ':a' -e '/\\$/N; s/\\\n[[:space:]]*//; ta' "$1" | grep -m1 -E 'campaign' || true; }

echo "nightly dry run: budget $DRY_MINUTES min a shard; commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')$(git diff --quiet HEAD 2>/dev/null || echo ' + uncommitted changes'); target/release/campaign built $(date -r "$campaign_bin" '+%F %T')"

# === the GitHub workflow ===================================================================
# Filled in as the runner would: ${{ matrix.shard }} from the job's matrix, ${{ env.X }}
# from the workflow/job/step `env:` blocks, ${{ inputs.minutes || '45' }} as for a
# workflow_dispatch with minutes=DRY_MINUTES (and MINUTES is set to DRY_MINUTES whatever
# the workflow makes of it), ${{ steps.merge.outputs.X }} from the Merge step's
# $GITHUB_OUTPUT. Each script runs under the shell command GitHub uses for it (`bash -e
# FILE` when no `shell:` is given) in a fresh checkout; the artifact steps are replayed
# from their `with:` (upload name/path, download pattern/path); the build steps are not
# run.
echo "--- $workflow"
gh=$tmp/gh
mkdir -p "$gh/artifacts"
matrix=()
if "${helper[@]}" workflow-matrix "$workflow" shards shard >"$gh/matrix" 2>"$gh/matrix.err"; then
  mapfile -t matrix <"$gh/matrix"
fi
# SHARDS and MINUTES as the Run shard step sees them (workflow, job, then step env).
gh_shards='' gh_minutes=''
mkdir -p "$gh/probe"
if "${helper[@]}" workflow-step "$workflow" shards "Run shard" "$gh/probe" \
  "matrix.shard=${matrix[0]:-1}" "inputs.minutes=$DRY_MINUTES" 2>"$gh/probe.err"; then
  gh_shards=$(. "$gh/probe/step.sh" && printf '%s\n' "${step_env[@]}" | sed -n 's/^SHARDS=//p')
  gh_minutes=$(. "$gh/probe/step.sh" && printf '%s\n' "${step_env[@]}" | sed -n 's/^MINUTES=//p')
fi
cat "$gh/matrix.err" "$gh/probe.err" >"$gh/extract.err"
if [ -n "$gh_shards" ] && [ "${matrix[*]:-}" = "$(seq 1 "$gh_shards" 2>/dev/null | paste -sd' ' -)" ]; then
  pass "workflow: matrix.shard is 1..SHARDS (SHARDS=$gh_shards from env:)"
else
  fail "workflow: matrix.shard [${matrix[*]:-}] is not 1..SHARDS (SHARDS=${gh_shards:-?})" "$gh/extract.err" 15
fi
if [ "$gh_minutes" = "$DRY_MINUTES" ]; then
  pass "workflow: the Run shard step's MINUTES comes from inputs.minutes (dispatched with $DRY_MINUTES)"
else
  fail "workflow: the Run shard step's MINUTES is '$gh_minutes' for inputs.minutes=$DRY_MINUTES"
fi

# run_gh_step JOB STEP CHECKOUT OUTDIR CTX=VALUE...: extract one `run:` step and run it as
# the runner would; sets rc (99: could not extract) and leaves OUTDIR/log.
run_gh_step() {
  local job_id=$1 step=$2 checkout=$3 out=$4 env_now
  shift 4
  mkdir -p "$out"
  rc=99
  "${helper[@]}" workflow-step "$workflow" "$job_id" "$step" "$out" "$@" 2>"$out/log" || return 0
  [ -f "$out/run.sh" ] || { echo "step $step has no run: script" >>"$out/log"; return 0; }
  . "$out/step.sh"
  env_now=("${base_env[@]}" CI=true GITHUB_ACTIONS=true GITHUB_WORKSPACE="$checkout"
    GITHUB_OUTPUT="$out/github_output" GITHUB_STEP_SUMMARY="$out/step_summary"
    RUNNER_TEMP="$tmp" "${step_env[@]}")
  if printf '%s\n' "${step_env[@]}" | grep -q '^MINUTES='; then
    env_now+=(MINUTES="$DRY_MINUTES")
  fi
  : >"$out/github_output"
  : >"$out/step_summary"
  run_logged "$out/log" env -C "$checkout/$step_working_directory" -i "${env_now[@]}" "${step_argv[@]}"
}

for k in "${matrix[@]}"; do
  checkout=$gh/shard-$k
  make_checkout "$checkout"
  run_gh_step shards "Run shard" "$checkout" "$gh/step-$k" "matrix.shard=$k" "inputs.minutes=$DRY_MINUTES"
  cmd=$(command_of "$gh/step-$k/run.sh" 2>/dev/null)
  if [ "$rc" -eq 0 ] || [ "$rc" -eq 1 ]; then
    pass "workflow shard $k/${gh_shards:-?}: exit $rc: $cmd"
  else
    fail "workflow shard $k/${gh_shards:-?}: exit $rc (want 0, or 1 for a failing run): $cmd" "$gh/step-$k/log" 15
  fi
  # The upload step: the artifact named `name` gets the directory `path`.
  if "${helper[@]}" workflow-step "$workflow" shards "uses:actions/upload-artifact" "$gh/upload-$k" \
    "matrix.shard=$k" 2>"$gh/upload-$k.err"; then
      artifact=$(. "$gh/upload-$k/step.sh" && echo "$step_with_name")
    upload=$(. "$gh/upload-$k/step.sh" && echo "$step_with_path")
    [ -d "$checkout/$upload" ] && cp -rL "$checkout/$upload" "$gh/artifacts/$artifact"
    check_report "workflow shard $k/${gh_shards:-?}, artifact $artifact ($upload)" "$gh/artifacts/$artifact" "$k ${gh_shards:-0}" quiet
  else
    fail "workflow shard $k: cannot read the upload step" "$gh/upload-$k.err" 15
  fi
done

# The merge job: a fresh checkout, the download step, then the Merge script.
merge_checkout=$gh/merge
make_checkout "$merge_checkout"
if "${helper[@]}" workflow-step "$workflow" merge "uses:actions/download-artifact" "$gh/download" \
  2>"$gh/download.err"; then
  pattern=$(. "$gh/download/step.sh" && echo "${step_with_pattern:-*}")
  download=$(. "$gh/download/step.sh" && echo "${step_with_path:-.}")
  for a in "$gh/artifacts"/*; do
    # shellcheck disable=SC2053 # the artifact pattern is a glob
    [ -d "$a" ] && [[ $(basename "$a") == $pattern ]] &&
      mkdir -p "$merge_checkout/$download" && cp -r "$a" "$merge_checkout/$download/"
  done
else
  fail "workflow merge: cannot read the download step" "$gh/download.err" 15
fi
run_gh_step merge "Merge" "$merge_checkout" "$gh/merge-step"
cmd=$(command_of "$gh/merge-step/run.sh" 2>/dev/null)
if [ "$rc" -eq 0 ]; then
  pass "workflow Merge step: exit 0: $cmd"
else
  fail "workflow Merge step: exit $rc (its script ends with exit 0): $cmd" "$gh/merge-step/log" 15
fi
found=$(sed -n 's/^found=//p' "$gh/merge-step/github_output" | tail -n1)
status=$(sed -n 's/^status=//p' "$gh/merge-step/github_output" | tail -n1)
if [ -n "$gh_shards" ] && [ "$found" = "$gh_shards" ]; then
  pass "workflow Merge step: GITHUB_OUTPUT found=$found"
else
  fail "workflow Merge step: GITHUB_OUTPUT found='$found', want ${gh_shards:-SHARDS}" "$gh/merge-step/log" 15
fi
case $status in
  0 | 1) pass "workflow Merge step: GITHUB_OUTPUT status=$status (campaign merge: $(grep -cE '^\s*\[coverage\] required mark' "$gh/merge-step/log" || true) required marks not reached)" ;;
  *) fail "workflow Merge step: GITHUB_OUTPUT status='$status', want 0 or 1" "$gh/merge-step/log" 15 ;;
esac
if grep -q 'report:' "$gh/merge-step/step_summary"; then
  pass "workflow Merge step: GITHUB_STEP_SUMMARY holds the merge output ($(wc -l <"$gh/merge-step/step_summary") lines)"
else
  fail "workflow Merge step: GITHUB_STEP_SUMMARY lacks the merge output" "$gh/merge-step/step_summary" 15
fi
check_report "workflow merged" "$merge_checkout/reports/merged" merged
# The upload of the merged report must name the directory the merge wrote.
if "${helper[@]}" workflow-step "$workflow" merge "uses:actions/upload-artifact" "$gh/upload-merged" \
  2>"$gh/upload-merged.err"; then
  upload=$(. "$gh/upload-merged/step.sh" && echo "$step_with_path")
  if [ -f "$merge_checkout/$upload/report.json" ]; then
    pass "workflow: the merged report's upload path ($upload) holds report.json"
  else
    fail "workflow: the merged report's upload path ($upload) holds no report.json"
  fi
else
  fail "workflow merge: cannot read the merged report's upload step" "$gh/upload-merged.err" 15
fi
# Fail on failures: exit 1 unless all shards reported and the merge exited 0.
run_gh_step merge "Fail on" "$merge_checkout" "$gh/fail-step" \
  "steps.merge.outputs.found=$found" "steps.merge.outputs.status=$status"
want=1
[ "$found" = "$gh_shards" ] && [ "$status" = 0 ] && want=0
if [ "$rc" -eq "$want" ]; then
  pass "workflow Fail on failures step: exit $rc for found=$found status=$status$(grep -m1 '::error::' "$gh/fail-step/log" | sed 's/^/: /' | cut -c1-120)"
else
  fail "workflow Fail on failures step: exit $rc for found=$found status=$status, want $want" "$gh/fail-step/log" 15
fi

# === the Kubernetes Job ====================================================================
# The container's command (`sh -c SCRIPT`) runs as is, under this machine's sh, with the
# container's env: (MINUTES set to DRY_MINUTES) and JOB_COMPLETION_INDEX (Kubernetes sets
# it in an Indexed Job), `campaign` on PATH (a bin directory holding a link to the
# binary, as the image has it in /usr/local/bin), in an empty working directory.
# THE ONLY REWRITE of the Job's text: the absolute paths /reports (the volume's
# mountPath) and /usr/local/share/simulator/nightly.spec (the spec inside the image) are
# replaced by paths under a temp directory, in the script and the env values alike
# (the helper refuses a volumeMount left unrewritten, so nothing is written outside it).
echo "--- $job"
k8s=$tmp/k8s
mkdir -p "$k8s/bin" "$k8s/reports" "$k8s/image" "$k8s/cwd" "$k8s/extract"
ln -s "$campaign_bin" "$k8s/bin/campaign"
ln -s "$repo/$spec" "$k8s/image/nightly.spec"
k8s_ok=0
if "${helper[@]}" k8s-container "$job" "$k8s/extract" \
  "/reports=$k8s/reports" "/usr/local/share/simulator/nightly.spec=$k8s/image/nightly.spec" \
  2>"$k8s/extract.err"; then
  . "$k8s/extract/container.sh"
  k8s_ok=1
  k8s_shards=$(printf '%s\n' "${k8s_env[@]}" | sed -n 's/^SHARDS=//p')
  if [ "$k8s_completion_mode" = Indexed ] && [ "$k8s_completions" = "$k8s_shards" ]; then
    pass "k8s Job $k8s_job: Indexed, completions $k8s_completions = SHARDS $k8s_shards; container $k8s_container runs ${k8s_argv[0]} ${k8s_argv[1]} (paths rewritten: $k8s_rewritten)"
  else
    fail "k8s Job $k8s_job: completionMode $k8s_completion_mode, completions $k8s_completions, SHARDS ${k8s_shards:-unset} (want Indexed and completions = SHARDS)"
  fi
else
  fail "k8s: cannot extract the Job's container script" "$k8s/extract.err" 15
fi
if [ "$k8s_ok" -eq 1 ]; then
  for ((i = 0; i < ${k8s_completions:-0}; i++)); do
    shard=$((i + 1))
    run_logged "$k8s/log-$i" env -C "$k8s/cwd" -i "${base_env[@]}" PATH="$k8s/bin:/usr/local/bin:/usr/bin:/bin" \
      "${k8s_env[@]}" MINUTES="$DRY_MINUTES" JOB_COMPLETION_INDEX="$i" "${k8s_argv[@]}"
    facts=$(report_facts "$k8s/reports/shard-$shard" "$shard $k8s_shards")
    facts=${facts%%$'\n'*} # the notes (runs that did not pass) are shown when merged
    if [ "$rc" -eq 0 ] && [ "${facts%% *}" = OK ]; then
      pass "k8s JOB_COMPLETION_INDEX=$i: exit 0, shard-$shard/${facts#OK }"
    else
      fail "k8s JOB_COMPLETION_INDEX=$i: exit $rc (want 0), shard-$shard/${facts#* }" "$k8s/log-$i" 15
    fi
  done
  shard_dirs=("$k8s/reports"/shard-*)
  run_logged "$k8s/merge.log" "$campaign_bin" merge "${shard_dirs[@]}" --out "$k8s/reports/merged"
  if [ "$rc" -eq 0 ] || [ "$rc" -eq 1 ]; then
    pass "k8s merge: campaign merge of ${#shard_dirs[@]} shard dirs: exit $rc ($(grep -cE '^\s*\[coverage\] required mark' "$k8s/merge.log" || true) required marks not reached)"
  else
    fail "k8s merge: campaign merge of ${#shard_dirs[@]} shard dirs: exit $rc, want 0 or 1" "$k8s/merge.log" 15
  fi
  check_report "k8s merged" "$k8s/reports/merged" merged
fi

# === scripts/nightly.sh ====================================================================
# Run as is, from this repository (it cds to the repo and runs target/$PROFILE/campaign
# with scripts/nightly.spec), with MINUTES=DRY_MINUTES SHARD=1/8 OUT=<temp dir>
# PROFILE=release (the binary CI built; the default, sweep, is the same code built
# longer). It runs `cargo build --profile release --locked -p simulator --bin campaign`
# first: `cargo` here is a
# stub that records its arguments and exits 0, because this dry run checks the command
# lines, and building is CI's (or the caller's) job before them; a real cargo would
# compete for the cores with whatever else builds on this machine.
echo "--- scripts/nightly.sh"
mkdir -p "$tmp/stub"
cat >"$tmp/stub/cargo" <<EOF
#!/bin/sh
echo "cargo stub: cargo \$*"
printf '%s\n' "\$*" >>"$tmp/stub/cargo.args"
EOF
chmod +x "$tmp/stub/cargo"
nightly_out=$tmp/nightly-out
run_logged "$tmp/nightly.log" env -i "${base_env[@]}" PATH="$tmp/stub:/usr/local/bin:/usr/bin:/bin" \
  MINUTES="$DRY_MINUTES" SHARD=1/8 OUT="$nightly_out" PROFILE=release "$repo/scripts/nightly.sh"
if [ "$rc" -eq 0 ] || [ "$rc" -eq 1 ]; then
  pass "nightly.sh MINUTES=$DRY_MINUTES SHARD=1/8: exit $rc: $(grep -m1 '^nightly:' "$tmp/nightly.log" | cut -c1-120)"
else
  fail "nightly.sh MINUTES=$DRY_MINUTES SHARD=1/8: exit $rc (want 0, or 1 for a failing run)" "$tmp/nightly.log" 15
fi
if [ "$(cat "$tmp/stub/cargo.args" 2>/dev/null)" = "build --profile release --locked -p simulator --bin campaign" ]; then
  pass "nightly.sh PROFILE=release: asked cargo for: build --profile release --locked -p simulator --bin campaign (stubbed)"
else
  fail "nightly.sh: asked cargo for: '$(paste -sd';' - <"$tmp/stub/cargo.args" 2>/dev/null)'"
fi
check_report "nightly.sh" "$nightly_out" "1 8"

# === the three callers run the same campaign ===============================================
plan_gh=$(plan_of "$gh/artifacts/shard-1")
plan_k8s=$(plan_of "$k8s/reports/shard-1")
plan_nightly=$(plan_of "$nightly_out")
if [ "$plan_gh" = "$plan_k8s" ] && [ "$plan_gh" = "$plan_nightly" ]; then
  pass "workflow, k8s Job and nightly.sh shard 1/8 plan the same campaign: ${plan_gh%% *} runs, same sub-campaign weights and flags"
else
  { echo "workflow: $plan_gh"; echo "k8s:      $plan_k8s"; echo "nightly:  $plan_nightly"; } >"$tmp/plans"
  fail "workflow, k8s Job and nightly.sh shard 1/8 plan different campaigns" "$tmp/plans" 15
fi

echo "nightly dry run: $((SECONDS - start))s"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
