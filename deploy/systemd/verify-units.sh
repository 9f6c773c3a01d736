#!/usr/bin/env bash
# Checks deploy/systemd/*.service with systemd-analyze verify, pointing ExecStart at the
# binaries of BIN_DIR (they must exist and be executable). Fails on any complaint, including
# the warnings (unknown keys) that verify reports with exit status 0.
#   verify-units.sh BIN_DIR
set -euo pipefail
bin_dir=$1
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
status=0
for unit in "$here"/*.service; do
  name=$(basename "$unit")
  sed "s|/usr/local/bin/|$bin_dir/|g" "$unit" >"$work/$name"
  grep -q '^Type=notify$' "$work/$name" || { echo "$name: not Type=notify"; status=1; }
  grep -q '^WatchdogSec=' "$work/$name" || { echo "$name: no WatchdogSec"; status=1; }
  out=$(systemd-analyze verify "$work/$name" 2>&1) || status=1
  if [[ -n "$out" ]]; then
    echo "$name: $out"
    status=1
  fi
done
[[ $status -eq 0 ]] && echo "units verified"
exit $status
