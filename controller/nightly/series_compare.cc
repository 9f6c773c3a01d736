#include "controller/nightly/series_compare.h"

#include "absl/strings/str_cat.h"

namespace tlbfleet::nightly {
namespace {

// The aggregate samples of the points' runs that belong to the series, as observations of
// one arm named `label`; each boot told apart by run.
absl::Status AddObservations(const bisect::SampleLoader& load, const SeriesKey& key,
                             std::span<const HistoryPoint> points, const std::string& label,
                             std::vector<report::Observation>* out) {
  for (const HistoryPoint& p : points) {
    absl::StatusOr<std::vector<v1::Sample>> samples = load(p.provenance.run_id);
    if (!samples.ok()) return samples.status();
    for (const v1::Sample& s : *samples) {
      if (!s.series().empty() || s.arm() != p.provenance.arm || s.metric() != key.metric ||
          s.microarch() != key.microarch ||
          report::SweepLabel(s.param_name(), s.param_value()) != key.param) {
        continue;
      }
      report::Observation o;
      o.arm = label;
      o.boot = absl::StrCat(p.provenance.run_id, "/", s.boot_id());
      o.param_name = s.param_name();
      o.param_value = s.param_value();
      o.iteration = s.iteration();
      o.metric = s.metric();
      o.unit = s.unit();
      o.direction = s.better() == v1::BETTER_LOWER ? stats::Direction::kLowerIsBetter
                                                   : stats::Direction::kHigherIsBetter;
      o.value = s.value();
      out->push_back(std::move(o));
    }
  }
  return absl::OkStatus();
}

}  // namespace

CalibratedComparison MakeSeriesComparison(bisect::SampleLoader load) {
  return [load = std::move(load)](
             const SeriesKey& key, std::span<const HistoryPoint> before,
             std::span<const HistoryPoint> after) -> absl::StatusOr<CalibratedVerdict> {
    std::vector<report::Observation> obs;
    if (absl::Status s = AddObservations(load, key, before, "before", &obs); !s.ok()) return s;
    if (absl::Status s = AddObservations(load, key, after, "after", &obs); !s.ok()) return s;
    absl::StatusOr<bisect::ArmComparison> c =
        bisect::CompareArms(obs, "before", "after", key.metric, key.param);
    if (!c.ok()) return c.status();
    CalibratedVerdict v;
    switch (c->difference) {
      case bisect::Difference::kBetter:
        v.kind = CalibratedVerdict::Kind::kBetter;
        break;
      case bisect::Difference::kWorse:
        v.kind = CalibratedVerdict::Kind::kWorse;
        break;
      case bisect::Difference::kSame:
        v.kind = CalibratedVerdict::Kind::kSame;
        break;
      case bisect::Difference::kUnknown:
        v.kind = CalibratedVerdict::Kind::kUnknown;
        break;
    }
    v.ratio = c->ratio.value_or(1);
    v.ratio_low = c->low.value_or(v.ratio);
    v.ratio_high = c->high.value_or(v.ratio);
    v.summary = c->summary;
    return v;
  };
}

}  // namespace tlbfleet::nightly
