#include "controller/report/export_bmf.h"

#include <cmath>
#include <map>
#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/json.h"
#include "controller/report/results_csv.h"

namespace tlbfleet::report {
namespace {

namespace v1 = tlbfleet::v1;

struct BmfMeasure {
  double value = 0;
  std::optional<double> lower, upper;
};

std::optional<double> BmfFinite(bool has, double v) {
  if (!has || !std::isfinite(v)) return std::nullopt;
  return v;
}

std::string BmfMeasureJson(const BmfMeasure& m) {
  std::string json = absl::StrCat("{\"value\": ", FormatDouble(m.value));
  if (m.lower) absl::StrAppend(&json, ", \"lower_value\": ", FormatDouble(*m.lower));
  if (m.upper) absl::StrAppend(&json, ", \"upper_value\": ", FormatDouble(*m.upper));
  return json + "}";
}

}  // namespace

std::string ExportBmf(const v1::Report& report, const std::string& benchmark) {
  // Benchmarks in the report's order (group by group, arm by arm); measures by name.
  std::vector<std::string> names;
  std::map<std::string, std::map<std::string, BmfMeasure>> benches;
  for (const v1::Report::Group& group : report.groups()) {
    for (const v1::Report::Record& r : group.records()) {
      const std::string name = r.param().empty()
                                   ? absl::StrCat(benchmark, "/", r.arm())
                                   : absl::StrCat(benchmark, "/", r.param(), "/", r.arm());
      const bool higher = r.better() != "lower";
      std::optional<double> mean =
          higher ? BmfFinite(r.has_hmean(), r.hmean()) : BmfFinite(r.has_amean(), r.amean());
      std::map<std::string, BmfMeasure> measures;
      if (mean) {
        measures[r.metric()] = {*mean, BmfFinite(r.has_min(), r.min()),
                                BmfFinite(r.has_max(), r.max())};
      }
      if (std::optional<double> ratio = BmfFinite(r.has_ratio(), r.ratio())) {
        measures[r.metric() + "_ratio"] = {*ratio,
                                           BmfFinite(r.has_ratio_ci_low(), r.ratio_ci_low()),
                                           BmfFinite(r.has_ratio_ci_high(), r.ratio_ci_high())};
      }
      if (measures.empty()) continue;
      if (!benches.count(name)) names.push_back(name);
      for (auto& [measure, m] : measures) benches[name][measure] = m;
    }
  }
  std::vector<std::string> bench_json;
  for (const std::string& name : names) {
    std::vector<std::string> measure_json;
    for (const auto& [measure, m] : benches[name]) {
      measure_json.push_back(absl::StrCat("    ", JsonQuote(measure), ": ", BmfMeasureJson(m)));
    }
    bench_json.push_back(
        absl::StrCat("  ", JsonQuote(name), ": {\n", absl::StrJoin(measure_json, ",\n"), "\n  }"));
  }
  if (bench_json.empty()) return "{}\n";
  return absl::StrCat("{\n", absl::StrJoin(bench_json, ",\n"), "\n}\n");
}

}  // namespace tlbfleet::report
