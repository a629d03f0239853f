#!/usr/bin/env bash
# The whole test suite: every unit, integration and doc test of the workspace.
# Debug assertions are on (the default test profile), as in every simulator build.
set -euo pipefail
cd "$(dirname "$0")/.."
exec cargo test --workspace --locked "$@"
