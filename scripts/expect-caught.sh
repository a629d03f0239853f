#!/usr/bin/env bash
# Run a campaign that switches on a deliberately broken answer (`--break-storage NAME`)
# and check the campaign catches it: exit code 1, at least one failed run, no vacuous or
# invalid run, and every failure's signature starting with one of the expected prefixes.
#
# usage: scripts/expect-caught.sh OUT_DIR 'PREFIX1|PREFIX2' CAMPAIGN_ARGS...
# (OUT_DIR receives report.json; the prefixes are extended regular expressions, anchored
# at the start of the signature.)
set -uo pipefail
cd "$(dirname "$0")/.."
out=$1
prefixes=$2
shift 2
# Each failure group is shrunk (30 s each at most here): the catch must come with a
# shrunk repro or a note saying why there is none.
target/release/campaign --shrink-seconds 30 "$@" --out "$out" > "$out.log" 2>&1
rc=$?
tail -n 1 "$out.log"
if [ "$rc" != 1 ]; then
  echo "expect-caught: the campaign exited $rc, not 1: the break was not caught" >&2
  tail -n 20 "$out.log" >&2
  exit 1
fi
report="$out/report.json"
failed=$(grep -c '"verdict": "fail"' "$report")
others=$(grep '"verdict": ' "$report" | grep -vc '"verdict": "\(fail\|pass\)"')
if [ "$failed" -lt 1 ] || [ "$others" -gt 0 ]; then
  echo "expect-caught: $failed failed runs and $others vacuous or invalid ones (want >= 1 and 0)" >&2
  exit 1
fi
unexpected=$(grep -o '"signature": "[^"]*"' "$report" | sed 's/^"signature": "//; s/"$//' | grep -Evc "^($prefixes)")
if [ "$unexpected" -gt 0 ]; then
  echo "expect-caught: $unexpected failures with a signature other than ^($prefixes):" >&2
  grep -o '"signature": "[^"]*"' "$report" | grep -Ev "\"signature\": \"($prefixes)" >&2
  exit 1
fi
groups=$(grep -o '"signature": "[^"]*"' "$report" | sort -u | wc -l)
shrunk=$(grep -c '"original_command": ' "$report")
if [ "$shrunk" -lt "$groups" ] && [ "$shrunk" -lt 20 ]; then
  echo "expect-caught: $shrunk shrink entries for $groups failure signatures (want one each, up to 20)" >&2
  exit 1
fi
echo "expect-caught: caught in $failed runs; $shrunk of $groups signature(s) shrunk or noted"
grep -h '^    shrunk seed\|^    not shrunk' "$out.log" || true
