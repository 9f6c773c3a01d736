#include "controller/nightly/series_upkeep.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "boost/math/distributions/students_t.hpp"
#include "controller/report/comparison.h"
#include "controller/scheduler/boot_plan.h"
#include "controller/scheduler/expand.h"

namespace tlbfleet::nightly {
namespace {

constexpr double kConfidence = 0.95;

struct Values {
  v1::Better better = v1::BETTER_UNSPECIFIED;
  std::map<std::string, std::vector<double>> by_boot;  // boot_id -> values
  std::set<std::string> releases;
  std::set<std::string> entries;
  std::set<std::string> commits;
  std::set<std::string> build_ids;
  uint32_t samples = 0;
};

double Mean(const std::vector<double>& v) {
  double sum = 0;
  for (double x : v) sum += x;
  return v.empty() ? 0 : sum / static_cast<double>(v.size());
}

// The mean of `values` and the half-width of its interval at kConfidence.
std::pair<double, double> MeanAndHalfWidth(const std::vector<double>& values) {
  const double mean = Mean(values);
  const size_t n = values.size();
  if (n < 2) return {mean, 0};
  double ss = 0;
  for (double x : values) ss += (x - mean) * (x - mean);
  const double se = std::sqrt(ss / static_cast<double>(n - 1) / static_cast<double>(n));
  const double t = boost::math::quantile(boost::math::students_t(static_cast<double>(n - 1)),
                                         0.5 + kConfidence / 2);
  return {mean, t * se};
}

}  // namespace

std::string ArmConfig(const v1::RunSpec& spec, const v1::ArmSpec& arm) {
  std::vector<std::string> parts;
  for (const auto& [name, value] : scheduler::ArmParams(spec, arm)) {
    parts.push_back(absl::StrCat(name, "=", value));
  }
  for (const auto& [name, policy] : scheduler::ArmParamPolicies(spec, arm)) {
    parts.push_back(absl::StrCat(name, "=", policy.policy(), ":", policy.max()));
  }
  if (!arm.ceiling().empty()) parts.push_back(absl::StrCat("ceiling=", arm.ceiling()));
  if (arm.has_kernel()) {
    if (!arm.kernel().config().empty()) {
      parts.push_back(absl::StrCat("kernel_config=", arm.kernel().config()));
    }
    if (!arm.kernel().revert().empty()) {
      parts.push_back(absl::StrCat("revert=", arm.kernel().revert()));
    }
  }
  std::sort(parts.begin(), parts.end());
  return absl::StrJoin(parts, " ");
}

std::string KernelSeriesEntry(const v1::KernelRevision& kernel) {
  return kernel.branch().empty() ? absl::StrCat("kernel:", kernel.source(), "@", kernel.rev())
                                 : absl::StrCat("kernel:", kernel.source(), "/", kernel.branch());
}

std::vector<store::NewPoint> PointsFromRun(const v1::Run& run,
                                           const std::vector<v1::Sample>& samples,
                                           const std::string& schedule_id) {
  // (arm, microarch, param label, metric) -> values by boot.
  std::map<std::tuple<std::string, std::string, std::string, std::string>, Values> groups;
  for (const v1::Sample& s : samples) {
    if (!s.series().empty() || !std::isfinite(s.value())) continue;
    Values& v = groups[{s.arm(), s.microarch(), report::SweepLabel(s.param_name(), s.param_value()),
                        s.metric()}];
    v.better = s.better();
    v.by_boot[s.boot_id()].push_back(s.value());
    v.releases.insert(s.kernel_release());
    if (!s.boot_entry().empty()) v.entries.insert(s.boot_entry());
    if (!s.commit().empty()) v.commits.insert(s.commit());
    if (!s.build_id().empty()) v.build_ids.insert(s.build_id());
    ++v.samples;
  }
  std::vector<store::NewPoint> out;
  for (const auto& [group, values] : groups) {
    const auto& [arm_name, microarch, param, metric] = group;
    // A named copy: clang before 16 cannot capture a structured binding.
    const std::string& wanted = arm_name;
    auto arm = std::find_if(run.spec().arms().begin(), run.spec().arms().end(),
                            [&](const v1::ArmSpec& a) { return a.name() == wanted; });
    if (arm == run.spec().arms().end()) continue;
    store::NewPoint p;
    p.key.set_microarch(microarch);
    p.key.set_boot_entry(arm->has_kernel() ? KernelSeriesEntry(arm->kernel()) : arm->boot_entry());
    p.key.set_benchmark(run.spec().benchmark());
    p.key.set_config(ArmConfig(run.spec(), *arm));
    p.key.set_param(param);
    p.key.set_metric(metric);
    p.better = values.better;
    std::vector<double> boot_means;
    for (const auto& [boot, v] : values.by_boot) boot_means.push_back(Mean(v));
    const auto [mean, half] = boot_means.size() >= 2
                                  ? MeanAndHalfWidth(boot_means)
                                  : MeanAndHalfWidth(values.by_boot.begin()->second);
    v1::SeriesPoint& point = p.point;
    point.set_run_id(run.id());
    point.set_finished_unix_ms(run.finished_unix() * 1000);
    point.set_estimate(mean);
    point.set_low(mean - half);
    point.set_high(mean + half);
    point.set_confidence(kConfidence);
    point.set_arm(arm_name);
    point.set_boot_entry(values.entries.empty() ? arm->boot_entry() : *values.entries.begin());
    point.set_kernel_release(absl::StrJoin(values.releases, ","));
    // An imported run's samples have no boot id (the other tool did not record boots): none
    // is listed rather than an empty one.
    for (const auto& [boot, v] : values.by_boot) {
      if (!boot.empty()) point.add_boot_ids(boot);
    }
    point.set_schedule_id(schedule_id);
    point.set_samples(values.samples);
    // One build per arm: more than one would be a mixed point, and says so.
    point.set_commit(absl::StrJoin(values.commits, ","));
    point.set_build_id(absl::StrJoin(values.build_ids, ","));
    out.push_back(std::move(p));
  }
  // Two arms of one run on one series (an A/A run, a multi-kernel import whose arms carry no
  // boot entry) would be one point of the run there, and storing the second would replace the
  // first (a point is keyed by series and run). Each such arm gets a series of its own,
  // "arm=NAME" added to its config, so no arm's point is lost; an import joins a shared
  // history arm by arm (`import-results --arm`).
  using SeriesOf = std::tuple<std::string, std::string, std::string, std::string, std::string>;
  const auto key_of = [](const store::NewPoint& p) {
    return SeriesOf(p.key.microarch(), p.key.boot_entry(), p.key.config(), p.key.param(),
                    p.key.metric());
  };
  std::map<SeriesOf, int> arms_on_key;
  for (const store::NewPoint& p : out) ++arms_on_key[key_of(p)];
  for (store::NewPoint& p : out) {
    if (arms_on_key[key_of(p)] < 2) continue;
    const std::string arm = absl::StrCat("arm=", p.point.arm());
    p.key.set_config(p.key.config().empty() ? arm : absl::StrCat(p.key.config(), " ", arm));
  }
  return out;
}

}  // namespace tlbfleet::nightly
