#include "controller/report/ceiling_sweep.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace tlbfleet::report {
namespace {

constexpr char kCeiling[] = "ceiling";
constexpr int kBarWidth = 40;

std::string Label(int64_t ceiling) { return absl::StrCat("ceiling=", ceiling); }

bool Better(double a, double b, stats::Direction d) {
  return d == stats::Direction::kLowerIsBetter ? a < b : a > b;
}

// The sweep's arms (by name) of one microarch and metric, as observations named by ceiling.
struct Group {
  std::string unit;
  stats::Direction direction = stats::Direction::kHigherIsBetter;
  std::vector<Observation> observations;
  std::map<int64_t, std::map<std::string, std::vector<double>>> by_ceiling;  // boot -> values
};

}  // namespace

absl::StatusOr<std::vector<CeilingRecommendation>> RecommendCeilings(
    const std::vector<v1::Sample>& samples, const std::string& metric) {
  // (microarch, arm, metric) -> group, in order of first appearance.
  std::vector<std::tuple<std::string, std::string, std::string>> order;
  std::map<std::tuple<std::string, std::string, std::string>, Group> groups;
  bool sweep = false;
  for (const v1::Sample& s : samples) {
    if (s.param_name() != kCeiling) continue;
    sweep = true;
    if (!s.excluded().empty()) continue;  // measured again elsewhere (Sample.excluded)
    if (!s.series().empty() || !std::isfinite(s.value())) continue;
    if (!metric.empty() && s.metric() != metric) continue;
    int64_t ceiling = 0;
    if (!absl::SimpleAtoi(s.param_value(), &ceiling)) continue;
    const auto key = std::make_tuple(s.microarch(), s.arm(), s.metric());
    auto [it, inserted] = groups.try_emplace(key);
    if (inserted) order.push_back(key);
    Group& g = it->second;
    g.unit = s.unit();
    g.direction = s.better() == v1::BETTER_LOWER ? stats::Direction::kLowerIsBetter
                                                 : stats::Direction::kHigherIsBetter;
    Observation o;
    o.arm = Label(ceiling);
    o.boot = s.boot_id();
    o.metric = s.metric();
    o.unit = s.unit();
    o.direction = g.direction;
    o.iteration = s.iteration();
    o.value = s.value();
    g.observations.push_back(o);
    g.by_ceiling[ceiling][s.boot_id()].push_back(s.value());
  }
  if (!sweep) {
    return absl::FailedPreconditionError(
        "the run is not a ceiling sweep (sweep: {ceiling: [1, 2, 4, ...]})");
  }
  std::vector<CeilingRecommendation> out;
  for (const auto& key : order) {
    const Group& g = groups[key];
    CeilingRecommendation rec;
    std::tie(rec.microarch, rec.arm, rec.metric) = key;
    rec.unit = g.unit;
    rec.direction = g.direction;
    // The best value by its mean of boot means.
    std::map<int64_t, double> means;
    for (const auto& [ceiling, boots] : g.by_ceiling) {
      double sum = 0;
      for (const auto& [boot, values] : boots) {
        double b = 0;
        for (double v : values) b += v;
        sum += b / static_cast<double>(values.size());
      }
      means[ceiling] = sum / static_cast<double>(boots.size());
    }
    rec.best = means.begin()->first;
    for (const auto& [ceiling, mean] : means) {
      if (Better(mean, means[rec.best], g.direction)) rec.best = ceiling;
    }
    // Every value against the best, by the comparison's verdict.
    CompareOptions options;
    options.arm_order.push_back(Label(rec.best));
    for (const auto& [ceiling, mean] : means) {
      if (ceiling != rec.best) options.arm_order.push_back(Label(ceiling));
    }
    absl::StatusOr<Comparison> comparison = Compare(g.observations, options);
    if (!comparison.ok()) return comparison.status();
    std::map<std::string, const ArmResult*> results;
    for (const GroupResult& gr : comparison->groups) {
      for (const ArmResult& a : gr.arms) results[a.arm] = &a;
    }
    for (const auto& [ceiling, mean] : means) {
      CeilingValue v;
      v.ceiling = ceiling;
      v.mean = mean;
      auto it = results.find(Label(ceiling));
      if (it != results.end()) {
        const ArmResult& a = *it->second;
        v.samples = a.n;
        v.boots = a.boots;
        v.verdict = ceiling == rec.best ? "best" : VerdictName(a.verdict);
        v.ratio = a.test.ratio;
        v.ratio_low = a.ratio_ci_low;
        v.ratio_high = a.ratio_ci_high;
      }
      rec.values.push_back(v);
    }
    // The smallest ceiling the verdict rule does not call worse than the best.
    for (const CeilingValue& v : rec.values) {
      if (v.verdict == "worse") continue;
      rec.recommended = v.ceiling;
      rec.recommended_verdict = v.verdict;
      break;
    }
    std::vector<v1::Sample> own;
    for (const v1::Sample& s : samples) {
      if (s.microarch() == rec.microarch && s.arm() == rec.arm) own.push_back(s);
    }
    std::vector<ArmFlushProfile> profiles =
        BuildFlushProfiles(own, {rec.arm}, absl::StrCat(rec.recommended));
    if (!profiles.empty() && profiles[0].PagesTotal() > 0) rec.profile = profiles[0];
    out.push_back(std::move(rec));
  }
  return out;
}

std::string RenderCeilingReport(const std::vector<CeilingRecommendation>& recommendations) {
  std::string out;
  for (const CeilingRecommendation& rec : recommendations) {
    const bool lower = rec.direction == stats::Direction::kLowerIsBetter;
    absl::StrAppend(&out, rec.microarch.empty() ? "unknown" : rec.microarch, ", arm ", rec.arm,
                    ": ", rec.metric, rec.unit.empty() ? "" : absl::StrCat(" (", rec.unit, ")"),
                    lower ? ", lower is better" : ", higher is better",
                    ", against the tlb_single_page_flush_ceiling\n\n");
    double top = 0;
    for (const CeilingValue& v : rec.values) top = std::max(top, v.mean);
    absl::StrAppend(&out, absl::StrFormat("%10s  %12s  %-*s  %s\n", "ceiling", "mean", kBarWidth,
                                          "", "vs best (ratio and interval)"));
    for (const CeilingValue& v : rec.values) {
      const int bar =
          top > 0 ? static_cast<int>(std::lround(kBarWidth * std::max(0.0, v.mean) / top)) : 0;
      std::string against = v.verdict;
      if (v.verdict != "best" && v.ratio) {
        absl::StrAppend(&against, absl::StrFormat("  %.4f", *v.ratio));
        if (v.ratio_low && v.ratio_high) {
          absl::StrAppend(&against, absl::StrFormat(" [%.4f, %.4f]", *v.ratio_low, *v.ratio_high));
        }
      }
      absl::StrAppend(&out,
                      absl::StrFormat("%10d  %12.6g  %-*s  %s%s\n", v.ceiling, v.mean, kBarWidth,
                                      std::string(bar, '#'), against,
                                      v.ceiling == rec.recommended ? "  <- recommended" : ""));
    }
    const std::string how = rec.recommended_verdict == "best"     ? "it is the best"
                            : rec.recommended_verdict == "same"   ? "equivalent to the best"
                            : rec.recommended_verdict == "better" ? "better than the best's mean"
                                                                  : "not worse than the best, "
                                                                    "though the comparison cannot "
                                                                    "tell them apart yet: measure "
                                                                    "more to be sure";
    absl::StrAppend(&out, "\nrecommended ceiling for ",
                    rec.microarch.empty() ? "unknown" : rec.microarch, ": ", rec.recommended,
                    " (best ", rec.best,
                    "; the smallest ceiling not worse "
                    "than the best: ",
                    how, ")\n");
    if (rec.profile) {
      absl::StrAppend(&out, "\nflush profile at ceiling ", rec.recommended, ":\n",
                      RenderFlushProfileText({*rec.profile}));
    }
    out += "\n";
  }
  return out;
}

v1::CeilingRecommendation CeilingRecommendationToProto(const CeilingRecommendation& rec) {
  v1::CeilingRecommendation out;
  out.set_microarch(rec.microarch);
  out.set_arm(rec.arm);
  out.set_metric(rec.metric);
  out.set_unit(rec.unit);
  out.set_better(rec.direction == stats::Direction::kLowerIsBetter ? v1::BETTER_LOWER
                                                                   : v1::BETTER_HIGHER);
  for (const CeilingValue& v : rec.values) {
    v1::CeilingRecommendation::Value* value = out.add_values();
    value->set_ceiling(v.ceiling);
    value->set_mean(v.mean);
    value->set_samples(v.samples);
    value->set_boots(static_cast<uint32_t>(v.boots));
    value->set_verdict(v.verdict);
    if (v.ratio) value->set_ratio(*v.ratio);
    if (v.ratio_low) value->set_ratio_low(*v.ratio_low);
    if (v.ratio_high) value->set_ratio_high(*v.ratio_high);
  }
  out.set_best(rec.best);
  out.set_recommended(rec.recommended);
  out.set_recommended_verdict(rec.recommended_verdict);
  if (rec.profile) *out.mutable_flush_profile() = FlushProfileToProto(*rec.profile);
  return out;
}

CeilingRecommendation CeilingRecommendationFromProto(const v1::CeilingRecommendation& rec) {
  CeilingRecommendation out;
  out.microarch = rec.microarch();
  out.arm = rec.arm();
  out.metric = rec.metric();
  out.unit = rec.unit();
  out.direction = rec.better() == v1::BETTER_LOWER ? stats::Direction::kLowerIsBetter
                                                   : stats::Direction::kHigherIsBetter;
  for (const v1::CeilingRecommendation::Value& v : rec.values()) {
    CeilingValue value;
    value.ceiling = v.ceiling();
    value.mean = v.mean();
    value.samples = v.samples();
    value.boots = v.boots();
    value.verdict = v.verdict();
    if (v.has_ratio()) value.ratio = v.ratio();
    if (v.has_ratio_low()) value.ratio_low = v.ratio_low();
    if (v.has_ratio_high()) value.ratio_high = v.ratio_high();
    out.values.push_back(std::move(value));
  }
  out.best = rec.best();
  out.recommended = rec.recommended();
  out.recommended_verdict = rec.recommended_verdict();
  if (rec.has_flush_profile()) out.profile = FlushProfileFromProto(rec.flush_profile());
  return out;
}

}  // namespace tlbfleet::report
