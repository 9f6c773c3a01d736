#pragma once
// Calibration by simulation: data sets drawn from a known design (how many boots, shared or
// not, how noisy, what true change), run through the real comparison (Compare) or the real
// adaptive loop (DecideAdaptive), counting the verdicts. The unit tests assert the counts
// (calibration_test.cc); tests/perf/calibration_bench.cc prints the table in
// docs/statistics.md. Seeded: the same design and seed give the same counts everywhere.
//
// Noise is multiplicative: a value is mean * exp(boot effect + arm x boot effect + iteration
// noise), each term normal with the design's standard deviation (so 0.03 is about 3 %).

#include <cstdint>
#include <string>
#include <vector>

#include "controller/report/adaptive.h"
#include "controller/report/comparison.h"
#include "tlbfleet/v1/common.pb.h"

namespace tlbfleet::report::calibration {

struct Design {
  std::string name;
  int boots = 1;              // per arm
  bool shared_boots = false;  // both arms measured in the same boots (interleaved arms)
  int iterations = 5;         // per boot (per arm)
  // > iterations: unbalanced, each boot of each arm gets a count drawn uniformly from
  // iterations .. iterations_max.
  int iterations_max = 0;
  double boot_sd = 0;  // a boot's effect: one for both arms when shared, else one each
  // Arm x boot: how differently a boot treats the two arms, i.e. the sd of the boot's
  // effect on the log ratio (drawn for the other arm only).
  double interaction_sd = 0;
  double iteration_sd = 0.01;
  double change = 0;  // true ratio of the other arm's (geometric) mean to the baseline's, - 1
  int rows = 1;       // independent rows per data set (sweep values), all with this change
};

// Data set number `index` of `design` ("base" and "new" arms, metric "ops", higher is
// better; boots named so that shared boots share names).
std::vector<Observation> Simulate(const Design& design, uint64_t seed, int index);

struct Counts {
  int datasets = 0;
  int rows = 0;  // datasets x rows
  int better = 0, worse = 0, same = 0, unknown = 0;
  int covered = 0;            // rows whose ratio interval contains the true ratio
  int bootstrap_covered = 0;  // ... whose bootstrap interval does (when resamples > 0)
  int bootstrap_defined = 0;
  int any_false = 0;  // data sets with at least one better/worse row (when change = 0)
  double FalseRate() const { return rows ? (better + worse) / static_cast<double>(rows) : 0; }
  double Rate(int n) const { return rows ? n / static_cast<double>(rows) : 0; }
};

// Compares `datasets` data sets of `design` with `options` (Compare's own) and counts.
Counts CountVerdicts(const Design& design, int datasets, uint64_t seed,
                     const CompareOptions& options);

// An adaptive run on simulated hosts: starts at the spec's minima (or the fixed counts in
// `noise`), asks DecideAdaptive after every round exactly as the controller does, grows as it
// says (a new boot draws new boot effects; more iterations go to the latest boot), and
// takes the verdict of Compare with default options when it stops.
struct AdaptiveDesign {
  Design noise;           // boots/iterations here are the fixed counts of non-adaptive levels
  v1::AdaptiveSpec spec;  // target_ci, and the adaptive levels' min..max
};

struct AdaptiveCounts : Counts {
  double boots = 0;       // mean boots per arm at the stop
  double iterations = 0;  // mean samples per arm at the stop
  int at_maximum = 0;     // runs that stopped at their maxima
};

AdaptiveCounts RunAdaptive(const AdaptiveDesign& design, int runs, uint64_t seed);

// The one-sided upper 1 - `tail` quantile of Binomial(n, p): the most false verdicts `n`
// data sets give with probability 1 - tail when the true rate is p.
int BinomialUpperBound(int n, double p, double tail = 0.001);

}  // namespace tlbfleet::report::calibration
