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
#include "controller/report/arm_hosts.h"

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

std::string Ratio(double v) { return absl::StrFormat("%.4f", v); }

std::string VerdictLine(const ArmResult& arm) {
  std::string line = absl::StrCat(arm.arm, "  ", VerdictName(arm.verdict));
  if (arm.verdict == Verdict::kBaseline) return line;
  const stats::RatioTest& t = arm.test;
  if (t.ratio) {
    absl::StrAppend(&line, "  ratio ", Ratio(*t.ratio));
    if (arm.ratio_ci_low && arm.ratio_ci_high) {
      absl::StrAppend(&line, " [", Ratio(*arm.ratio_ci_low), ", ", Ratio(*arm.ratio_ci_high), "]");
    }
  }
  if (t.p) absl::StrAppend(&line, "  p ", Num(t.p), "  q ", Num(arm.q));
  if (t.design != stats::Design::kNone) {
    absl::StrAppend(&line, "  ", stats::ScopeName(t.scope));
    switch (t.design) {
      case stats::Design::kPairedBoots:
        absl::StrAppend(&line, ", paired over ", t.other_units, " boots");
        break;
      case stats::Design::kUnpairedBoots:
        absl::StrAppend(&line, ", ", t.base_units, " + ", t.other_units, " boots");
        break;
      case stats::Design::kPairedIterations:
        absl::StrAppend(&line, ", paired over ", t.other_units, " iterations");
        break;
      default:
        break;
    }
  }
  return line;
}

// The cross-checks on all samples, one line.
std::string PooledLine(const ArmResult& arm) {
  std::string line =
      absl::StrCat("pooled samples: Welch p ", Num(arm.welch.p), ", MWU p ", Num(arm.mwu.p));
  if (arm.hl.shift) {
    absl::StrAppend(&line, ", HL shift ", Num(arm.hl.shift), " [", Num(arm.hl.ci_low), ", ",
                    Num(arm.hl.ci_high), "]");
  }
  return line;
}

std::string VerdictsHeader(const Comparison& c) {
  std::string head = absl::StrFormat(
      "Verdicts: ratio of geometric means, other / baseline (not the Hmean/Amean above), %g %% "
      "intervals",
      100 * c.level);
  if (!c.adjusted) return head + "; q = p (unadjusted)";
  if (c.rows > 1) {
    return absl::StrCat(head, "; q: p adjusted over ", c.rows, " rows (Benjamini–Hochberg)");
  }
  return head;
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

std::vector<std::pair<const char*, Field>> Record(const Comparison& c, const GroupResult& g,
                                                  const ArmResult& a) {
  const bool base = a.verdict == Verdict::kBaseline;
  auto cmp = [base](const std::optional<double>& v) -> Field {
    return base ? std::optional<double>() : v;
  };
  auto cmp_text = [base](const std::string& text) -> Field {
    if (base || text.empty()) return std::optional<double>();
    return text;
  };
  auto count = [](size_t n) -> Field { return std::optional<double>(static_cast<double>(n)); };
  auto cmp_count = [base](size_t n) -> Field {
    return base ? std::optional<double>() : std::optional<double>(static_cast<double>(n));
  };
  auto opt_int = [](const std::optional<int>& v) -> Field {
    return v ? std::optional<double>(*v) : std::nullopt;
  };
  const stats::Summary& s = a.summary;
  const stats::RatioTest& t = a.test;
  std::string notes = absl::StrJoin(a.notes, "; ");
  if (!s.why_undefined.empty())
    notes = notes.empty() ? s.why_undefined : notes + "; " + s.why_undefined;
  const bool higher = g.direction == Direction::kHigherIsBetter;
  const char* bootstrap_method = a.bootstrap.bca_low          ? "bca"
                                 : a.bootstrap.percentile_low ? "percentile"
                                                              : "";
  return {
      {"arm", a.arm},
      {"param", SweepLabel(g.param_name, g.param_value)},
      {"param_name", g.param_name},
      {"param_value", g.param_value},
      {"metric", g.metric},
      {"unit", g.unit},
      {"better", std::string(higher ? "higher" : "lower")},
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
      {"pct_diff_statistic", std::string(higher ? "hmean" : "amean")},
      {"estimand", std::string("gmean_ratio")},
      {"ratio", cmp(t.ratio)},
      {"change_pct", cmp(a.change_pct)},
      {"ratio_ci_low", cmp(a.ratio_ci_low)},
      {"ratio_ci_high", cmp(a.ratio_ci_high)},
      {"ci_level", std::optional<double>(c.level)},
      {"ratio_ci_method", std::string(a.ratio_ci_method)},
      {"p", cmp(t.p)},
      {"q", cmp(a.q)},
      {"same_p", cmp(t.same_p)},
      {"same_q", cmp(a.same_q)},
      {"margin", std::optional<double>(c.margin)},
      {"adjusted", c.adjusted},
      {"adjusted_ci_low", cmp(a.adjusted_ci_low)},
      {"adjusted_ci_high", cmp(a.adjusted_ci_high)},
      {"adjusted_ci_level",
       cmp(a.adjusted_level > 0 ? std::optional<double>(a.adjusted_level) : std::nullopt)},
      {"significance_p", cmp(a.significance_p)},
      {"significant", a.significant},
      {"scope", cmp_text(t.design == stats::Design::kNone ? "" : stats::ScopeName(t.scope))},
      {"design", cmp_text(stats::DesignName(t.design))},
      {"units_base", cmp_count(t.base_units)},
      {"units_other", cmp_count(t.other_units)},
      {"shared_boots", cmp_count(t.shared_boots)},
      {"welch_t", cmp(a.welch.t)},
      {"welch_df", cmp(a.welch.df)},
      {"welch_p", cmp(a.welch.p)},
      {"mwu_u", cmp(a.mwu.u)},
      {"mwu_p", cmp(a.mwu.p)},
      {"hl_shift", cmp(a.hl.shift)},
      {"hl_ci_low", cmp(a.hl.ci_low)},
      {"hl_ci_high", cmp(a.hl.ci_high)},
      {"bootstrap_ci_low",
       cmp(a.bootstrap.bca_low ? a.bootstrap.bca_low : a.bootstrap.percentile_low)},
      {"bootstrap_ci_high",
       cmp(a.bootstrap.bca_high ? a.bootstrap.bca_high : a.bootstrap.percentile_high)},
      {"bootstrap_ci_method", std::string(bootstrap_method)},
      {"var_between_boots", a.variance.between},
      {"var_within_boots", a.variance.within},
      {"between_boot_share", a.variance.between_share},
      {"log_ratio_var_between_boots", cmp(a.log_ratio_components.interaction)},
      {"verdict", cmp_text(base ? "" : VerdictName(a.verdict))},
      {"recommend_iterations", opt_int(a.advice.iterations_per_boot)},
      {"recommend_boots", opt_int(a.advice.boots)},
      {"expected_ci_half_width_pct", a.advice.expected_half_width_pct},
      {"notes", notes},
      {"ceiling", a.ceiling},
      {"hosts", a.hosts},
      {"excluded", a.excluded},
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
  if (!comparison.ceilings.empty()) absl::StrAppend(&out, comparison.ceilings, "\n");
  absl::StrAppend(&out, RenderArmHostsText(comparison));
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
    absl::StrAppend(&out, "\n", VerdictsHeader(comparison), "\n");
    for (size_t k = g; k < end; ++k) {
      const GroupResult& group = comparison.groups[k];
      const std::string label = SweepLabel(group.param_name, group.param_value);
      for (const ArmResult& arm : group.arms) {
        absl::StrAppend(&out, label.empty() ? "" : label + "  ", VerdictLine(arm), "\n");
        for (const std::string& note : arm.notes) absl::StrAppend(&out, "    - ", note, "\n");
        if (arm.verdict != Verdict::kBaseline)
          absl::StrAppend(&out, "    - ", PooledLine(arm), "\n");
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
      for (const auto& [name, field] : Record(comparison, g, a)) {
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
      const auto record = Record(comparison, g, a);
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
