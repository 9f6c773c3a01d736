// The calibration table of docs/statistics.md: for each design, how often the verdicts of
// `tlbfleet compare` (and of adaptive runs) are wrong when nothing changed, how often they
// find a real change, and how often the intervals cover the truth. Statistical rates, not
// timings: with fixed seeds they are the same on every machine.
//
//   build/tests/tlbfleet_calibration [--datasets N] [--seed S] [--bootstrap-resamples R]
//
// N defaults to 2000 data sets per design (the docs' table); CTest runs a smoke pass with 50.
// The bootstrap columns need R > 0 (default 2000; 0 skips them and runs ~10x faster).

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "controller/report/calibration.h"
#include "controller/stats/boots.h"

namespace tlbfleet {
namespace {

using report::calibration::AdaptiveCounts;
using report::calibration::AdaptiveDesign;
using report::calibration::Counts;
using report::calibration::Design;

std::string Pct(double x) { return absl::StrFormat("%.1f %%", 100 * x); }

struct Row {
  Design design;
  std::string note;
};

void PrintFixed(const std::vector<Row>& rows, int datasets, uint64_t seed, int resamples) {
  std::printf(
      "| design | boots x iterations per arm | true change | better / worse | same | CI "
      "coverage | bootstrap coverage |\n| --- | --- | --- | --- | --- | --- | --- |\n");
  for (const Row& row : rows) {
    report::CompareOptions options;
    options.bootstrap.resamples = resamples;
    const Counts c = report::calibration::CountVerdicts(row.design, datasets, seed, options);
    const Design& d = row.design;
    const std::string iterations = d.iterations_max > d.iterations
                                       ? absl::StrFormat("%d..%d", d.iterations, d.iterations_max)
                                       : absl::StrFormat("%d", d.iterations);
    const std::string boot_cov =
        c.bootstrap_defined ? Pct(c.bootstrap_covered / static_cast<double>(c.bootstrap_defined))
                            : std::string("n/a");
    std::printf("| %s | %d x %s | %+.0f %% | %s / %s | %s | %s | %s |\n", d.name.c_str(), d.boots,
                iterations.c_str(), 100 * d.change, Pct(c.Rate(c.better)).c_str(),
                Pct(c.Rate(c.worse)).c_str(), Pct(c.Rate(c.same)).c_str(),
                Pct(c.Rate(c.covered)).c_str(), boot_cov.c_str());
  }
}

void PrintFamily(const Design& d, int datasets, uint64_t seed) {
  std::printf(
      "\n| %d rows, nothing changed | any false verdict in a data set | false verdicts per row |\n"
      "| --- | --- | --- |\n",
      d.rows);
  for (bool adjust : {true, false}) {
    report::CompareOptions options;
    options.adjust = adjust;
    options.bootstrap.resamples = 0;
    const Counts c = report::calibration::CountVerdicts(d, datasets, seed, options);
    std::printf("| %s | %s | %s |\n", adjust ? "Benjamini–Hochberg (default)" : "--unadjusted",
                Pct(c.any_false / static_cast<double>(c.datasets)).c_str(),
                Pct(c.FalseRate()).c_str());
  }
}

v1::AdaptiveSpec Spec(uint32_t it_min, uint32_t it_max, uint32_t boots_min, uint32_t boots_max,
                      double target) {
  v1::AdaptiveSpec spec;
  spec.mutable_iterations()->set_min(it_max ? it_min : 0);
  spec.mutable_iterations()->set_max(it_max);
  spec.mutable_boots()->set_min(boots_max ? boots_min : 0);
  spec.mutable_boots()->set_max(boots_max);
  spec.set_target_ci(target);
  return spec;
}

void PrintAdaptive(const std::vector<std::pair<std::string, AdaptiveDesign>>& designs, int runs,
                   uint64_t seed) {
  std::printf(
      "\n| adaptive run | true change | better / worse | CI coverage | stopped at the maxima | "
      "mean boots, samples per arm |\n| --- | --- | --- | --- | --- | --- |\n");
  for (const auto& [name, design] : designs) {
    const AdaptiveCounts c = report::calibration::RunAdaptive(design, runs, seed);
    std::printf("| %s | %+.0f %% | %s / %s | %s | %s | %.1f, %.1f |\n", name.c_str(),
                100 * design.noise.change, Pct(c.Rate(c.better)).c_str(),
                Pct(c.Rate(c.worse)).c_str(), Pct(c.Rate(c.covered)).c_str(),
                Pct(c.at_maximum / static_cast<double>(c.datasets)).c_str(), c.boots, c.iterations);
  }
}

int Main(int argc, char** argv) {
  int datasets = 2000;
  uint64_t seed = 20260901;
  int resamples = 2000;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--datasets") datasets = std::atoi(argv[i + 1]);
    if (flag == "--seed") seed = std::strtoull(argv[i + 1], nullptr, 10);
    if (flag == "--bootstrap-resamples") resamples = std::atoi(argv[i + 1]);
  }
  std::printf("seed %llu, %d data sets per design, bootstrap %d resamples\n\n",
              static_cast<unsigned long long>(seed), datasets, resamples);

  // Interleaved arms (the default schedule): a boot's state is shared by both arms.
  auto shared = [](int boots, int it, int it_max, double change = 0) {
    Design d;
    d.name = "interleaved arms, shared boots (5 %), arm x boot 0.3 %, iterations 1 %";
    d.boots = boots;
    d.shared_boots = true;
    d.iterations = it;
    d.iterations_max = it_max;
    d.boot_sd = 0.05;
    d.interaction_sd = 0.003;
    d.iteration_sd = 0.01;
    d.change = change;
    return d;
  };
  // Two kernels: each arm on boots of its own.
  auto kernels = [](int boots, int it, int it_max, double change = 0) {
    Design d;
    d.name = "kernels, own boots (3 %), iterations 1 %";
    d.boots = boots;
    d.iterations = it;
    d.iterations_max = it_max;
    d.boot_sd = 0.03;
    d.iteration_sd = 0.01;
    d.change = change;
    return d;
  };
  auto one_boot = [](int it, bool shared_boot) {
    Design d;
    d.name = shared_boot ? "one shared boot, iid iterations 2 %" : "one boot each, iid 2 %";
    d.shared_boots = shared_boot;
    d.iterations = it;
    d.iteration_sd = 0.02;
    return d;
  };
  std::vector<Row> rows;
  rows.push_back({one_boot(5, true), ""});
  rows.push_back({one_boot(3, true), ""});
  rows.push_back({one_boot(5, false), ""});
  // One boot per arm on boots of their own: the boots' difference is the arms' difference,
  // which is why such a result is labelled within-boot.
  Design confounded = kernels(1, 5, 0);
  confounded.name = "kernels, one boot each (3 %), iterations 1 %";
  rows.push_back({confounded, ""});
  for (int b : {2, 3, 5, 10}) rows.push_back({kernels(b, 5, 0), ""});
  for (int b : {2, 3, 5, 10}) rows.push_back({kernels(b, 2, 8), ""});
  for (int b : {2, 3, 5, 10}) rows.push_back({shared(b, 5, 0), ""});
  for (int b : {2, 3, 5, 10}) rows.push_back({shared(b, 2, 8), ""});
  rows.push_back({shared(5, 5, 0, 0.02), ""});
  rows.push_back({kernels(5, 5, 0, 0.02), ""});

  // recommend_boots: the advised design for the interleaved noise, then its rates.
  stats::LogRatioComponents truth;
  truth.within_base = truth.within_other = 0.01 * 0.01;
  truth.interaction = 0.003 * 0.003;
  const stats::RepetitionAdvice advice = stats::AdvisePaired(truth, stats::AdviceOptions{});
  Design advised = shared(*advice.boots, *advice.iterations_per_boot, 0);
  advised.name = "interleaved, at the advised size (recommend_boots, ±1 % margin)";
  rows.push_back({advised, ""});
  advised.change = 0.01;
  rows.push_back({advised, ""});
  PrintFixed(rows, datasets, seed, resamples);

  Design family = one_boot(5, true);
  family.rows = 20;
  PrintFamily(family, datasets, seed);

  std::vector<std::pair<std::string, AdaptiveDesign>> adaptive;
  Design iid = one_boot(5, true);
  adaptive.push_back({"1 boot, iterations 5..100, target ±1 %, iid 2 %",
                      AdaptiveDesign{iid, Spec(5, 100, 0, 0, 0.01)}});
  Design noisy = shared(2, 3, 0);
  adaptive.push_back({"boots 2..6 x iterations 3..12, target ±1 %, interleaved",
                      AdaptiveDesign{noisy, Spec(3, 12, 2, 6, 0.01)}});
  Design fixed5 = shared(1, 5, 0);
  adaptive.push_back({"boots 1..6 x 5 iterations, target ±1 %, interleaved",
                      AdaptiveDesign{fixed5, Spec(0, 0, 1, 6, 0.01)}});
  fixed5.change = 0.02;
  adaptive.push_back({"boots 1..6 x 5 iterations, target ±1 %, interleaved",
                      AdaptiveDesign{fixed5, Spec(0, 0, 1, 6, 0.01)}});
  // Harder cases: the boot-to-boot noise of the ratio dominates and the target is just
  // reachable at the maximum; the target equals the iteration noise.
  Design interaction = shared(1, 5, 0);
  interaction.interaction_sd = 0.01;
  interaction.iteration_sd = 0.002;
  adaptive.push_back({"boots 1..6 x 5, target ±1 %, arm x boot 1 %, iterations 0.2 %",
                      AdaptiveDesign{interaction, Spec(0, 0, 1, 6, 0.01)}});
  Design tight = one_boot(3, true);
  tight.iteration_sd = 0.01;
  adaptive.push_back({"1 boot, iterations 3..20, target ±1 %, iid 1 %",
                      AdaptiveDesign{tight, Spec(3, 20, 0, 0, 0.01)}});
  PrintAdaptive(adaptive, datasets, seed);
  return 0;
}

}  // namespace
}  // namespace tlbfleet

int main(int argc, char** argv) { return tlbfleet::Main(argc, argv); }
