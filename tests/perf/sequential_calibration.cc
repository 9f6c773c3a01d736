// The sequential-verdict table of docs/statistics.md#sequential-verdicts: simulated runs of
// known designs (controller/report/calibration.h) replayed through the real adaptive
// decision code (report::ReplayAdaptive -> Compare -> DecideAdaptive with stop: verdict), per
// design and true change: false and true verdicts, how much each row used, and the bias of
// the estimate where a row stopped early. Rates from fixed seeds, not timings.
//
// The second table (docs/statistics.md#rows-that-stop-on-their-own) runs 8 rows that stop on
// their own (report::SimulateRowStopping: a decided row's sweep value gets no more boots) and
// reports, per row's true change, the verdicts, when rows stopped, the bias at early stops,
// and the machine time against growing every row until the run's stop.
//
//   build/tests/tlbfleet_sequential_calibration [--runs N] [--seed S] [--table all|rows]

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "controller/report/adaptive_replay.h"
#include "controller/report/calibration.h"
#include "controller/report/row_stopping.h"

namespace tlbfleet {
namespace {

using report::calibration::Design;

struct Case {
  std::string name;
  Design design;  // at the maxima
  v1::AdaptiveSpec spec;
};

v1::AdaptiveSpec Verdict(uint32_t bmin, uint32_t bmax, uint32_t imin = 0, uint32_t imax = 0,
                         bool pocock = false) {
  v1::AdaptiveSpec a;
  a.set_stop(v1::AdaptiveSpec::STOP_VERDICT);
  a.mutable_boots()->set_min(bmin);
  a.mutable_boots()->set_max(bmax);
  a.mutable_iterations()->set_min(imin);
  a.mutable_iterations()->set_max(imax);
  if (pocock) a.set_spending(v1::AdaptiveSpec::SPENDING_POCOCK);
  return a;
}

Design Interleaved(int boots, int iterations, int rows) {
  Design d;
  d.boots = boots;
  d.shared_boots = true;
  d.iterations = iterations;
  d.boot_sd = 0.05;
  d.interaction_sd = 0.003;
  d.iteration_sd = 0.01;
  d.rows = rows;
  return d;
}

Design OwnBoots(int boots, int iterations) {
  Design d;
  d.boots = boots;
  d.iterations = iterations;
  d.boot_sd = 0.03;
  d.iteration_sd = 0.01;
  return d;
}

Design OneBoot(int iterations, double sd) {
  Design d;
  d.iterations = iterations;
  d.shared_boots = true;
  d.iteration_sd = sd;
  return d;
}

struct RowCase {
  std::string name;
  std::vector<double> changes;  // per row
  v1::AdaptiveSpec spec;
  Design noise;  // rows = changes.size(), boots = the maximum
};

// Per-row stopping: one line per (case, true change), rows of equal change pooled.
int RowStoppingTable(int runs, uint64_t seed) {
  const std::vector<double> seed_mail = {0.0616, 0.1482, 0.0891, 0.0729,
                                         0.0707, 0.0494, 0.0597, 0.0559};
  const std::vector<double> mix = {0, 0, 0, 0, 0.02, 0.05, 0.10, 0.15};
  Design own = OwnBoots(10, 5);
  own.rows = 8;
  const std::vector<RowCase> cases = {
      {"8 null rows, O'Brien-Fleming", std::vector<double>(8, 0.0), Verdict(1, 10),
       Interleaved(10, 5, 8)},
      {"8 null rows, Pocock", std::vector<double>(8, 0.0), Verdict(1, 10, 0, 0, true),
       Interleaved(10, 5, 8)},
      {"4 null + 2/5/10/15 %, O'Brien-Fleming", mix, Verdict(1, 10), Interleaved(10, 5, 8)},
      {"4 null + 2/5/10/15 %, Pocock", mix, Verdict(1, 10, 0, 0, true), Interleaved(10, 5, 8)},
      {"seed mail's 8 changes (4.9-14.8 %), O'Brien-Fleming", seed_mail, Verdict(1, 10),
       Interleaved(10, 5, 8)},
      {"kernels on own boots (3 %), boots 2..10, 4 null + 2/5/10/15 %, O'Brien-Fleming", mix,
       Verdict(2, 10), own},
  };
  std::printf(
      "\n(per-row stopping, 8 rows, boots up to 10 x 5 iterations; interleaved: 5 %% shared boot "
      "noise; seed %llu, %d runs per case)\n\n",
      static_cast<unsigned long long>(seed), runs);
  std::printf(
      "| case | true change | better / worse / same | mean boots of the row's arm at its "
      "decision or the stop (max 10) | decided before the run's last look | bias at early stops "
      "|\n| --- | --- | --- | --- | --- | --- |\n");
  std::vector<std::string> summaries;
  for (const RowCase& c : cases) {
    struct Line {
      int rows = 0, better = 0, worse = 0, same = 0, early = 0, biased = 0;
      double boots = 0, bias = 0;
    };
    std::vector<std::pair<double, Line>> lines;  // by change, first appearance
    int any_false = 0;
    size_t measured = 0, whole = 0, fixed = 0;
    double looks = 0;
    for (int k = 0; k < runs; ++k) {
      absl::StatusOr<report::RowStoppingRun> r =
          report::SimulateRowStopping(c.noise, c.changes, c.spec, seed, k);
      if (!r.ok()) {
        std::fprintf(stderr, "%s\n", std::string(r.status().message()).c_str());
        return 1;
      }
      bool run_false = false;
      for (const report::RowOutcome& row : r->rows) {
        const double change = c.changes[std::stoul(row.param_value)];
        auto it = std::find_if(lines.begin(), lines.end(),
                               [&](const auto& l) { return l.first == change; });
        if (it == lines.end()) it = lines.insert(lines.end(), {change, Line{}});
        Line& l = it->second;
        ++l.rows;
        l.better += row.verdict == report::Verdict::kBetter;
        l.worse += row.verdict == report::Verdict::kWorse;
        l.same += row.verdict == report::Verdict::kSame;
        run_false |= change == 0 ? (row.verdict == report::Verdict::kBetter ||
                                    row.verdict == report::Verdict::kWorse)
                                 : row.verdict == report::Verdict::kWorse;
        l.boots += static_cast<double>(row.arm_boots);
        if (row.decided && row.decided_round + 1 < r->looks) {
          ++l.early;
          if (row.ratio) {
            l.bias += std::log(*row.ratio) - std::log1p(change);
            ++l.biased;
          }
        }
      }
      any_false += run_false;
      measured += r->boots_measured;
      whole += r->boots_whole_run;
      fixed += 16 * 10;  // 8 sweep values x 2 arms x boots.max
      looks += static_cast<double>(r->looks);
    }
    for (const auto& [change, l] : lines) {
      std::printf("| %s | %+.1f %% | %.1f %% / %.1f %% / %.1f %% | %.2f | %.1f %% | %+.2f %% |\n",
                  c.name.c_str(), change * 100, 100.0 * l.better / l.rows, 100.0 * l.worse / l.rows,
                  100.0 * l.same / l.rows, l.boots / l.rows, 100.0 * l.early / l.rows,
                  l.biased ? 100 * (std::exp(l.bias / l.biased) - 1) : 0.0);
    }
    char summary[512];
    std::snprintf(summary, sizeof summary, "| %s | %.1f %% | %.2f | %.1f %% | %.1f %% |",
                  c.name.c_str(), 100.0 * any_false / runs, looks / runs,
                  100.0 * static_cast<double>(measured) / static_cast<double>(whole),
                  100.0 * static_cast<double>(measured) / static_cast<double>(fixed));
    summaries.emplace_back(summary);
    std::fflush(stdout);
  }
  std::printf(
      "\n| case | runs with any false verdict | mean looks | boots measured vs growing every row "
      "to the same stop | vs the maximum (10 boots of every row) |\n| --- | --- | --- | --- | --- "
      "|\n");
  for (const std::string& line : summaries) std::printf("%s\n", line.c_str());
  return 0;
}

int Main(int argc, char** argv) {
  int runs = 1000;
  uint64_t seed = 20261203;
  std::string table = "all";
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--runs") runs = std::atoi(argv[i + 1]);
    if (flag == "--seed") seed = std::strtoull(argv[i + 1], nullptr, 10);
    if (flag == "--table") table = argv[i + 1];
  }
  if (table == "rows") return RowStoppingTable(runs, seed);
  const std::vector<Case> cases = {
      {"interleaved, boots 1..6 x 5, O'Brien-Fleming", Interleaved(6, 5, 1), Verdict(1, 6)},
      {"interleaved, boots 1..6 x 5, Pocock", Interleaved(6, 5, 1), Verdict(1, 6, 0, 0, true)},
      {"interleaved, boots 1..10 x 5, 8 rows (Bonferroni)", Interleaved(10, 5, 8), Verdict(1, 10)},
      {"kernels, own boots (3 %), boots 2..10 x 5", OwnBoots(10, 5), Verdict(2, 10)},
      {"1 boot, iterations 5..80, iid 2 %", OneBoot(80, 0.02), Verdict(0, 0, 5, 80)},
  };
  std::printf("(seed %llu, %d runs per row)\n\n", static_cast<unsigned long long>(seed), runs);
  std::printf(
      "| design | true change | better / worse / same | any false per run | mean samples per arm "
      "and row (max) | stopped early | bias of the estimate at early stops | bias overall |\n");
  std::printf("| --- | --- | --- | --- | --- | --- | --- | --- |\n");
  for (const Case& c : cases) {
    for (double change : {0.0, 0.01, 0.02, 0.05}) {
      Design d = c.design;
      d.change = change;
      report::ReplayOptions options;
      options.adaptive = c.spec;
      options.iterations = static_cast<uint32_t>(d.iterations);
      options.boots = static_cast<uint32_t>(d.boots);
      int rows = 0, better = 0, worse = 0, same = 0, any_false = 0, early = 0;
      double samples = 0, bias_early = 0, bias_all = 0;
      int estimated = 0;
      const size_t max_samples = static_cast<size_t>(d.boots) * static_cast<size_t>(d.iterations);
      for (int k = 0; k < runs; ++k) {
        absl::StatusOr<report::ReplayResult> r =
            report::ReplayAdaptive(report::calibration::Simulate(d, seed, k), {}, options);
        if (!r.ok()) {
          std::fprintf(stderr, "%s\n", std::string(r.status().message()).c_str());
          return 1;
        }
        bool run_false = false;
        for (const report::RowOutcome& row : r->rows) {
          ++rows;
          better += row.verdict == report::Verdict::kBetter;
          worse += row.verdict == report::Verdict::kWorse;
          same += row.verdict == report::Verdict::kSame;
          const bool wrong = change == 0 ? (row.verdict == report::Verdict::kBetter ||
                                            row.verdict == report::Verdict::kWorse)
                                         : row.verdict == report::Verdict::kWorse;
          run_false |= wrong;
          samples += static_cast<double>(row.arm_samples);
          if (row.ratio) {
            const double err = std::log(*row.ratio) - std::log1p(change);
            bias_all += err;
            ++estimated;
            if (row.decided && row.arm_samples < max_samples) {
              ++early;
              bias_early += err;
            }
          }
        }
        any_false += run_false;
      }
      std::printf(
          "| %s | %+.0f %% | %.1f %% / %.1f %% / %.1f %% | %.1f %% | %.1f (%zu) | %.1f %% | "
          "%+.2f %% | %+.2f %% |\n",
          c.name.c_str(), change * 100, 100.0 * better / rows, 100.0 * worse / rows,
          100.0 * same / rows, 100.0 * any_false / runs, samples / rows, max_samples,
          100.0 * early / rows, early ? 100 * (std::exp(bias_early / early) - 1) : 0.0,
          estimated ? 100 * (std::exp(bias_all / estimated) - 1) : 0.0);
      std::fflush(stdout);
    }
  }
  return RowStoppingTable(runs, seed);
}

}  // namespace
}  // namespace tlbfleet

int main(int argc, char** argv) { return tlbfleet::Main(argc, argv); }
