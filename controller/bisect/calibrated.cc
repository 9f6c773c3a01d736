#include "controller/bisect/calibrated.h"

#include <cmath>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace tlbfleet::bisect {
namespace {

ArmFigures FiguresOf(const report::ArmResult& arm) {
  ArmFigures f;
  f.mean = arm.mean_of_boot_means.value_or(arm.summary.amean.value_or(0));
  f.cv_pct = arm.summary.coeffvar.value_or(0);
  f.boots = static_cast<uint32_t>(arm.boots);
  f.samples = static_cast<uint32_t>(arm.n);
  return f;
}

Difference DifferenceOf(report::Verdict verdict) {
  switch (verdict) {
    case report::Verdict::kBetter:
      return Difference::kBetter;
    case report::Verdict::kWorse:
      return Difference::kWorse;
    case report::Verdict::kSame:
      return Difference::kSame;
    default:
      return Difference::kUnknown;
  }
}

const char* DifferenceName(Difference d) {
  switch (d) {
    case Difference::kBetter:
      return "better";
    case Difference::kWorse:
      return "worse";
    case Difference::kSame:
      return "same";
    case Difference::kUnknown:
      return "can't tell";
  }
  return "?";
}

v1::ChangeInterval PercentOf(const ArmComparison& c) {
  v1::ChangeInterval pct;
  if (c.ratio) pct.set_estimate((*c.ratio - 1) * 100);
  if (c.low) pct.set_low((*c.low - 1) * 100);
  if (c.high) pct.set_high((*c.high - 1) * 100);
  return pct;
}

void AddFigures(const std::string& entry, const ArmFigures& f, v1::BisectComparison* out) {
  v1::BisectArmFigures* arm = out->add_arms();
  arm->set_entry(entry);
  arm->set_mean(f.mean);
  arm->set_stddev_pct(f.cv_pct);
  arm->set_boots(f.boots);
  arm->set_samples(f.samples);
}

std::string Line(const std::string& what, const ArmComparison& c) {
  std::string line = absl::StrCat(what, ": ", DifferenceName(c.difference));
  if (c.ratio) {
    absl::StrAppend(&line, absl::StrFormat(" (%+.1f%%", (*c.ratio - 1) * 100));
    if (c.low && c.high) {
      absl::StrAppend(
          &line, absl::StrFormat(" [%+.1f%%, %+.1f%%]", (*c.low - 1) * 100, (*c.high - 1) * 100));
    }
    absl::StrAppend(&line, ")");
  }
  return line;
}

}  // namespace

absl::StatusOr<ArmComparison> CompareArms(const std::vector<report::Observation>& observations,
                                          const std::string& base, const std::string& other,
                                          const std::string& metric, const std::string& param,
                                          double level) {
  std::vector<report::Observation> kept;
  for (const report::Observation& o : observations) {
    if (o.metric != metric || report::SweepLabel(o.param_name, o.param_value) != param) continue;
    if (o.arm == base || o.arm == other) kept.push_back(o);
  }
  report::CompareOptions options;
  options.arm_order = {base, other};
  options.level = level;
  absl::StatusOr<report::Comparison> comparison = report::Compare(kept, options);
  if (!comparison.ok()) return comparison.status();
  for (const report::GroupResult& g : comparison->groups) {
    if (g.arms.size() != 2 || g.arms[0].n == 0 || g.arms[1].n == 0) continue;
    const report::ArmResult& b = g.arms[0];
    const report::ArmResult& o = g.arms[1];
    ArmComparison out;
    out.difference = DifferenceOf(o.verdict);
    out.ratio = o.test.ratio;
    out.low = o.ratio_ci_low;
    out.high = o.ratio_ci_high;
    out.base = FiguresOf(b);
    out.other = FiguresOf(o);
    out.summary = absl::StrCat(other, " vs ", base, ": ", report::VerdictName(o.verdict));
    if (!o.notes.empty()) absl::StrAppend(&out.summary, " (", o.notes.front(), ")");
    return out;
  }
  return absl::NotFoundError(absl::StrCat("no samples of ", metric,
                                          param.empty() ? "" : absl::StrCat(" (", param, ")"),
                                          " for both ", base, " and ", other));
}

absl::StatusOr<std::vector<report::Observation>> LoadObservations(
    const SampleLoader& load, const std::vector<std::string>& run_ids) {
  std::vector<report::Observation> out;
  for (const std::string& run_id : run_ids) {
    absl::StatusOr<std::vector<v1::Sample>> samples = load(run_id);
    if (!samples.ok()) return samples.status();
    for (report::Observation& o : report::ObservationsFromSamples(*samples)) {
      o.boot = absl::StrCat(run_id, "/", o.boot);  // boots of different runs never merge
      out.push_back(std::move(o));
    }
  }
  return out;
}

StepComparator MakeStepComparator(SampleLoader load) {
  return [load = std::move(load)](const StepRequest& r) -> absl::StatusOr<v1::BisectComparison> {
    absl::StatusOr<std::vector<report::Observation>> obs = LoadObservations(load, r.run_ids);
    if (!obs.ok()) return obs.status();
    const std::string& metric = r.spec->metric();
    const std::string& param = r.spec->param();
    v1::BisectComparison out;
    if (r.kind == StepKind::kVerifyParent) {
      // The parent check's runs measure the parent as "good" and the culprit as "tested" only.
      absl::StatusOr<ArmComparison> vs_parent =
          CompareArms(*obs, kGoodArm, kTestedArm, metric, param);
      if (!vs_parent.ok()) return vs_parent.status();
      out.set_verdict(ClassifyAgainstParent(vs_parent->difference, r.bad_is_worse));
      *out.mutable_versus_good_pct() = PercentOf(*vs_parent);
      AddFigures(r.good, vs_parent->base, &out);
      AddFigures(r.tested, vs_parent->other, &out);
      out.set_summary(Line("vs parent", *vs_parent));
      return out;
    }
    absl::StatusOr<ArmComparison> bad_vs_good = CompareArms(*obs, kGoodArm, kBadArm, metric, param);
    if (!bad_vs_good.ok()) return bad_vs_good.status();
    if (r.kind == StepKind::kEndpointCheck) {
      out.set_verdict(ClassifyEndpoints(bad_vs_good->difference));
      *out.mutable_versus_good_pct() = PercentOf(*bad_vs_good);
      AddFigures(r.good, bad_vs_good->base, &out);
      AddFigures(r.bad, bad_vs_good->other, &out);
      out.set_summary(Line("bad vs good", *bad_vs_good));
      return out;
    }
    // A search step and the revert check (whose tested arm is bad with the culprit reverted)
    // are judged alike.
    absl::StatusOr<ArmComparison> vs_good = CompareArms(*obs, kGoodArm, kTestedArm, metric, param);
    if (!vs_good.ok()) return vs_good.status();
    absl::StatusOr<ArmComparison> vs_bad = CompareArms(*obs, kBadArm, kTestedArm, metric, param);
    if (!vs_bad.ok()) return vs_bad.status();
    // Which way bad differs from good, as these very runs show it; a regression when they
    // cannot tell (what bisections are usually started for).
    const bool bad_is_worse = bad_vs_good->difference != Difference::kBetter;
    *out.mutable_versus_good_pct() = PercentOf(*vs_good);
    *out.mutable_versus_bad_pct() = PercentOf(*vs_bad);
    const bool intervals = vs_good->ratio && vs_good->low && vs_good->high && vs_bad->ratio &&
                           vs_bad->low && vs_bad->high;
    const Placement estimate =
        intervals ? PlacementOf(out.versus_good_pct(), out.versus_bad_pct()) : Placement();
    out.set_verdict(ClassifyStep(vs_good->difference, vs_bad->difference, bad_is_worse, estimate));
    AddFigures(r.good, vs_good->base, &out);
    AddFigures(r.tested, vs_good->other, &out);
    AddFigures(r.bad, vs_bad->base, &out);
    out.set_summary(absl::StrCat(Line("vs good", *vs_good), "; ", Line("vs bad", *vs_bad), "; ",
                                 Line("bad vs good", *bad_vs_good)));
    return out;
  };
}

}  // namespace tlbfleet::bisect
