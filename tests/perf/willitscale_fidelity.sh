#!/usr/bin/env bash
# Fidelity of the willitscale workload against will-it-scale itself (issue 23;
# docs/performance.md, "willitscale against will-it-scale built from source"). Runs the
# original and ours back to back, pair by pair, the rows alternating, each under
# `setarch linux64 -R` as will-it-scale's runtest.py runs them, and prints each pair's
# `average:` figures, then per row the medians, their ratio and the median of the per-pair
# ratios with their range.
#
#   tests/perf/willitscale_fidelity.sh WIS_DIR [BENCH] [PAIRS] [SECONDS] [TASKS]
#
# WIS_DIR: a will-it-scale checkout built outside the repository (its README; `make
# tlb_flush{1,2,3}_{processes,threads}`). BENCH: tlbfleet-bench (default build/bin/). PAIRS:
# 5; SECONDS measured: 5; TASKS: 2. Run it on a quiet machine; it takes about
# 6 rows x PAIRS x 2 x (SECONDS + 6 s of warm-up).
set -euo pipefail

wis=${1:?usage: $0 WIS_DIR [BENCH] [PAIRS] [SECONDS] [TASKS]}
bench=${2:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/build/bin/tlbfleet-bench}
pairs=${3:-5}
seconds=${4:-5}
tasks=${5:-2}
for t in 1 2 3; do
  for m in processes threads; do
    [[ -x $wis/tlb_flush${t}_$m ]] || { echo "$wis/tlb_flush${t}_$m: not built" >&2; exit 2; }
  done
done
[[ -x $bench ]] || { echo "$bench: not found" >&2; exit 2; }

average() { sed -n 's/^average:\([0-9.]*\).*/\1/p' | tail -1; }
declare -A original ours
echo "uptime at start: $(uptime)"
for ((p = 1; p <= pairs; ++p)); do
  for t in 1 2 3; do
    for m in processes threads; do
      mode=process
      [[ $m == threads ]] && mode=thread
      a=$(cd "$wis" && setarch linux64 -R "./tlb_flush${t}_$m" -t "$tasks" -s "$seconds" | average)
      b=$(setarch linux64 -R "$bench" willitscale --set "test=tlb_flush$t" --set "mode=$mode" \
        -t "$tasks" -s "$seconds" | average)
      original[$t,$m]+="$a "
      ours[$t,$m]+="$b "
      echo "pair $p tlb_flush$t $m: will-it-scale $a, willitscale $b"
    done
  done
done
echo "uptime at end: $(uptime)"
echo
printf '%-24s %14s %14s %8s %s\n' "test, mode, tasks" "will-it-scale" "willitscale" "ratio" \
  "per-pair ratios: median (min - max)"
for t in 1 2 3; do
  for m in processes threads; do
    /usr/bin/python3 - "tlb_flush$t, $m, $tasks" "${original[$t,$m]}" "${ours[$t,$m]}" <<'EOF'
import statistics, sys
label, a, b = sys.argv[1], [float(x) for x in sys.argv[2].split()], [float(x) for x in sys.argv[3].split()]
ratios = [y / x for x, y in zip(a, b)]
ma, mb = statistics.median(a), statistics.median(b)
print(f"{label:<24} {ma:14,.0f} {mb:14,.0f} {mb / ma:8.3f} "
      f"{statistics.median(ratios):.3f} ({min(ratios):.3f} - {max(ratios):.3f})")
EOF
  done
done
