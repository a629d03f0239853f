#!/usr/bin/env bash
# The whole test suite: every unit, integration and doc test of the workspace.
# Debug assertions are on (the default test profile), as in every simulator build.
#
# It sets itself up first, before the long build: the loopback tests drive real `node`
# processes and fail a node's fdatasync with Debian's `strace`, so a missing strace is
# installed (scripts/install-test-tools.sh, as root with apt-get) or, where that cannot
# be done, named with the command to install it, and the suite does not start.
# TEST_SH_NO_INSTALL=1 only checks (it never installs; for machines where the suite
# must not touch packages). Extra arguments go to `cargo test`.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v cargo >/dev/null 2>&1; then
  echo "test.sh: cargo is not on PATH; install the Rust toolchain (rustup, with rustfmt and clippy)" >&2
  exit 1
fi
if ! command -v strace >/dev/null 2>&1; then
  if [ "${TEST_SH_NO_INSTALL:-0}" != 1 ] && [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "test.sh: strace is missing; installing it (scripts/install-test-tools.sh)"
    scripts/install-test-tools.sh
  fi
  if ! command -v strace >/dev/null 2>&1; then
    echo "test.sh: the failover tests need Debian's strace (they fail a node's fdatasync with it)." >&2
    echo "test.sh: install it first: sudo apt-get install strace   (or, as root: scripts/install-test-tools.sh)" >&2
    exit 1
  fi
fi
exec cargo test --workspace --locked "$@"
