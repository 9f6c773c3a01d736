#include "controller/nightly/series_compare.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "boost/math/distributions/normal.hpp"
#include "controller/stats/serial.h"

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

double ConfirmationLevel(size_t before, size_t gap, size_t after, double phi) {
  if (!(phi > 0)) return kConfirmationLevel;
  const double factor = stats::Ar1DifferenceOfMeansFactor(before, gap, after, phi);
  if (!(factor > 1)) return kConfirmationLevel;
  const boost::math::normal normal;
  const double z = boost::math::quantile(normal, 1 - (1 - kConfirmationLevel) / 2);
  const double level =
      1 - 2 * boost::math::cdf(boost::math::complement(normal, z * std::sqrt(factor)));
  return std::min(level, 0.999999);
}

namespace {

// The points' runs between `before` and `after`: 0 for adjacent spans of one series.
size_t Gap(std::span<const HistoryPoint> before, std::span<const HistoryPoint> after) {
  if (before.empty() || after.empty()) return 0;
  const HistoryPoint* end_of_before = before.data() + before.size();
  return after.data() > end_of_before ? static_cast<size_t>(after.data() - end_of_before) : 0;
}

}  // namespace

CalibratedComparison MakeSeriesComparison(bisect::SampleLoader load) {
  return [load = std::move(load)](const SeriesKey& key, std::span<const HistoryPoint> before,
                                  std::span<const HistoryPoint> after,
                                  double phi) -> absl::StatusOr<CalibratedVerdict> {
    std::vector<report::Observation> obs;
    if (absl::Status s = AddObservations(load, key, before, "before", &obs); !s.ok()) return s;
    if (absl::Status s = AddObservations(load, key, after, "after", &obs); !s.ok()) return s;
    absl::StatusOr<bisect::ArmComparison> c = bisect::CompareArms(
        obs, "before", "after", key.metric, key.param,
        ConfirmationLevel(before.size(), Gap(before, after), after.size(), phi));
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
