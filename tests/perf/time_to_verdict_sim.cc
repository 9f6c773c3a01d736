#include "tests/perf/time_to_verdict_sim.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "absl/strings/str_cat.h"
#include "controller/report/sequential.h"
#include "controller/stats/bootstrap.h"
#include "controller/stats/multiplicity.h"

namespace tlbfleet::time_to_verdict {
namespace {

uint64_t SplitMix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// One independent random stream per (seed, what it draws): protocols, rows and boots never
// share draws by accident, and a boot's draws do not depend on how many came before it.
uint64_t StreamSeed(uint64_t seed, std::initializer_list<uint64_t> parts) {
  uint64_t h = SplitMix(seed);
  for (uint64_t p : parts) h = SplitMix(h ^ SplitMix(p));
  return h;
}

uint64_t NameHash(const std::string& name) {  // FNV-1a
  uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : name) h = (h ^ c) * 1099511628211ULL;
  return h;
}

double BootEffect(const World& w, int index, size_t row, int arm, size_t boot) {
  if (!(w.boot_sd > 0)) return 0;
  stats::Rng rng(
      StreamSeed(w.seed, {1, static_cast<uint64_t>(index), row, static_cast<uint64_t>(arm), boot}));
  return w.boot_sd * rng.Normal();
}

// The boot's first `n` iterations of `seconds` each: the mean of ln(records/s) over each
// iteration's seconds, from an AR(1) series started in its stationary state at the boot.
// A prefix of a longer call's result (the series is drawn in order).
std::vector<double> IterationNoise(const World& w, const RowModel& row, uint64_t protocol,
                                   int index, size_t row_index, int arm, size_t boot, uint32_t n,
                                   uint32_t seconds) {
  stats::Rng rng(StreamSeed(w.seed, {2, protocol, static_cast<uint64_t>(index), row_index,
                                     static_cast<uint64_t>(arm), boot}));
  const double innovation = row.second_sd * std::sqrt(1 - row.second_rho * row.second_rho);
  double x = row.second_sd * rng.Normal();
  std::vector<double> out;
  out.reserve(n);
  for (uint32_t i = 0; i < n; ++i) {
    double sum = 0;
    for (uint32_t s = 0; s < seconds; ++s) {
      if (i > 0 || s > 0) x = row.second_rho * x + innovation * rng.Normal();
      sum += x;
    }
    out.push_back(sum / seconds);
  }
  return out;
}

report::CompareOptions DriverCompareOptions() {
  report::CompareOptions o;  // defaults, as the adaptive driver and `compare` use them
  o.arm_order = {kBaseline, kOther};
  o.cross_checks = false;  // never part of a verdict (comparison.h)
  return o;
}

// DecideVerdicts' rule (comparison.h: Benjamini–Hochberg across the rows, `same` first)
// without its refusal of arms confounded with their boots, which also leaves such rows out
// of the adjustment: the verdict mmtests' reader takes from the same test. Higher is better.
std::map<std::string, report::Verdict> VerdictsIgnoringBoots(const report::Comparison& c) {
  std::vector<const report::GroupResult*> groups;
  std::vector<std::optional<double>> p, same_p;
  for (const report::GroupResult& g : c.groups) {
    if (g.arms.size() < 2) continue;
    groups.push_back(&g);
    p.push_back(g.arms[1].test.p);
    same_p.push_back(g.arms[1].test.same_p);
  }
  const std::vector<std::optional<double>> q = stats::BenjaminiHochberg(p);
  const std::vector<std::optional<double>> same_q = stats::BenjaminiHochberg(same_p);
  const double alpha = 1 - c.level;
  std::map<std::string, report::Verdict> out;
  for (size_t k = 0; k < groups.size(); ++k) {
    const std::optional<double>& ratio = groups[k]->arms[1].test.ratio;
    report::Verdict v = report::Verdict::kUnknown;
    if (same_q[k] && *same_q[k] < alpha) {
      v = report::Verdict::kSame;
    } else if (q[k] && *q[k] < alpha && ratio && *ratio != 1) {
      v = *ratio > 1 ? report::Verdict::kBetter : report::Verdict::kWorse;
    }
    out[groups[k]->param_value] = v;
  }
  return out;
}

double NormalCdf(double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); }

double NormalQuantile(double p) {  // by bisection: the bound needs a handful of these
  double lo = -40, hi = 40;
  for (int i = 0; i < 200; ++i) {
    const double mid = (lo + hi) / 2;
    (NormalCdf(mid) < p ? lo : hi) = mid;
  }
  return (lo + hi) / 2;
}

double RowSeconds(const std::vector<uint32_t>& boots, const Protocol& p, const Costs& c) {
  double n = 0;
  for (uint32_t it : boots) n += it;
  return 2 * n * (p.seconds + c.iteration_overhead);
}

}  // namespace

std::vector<report::Observation> ObservationsOf(
    const World& world, const Protocol& protocol, int index,
    const std::vector<std::vector<uint32_t>>& iterations) {
  std::vector<report::Observation> out;
  const uint64_t pid = NameHash(protocol.name);
  for (size_t r = 0; r < world.rows.size(); ++r) {
    const RowModel& row = world.rows[r];
    for (size_t b = 0; b < iterations[r].size(); ++b) {
      for (int arm = 0; arm < 2; ++arm) {
        const double log_mean = std::log(row.mean) + (arm == 1 ? std::log1p(row.change) : 0) +
                                BootEffect(world, index, r, arm, b);
        const std::vector<double> noise =
            IterationNoise(world, row, pid, index, r, arm, b, iterations[r][b], protocol.seconds);
        for (size_t i = 0; i < noise.size(); ++i) {
          report::Observation o;
          o.arm = arm == 0 ? kBaseline : kOther;
          // Kernels never share a boot; every thread count of a kernel runs in its boots.
          o.boot = absl::StrCat(o.arm, "-b", b + 1);
          o.param_name = "threads";
          o.param_value = std::to_string(row.threads);
          o.iteration = static_cast<uint32_t>(i + 1);
          o.metric = kMetric;
          o.unit = "records/s";
          o.value = std::exp(log_mean + noise[i]);
          out.push_back(std::move(o));
        }
      }
    }
  }
  return out;
}

absl::StatusOr<RunResult> RunProtocol(const World& world, const Protocol& protocol,
                                      const Costs& costs, int index) {
  const v1::AdaptiveSpec& spec = protocol.spec;
  const bool sequential = protocol.adaptive && spec.stop() == v1::AdaptiveSpec::STOP_VERDICT;
  if (protocol.adaptive) {
    if (absl::Status s = report::ValidateSequentialSpec(spec); !s.ok()) return s;
    if (!sequential && !(spec.target_ci() > 0)) {
      return absl::InvalidArgumentError("target_ci: stop: precision needs a target above 0");
    }
  }
  report::AdaptivePlan plan;
  plan.boots = protocol.adaptive && spec.boots().max() > 0 ? spec.boots().min() : protocol.boots;
  plan.iterations_per_boot = protocol.adaptive && spec.iterations().max() > 0
                                 ? spec.iterations().min()
                                 : protocol.iterations;
  const size_t n_rows = world.rows.size();
  std::vector<std::vector<uint32_t>> iterations(
      n_rows, std::vector<uint32_t>(plan.boots, plan.iterations_per_boot));
  std::map<std::string, size_t> row_of;  // threads -> row
  for (size_t r = 0; r < n_rows; ++r) row_of[std::to_string(world.rows[r].threads)] = r;
  std::vector<bool> open(n_rows, true);
  std::vector<bool> decided(n_rows, false);
  std::vector<report::RowOutcome> earlier;
  const report::CompareOptions options = DriverCompareOptions();
  const std::vector<std::string> metrics = {kMetric};
  RunResult result;
  result.rows.resize(n_rows);
  for (;;) {
    ++result.looks;
    absl::StatusOr<report::Comparison> comparison =
        report::Compare(ObservationsOf(world, protocol, index, iterations), options);
    if (!comparison.ok()) return comparison.status();
    report::AdaptiveDecision decision;
    if (protocol.adaptive) {
      decision = report::DecideAdaptive(spec, metrics, *comparison, plan, &earlier);
      const bool at_maximum = spec.boots().max() > 1
                                  ? plan.boots >= spec.boots().max()
                                  : plan.iterations_per_boot >= spec.iterations().max();
      if (sequential) {
        earlier = decision.rows;
        for (const report::RowOutcome& row : decision.rows) {
          const size_t r = row_of.at(row.param_value);
          RowResult& out = result.rows[r];
          if (row.decided && !decided[r]) {
            decided[r] = true;
            out.decided_early = !at_maximum;
          }
          if (protocol.per_row_stop && row.decided) open[r] = false;
          out.verdict = row.verdict;
          out.ratio = row.ratio;
          out.boots = row.arm_boots;
        }
      }
    }
    if (!protocol.adaptive || decision.action == report::AdaptiveDecision::Action::kStop) {
      if (!sequential) {  // the fixed-sample verdict of the comparison at the stop
        const std::map<std::string, report::Verdict> ignoring = VerdictsIgnoringBoots(*comparison);
        for (const report::GroupResult& g : comparison->groups) {
          if (g.arms.size() < 2) continue;
          RowResult& out = result.rows[row_of.at(g.param_value)];
          const report::ArmResult& arm = g.arms[1];
          out.verdict = arm.verdict;
          out.ratio = arm.test.ratio;
          out.boots = arm.boots;
          out.verdict_ignoring_boots = ignoring.at(g.param_value);
        }
      }
      break;
    }
    if (decision.action == report::AdaptiveDecision::Action::kAddBoot) {
      ++plan.boots;
      for (size_t r = 0; r < n_rows; ++r) {
        if (open[r]) iterations[r].push_back(decision.iterations_per_boot);
      }
    } else {
      for (size_t r = 0; r < n_rows; ++r) {
        if (open[r]) iterations[r].back() = decision.iterations_per_boot;
      }
    }
    plan.iterations_per_boot = decision.iterations_per_boot;
  }
  result.boots = plan.boots;
  for (size_t r = 0; r < n_rows; ++r) {
    result.rows[r].seconds = RowSeconds(iterations[r], protocol, costs);
    result.machine_seconds += result.rows[r].seconds;
  }
  result.machine_seconds += 2.0 * plan.boots * costs.boot_seconds;
  return result;
}

double MeanOfSecondsVariance(const RowModel& row, uint32_t seconds) {
  if (seconds == 0) return std::numeric_limits<double>::infinity();
  const double t = seconds;
  double sum = t;
  double rho_k = 1;
  for (uint32_t k = 1; k < seconds; ++k) {
    rho_k *= row.second_rho;
    if (rho_k == 0) break;
    sum += 2 * (t - k) * rho_k;
  }
  return row.second_sd * row.second_sd * sum / (t * t);
}

TimeBound MinimumMachineTime(const World& world, const Costs& costs, double power, double level,
                             double min_change, uint32_t max_boots, uint32_t max_seconds_per_row) {
  std::vector<const RowModel*> rows;
  for (const RowModel& r : world.rows) {
    if (r.change >= min_change) rows.push_back(&r);
  }
  TimeBound best{std::numeric_limits<double>::infinity(), 0};
  if (rows.empty()) return {0, 0};
  const double z = NormalQuantile(1 - (1 - level) / 2);
  const double needed = power * static_cast<double>(rows.size());
  for (uint32_t boots = 1; boots <= max_boots; ++boots) {
    // Seconds per boot and arm of one row: 0..t_max in steps of `step` (a grid of at most 400
    // points, so the bound is exact to within one step per row).
    const uint32_t t_max = (max_seconds_per_row + boots - 1) / boots;
    const uint32_t step = std::max<uint32_t>(1, t_max / 400);
    const size_t points = t_max / step + 1;
    // power_of[r][i]: the power of row r with i x step seconds per boot and arm.
    std::vector<std::vector<double>> power_of(rows.size(), std::vector<double>(points, 0));
    for (size_t r = 0; r < rows.size(); ++r) {
      const double effect = std::log1p(rows[r]->change);
      for (size_t i = 1; i < points; ++i) {
        const double arm_variance =
            (world.boot_sd * world.boot_sd +
             MeanOfSecondsVariance(*rows[r], static_cast<uint32_t>(i * step))) /
            boots;
        power_of[r][i] = NormalCdf(effect / std::sqrt(2 * arm_variance) - z);
      }
    }
    // most[s]: the largest sum of powers with s x step seconds per boot and arm over the rows
    // so far (-1: not reachable).
    std::vector<double> most(1, 0.0);
    for (size_t r = 0; r < rows.size(); ++r) {
      std::vector<double> next(most.size() + points - 1, -1);
      for (size_t s = 0; s < most.size(); ++s) {
        if (most[s] < 0) continue;
        for (size_t i = 0; i < points; ++i) {
          next[s + i] = std::max(next[s + i], most[s] + power_of[r][i]);
        }
      }
      most = std::move(next);
    }
    for (size_t s = 0; s < most.size(); ++s) {
      if (most[s] >= needed) {
        const double machine = 2.0 * boots * (costs.boot_seconds + static_cast<double>(s * step));
        if (machine < best.machine_seconds) best = {machine, boots};
        break;
      }
    }
  }
  return best;
}

}  // namespace tlbfleet::time_to_verdict
