#!/usr/bin/env bash
# Starts a controller on a fresh database in a temp dir, runs agent_swarm against it with the
# given flags (plus --controller and --controller-pid), stops the controller.
#   tests/load/run_swarm.sh BUILD_DIR [agent_swarm flags...]
# e.g. tests/load/run_swarm.sh build --agents 1000 --seconds 120 --runs 1 --iterations 50
# CONTROLLER=PATH runs that controller binary instead of BUILD_DIR's (a reference build, for
# a before/after in the same session); CONTROLLER_ARGS adds flags to it (e.g.
# CONTROLLER_ARGS="--store-batch-ms 100").
# Exit: agent_swarm's; 1 also when the smoke expectation (jobs done) fails.
set -euo pipefail
build=$1
shift
dir=$(mktemp -d /tmp/tlbfleet-swarm.XXXXXX)
controller_pid=
cleanup() {
  [[ -n $controller_pid ]] && kill "$controller_pid" 2>/dev/null && wait "$controller_pid" || true
  rm -rf "$dir"
}
trap cleanup EXIT
"${CONTROLLER:-$build/bin/tlbfleet-controller}" --grpc-listen 127.0.0.1:0 --http-listen 127.0.0.1:0 \
  --db "$dir/fleet.db" --ready-file "$dir/ready" --log-level warn ${CONTROLLER_ARGS:-} \
  >"$dir/controller.log" 2>&1 &
controller_pid=$!
for _ in $(seq 300); do
  grep -q '}' "$dir/ready" 2>/dev/null && break
  kill -0 "$controller_pid" 2>/dev/null || { cat "$dir/controller.log"; exit 1; }
  sleep 0.1
done
port=$(sed -n 's/.*"grpc_port":\([0-9]*\).*/\1/p' "$dir/ready")
[[ -n $port ]] || { echo "run_swarm: controller did not start" >&2; cat "$dir/controller.log"; exit 1; }
out=$("$build/tests/agent_swarm" --controller "127.0.0.1:$port" --controller-pid "$controller_pid" "$@")
echo "$out"
# Jobs must have been done when runs were submitted (the smoke test's point).
if [[ " $* " =~ " --runs "([1-9]) ]] && ! grep -Eq 'jobs [1-9]' <<<"$out"; then
  echo "run_swarm: no job was done" >&2
  tail -20 "$dir/controller.log" >&2
  exit 1
fi
