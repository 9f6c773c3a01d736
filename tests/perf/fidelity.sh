#!/usr/bin/env bash
# Fidelity of tlbfleet's native workloads against the classic tools Debian ships.
#
#   tests/perf/fidelity.sh [path/to/tlbfleet-bench]      (default: build/bin/tlbfleet-bench)
#
# Each comparison runs our workload (A) and the classic tool (B) with equivalent parameters,
# alternating A B A B for $PAIRS pairs (default 5) so that drift on the host hits both alike,
# and prints the medians, the ratio of the medians (A / B) and the median of the per-pair
# ratios. Goal (issue 3): every ratio within 0.90–1.10, or a written reason in
# docs/performance.md. A benchmark, not a test: it never fails on a ratio.
#
# Needs root (or the packages already installed): rt-tests, linux-perf, iperf3.
# Environment: PAIRS (default 5), SECONDS_STREAM (iperf3/netperf length, default 5),
# ONLY (a regular expression of comparison names to run).
set -euo pipefail

BENCH=${1:-build/bin/tlbfleet-bench}
PAIRS=${PAIRS:-5}
SECONDS_STREAM=${SECONDS_STREAM:-5}
ONLY=${ONLY:-.}

die() { echo "fidelity.sh: $*" >&2; exit 1; }
[[ -x $BENCH ]] || die "no tlbfleet-bench at $BENCH (build it, or pass its path)"

install_classic_tools() {
  local missing=()
  command -v hackbench >/dev/null || missing+=(rt-tests)
  command -v perf >/dev/null || missing+=(linux-perf)
  command -v iperf3 >/dev/null || missing+=(iperf3)
  ((${#missing[@]} == 0)) && return 0
  echo "# installing ${missing[*]}" >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}" >&2 ||
    die "could not install ${missing[*]}"
}

# --- extractors: each prints one number from the tool's output on stdin -------------------
time_line() { awk '/^Time:/ {print $2}'; }                            # rt-tests / ours
perf_total() { awk '/Total time:/ {print $3}'; }                      # perf bench messaging
usecs_op() { awk '/usecs\/op/ {print $1}'; }                          # perf bench pipe / ours
netperf_mbit() { tail -n 1 | awk '{print $NF}'; }                     # ours
iperf3_mbit() {
  python3 -c 'import json,sys; print(json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"]/1e6)'
}

median() { sort -g | awk '{v[NR]=$1} END {if (NR%2) print v[(NR+1)/2]; else print (v[NR/2]+v[NR/2+1])/2}'; }

# compare NAME UNIT "A command" A_EXTRACTOR "B command" B_EXTRACTOR
compare() {
  local name=$1 unit=$2 a_cmd=$3 a_get=$4 b_cmd=$5 b_get=$6
  [[ $name =~ $ONLY ]] || return 0
  local a_vals=() b_vals=() ratios=() a b i
  for ((i = 1; i <= PAIRS; i++)); do
    a=$(bash -c "$a_cmd" 2>/dev/null | $a_get)
    b=$(bash -c "$b_cmd" 2>/dev/null | $b_get)
    [[ -n $a && -n $b ]] || die "$name: no result (A='$a' B='$b')"
    a_vals+=("$a")
    b_vals+=("$b")
    ratios+=("$(awk -v a="$a" -v b="$b" 'BEGIN {printf "%.4f", a / b}')")
  done
  local a_med b_med r_med
  a_med=$(printf '%s\n' "${a_vals[@]}" | median)
  b_med=$(printf '%s\n' "${b_vals[@]}" | median)
  r_med=$(printf '%s\n' "${ratios[@]}" | median)
  printf '| %s | %s | %s | %s | %.3f | %s |\n' "$name" "$unit" "$a_med" "$b_med" \
    "$(awk -v a="$a_med" -v b="$b_med" 'BEGIN {print a / b}')" "$r_med"
  printf '#   %s A: %s\n#   %s B: %s\n' "$name" "${a_vals[*]}" "$name" "${b_vals[*]}" >&2
}

install_classic_tools

IPERF_PORT=${IPERF_PORT:-5399}
iperf3 -s -p "$IPERF_PORT" >/dev/null 2>&1 &
IPERF_PID=$!
trap 'kill "$IPERF_PID" 2>/dev/null || true' EXIT
sleep 1  # the only wait: iperf3 has no readiness signal; a failed connect aborts below

echo "# $(date -u +%FT%TZ) $(uname -r) $(nproc) CPUs; $PAIRS pairs, A B A B"
echo "| comparison | unit | A median (tlbfleet) | B median (classic) | A/B of medians | median of A/B |"
echo "| --- | --- | --- | --- | --- | --- |"

compare "hackbench -g 4 -l 200 vs rt-tests hackbench" "s" \
  "$BENCH hackbench -g 4 -l 200" time_line \
  "hackbench -g 4 -l 200" time_line
compare "hackbench -p -T -g 4 -l 200 vs rt-tests hackbench" "s" \
  "$BENCH hackbench -p -T -g 4 -l 200" time_line \
  "hackbench -p -T -g 4 -l 200" time_line
compare "hackbench -g 4 -l 200 vs perf bench sched messaging" "s" \
  "$BENCH hackbench -g 4 -l 200" time_line \
  "perf bench sched messaging -g 4 -l 200" perf_total
compare "hackbench -p -T -g 4 -l 200 vs perf bench sched messaging -p -t" "s" \
  "$BENCH hackbench -p -T -g 4 -l 200" time_line \
  "perf bench sched messaging -p -t -g 4 -l 200" perf_total
compare "pipetest -l 200000 vs perf bench sched pipe" "usecs/op" \
  "$BENCH pipetest -l 200000" usecs_op \
  "perf bench sched pipe -l 200000" usecs_op
compare "netperf tcp_stream 128 KiB vs iperf3 loopback" "Mbit/s" \
  "$BENCH netperf -t tcp_stream -m 131072 -l $SECONDS_STREAM" netperf_mbit \
  "iperf3 -c 127.0.0.1 -p $IPERF_PORT -t $SECONDS_STREAM -J" iperf3_mbit
