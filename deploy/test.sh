#!/usr/bin/env bash
# Installs dependencies, builds everything and runs the whole test suite (CTest).
# This is the README's test command; .ci/run runs exactly this.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"

"$repo/deploy/install-deps.sh"
cmake --preset default -DTLBFLEET_DASHBOARD=ON
cmake --build --preset default
if (($# > 0)); then
  exec ctest --preset default -j2 --timeout 600 "$@"
fi
# Everything but the microVM lab, then the lab's tests (label vm) with one retry each: they
# measure real kernels in TCG guests on a shared host, whose speed changes by up to twice from
# minute to minute on these machines (docs/vm-lab.md, "Noise"), and a nightly detection or a
# bisection step can then miss a step it finds in a quiet minute. A retry asserts the same.
status=0
ctest --preset default -j2 --timeout 600 -LE '^vm$' || status=$?
ctest --preset default -j2 --timeout 600 -L '^vm$' --repeat until-pass:2 || status=$?
exit "$status"
