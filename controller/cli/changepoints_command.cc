#include "controller/cli/changepoints_command.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <numeric>
#include <optional>
#include <sstream>

#include "CLI/CLI.hpp"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/csv.h"
#include "controller/cli/exit_codes.h"
#include "controller/cli/format.h"

namespace tlbfleet::cli {

namespace {

constexpr const char* kRequired[] = {"series", "order", "value"};
constexpr const char* kOptional[] = {"low", "high"};

absl::Status LineError(size_t line, const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat("line ", line, ": ", what));
}

absl::StatusOr<double> Number(size_t line, const std::string& column, const std::string& text) {
  double v = 0;
  if (text.empty()) {
    return LineError(line, absl::StrCat("column '", column, "' is empty"));
  }
  if (!absl::SimpleAtod(text, &v) || !std::isfinite(v)) {
    return LineError(line,
                     absl::StrCat("column '", column, "': '", text, "' is not a finite number"));
  }
  return v;
}

struct Row {
  size_t line;
  double order;
  std::string order_text;
  stats::SeriesPoint point;
};

v1::ChangeInterval Interval(double estimate, double low, double high) {
  v1::ChangeInterval i;
  i.set_estimate(estimate);
  i.set_low(low);
  i.set_high(high);
  return i;
}

std::string FormatValue(double v) { return absl::StrFormat("%.6g", v); }

}  // namespace

absl::StatusOr<std::vector<CsvSeries>> ParseChangePointCsv(std::string_view text) {
  std::map<std::string, size_t> column;  // name -> index
  size_t columns = 0;
  std::vector<std::string> names;  // series in order of appearance
  std::map<std::string, std::vector<Row>> rows;
  std::map<std::string, size_t> first_line;  // series -> its first line (for the interval rule)
  bool have_header = false;
  const CsvReadOptions options{.comment_lines = true};
  absl::Status status = ForEachCsvRecord(
      text, options,
      [&](size_t line_number, const std::vector<std::string>& fields) -> absl::Status {
        if (!have_header) {
          have_header = true;
          columns = fields.size();
          for (size_t i = 0; i < fields.size(); ++i) {
            const std::string name = absl::AsciiStrToLower(fields[i]);
            const bool known =
                std::find(std::begin(kRequired), std::end(kRequired), name) !=
                    std::end(kRequired) ||
                std::find(std::begin(kOptional), std::end(kOptional), name) != std::end(kOptional);
            if (!known) {
              return LineError(line_number,
                               absl::StrCat("unknown column '", fields[i],
                                            "' (the header names series, order, value, and "
                                            "optionally low and high)"));
            }
            if (!column.emplace(name, i).second) {
              return LineError(line_number, absl::StrCat("column '", name, "' appears twice"));
            }
          }
          for (const char* required : kRequired) {
            if (!column.count(required)) {
              return LineError(line_number,
                               absl::StrCat("missing column '", required,
                                            "' (the header names series, order, value, and "
                                            "optionally low and high)"));
            }
          }
          if (column.count("low") != column.count("high")) {
            return LineError(line_number, column.count("low") ? "column 'low' without 'high'"
                                                              : "column 'high' without 'low'");
          }
          return absl::OkStatus();
        }
        if (fields.size() != columns) {
          return LineError(line_number,
                           absl::StrCat(fields.size(), " fields, the header has ", columns));
        }
        const std::string& series = fields[column["series"]];
        if (series.empty()) return LineError(line_number, "column 'series' is empty");
        Row row;
        row.line = line_number;
        row.order_text = fields[column["order"]];
        absl::StatusOr<double> order = Number(line_number, "order", row.order_text);
        if (!order.ok()) return order.status();
        row.order = *order;
        absl::StatusOr<double> value = Number(line_number, "value", fields[column["value"]]);
        if (!value.ok()) return value.status();
        row.point.value = *value;
        if (column.count("low")) {
          const std::string& low_text = fields[column["low"]];
          const std::string& high_text = fields[column["high"]];
          if (low_text.empty() != high_text.empty()) {
            return LineError(line_number, low_text.empty() ? "column 'high' without 'low'"
                                                           : "column 'low' without 'high'");
          }
          if (!low_text.empty()) {
            absl::StatusOr<double> low = Number(line_number, "low", low_text);
            if (!low.ok()) return low.status();
            absl::StatusOr<double> high = Number(line_number, "high", high_text);
            if (!high.ok()) return high.status();
            if (!(*low <= *value && *value <= *high)) {
              return LineError(line_number,
                               absl::StrCat("columns 'low', 'high': [", low_text, ", ", high_text,
                                            "] does not hold the value ", fields[column["value"]]));
            }
            row.point.low = *low;
            row.point.high = *high;
          }
        }
        auto [it, inserted] = rows.try_emplace(series);
        if (inserted) {
          names.push_back(series);
          first_line[series] = line_number;
        } else if (it->second.front().point.low.has_value() != row.point.low.has_value()) {
          return LineError(
              line_number,
              absl::StrCat("series '", series, "': this point ",
                           row.point.low ? "has an interval" : "has no interval", " but line ",
                           first_line[series], "'s ", row.point.low ? "has none" : "has one",
                           "; give every point of a series an interval, or none"));
        }
        it->second.push_back(std::move(row));
        return absl::OkStatus();
      });
  if (!status.ok()) return status;
  if (!have_header) return absl::InvalidArgumentError("no header line (series,order,value)");
  std::vector<CsvSeries> out;
  for (const std::string& name : names) {
    std::vector<Row>& r = rows[name];
    std::stable_sort(r.begin(), r.end(),
                     [](const Row& a, const Row& b) { return a.order < b.order; });
    CsvSeries s;
    s.name = name;
    for (size_t i = 0; i < r.size(); ++i) {
      if (i > 0 && r[i].order == r[i - 1].order) {
        return LineError(std::max(r[i].line, r[i - 1].line),
                         absl::StrCat("series '", name, "' has order ", r[i].order_text,
                                      " twice (lines ", std::min(r[i].line, r[i - 1].line), " and ",
                                      std::max(r[i].line, r[i - 1].line), ")"));
      }
      s.orders.push_back(r[i].order_text);
      s.points.push_back(r[i].point);
    }
    out.push_back(std::move(s));
  }
  return out;
}

absl::StatusOr<v1::ChangePointsReport> DetectInCsvSeries(const std::vector<CsvSeries>& series,
                                                         const stats::ChangePointOptions& options) {
  v1::ChangePointsReport report;
  report.set_test(stats::ChangePointTestName(options.test));
  report.set_max_p(options.max_p);
  if (options.test == stats::ChangePointTest::kPermutation) {
    report.set_permutations(static_cast<uint32_t>(options.permutations));
  }
  report.set_min_segment(static_cast<uint32_t>(options.min_segment));
  report.set_confidence(options.confidence);
  report.set_seed(options.seed);
  report.set_serial(stats::SerialModelName(options.serial));
  if (options.serial == stats::SerialModel::kBlock) {
    report.set_block_length(static_cast<uint32_t>(options.block_length));
  }
  report.set_drift(options.detect_drift);
  report.set_drift_threshold(options.drift_threshold);
  for (const CsvSeries& s : series) {
    absl::StatusOr<stats::ChangePointResult> result = stats::DetectChangePoints(s.points, options);
    if (!result.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("series '", s.name, "': ", result.status().message()));
    }
    v1::SeriesChanges* out = report.add_series();
    out->set_series(s.name);
    out->set_points(static_cast<uint32_t>(s.points.size()));
    out->set_intervals(!s.points.empty() && s.points[0].low.has_value());
    out->set_phi(result->serial.phi);
    for (const stats::ChangePoint& cp : result->change_points) {
      v1::DetectedChange* c = out->add_changes();
      const stats::ChangeEstimate& e = cp.estimate;
      c->set_order(s.orders[cp.index]);
      c->set_order_before(s.orders[cp.index - 1]);
      c->set_index(static_cast<uint32_t>(cp.index));
      c->set_mean_before(e.before.mean);
      c->set_mean_after(e.after.mean);
      *c->mutable_difference() = Interval(e.difference, e.difference_low, e.difference_high);
      if (e.relative) {
        *c->mutable_relative() = Interval(*e.relative, *e.relative_low, *e.relative_high);
      }
      c->set_p(cp.p);
      c->set_qhat(cp.qhat);
      c->set_points_before(static_cast<uint32_t>(e.before.end - e.before.begin));
      c->set_points_after(static_cast<uint32_t>(e.after.end - e.after.begin));
    }
    for (const stats::Trend& t : result->trends) {
      v1::DetectedTrend* c = out->add_trends();
      c->set_order_first(s.orders[t.begin]);
      c->set_order_last(s.orders[t.end - 1]);
      c->set_index(static_cast<uint32_t>(t.begin));
      c->set_points(static_cast<uint32_t>(t.end - t.begin));
      *c->mutable_slope() = Interval(t.slope, t.slope_low, t.slope_high);
      c->set_level(t.level);
      if (t.relative_change) c->set_relative_change(*t.relative_change);
      c->set_p(t.p);
    }
    for (const stats::ChangePointDecision& d : result->log) {
      v1::ChangeDecision* c = out->add_decisions();
      c->set_kind(stats::ChangePointDecisionName(d.kind));
      c->set_order(s.orders[d.index]);
      c->set_p(d.p);
      c->set_qhat(d.qhat);
      c->set_permutations_run(static_cast<uint32_t>(d.permutations_run));
      c->set_phi(d.phi);
      *c->mutable_difference() =
          Interval(d.estimate.difference, d.estimate.difference_low, d.estimate.difference_high);
    }
  }
  return report;
}

std::string RenderChangePointsText(const v1::ChangePointsReport& report, bool explain) {
  std::string out = absl::StrCat("E-Divisive means, ", report.test(), " test");
  if (report.test() == "permutation") {
    absl::StrAppend(&out, " (", report.permutations(), " permutations, seed ", report.seed(), ")");
  }
  absl::StrAppend(&out,
                  absl::StrFormat(", p <= %g, segments of at least %u points, %g %% intervals",
                                  report.max_p(), report.min_segment(), report.confidence() * 100));
  if (report.serial() == "ar1") {
    absl::StrAppend(&out, ", AR(1) noise");
  } else if (report.serial() == "block") {
    absl::StrAppend(&out, ", blocks of ", report.block_length(), " points shuffled");
  } else {
    absl::StrAppend(&out, ", independent points");
  }
  if (report.drift()) {
    absl::StrAppend(&out, ", drifts told from steps");
    if (report.drift_threshold() > 0) {
      absl::StrAppend(&out, absl::StrFormat(" (at least %g %%)", report.drift_threshold() * 100));
    }
  }
  absl::StrAppend(&out, "\n");
  for (const v1::SeriesChanges& s : report.series()) {
    absl::StrAppend(&out, "\nseries ", s.series(), ": ", s.points(), " points",
                    s.intervals() ? " with intervals" : "", ", ");
    if (s.changes().empty()) {
      absl::StrAppend(&out, "no change point");
    } else {
      absl::StrAppend(&out, s.changes_size(),
                      s.changes_size() == 1 ? " change point" : " change points");
    }
    if (s.trends_size() > 0) {
      absl::StrAppend(&out, ", ", s.trends_size(), s.trends_size() == 1 ? " drift" : " drifts");
    }
    if (report.serial() == "ar1") absl::StrAppend(&out, absl::StrFormat(" (phi %.2f)", s.phi()));
    absl::StrAppend(&out, "\n");
    for (const v1::DetectedChange& c : s.changes()) {
      absl::StrAppend(&out, "  at order ", c.order(), " (after ", c.order_before(),
                      "): ", FormatValue(c.mean_before()), " -> ", FormatValue(c.mean_after()),
                      ", ");
      if (c.has_relative()) {
        absl::StrAppend(
            &out, absl::StrFormat("%+.2f%% [%+.2f%%, %+.2f%%], ", c.relative().estimate() * 100,
                                  c.relative().low() * 100, c.relative().high() * 100));
      }
      absl::StrAppend(&out, "difference ", FormatValue(c.difference().estimate()), " [",
                      FormatValue(c.difference().low()), ", ", FormatValue(c.difference().high()),
                      "], ", absl::StrFormat("p = %.3g", c.p()), " (", c.points_before(), " | ",
                      c.points_after(), " points)\n");
    }
    for (const v1::DetectedTrend& t : s.trends()) {
      absl::StrAppend(&out, "  drift from order ", t.order_first(), " to ", t.order_last(), " (",
                      t.points(), " points): ", FormatValue(t.slope().estimate()), " per point [",
                      FormatValue(t.slope().low()), ", ", FormatValue(t.slope().high()), "]");
      if (t.has_relative_change()) {
        absl::StrAppend(&out,
                        absl::StrFormat(", %+.2f%% over the drift", t.relative_change() * 100));
      }
      absl::StrAppend(&out, absl::StrFormat(", p = %.3g\n", t.p()));
    }
    if (explain) {
      for (const v1::ChangeDecision& d : s.decisions()) {
        absl::StrAppend(&out, "    candidate at order ", d.order(), ": ", d.kind(),
                        absl::StrFormat(" (q = %.4g, p = %.3g", d.qhat(), d.p()));
        if (d.permutations_run() > 0) {
          absl::StrAppend(&out, " after ", d.permutations_run(), " permutations");
        }
        if (report.serial() == "ar1") absl::StrAppend(&out, absl::StrFormat(", phi %.2f", d.phi()));
        absl::StrAppend(&out, ", difference ", FormatValue(d.difference().estimate()), " [",
                        FormatValue(d.difference().low()), ", ", FormatValue(d.difference().high()),
                        "])\n");
      }
    }
  }
  return out;
}

ChangepointsCommand::ChangepointsCommand(CLI::App& app) {
  command_ = app.add_subcommand(
      "changepoints", "offline change-point detection on a CSV series,order,value[,low,high]");
  command_->add_option("--from-csv", file_, "CSV file, or - for stdin")->required();
  command_->add_option("--format", format_, "output format: text|json")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  command_->add_option("--test", test_, "significance test: permutation|student-t")
      ->check(CLI::IsMember({"permutation", "student-t"}))
      ->capture_default_str();
  command_
      ->add_option("--max-p", max_p_,
                   "largest p-value of a change point (default: 0.005 for permutation, "
                   "0.0001 for student-t)")
      ->check(CLI::Range(0.0, 1.0));
  command_->add_option("--permutations", permutations_, "permutations of the permutation test")
      ->check(CLI::Range(1, 1000000))
      ->capture_default_str();
  command_->add_option("--min-segment", min_segment_, "fewest points on each side of a change")
      ->check(CLI::Range(2, 1000000))
      ->capture_default_str();
  command_->add_option("--seed", seed_, "seed of the permutations")->capture_default_str();
  command_
      ->add_option("--serial", serial_,
                   "how consecutive points depend on each other: ar1 (estimated, corrected "
                   "for), independent (the published test), block (shuffle blocks)")
      ->check(CLI::IsMember({"ar1", "independent", "block"}))
      ->capture_default_str();
  command_
      ->add_option("--block-length", block_length_,
                   "points per block shuffled (implies --serial block)")
      ->check(CLI::Range(static_cast<size_t>(1), static_cast<size_t>(1000000)));
  command_->add_flag("--no-drift", no_drift_, "report a slow trend as steps, not as a drift");
  command_
      ->add_option("--drift-threshold", drift_threshold_,
                   "smallest drift reported, as a fraction of the level over its span")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  command_->add_flag("--explain", explain_, "text: list every candidate and why it was taken");
}

bool ChangepointsCommand::parsed() const { return command_->parsed(); }

int ChangepointsCommand::Run(std::ostream& out, std::ostream& err) const {
  std::string text;
  {
    std::ifstream in(file_ == "-" ? "/dev/stdin" : file_, std::ios::binary);
    if (!in) {
      err << "tlbfleet: cannot read CSV " << file_ << ": " << std::strerror(errno) << "\n";
      return kExitUsage;
    }
    std::ostringstream buffer;
    buffer << in.rdbuf();
    text = buffer.str();
  }
  absl::StatusOr<std::vector<CsvSeries>> series = ParseChangePointCsv(text);
  if (!series.ok()) {
    err << "tlbfleet: " << file_ << ": " << series.status().message() << "\n";
    return kExitUsage;
  }
  const bool block_length_given = command_->count("--block-length") > 0;
  if (block_length_given && command_->count("--serial") > 0 && serial_ != "block") {
    err << "tlbfleet: --block-length needs --serial block (got --serial " << serial_ << ")\n";
    return kExitUsage;
  }
  if (serial_ == "block" && !block_length_given) {
    err << "tlbfleet: --serial block needs --block-length N (at least 1)\n";
    return kExitUsage;
  }
  if (command_->count("--min-segment") > 0) {
    for (const CsvSeries& s : *series) {
      if (2 * min_segment_ > s.points.size()) {
        err << "tlbfleet: --min-segment " << min_segment_ << " is more than half of series '"
            << s.name << "' (" << s.points.size() << " points): no split could be made\n";
        return kExitUsage;
      }
    }
  }
  stats::ChangePointOptions options;
  options.test = test_ == "student-t" ? stats::ChangePointTest::kStudentT
                                      : stats::ChangePointTest::kPermutation;
  if (max_p_ > 0) {
    options.max_p = max_p_;
  } else if (options.test == stats::ChangePointTest::kStudentT) {
    options.max_p = stats::kStudentTDefaultMaxP;
  }
  options.permutations = permutations_;
  options.min_segment = min_segment_;
  options.seed = seed_;
  options.serial = block_length_given || serial_ == "block" ? stats::SerialModel::kBlock
                   : serial_ == "independent"               ? stats::SerialModel::kIndependent
                                                            : stats::SerialModel::kAr1;
  options.block_length = block_length_;
  options.detect_drift = !no_drift_;
  options.drift_threshold = drift_threshold_;
  absl::StatusOr<v1::ChangePointsReport> report = DetectInCsvSeries(*series, options);
  if (!report.ok()) {
    err << "tlbfleet: " << file_ << ": " << report.status().message() << "\n";
    return kExitUsage;
  }
  out << (format_ == "json" ? ToJson(*report) : RenderChangePointsText(*report, explain_));
  return kExitOk;
}

}  // namespace tlbfleet::cli
