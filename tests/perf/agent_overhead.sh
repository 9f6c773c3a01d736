#!/usr/bin/env bash
# Measures the CPU used by the agent process itself (not its workload child) while a job
# runs: a local controller and agent, one ebizzy job of SECONDS (default 30), and the
# agent's utime+stime from /proc/<pid>/stat before and after. Prints the agent's share of
# one CPU over the job's wall time, for each of REPEATS runs and their median.
#
#   tests/perf/agent_overhead.sh [BUILD_DIR]      (default: build)
#   SECONDS_PER_JOB=30 REPEATS=3 tests/perf/agent_overhead.sh
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
bin=${1:-$repo/build}/bin
seconds=${SECONDS_PER_JOB:-30}
repeats=${REPEATS:-3}
work=$(mktemp -d /tmp/tlbfleet-overhead.XXXXXX)
cleanup() {
  [[ -n ${agent_pid:-} ]] && kill "$agent_pid" 2>/dev/null || true
  [[ -n ${controller_pid:-} ]] && kill "$controller_pid" 2>/dev/null || true
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

"$bin/tlbfleet-controller" --grpc-listen 127.0.0.1:0 --http-listen 127.0.0.1:0 \
  --db "$work/fleet.db" --ready-file "$work/ready" >"$work/controller.log" 2>&1 &
controller_pid=$!
for _ in $(seq 100); do [[ -s $work/ready ]] && break; sleep 0.1; done
port=$(sed -E 's/.*"grpc_port":([0-9]+).*/\1/' "$work/ready")
export TLBFLEET_CONTROLLER=127.0.0.1:$port
"$bin/tlbfleet-agent" --controller "$TLBFLEET_CONTROLLER" --state-dir "$work/agent" \
  >"$work/agent.log" 2>&1 &
agent_pid=$!
for _ in $(seq 100); do
  "$bin/tlbfleet" hosts --format json 2>/dev/null | grep -q '"connected": true' && break
  sleep 0.1
done

ticks_per_second=$(getconf CLK_TCK)
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

cat >"$work/spec.yaml" <<SPEC
name: agent-overhead
benchmark: ebizzy
params: {seconds: $seconds, threads: 1}
iterations: 1
arms: [{name: only}]
SPEC

shares=()
for i in $(seq "$repeats"); do
  run=$("$bin/tlbfleet" submit "$work/spec.yaml" | tail -n 1)
  before=$(cpu_ticks "$agent_pid")
  start=$(date +%s.%N)
  "$bin/tlbfleet" wait "$run" --quiet --timeout $((seconds * 3 + 60))
  end=$(date +%s.%N)
  after=$(cpu_ticks "$agent_pid")
  share=$(awk -v t=$((after - before)) -v hz="$ticks_per_second" -v s="$start" -v e="$end" \
    'BEGIN { printf "%.3f", 100 * t / hz / (e - s) }')
  echo "run $i: agent used $((after - before)) ticks over $(awk -v s="$start" -v e="$end" 'BEGIN{printf "%.1f", e-s}') s = ${share} % of one CPU"
  shares+=("$share")
done
median=$(printf '%s\n' "${shares[@]}" | sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}')
echo "median agent CPU share: ${median} % of one CPU (goal: < 1 %)"
