// Speed of the statistics behind `tlbfleet compare` (issue 5): two arms of 1,000,000 samples
// each over 20 boots (or one boot), 10,000 bootstrap resamples, in under 1 s on one core and
// under 200 MB.
// Figures and the command that produced them: docs/performance.md.

#include <sys/resource.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "benchmark/benchmark.h"
#include "boost/sort/spreadsort/float_sort.hpp"
#include "controller/report/comparison.h"
#include "controller/stats/bootstrap.h"
#include "controller/stats/radix_sort.h"
#include "controller/stats/summary.h"
#include "controller/stats/two_sample.h"

namespace tlbfleet {
namespace {

// `boots` boots of `per_boot` iterations around `mean`: a boot effect (sd 1 %) and
// iteration noise (sd 2 %), values rounded to 0.01 as workloads print them (or not rounded:
// then hardly two differences are equal, the harder case for Hodges–Lehmann).
stats::BootGroups MakeArm(uint64_t seed, int boots, int per_boot, double mean, bool round = true) {
  stats::Rng rng(seed);
  stats::BootGroups out(boots);
  for (std::vector<double>& boot : out) {
    const double boot_mean = mean * (1 + 0.01 * rng.Normal());
    boot.reserve(per_boot);
    for (int i = 0; i < per_boot; ++i) {
      const double v = boot_mean * (1 + 0.02 * rng.Normal());
      boot.push_back(round ? std::round(v * 100) / 100 : v);
    }
  }
  return out;
}

double PeakRssMb() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;
}

void CompareTwoArms(benchmark::State& state) {
  const int samples = static_cast<int>(state.range(0));
  const int boots = static_cast<int>(state.range(1));
  const bool round = state.range(2) != 0;
  // Interleaved arms: both measured in the same boots (the paired design).
  std::vector<stats::ArmSamples> arms(2);
  arms[0].boots = MakeArm(1, boots, samples / boots, 6400, round);
  arms[1].boots = MakeArm(2, boots, samples / boots, 6464, round);
  for (stats::ArmSamples& arm : arms) {
    for (int b = 0; b < boots; ++b) arm.boot_ids.push_back("boot" + std::to_string(b));
  }
  const std::vector<std::string> names = {"mmap", "malloc"};
  report::CompareOptions options;  // 10,000 resamples, fixed seed
  for (auto _ : state) {
    absl::StatusOr<std::vector<report::ArmResult>> result =
        report::AnalyseGroup(names, arms, stats::Direction::kHigherIsBetter, options);
    benchmark::DoNotOptimize(result);
  }
  state.counters["peak_rss_MB"] = PeakRssMb();
  state.SetItemsProcessed(state.iterations() * 2 * samples);
}
BENCHMARK(CompareTwoArms)
    ->Name("CompareTwoArms")
    ->ArgNames({"samples", "boots", "rounded"})
    ->Args({1'000'000, 20, 1})
    ->Args({1'000'000, 20, 0})
    ->Args({1'000'000, 1, 1})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(CompareTwoArms)
    ->Name("Smoke/CompareTwoArms")
    ->Args({10'000, 20, 1})
    ->Unit(benchmark::kMillisecond);

// The parts, to see where the time goes.
void Part(benchmark::State& state, int which) {
  const stats::BootGroups base = MakeArm(1, 20, 50'000, 6400);
  const stats::BootGroups other = MakeArm(2, 20, 50'000, 6464);
  std::vector<double> x, y, log_x, log_y;
  for (const auto& b : base) x.insert(x.end(), b.begin(), b.end());
  for (const auto& b : other) y.insert(y.end(), b.begin(), b.end());
  for (double v : x) log_x.push_back(std::log(v));
  for (double v : y) log_y.push_back(std::log(v));
  if (which >= 2 && which <= 3) {
    std::sort(x.begin(), x.end());
    std::sort(y.begin(), y.end());
  }
  for (auto _ : state) {
    switch (which) {
      case 0:
        benchmark::DoNotOptimize(stats::Summarize(x));
        break;
      case 1:
        benchmark::DoNotOptimize(stats::WelchTest(x, y));
        break;
      case 2:
        benchmark::DoNotOptimize(stats::MannWhitneyU(x, y));
        break;
      case 3:
        benchmark::DoNotOptimize(stats::HodgesLehmann(x, y));
        break;
      case 4:
        // One boot of 1M iterations per arm: the normal shortcut of the resampled means.
        benchmark::DoNotOptimize(stats::BootstrapLogRatio(log_x, log_y, false, 0.95));
        break;
    }
  }
}
BENCHMARK_CAPTURE(Part, Summarize_1M, 0)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(Part, Welch_2x1M, 1)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(Part, MannWhitney_2x1M_presorted, 2)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(Part, HodgesLehmann_2x1M_presorted, 3)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(Part, Bootstrap_2x1M_iterations_10k, 4)->Unit(benchmark::kMillisecond);

// Resampling every unit (n draws per resample) on data small enough for it: the cost the
// normal shortcut avoids (2e10 draws for two arms of 1M iterations).
void ExactBootstrap(benchmark::State& state) {
  std::vector<double> x, y;
  for (const auto& b : MakeArm(1, 1, 2000, 6400)) {
    for (double v : b) x.push_back(std::log(v));
  }
  for (const auto& b : MakeArm(2, 1, 2000, 6464)) {
    for (double v : b) y.push_back(std::log(v));
  }
  const stats::BootstrapOptions options;
  for (auto _ : state) benchmark::DoNotOptimize(stats::BootstrapLogRatio(x, y, false, 0.95));
  state.SetItemsProcessed(state.iterations() * options.resamples * 4000);
}
BENCHMARK(ExactBootstrap)->Name("Bootstrap_exact_2x2000")->Unit(benchmark::kMillisecond);

// Reference measured in the same run, to scale the figures to another machine: sorting
// 2,000,000 doubles.
void ReferenceSort(benchmark::State& state) {
  std::vector<double> data;
  for (const auto& b : MakeArm(3, 20, 100'000, 6400)) data.insert(data.end(), b.begin(), b.end());
  std::vector<double> copy(data.size());
  for (auto _ : state) {
    std::copy(data.begin(), data.end(), copy.begin());
    std::sort(copy.begin(), copy.end());
    benchmark::DoNotOptimize(copy.data());
  }
}
BENCHMARK(ReferenceSort)->Name("Reference/std_sort_2M_doubles")->Unit(benchmark::kMillisecond);

// Issue 24: does Boost's spreadsort (a hybrid radix/comparison sort, header-only in Debian's
// libboost-dev) sort an arm as fast as our LSD radix sort? Same values, same copies; 1,000,000
// doubles as an arm of 20 boots holds them, rounded to 0.01 (many equal keys) or not.
enum class Sorter { kOurs, kBoostFloatSort, kStdSort };

void SortArm(benchmark::State& state, Sorter sorter, bool round) {
  std::vector<double> data;
  for (const auto& b : MakeArm(5, 20, 50'000, 6400, round))
    data.insert(data.end(), b.begin(), b.end());
  std::vector<double> copy(data.size());
  for (auto _ : state) {
    std::copy(data.begin(), data.end(), copy.begin());
    switch (sorter) {
      case Sorter::kOurs:
        stats::SortWithoutNaN(&copy);
        break;
      case Sorter::kBoostFloatSort:
        boost::sort::spreadsort::float_sort(copy.begin(), copy.end());
        break;
      case Sorter::kStdSort:
        std::sort(copy.begin(), copy.end());
        break;
    }
    benchmark::DoNotOptimize(copy.data());
  }
  if (!std::is_sorted(copy.begin(), copy.end())) state.SkipWithError("not sorted");
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(data.size()));
}
BENCHMARK_CAPTURE(SortArm, ours_radix_1M_rounded, Sorter::kOurs, true)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(SortArm, boost_float_sort_1M_rounded, Sorter::kBoostFloatSort, true)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(SortArm, std_sort_1M_rounded, Sorter::kStdSort, true)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(SortArm, ours_radix_1M, Sorter::kOurs, false)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(SortArm, boost_float_sort_1M, Sorter::kBoostFloatSort, false)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(SortArm, std_sort_1M, Sorter::kStdSort, false)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace tlbfleet

BENCHMARK_MAIN();
