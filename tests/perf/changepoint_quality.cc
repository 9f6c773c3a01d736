// Quality of the change-point detector (controller/stats/changepoint.h) on synthetic nightly
// series: 100 points, 2 % noise (the marginal standard deviation, whatever the correlation),
// with the things a lab series holds besides noise — correlation between consecutive nights
// (AR(1), φ = 0.3, 0.5, 0.7), a bad night (one 8 % outlier), a slow drift (5 % over the
// series) — and 5 % steps at a uniform point in 10..90. Goals (issues 12 and 25):
//   - at most 1 false change point per 100 stationary series for φ up to 0.5, with or
//     without an outlier per series;
//   - at least 95 % of 5 % steps found within 3 points with independent noise, and at least
//     80 % with φ = 0.5.
// The goals are the default (permutation) test's; φ = 0.7, the drift columns and the
// Student-t variant are reported without one. Every series comes from a fixed
// seed, so the figures do not depend on the machine; docs/performance.md records them with
//
//   build/tests/tlbfleet_changepoint_quality [--series N] [--seed S] [--serial MODEL]
//
// The detector's defaults unless flags say otherwise. Exits 1 when a goal is missed (CTest
// runs a smaller pass with label "perf").

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "controller/stats/bootstrap.h"
#include "controller/stats/changepoint.h"

namespace tlbfleet {
namespace {

constexpr size_t kPoints = 100;
constexpr double kCov = 0.02;
constexpr double kStep = 0.05;
constexpr double kOutlier = 0.08;
constexpr double kDrift = 0.05;  // over the whole series
constexpr size_t kWithin = 3;
// Where the step goes: uniformly in [kFirstStep, kLastStep]. Closer to the ends than
// min_segment no split can be made; a few points from the end, 2.5 σ cannot be told from noise.
constexpr size_t kFirstStep = 10, kLastStep = 90;

struct Noise {
  std::string name;
  double phi = 0;
  bool outlier = false;
};

struct Variant {
  std::string name;
  stats::ChangePointOptions options;
  bool intervals = false;  // give each point an interval of its true noise (± 1.96 σ)
};

// AR(1) noise with marginal standard deviation 1, started in its stationary distribution.
std::vector<double> Ar1Noise(stats::Rng& rng, double phi) {
  std::vector<double> e(kPoints);
  const double innovation = std::sqrt(1 - phi * phi);
  e[0] = rng.Normal();
  for (size_t i = 1; i < kPoints; ++i) e[i] = phi * e[i - 1] + innovation * rng.Normal();
  return e;
}

// `step_at` == kPoints: no step. `drift`: the level's total relative change over the series.
std::vector<stats::SeriesPoint> MakeSeries(stats::Rng& rng, const Noise& noise, size_t step_at,
                                           double step, double drift, bool intervals) {
  const std::vector<double> e = Ar1Noise(rng, noise.phi);
  const size_t outlier_at = noise.outlier ? rng.Below(kPoints) : kPoints;
  std::vector<stats::SeriesPoint> out(kPoints);
  for (size_t i = 0; i < kPoints; ++i) {
    double level = 1000 * (i >= step_at ? 1 + step : 1);
    level *= 1 + drift * static_cast<double>(i) / static_cast<double>(kPoints - 1);
    out[i].value = level * (1 + kCov * e[i] + (i == outlier_at ? kOutlier : 0));
    if (intervals) {
      const double half = 1.959963984540054 * kCov * level;
      out[i].low = out[i].value - half;
      out[i].high = out[i].value + half;
    }
  }
  return out;
}

stats::ChangePointResult Detect(const Variant& v, const std::vector<stats::SeriesPoint>& s) {
  auto r = stats::DetectChangePoints(s, v.options);
  if (!r.ok()) {
    std::fprintf(stderr, "%s: %s\n", v.name.c_str(), std::string(r.status().message()).c_str());
    std::exit(2);
  }
  return *std::move(r);
}

struct Row {
  double false_per_100 = 0;       // stationary: change points per 100 series
  double false_trends = 0;        // stationary: trends per 100 series
  double steps_found_pct = 0;     // step series: a change point within kWithin of the step
  double drift_as_trend_pct = 0;  // drift series: reported as a trend
  double drift_as_step_per_100 = 0;
};

Row Measure(const Variant& v, const Noise& noise, int series, uint64_t seed) {
  Row row;
  stats::Rng rng(seed);
  int false_points = 0, false_trends = 0, found = 0, drift_trend = 0, drift_steps = 0;
  for (int i = 0; i < series; ++i) {
    const auto r = Detect(v, MakeSeries(rng, noise, kPoints, 0, 0, v.intervals));
    false_points += static_cast<int>(r.change_points.size());
    false_trends += static_cast<int>(r.trends.size());
  }
  for (int i = 0; i < series; ++i) {
    const size_t at = kFirstStep + rng.Below(kLastStep - kFirstStep + 1);
    const double step = i % 2 == 0 ? kStep : -kStep;
    const auto r = Detect(v, MakeSeries(rng, noise, at, step, 0, v.intervals));
    for (const stats::ChangePoint& cp : r.change_points) {
      const size_t d = cp.index > at ? cp.index - at : at - cp.index;
      if (d <= kWithin) {
        ++found;
        break;
      }
    }
  }
  for (int i = 0; i < series; ++i) {
    const double drift = i % 2 == 0 ? kDrift : -kDrift;
    const auto r = Detect(v, MakeSeries(rng, noise, kPoints, 0, drift, v.intervals));
    drift_trend += r.trends.empty() ? 0 : 1;
    drift_steps += static_cast<int>(r.change_points.size());
  }
  row.false_per_100 = 100.0 * false_points / series;
  row.false_trends = 100.0 * false_trends / series;
  row.steps_found_pct = 100.0 * found / series;
  row.drift_as_trend_pct = 100.0 * drift_trend / series;
  row.drift_as_step_per_100 = 100.0 * drift_steps / series;
  return row;
}

int Main(int argc, char** argv) {
  int series = 1000;
  uint64_t seed = 2026;
  stats::ChangePointOptions permutation;  // the detector's defaults
  stats::ChangePointOptions student_t;
  student_t.test = stats::ChangePointTest::kStudentT;
  student_t.max_p = stats::kStudentTDefaultMaxP;
  bool intervals = false;
  for (int i = 1; i < argc; ++i) {
    const bool has_value = i + 1 < argc;
    if (std::strcmp(argv[i], "--series") == 0 && has_value) {
      series = std::atoi(argv[++i]);
    } else if (std::strcmp(argv[i], "--seed") == 0 && has_value) {
      seed = std::strtoull(argv[++i], nullptr, 10);
    } else if (std::strcmp(argv[i], "--permutation-max-p") == 0 && has_value) {
      permutation.max_p = std::atof(argv[++i]);
    } else if (std::strcmp(argv[i], "--permutations") == 0 && has_value) {
      permutation.permutations = std::atoi(argv[++i]);
    } else if (std::strcmp(argv[i], "--student-t-max-p") == 0 && has_value) {
      student_t.max_p = std::atof(argv[++i]);
    } else if (std::strcmp(argv[i], "--serial") == 0 && has_value) {
      const std::string model = argv[++i];
      const stats::SerialModel m =
          model == "independent" ? stats::SerialModel::kIndependent : stats::SerialModel::kAr1;
      permutation.serial = student_t.serial = m;
    } else if (std::strcmp(argv[i], "--intervals") == 0) {
      intervals = true;
    } else {
      std::fprintf(stderr,
                   "usage: %s [--series N] [--seed S] [--permutation-max-p P] "
                   "[--permutations R] [--student-t-max-p P] [--serial ar1|independent] "
                   "[--intervals]\n",
                   argv[0]);
      return 2;
    }
  }
  if (series < 1) {
    std::fprintf(stderr, "--series must be at least 1\n");
    return 2;
  }
  const std::vector<Variant> variants = {
      {"permutation", permutation, intervals},
      {"student-t", student_t, intervals},
  };
  const std::vector<Noise> noises = {
      {"independent", 0, false}, {"independent + outlier", 0, true},
      {"AR(1) 0.3", 0.3, false}, {"AR(1) 0.3 + outlier", 0.3, true},
      {"AR(1) 0.5", 0.5, false}, {"AR(1) 0.5 + outlier", 0.5, true},
      {"AR(1) 0.7", 0.7, false}, {"AR(1) 0.7 + outlier", 0.7, true},
  };

  std::printf(
      "%d stationary, %d step and %d drift series per row; %zu points, noise %.0f %% "
      "(marginal), steps of +-%.0f %% at %zu..%zu (found = a change point within %zu points), "
      "drift +-%.0f %% over the series, outlier +%.0f %% at one point; seed %llu\n"
      "permutation: max p %g, %d permutations; student-t: max p %g; serial model %s%s\n\n",
      series, series, series, kPoints, kCov * 100, kStep * 100, kFirstStep, kLastStep, kWithin,
      kDrift * 100, kOutlier * 100, static_cast<unsigned long long>(seed), permutation.max_p,
      permutation.permutations, student_t.max_p, stats::SerialModelName(permutation.serial),
      intervals ? ", points with intervals" : "");
  std::printf("%-12s %-24s %10s %10s %12s %12s %14s  %s\n", "test", "noise", "false/100",
              "trends/100", "steps found", "drift=trend", "drift steps/100", "goals");
  bool ok = true;
  for (const Variant& v : variants) {
    for (const Noise& noise : noises) {
      const Row row = Measure(v, noise, series, seed);
      // The goals of issue 25 for this row, for the default test; the φ = 0.7 rows and the
      // Student-t variant's have none (docs/performance.md).
      std::string goals = "-";
      bool row_ok = true;
      if (v.options.test == stats::ChangePointTest::kPermutation && noise.phi <= 0.5) {
        goals.clear();
        const bool false_ok = row.false_per_100 <= 1.0;
        goals += false_ok ? "false ok" : "FALSE MISSED";
        row_ok = row_ok && false_ok;
      }
      if (v.options.test == stats::ChangePointTest::kPermutation && !noise.outlier &&
          (noise.phi == 0 || noise.phi == 0.5)) {
        const double goal = noise.phi == 0 ? 95.0 : 80.0;
        const bool found_ok = row.steps_found_pct >= goal;
        goals += found_ok ? ", steps ok" : ", STEPS MISSED";
        row_ok = row_ok && found_ok;
      }
      ok = ok && row_ok;
      std::printf("%-12s %-24s %10.2f %10.2f %11.1f%% %11.1f%% %14.2f  %s\n", v.name.c_str(),
                  noise.name.c_str(), row.false_per_100, row.false_trends, row.steps_found_pct,
                  row.drift_as_trend_pct, row.drift_as_step_per_100, goals.c_str());
      std::fflush(stdout);
    }
  }
  std::printf(
      "\ngoals of the default test: <= 1 false change point per 100 series for phi <= 0.5 "
      "(with or without an outlier), >= 95 %% of steps found with independent noise and >= 80 "
      "%% with phi = 0.5: %s\n",
      ok ? "met" : "MISSED");
  return ok ? 0 : 1;
}

}  // namespace
}  // namespace tlbfleet

int main(int argc, char** argv) { return tlbfleet::Main(argc, argv); }
