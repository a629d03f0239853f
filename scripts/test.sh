#!/usr/bin/env bash
# The whole test suite: every unit, integration and doc test of the workspace.
# Debug assertions are on (the default test profile), as in every simulator build.
#
# It sets itself up first, in a second and before the long build, so a fresh machine
# fails at once with what to do rather than after minutes of compiling:
# - cargo (the Rust toolchain, 1.88 or newer) must be on PATH;
# - a C compiler driver `cc` links the test binaries (rustup does not ship one);
# - the loopback tests drive real `node` processes and fail a node's fdatasync with
#   Debian's `strace` (cluster/tests/failover.rs), which must be allowed to trace
#   (ptrace: a container needs the SYS_PTRACE capability);
# - the hostile-input suite needs about 12,000 open files (the soft limit is raised to
#   the hard one here).
# A missing Debian package is installed (scripts/install-test-tools.sh) when the script
# runs as root with apt-get, as CI does; otherwise the package is named with the command
# that installs it, and the suite does not start. Nothing touches the network when
# every tool is present. TEST_SH_NO_INSTALL=1 only checks (it never installs; for
# machines where the suite must not touch packages). Extra arguments go to `cargo test`.
set -euo pipefail
cd "$(dirname "$0")/.."

say() { echo "test.sh: $*" >&2; }

if ! command -v cargo >/dev/null 2>&1; then
  say "cargo is not on PATH; install the Rust toolchain (https://rustup.rs, 1.88 or newer, with rustfmt and clippy)"
  exit 1
fi

# The Debian packages the suite needs, by the command that shows each is present
# (the same list as scripts/install-test-tools.sh without arguments).
missing_packages() {
  local absent=()
  command -v cc >/dev/null 2>&1 || absent+=(gcc)
  command -v strace >/dev/null 2>&1 || absent+=(strace)
  echo "${absent[*]}"
}

missing=$(missing_packages)
if [ -n "$missing" ] && [ "${TEST_SH_NO_INSTALL:-0}" != 1 ] && [ "$(id -u)" -eq 0 ] &&
  command -v apt-get >/dev/null 2>&1; then
  say "missing: $missing; installing (scripts/install-test-tools.sh)"
  scripts/install-test-tools.sh
  missing=$(missing_packages)
fi
if [ -n "$missing" ]; then
  for package in $missing; do
    case "$package" in
      gcc) say "the linker is missing: rustc links test binaries with \`cc\` (Debian package gcc)." ;;
      strace) say "strace is missing: the failover tests fail a node's fdatasync with it (Debian package strace)." ;;
    esac
  done
  say "install first: sudo apt-get install $missing   (or, as root: scripts/install-test-tools.sh)"
  exit 1
fi

# strace present is not strace usable: it needs ptrace, and syscall injection.
# The probe traces `true` with the same options the failover test gives the node.
if ! probe=$(strace -f -qq -o /dev/null -e trace=fdatasync -e inject=fdatasync:error=EIO true 2>&1); then
  say "strace cannot trace here, so the failover tests would fail: ${probe:-no message}"
  say "allow ptrace (in a container: --cap-add=SYS_PTRACE; or kernel.yama.ptrace_scope=0), or use strace 4.15 or newer"
  exit 1
fi

# The hostile-input suite (cluster/tests/hostile.rs) holds 5,000 idle connections at
# once: raise the soft limit on open files to the hard one (no privilege needed).
hard=$(ulimit -Hn)
if [ "$hard" != unlimited ] && [ "$hard" -lt 12000 ]; then
  say "the hard limit on open files is $hard; the hostile-input suite needs 12000 (raise it: ulimit -Hn, or the container's nofile)"
  exit 1
fi
ulimit -Sn "$hard"

exec cargo test --workspace --locked "$@"
