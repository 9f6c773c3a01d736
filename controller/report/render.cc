#include "controller/report/render.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/json.h"

namespace tlbfleet::report {
namespace {

using stats::Direction;

// --- text ---------------------------------------------------------------------------------

struct TextRow {
  const char* name;
  bool headline;  // marked '*' when significant
  bool spread;    // pct_diff reads lower-is-better whatever the metric
  std::function<std::optional<double>(const stats::Summary&)> value;
};

std::vector<TextRow> RowsFor(Direction direction) {
  std::vector<TextRow> rows = {
      {"Min", false, false, [](const stats::Summary& s) { return s.min; }}};
  if (direction == Direction::kHigherIsBetter) {
    rows.push_back({"Hmean", true, false, [](const stats::Summary& s) { return s.hmean; }});
  } else {
    rows.push_back({"Amean", true, false, [](const stats::Summary& s) { return s.amean; }});
  }
  rows.push_back({"Stddev", false, true, [](const stats::Summary& s) { return s.stddev; }});
  rows.push_back({"CoeffVar", false, true, [](const stats::Summary& s) { return s.coeffvar; }});
  rows.push_back({"Max", false, false, [](const stats::Summary& s) { return s.max; }});
  rows.push_back({"BAmean-99", false, false, [](const stats::Summary& s) { return s.bamean99; }});
  rows.push_back({"BAmean-95", false, false, [](const stats::Summary& s) { return s.bamean95; }});
  return rows;
}

std::string Cell(const TextRow& row, const GroupResult& group, size_t i) {
  const std::optional<double> base = row.value(group.arms[0].summary);
  const std::optional<double> value = row.value(group.arms[i].summary);
  const Direction sense = row.spread ? Direction::kLowerIsBetter : group.direction;
  std::optional<double> pct;
  if (base && value) pct = stats::PctDiff(*base, *value, sense);
  const std::string v = value ? absl::StrFormat("%12.2f", *value) : absl::StrFormat("%12s", "NaN");
  const std::string p = pct ? absl::StrFormat("%7.2f", *pct) : absl::StrFormat("%7s", "NaN");
  if (row.headline && group.arms[i].significant) return absl::StrCat(v, " *", p, "%*");
  return absl::StrCat(v, " (", p, "%)");
}

std::string Pad(const std::string& s, size_t width, bool left) {
  if (s.size() >= width) return s;
  const std::string fill(width - s.size(), ' ');
  return left ? fill + s : s + fill;
}

std::string Num(const std::optional<double>& v) { return v ? absl::StrFormat("%.4g", *v) : "n/a"; }

std::string VerdictLine(const ArmResult& arm) {
  std::string line = absl::StrCat(arm.arm, "  ", VerdictName(arm.verdict));
  if (arm.verdict == Verdict::kBaseline) return line;
  if (arm.ratio.ratio) {
    absl::StrAppend(&line, absl::StrFormat("  ratio %.4f", *arm.ratio.ratio));
    if (arm.ratio_ci_low && arm.ratio_ci_high) {
      absl::StrAppend(&line, absl::StrFormat(" [%.4f, %.4f] %s", *arm.ratio_ci_low,
                                             *arm.ratio_ci_high, arm.ratio_ci_method));
    }
  }
  absl::StrAppend(&line, "  Welch p ", Num(arm.welch.p), "  MWU p ", Num(arm.mwu.p));
  if (arm.hl.shift) {
    absl::StrAppend(&line, "  HL shift ", Num(arm.hl.shift), " [", Num(arm.hl.ci_low), ", ",
                    Num(arm.hl.ci_high), "]");
  }
  return line;
}

std::string MetricTitle(const GroupResult& g) {
  const char* direction =
      g.direction == Direction::kLowerIsBetter ? "lower is better" : "higher is better";
  if (g.unit.empty()) return absl::StrCat(g.metric, " (", direction, ")");
  return absl::StrCat(g.metric, " (", g.unit, ", ", direction, ")");
}

// --- records (JSON, CSV) ------------------------------------------------------------------

// A record's field: a number (nullopt = null), a string, or a boolean.
using Field = std::variant<std::optional<double>, std::string, bool>;

std::vector<std::pair<const char*, Field>> Record(const GroupResult& g, const ArmResult& a) {
  const bool base = a.verdict == Verdict::kBaseline;
  auto cmp = [base](const std::optional<double>& v) -> Field {
    return base ? std::optional<double>() : v;
  };
  auto count = [](size_t n) -> Field { return std::optional<double>(static_cast<double>(n)); };
  auto opt_int = [](const std::optional<int>& v) -> Field {
    return v ? std::optional<double>(*v) : std::nullopt;
  };
  const stats::Summary& s = a.summary;
  std::string notes = absl::StrJoin(a.notes, "; ");
  if (!s.why_undefined.empty())
    notes = notes.empty() ? s.why_undefined : notes + "; " + s.why_undefined;
  return {
      {"arm", a.arm},
      {"param", SweepLabel(g.param_name, g.param_value)},
      {"param_name", g.param_name},
      {"param_value", g.param_value},
      {"metric", g.metric},
      {"unit", g.unit},
      {"better", std::string(g.direction == Direction::kHigherIsBetter ? "higher" : "lower")},
      {"n", count(a.n)},
      {"boots", count(a.boots)},
      {"min", s.min},
      {"max", s.max},
      {"amean", s.amean},
      {"hmean", s.hmean},
      {"gmean", s.gmean},
      {"stddev", s.stddev},
      {"coeffvar", s.coeffvar},
      {"bamean95", s.bamean95},
      {"bamean99", s.bamean99},
      {"mean_of_boot_means", a.mean_of_boot_means},
      {"pct_diff", cmp(a.pct_diff)},
      {"significance_p", cmp(a.significance_p)},
      {"significant", a.significant},
      {"welch_t", cmp(a.welch.t)},
      {"welch_df", cmp(a.welch.df)},
      {"welch_p", cmp(a.welch.p)},
      {"mwu_u", cmp(a.mwu.u)},
      {"mwu_p", cmp(a.mwu.p)},
      {"hl_shift", cmp(a.hl.shift)},
      {"hl_ci_low", cmp(a.hl.ci_low)},
      {"hl_ci_high", cmp(a.hl.ci_high)},
      {"ratio", cmp(a.ratio.ratio)},
      {"ratio_ci_low", cmp(a.ratio_ci_low)},
      {"ratio_ci_high", cmp(a.ratio_ci_high)},
      {"ratio_ci_method", std::string(a.ratio_ci_method)},
      {"var_between_boots", a.variance.between},
      {"var_within_boots", a.variance.within},
      {"between_boot_share", a.variance.between_share},
      {"verdict",
       base ? Field(std::optional<double>()) : Field(std::string(VerdictName(a.verdict)))},
      {"recommend_iterations", opt_int(a.advice.iterations_per_boot)},
      {"recommend_boots", opt_int(a.advice.boots)},
      {"expected_ci_half_width_pct", a.advice.expected_half_width_pct},
      {"notes", notes},
  };
}

std::string Number(const std::optional<double>& v) {
  return v && std::isfinite(*v) ? absl::StrFormat("%.15g", *v) : "";
}

std::string CsvField(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

}  // namespace

std::string RenderComparisonText(const Comparison& comparison, const std::string& title) {
  std::string out;
  if (!title.empty()) absl::StrAppend(&out, title, "\n\n");
  size_t g = 0;
  while (g < comparison.groups.size()) {
    // One metric: its groups are contiguous.
    size_t end = g;
    while (end < comparison.groups.size() &&
           comparison.groups[end].metric == comparison.groups[g].metric) {
      ++end;
    }
    const std::vector<TextRow> rows = RowsFor(comparison.groups[g].direction);
    const size_t num_arms = comparison.arms.size();
    std::vector<size_t> column(num_arms);
    for (size_t i = 0; i < num_arms; ++i) column[i] = comparison.arms[i].size();
    size_t label_width = 0;
    for (size_t k = g; k < end; ++k) {
      const GroupResult& group = comparison.groups[k];
      label_width = std::max(label_width, SweepLabel(group.param_name, group.param_value).size());
      for (const TextRow& row : rows) {
        for (size_t i = 0; i < num_arms; ++i) {
          column[i] = std::max(column[i], Cell(row, group, i).size());
        }
      }
    }
    const size_t stat_width = 11;  // "BAmean-99" plus two spaces
    if (g > 0) out += "\n";
    absl::StrAppend(&out, MetricTitle(comparison.groups[g]), "\n",
                    std::string(stat_width + label_width, ' '));
    for (size_t i = 0; i < num_arms; ++i) {
      absl::StrAppend(&out, " ", Pad(comparison.arms[i], column[i], true));
    }
    out += "\n";
    for (size_t k = g; k < end; ++k) {
      const GroupResult& group = comparison.groups[k];
      const std::string label =
          Pad(SweepLabel(group.param_name, group.param_value), label_width, false);
      for (const TextRow& row : rows) {
        std::string line = Pad(row.name, stat_width, false) + label;
        for (size_t i = 0; i < num_arms; ++i) {
          absl::StrAppend(&line, " ", Pad(Cell(row, group, i), column[i], true));
        }
        absl::StrAppend(&out, line, "\n");
      }
    }
    out += "\nVerdicts\n";
    for (size_t k = g; k < end; ++k) {
      const GroupResult& group = comparison.groups[k];
      const std::string label = SweepLabel(group.param_name, group.param_value);
      for (const ArmResult& arm : group.arms) {
        absl::StrAppend(&out, label.empty() ? "" : label + "  ", VerdictLine(arm), "\n");
        for (const std::string& note : arm.notes) absl::StrAppend(&out, "    - ", note, "\n");
      }
    }
    g = end;
  }
  return out;
}

std::string RenderComparisonJson(const Comparison& comparison) {
  std::vector<std::string> objects;
  for (const GroupResult& g : comparison.groups) {
    for (const ArmResult& a : g.arms) {
      std::vector<std::string> members;
      for (const auto& [name, field] : Record(g, a)) {
        std::string value;
        if (const auto* number = std::get_if<std::optional<double>>(&field)) {
          value = Number(*number);
          if (value.empty()) value = "null";
        } else if (const auto* text = std::get_if<std::string>(&field)) {
          value = JsonQuote(*text);
        } else {
          value = std::get<bool>(field) ? "true" : "false";
        }
        members.push_back(absl::StrCat("\"", name, "\": ", value));
      }
      objects.push_back(absl::StrCat("  {", absl::StrJoin(members, ", "), "}"));
    }
  }
  if (objects.empty()) return "[]\n";
  return absl::StrCat("[\n", absl::StrJoin(objects, ",\n"), "\n]\n");
}

std::string RenderComparisonCsv(const Comparison& comparison) {
  std::string out;
  bool header = false;
  for (const GroupResult& g : comparison.groups) {
    for (const ArmResult& a : g.arms) {
      const auto record = Record(g, a);
      if (!header) {
        std::vector<std::string> names;
        for (const auto& [name, field] : record) names.push_back(name);
        absl::StrAppend(&out, absl::StrJoin(names, ","), "\n");
        header = true;
      }
      std::vector<std::string> values;
      for (const auto& [name, field] : record) {
        if (const auto* number = std::get_if<std::optional<double>>(&field)) {
          values.push_back(Number(*number));
        } else if (const auto* text = std::get_if<std::string>(&field)) {
          values.push_back(CsvField(*text));
        } else {
          values.push_back(std::get<bool>(field) ? "true" : "false");
        }
      }
      absl::StrAppend(&out, absl::StrJoin(values, ","), "\n");
    }
  }
  return out;
}

}  // namespace tlbfleet::report
