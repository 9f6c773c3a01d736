#!/usr/bin/env bash
# Installs dependencies, builds everything and runs the whole test suite (CTest).
# This is the README's test command; .ci/run runs exactly this.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"

"$repo/deploy/install-deps.sh"
cmake --preset default -DTLBFLEET_DASHBOARD=ON
cmake --build --preset default
ctest --preset default -j2 --timeout 600 "$@"
