# shellcheck shell=bash
# PASS/FAIL lines and their tally, for the scripts that report one line per check
# (check-nightly-config.sh, nightly-dry-run.sh). Source it; read $passed and $failed at
# the end.

passed=0
failed=0

# pass WHAT
pass() {
  echo "PASS  $1"
  passed=$((passed + 1))
}

# fail WHAT [LOG [LINES]]: LOG (its last LINES lines, or all of it) is shown indented
# under the line, so the reason sits next to the verdict.
fail() {
  echo "FAIL  $1"
  if [ -n "${2:-}" ] && [ -s "$2" ]; then
    if [ -n "${3:-}" ]; then tail -n "$3" "$2"; else cat "$2"; fi | sed 's/^/      /'
  fi
  failed=$((failed + 1))
}
