#!/bin/sh
# CTest smoke run of one fuzzer: every seed once, then a few seconds of mutation from them.
# Usage: smoke.sh FUZZER SEED_DIR WORK_DIR. Fails on any crash, leak, sanitizer report or
# timeout (libFuzzer's exit code).
set -eu
fuzzer=$1 seeds=$2 work=$3
rm -rf "$work"
mkdir -p "$work/corpus" "$work/artifacts"
exec "$fuzzer" -max_total_time="${FUZZ_SECONDS:-5}" -timeout=10 -rss_limit_mb=2048 \
  -artifact_prefix="$work/artifacts/" -print_final_stats=1 "$work/corpus" "$seeds"
