#include "controller/report/calibration.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "boost/math/distributions/binomial.hpp"
#include "controller/stats/bootstrap.h"

namespace tlbfleet::report::calibration {
namespace {

constexpr double kBaseMean = 1000;
const char* const kArms[2] = {"base", "new"};

uint64_t SeedOf(uint64_t seed, int index) {
  return seed + 0x9e3779b97f4a7c15ULL * static_cast<uint64_t>(index + 1);
}

int IterationsOf(const Design& d, stats::Rng* rng) {
  if (d.iterations_max <= d.iterations) return d.iterations;
  return d.iterations +
         static_cast<int>(rng->Below(static_cast<uint64_t>(d.iterations_max - d.iterations + 1)));
}

Observation Make(int arm, const std::string& boot, int row, int iteration, double value) {
  Observation o;
  o.arm = kArms[arm];
  o.boot = boot;
  o.param_name = "row";
  o.param_value = std::to_string(row);
  o.iteration = static_cast<uint32_t>(iteration);
  o.metric = "ops";
  o.value = value;
  return o;
}

// One boot of an adaptive run: its effects and each arm's values so far.
struct SimBoot {
  double effect[2] = {0, 0};
  std::vector<double> values[2];
};

class AdaptiveSim {
 public:
  AdaptiveSim(const Design& d, uint64_t seed) : d_(d), rng_(seed) {}

  void AddBoot(uint32_t iterations) {
    SimBoot& boot = boots_.emplace_back();
    const double shared = d_.boot_sd * rng_.Normal();
    for (int arm = 0; arm < 2; ++arm) {
      boot.effect[arm] = (d_.shared_boots ? shared : d_.boot_sd * rng_.Normal()) +
                         (arm == 1 ? d_.interaction_sd * rng_.Normal() : 0);
    }
    GrowLatest(iterations);
  }

  // Arms alternate within the boot, as the controller schedules them.
  void GrowLatest(uint32_t iterations) {
    SimBoot& boot = boots_.back();
    while (boot.values[0].size() < iterations) {
      for (int arm = 0; arm < 2; ++arm) {
        const double mean = kBaseMean * (arm == 1 ? 1 + d_.change : 1);
        boot.values[arm].push_back(mean *
                                   std::exp(boot.effect[arm] + d_.iteration_sd * rng_.Normal()));
      }
    }
  }

  std::vector<Observation> Observations() const {
    std::vector<Observation> out;
    for (size_t b = 0; b < boots_.size(); ++b) {
      for (int arm = 0; arm < 2; ++arm) {
        const std::string boot =
            d_.shared_boots ? absl::StrCat("b", b) : absl::StrCat(kArms[arm], "-b", b);
        for (size_t i = 0; i < boots_[b].values[arm].size(); ++i) {
          out.push_back(Make(arm, boot, 0, static_cast<int>(i), boots_[b].values[arm][i]));
        }
      }
    }
    return out;
  }

 private:
  const Design& d_;
  stats::Rng rng_;
  std::vector<SimBoot> boots_;
};

void Count(const ArmResult& arm, double truth, Counts* counts) {
  ++counts->rows;
  switch (arm.verdict) {
    case Verdict::kBetter:
      ++counts->better;
      break;
    case Verdict::kWorse:
      ++counts->worse;
      break;
    case Verdict::kSame:
      ++counts->same;
      break;
    default:
      ++counts->unknown;
      break;
  }
  if (arm.ratio_ci_low && arm.ratio_ci_high && *arm.ratio_ci_low <= truth &&
      truth <= *arm.ratio_ci_high) {
    ++counts->covered;
  }
  const std::optional<double> lo =
      arm.bootstrap.bca_low ? arm.bootstrap.bca_low : arm.bootstrap.percentile_low;
  const std::optional<double> hi =
      arm.bootstrap.bca_high ? arm.bootstrap.bca_high : arm.bootstrap.percentile_high;
  if (lo && hi) {
    ++counts->bootstrap_defined;
    if (*lo <= truth && truth <= *hi) ++counts->bootstrap_covered;
  }
}

}  // namespace

std::vector<Observation> Simulate(const Design& d, uint64_t seed, int index) {
  stats::Rng rng(SeedOf(seed, index));
  std::vector<Observation> out;
  for (int row = 0; row < d.rows; ++row) {
    for (int b = 0; b < d.boots; ++b) {
      const double shared = d.boot_sd * rng.Normal();
      for (int arm = 0; arm < 2; ++arm) {
        const double effect = (d.shared_boots ? shared : d.boot_sd * rng.Normal()) +
                              (arm == 1 ? d.interaction_sd * rng.Normal() : 0);
        const std::string boot =
            d.shared_boots ? absl::StrCat("b", b) : absl::StrCat(kArms[arm], "-b", b);
        const double mean = kBaseMean * (arm == 1 ? 1 + d.change : 1);
        const int n = IterationsOf(d, &rng);
        for (int i = 0; i < n; ++i) {
          out.push_back(
              Make(arm, boot, row, i, mean * std::exp(effect + d.iteration_sd * rng.Normal())));
        }
      }
    }
  }
  return out;
}

Counts CountVerdicts(const Design& design, int datasets, uint64_t seed,
                     const CompareOptions& options) {
  Counts counts;
  for (int k = 0; k < datasets; ++k) {
    absl::StatusOr<Comparison> c = Compare(Simulate(design, seed, k), options);
    if (!c.ok()) continue;
    ++counts.datasets;
    bool any_false = false;
    for (const GroupResult& g : c->groups) {
      if (g.arms.size() < 2) continue;
      Count(g.arms[1], 1 + design.change, &counts);
      any_false |= g.arms[1].verdict == Verdict::kBetter || g.arms[1].verdict == Verdict::kWorse;
    }
    counts.any_false += any_false;
  }
  return counts;
}

AdaptiveCounts RunAdaptive(const AdaptiveDesign& design, int runs, uint64_t seed) {
  AdaptiveCounts counts;
  const v1::AdaptiveSpec& spec = design.spec;
  CompareOptions options;
  options.cross_checks = false;  // the decision and the verdict never use them
  const std::vector<std::string> metrics = {"ops"};
  for (int k = 0; k < runs; ++k) {
    AdaptiveSim sim(design.noise, SeedOf(seed, k));
    AdaptivePlan plan;
    plan.boots =
        spec.boots().max() > 0 ? spec.boots().min() : static_cast<uint32_t>(design.noise.boots);
    plan.iterations_per_boot = spec.iterations().max() > 0
                                   ? spec.iterations().min()
                                   : static_cast<uint32_t>(design.noise.iterations);
    for (uint32_t b = 0; b < plan.boots; ++b) sim.AddBoot(plan.iterations_per_boot);
    for (int round = 0; round < 10000; ++round) {
      absl::StatusOr<Comparison> c = Compare(sim.Observations(), options);
      if (!c.ok() || c->groups.empty()) break;
      const AdaptiveDecision d = DecideAdaptive(spec, metrics, *c, plan);
      if (d.action == AdaptiveDecision::Action::kAddBoot) {
        ++plan.boots;
        plan.iterations_per_boot = d.iterations_per_boot;
        sim.AddBoot(d.iterations_per_boot);
        continue;
      }
      if (d.action == AdaptiveDecision::Action::kAddIterations) {
        plan.iterations_per_boot = d.iterations_per_boot;
        sim.GrowLatest(d.iterations_per_boot);
        continue;
      }
      ++counts.datasets;
      const ArmResult& arm = c->groups[0].arms[1];
      Count(arm, 1 + design.noise.change, &counts);
      counts.any_false += arm.verdict == Verdict::kBetter || arm.verdict == Verdict::kWorse;
      counts.boots += static_cast<double>(arm.boots);
      counts.iterations += static_cast<double>(arm.n);
      counts.at_maximum += d.reason.rfind("maximum reached", 0) == 0;
      break;
    }
  }
  if (counts.datasets > 0) {
    counts.boots /= counts.datasets;
    counts.iterations /= counts.datasets;
  }
  return counts;
}

int BinomialUpperBound(int n, double p, double tail) {
  const boost::math::binomial_distribution<double> dist(n, p);
  for (int k = 0; k <= n; ++k) {
    if (boost::math::cdf(dist, k) >= 1 - tail) return k;
  }
  return n;
}

}  // namespace tlbfleet::report::calibration
