#include "controller/report/mmtests_table.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <optional>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace tlbfleet::report {
namespace {

std::optional<double> MmtestsHmean(const std::vector<double>& x) {
  if (x.empty()) return std::nullopt;
  double sum = 0;
  for (double v : x) {
    if (!(v > 0)) return std::nullopt;
    sum += 1 / v;
  }
  return static_cast<double>(x.size()) / sum;
}

std::optional<double> MmtestsAmean(const std::vector<double>& x) {
  if (x.empty()) return std::nullopt;
  double sum = 0;
  for (double v : x) sum += v;
  return sum / static_cast<double>(x.size());
}

// Stat.pm's calc_stddev: the sample stddev about the arithmetic mean, or the delta-method
// stddev of the harmonic mean's reciprocal scaled back (divided by n, not n - 1).
std::optional<double> MmtestsStddev(const std::vector<double>& x, bool harmonic) {
  std::optional<double> mean = harmonic ? MmtestsHmean(x) : MmtestsAmean(x);
  if (!mean.has_value() || x.size() <= 1) return std::nullopt;
  double sum = 0;
  for (double v : x) {
    const double d = harmonic ? 1 / v - 1 / *mean : v - *mean;
    sum += d * d;
  }
  const double n = static_cast<double>(x.size());
  return harmonic ? std::sqrt(sum * std::pow(*mean, 4) / n) : std::sqrt(sum / (n - 1));
}

MmtestsStat MmtestsValue(std::string name, std::optional<double> v) {
  return MmtestsStat{std::move(name), v.value_or(0), v.has_value()};
}

// Stat.pm's pdiff and pndiff: the new value against the base, positive = better.
double MmtestsPdiff(double now, double base) {
  if (now == base || now == 0) return 0;
  if (base == 0) return 100;
  return now * 100 / base - 100;
}
double MmtestsPndiff(double now, double base) {
  if (now == base) return 0;
  if (now == 0) return 100;
  if (base == 0) return -99;
  return 100 - now * 100 / base;
}

bool MmtestsIsSpread(const std::string& name) {
  return name.find("Stddev") != std::string::npos || name.find("CoeffVar") != std::string::npos;
}

}  // namespace

std::vector<MmtestsStat> MmtestsSummary(MmtestsSummarise kind, bool higher_is_better,
                                        std::vector<double> samples) {
  // Summarise.pm sorts best first; the trimmed mean and the percentile read that order.
  if (higher_is_better) {
    std::sort(samples.begin(), samples.end(), std::greater<double>());
  } else {
    std::sort(samples.begin(), samples.end());
  }
  const bool h = higher_is_better;
  const std::string mean_name = h ? "Hmean" : "Amean";
  auto mean = [&](const std::vector<double>& x) { return h ? MmtestsHmean(x) : MmtestsAmean(x); };
  const size_t best95 = std::max<size_t>(1, samples.size() * 95 / 100);
  std::vector<double> best(samples.begin(), samples.begin() + std::min(best95, samples.size()));

  std::optional<double> min;
  std::optional<double> max;
  if (!samples.empty()) {
    min = *std::min_element(samples.begin(), samples.end());
    max = *std::max_element(samples.begin(), samples.end());
  }
  const std::optional<double> m = mean(samples);
  const std::optional<double> sd = MmtestsStddev(samples, h);
  // calc_coeffvar prints 0, not NaN, where the stddev or the mean is undefined.
  const double cv = (m.has_value() && *m != 0 && sd.has_value()) ? *sd * 100 / *m : 0;
  std::optional<double> pctile;
  if (!samples.empty()) pctile = samples[std::min(best95, samples.size()) - 1];

  MmtestsStat s_min = MmtestsValue("Min", min);
  MmtestsStat s_mean = MmtestsValue(mean_name, m);
  MmtestsStat s_sd = MmtestsValue(h ? "HStddev" : "Stddev", sd);
  MmtestsStat s_cv = MmtestsValue(h ? "HCoeffVar" : "CoeffVar", cv);
  MmtestsStat s_max = MmtestsValue("Max", max);
  MmtestsStat s_b95 =
      MmtestsValue(h ? "BHmean.95" : "BAmean.95", best.empty() ? std::nullopt : mean(best));
  MmtestsStat s_p95 = MmtestsValue("Pctile.95", pctile);
  if (kind == MmtestsSummarise::kMultiops) return {s_min, s_mean, s_sd, s_cv, s_max, s_b95};
  return {s_min, s_mean, s_b95, s_p95, s_sd, s_cv, s_max};
}

std::string RenderMmtestsTable(const v1::Report& report, const std::vector<v1::Sample>& samples,
                               MmtestsSummarise kind, int decimals) {
  // (metric, param value, arm) -> the aggregate values, as mmtests reads one log per iteration.
  std::map<std::tuple<std::string, std::string, std::string>, std::vector<double>> values;
  for (const v1::Sample& s : samples) {
    if (!s.series().empty() || !s.excluded().empty()) continue;
    values[{s.metric(), s.param_value(), s.arm()}].push_back(s.value());
  }
  std::string out = absl::StrCat(report.title(), "\n");
  for (const v1::Report::Group& g : report.groups()) {
    const bool higher = g.better() == v1::BETTER_HIGHER;
    const std::string op =
        g.param_value().empty() ? g.metric() : absl::StrCat(g.metric(), "-", g.param_value());
    std::vector<std::vector<MmtestsStat>> per_arm;
    for (const std::string& arm : report.arms()) {
      per_arm.push_back(MmtestsSummary(kind, higher, values[{g.metric(), g.param_value(), arm}]));
    }
    absl::StrAppend(&out, "\n", absl::StrFormat("%-9s %-*s", "", op.size(), ""));
    for (const std::string& arm : report.arms())
      absl::StrAppend(&out, absl::StrFormat(" %23s", arm));
    absl::StrAppend(&out, "\n");
    for (size_t row = 0; row < per_arm[0].size(); ++row) {
      const std::string& name = per_arm[0][row].name;
      absl::StrAppend(&out, absl::StrFormat("%-9s %s", name, op));
      const bool lower = !higher || MmtestsIsSpread(name);
      for (const std::vector<MmtestsStat>& arm : per_arm) {
        const MmtestsStat& cell = arm[row];
        const MmtestsStat& base = per_arm[0][row];
        if (!cell.defined) {
          absl::StrAppend(&out, absl::StrFormat(" %12s (%7s%%)", "NaN", "NaN"));
          continue;
        }
        const double diff = !base.defined ? 0
                            : lower       ? MmtestsPndiff(cell.value, base.value)
                                          : MmtestsPdiff(cell.value, base.value);
        absl::StrAppend(&out, absl::StrFormat(" %12.*f (%7.2f%%)", decimals, cell.value, diff));
      }
      absl::StrAppend(&out, "\n");
    }
  }
  return out;
}

}  // namespace tlbfleet::report
