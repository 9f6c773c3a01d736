#pragma once
// The summary rows today's mmtests prints in its compare tables (bin/compare-mmtests.pl,
// bin/lib/MMTests/Summarise.pm and Stat.pm), for `compare --table mmtests`. mmtests picks the
// rows by each benchmark's `summarise` (shellpack.yaml) and the mean by whether higher is
// better: the harmonic mean for rates (ebizzy, netperf), the arithmetic mean for times
// (hackbench, usemem, perfpipe). Pure functions; thread-safe.

#include <string>
#include <vector>

#include "tlbfleet/v1/common.pb.h"

namespace tlbfleet::report {

// A benchmark's `summarise` in mmtests' shellpack.yaml (the two our workloads use).
enum class MmtestsSummarise {
  kMultiops,       // Min, mean, stddev, coeffvar, Max, best-95% mean
  kNormalisedops,  // Min, mean, best-95% mean, 95th percentile, stddev, coeffvar, Max
};

struct MmtestsStat {
  std::string name;  // as mmtests prints it: "Hmean", "HStddev", "BHmean.95", "Pctile.95"
  double value = 0;
  bool defined = false;  // false where mmtests prints NaN (e.g. a stddev of one sample)
};

// The rows, in mmtests' order, of one arm's samples. With `higher_is_better`:
//   Multiops:      Min, Hmean, HStddev, HCoeffVar, Max, BHmean.95
//   Normalisedops: Min, Hmean, BHmean.95, Pctile.95, HStddev, HCoeffVar, Max
// else the same with Amean, Stddev, CoeffVar, BAmean.95. As mmtests computes them:
//   Hmean = n / sum(1/x) (undefined if any x <= 0); Amean = sum(x) / n;
//   Stddev = sqrt(sum((x - Amean)^2) / (n - 1));
//   HStddev = sqrt(sum((1/x - 1/Hmean)^2) * Hmean^4 / n) (the delta method);
//   [H]CoeffVar = 100 * stddev / mean (0 where either is undefined, as mmtests prints);
//   B?mean.95 = the mean of the best int(0.95 n) samples (at least one), best = highest when
//   higher is better; Pctile.95 = the int(0.95 n)-th best sample (at least the first).
// Stddevs of fewer than two samples are undefined.
std::vector<MmtestsStat> MmtestsSummary(MmtestsSummarise kind, bool higher_is_better,
                                        std::vector<double> samples);

// `compare --table mmtests`: per group of `report` (metric and sweep value, its arms in
// report order), the rows MmtestsSummary gives for the group's samples of each arm (the
// aggregate series of samples not excluded), as mmtests prints them: "%-Ns %-Ms" then per arm
// "%12.{decimals}f (%7.2f%%)", the percentage against arms[0] as Stat.pm's pdiff (higher is
// better) or pndiff (lower is better, and every stddev and coeffvar).
std::string RenderMmtestsTable(const v1::Report& report, const std::vector<v1::Sample>& samples,
                               MmtestsSummarise kind, int decimals);

}  // namespace tlbfleet::report
