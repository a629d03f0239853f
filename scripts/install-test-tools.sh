#!/usr/bin/env bash
# Install the Debian tools the test suite needs (scripts/test.sh checks for the same
# two and calls this script when it runs as root):
# - gcc: the `cc` that rustc links every test binary with (rustup does not ship one);
# - strace: syscall fault injection (a node's fdatasync made to fail with EIO in
#   cluster/tests/failover.rs);
# - with the argument `chromium`, also Debian's chromium, to render a campaign's
#   report.html headless (scripts/render-report.sh);
# - with the argument `nemesis`, what the real-cluster nemesis drives: iproute2 (`ip`:
#   network namespaces and veth links), fiu-utils (libfiu's `fiu-run` / `fiu-ctrl`:
#   failing fdatasync, pwrite, pread), faketime (libfaketime: skewed clocks), procps
#   (`kill`).
# Idempotent: installs only what is missing. Needs root (CI and the dev machines run as
# root) and Debian's package archive.
set -euo pipefail
missing=()
command -v cc >/dev/null 2>&1 || missing+=(gcc)
command -v strace >/dev/null 2>&1 || missing+=(strace)
for extra in "$@"; do
  case "$extra" in
    chromium) command -v chromium >/dev/null 2>&1 || missing+=(chromium) ;;
    nemesis)
      command -v ip >/dev/null 2>&1 || missing+=(iproute2)
      command -v fiu-run >/dev/null 2>&1 || missing+=(fiu-utils)
      ls /usr/lib/*/faketime/libfaketimeMT.so.1 >/dev/null 2>&1 || missing+=(faketime)
      command -v kill >/dev/null 2>&1 || missing+=(procps)
      ;;
    *) echo "install-test-tools.sh: unknown tool '$extra' (known: chromium, nemesis)" >&2; exit 2 ;;
  esac
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "test tools present: cc strace $*"
  exit 0
fi
echo "installing: ${missing[*]}"
if [ "$(id -u)" -ne 0 ]; then
  echo "install-test-tools.sh: need root to apt-get install ${missing[*]}" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq "${missing[@]}" >/dev/null
