#!/usr/bin/env bash
# Render a campaign's report.html to a PNG with headless Chromium (Debian's `chromium`
# package, installed here if missing), to see what a person sees: the failure groups,
# each shrunk repro's table and its inline SVG timeline.
#
#   scripts/render-report.sh REPORT_DIR [OUT.png] [HEIGHT_PX]
#
# The page is self-contained (no network, no JavaScript), so Chromium runs with its
# background networking off; needs root to install Chromium the first time.
set -euo pipefail
dir=${1:?usage: scripts/render-report.sh REPORT_DIR [OUT.png] [HEIGHT_PX]}
out=${2:-$dir/report.png}
height=${3:-4000}
if ! command -v chromium >/dev/null 2>&1; then
  "$(dirname "$0")/install-test-tools.sh" chromium
fi
page=$(realpath "$dir/report.html")
profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
  --disable-background-networking --disable-component-update --disable-sync \
  --user-data-dir="$profile" --hide-scrollbars --window-size=1280,"$height" \
  --screenshot="$(realpath -m "$out")" "file://$page" 2>/dev/null
echo "rendered $page -> $out"
