#include "controller/report/adaptive_replay.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <tuple>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/csv.h"
#include "common/json.h"
#include "controller/report/sequential.h"

namespace tlbfleet::report {

namespace {

// Where one observation sits in the order the driver measures: its arm's boot rank and its
// position among the iterations of (boot, sweep value, metric).
struct Slot {
  size_t boot_rank = 0;
  size_t position = 0;
};

// (arm, boot, param name, param value, metric): one boot's iterations of one row.
using SeriesKey = std::tuple<std::string, std::string, std::string, std::string, std::string>;

std::string ReplayRowText(const std::string& metric, const std::string& name,
                          const std::string& value) {
  if (name.empty() && value.empty()) return metric;
  return absl::StrCat(metric, " at ", SweepLabel(name, value));
}

// The number a boot's name ends with; nullopt when it ends in no digit.
std::optional<uint64_t> TrailingNumber(const std::string& boot) {
  size_t start = boot.size();
  while (start > 0 && std::isdigit(static_cast<unsigned char>(boot[start - 1]))) --start;
  if (start == boot.size()) return std::nullopt;
  uint64_t n = 0;
  if (!absl::SimpleAtoi(boot.substr(start), &n)) return std::nullopt;
  return n;
}

const char* ActionName(AdaptiveDecision::Action a) {
  switch (a) {
    case AdaptiveDecision::Action::kAddBoot:
      return "add_boot";
    case AdaptiveDecision::Action::kAddIterations:
      return "add_iterations";
    default:
      return "stop";
  }
}

std::string RangeText(const v1::AdaptiveSpec::Range& r, uint32_t fixed) {
  return r.max() > 0 ? absl::StrCat(r.min(), "..", r.max()) : absl::StrCat(fixed);
}

void AppendOptionalNumber(std::string& out, const char* name, const std::optional<double>& v) {
  absl::StrAppend(&out, ",\"", name, "\":");
  if (v && std::isfinite(*v)) {
    absl::StrAppend(&out, absl::StrFormat("%.17g", *v));
  } else {
    out += "null";
  }
}

void AppendRowJson(std::string& out, const RowOutcome& r) {
  absl::StrAppend(&out, "{\"metric\":", JsonQuote(r.metric),
                  ",\"param\":", JsonQuote(SweepLabel(r.param_name, r.param_value)),
                  ",\"arm\":", JsonQuote(r.arm), ",\"verdict\":", JsonQuote(VerdictName(r.verdict)),
                  ",\"decided\":", r.decided ? "true" : "false",
                  r.decided ? absl::StrCat(",\"decided_look\":", r.decided_round + 1) : "",
                  ",\"boots\":{\"baseline\":", r.base_boots, ",\"arm\":", r.arm_boots,
                  "},\"samples\":{\"baseline\":", r.base_samples, ",\"arm\":", r.arm_samples, "}");
  AppendOptionalNumber(out, "ratio", r.ratio);
  AppendOptionalNumber(out, "p", r.p);
  AppendOptionalNumber(out, "same_p", r.same_p);
  AppendOptionalNumber(out, "information", r.information);
  AppendOptionalNumber(out, "look_alpha", r.look_alpha);
  out += "}";
}

}  // namespace

absl::StatusOr<ReplayResult> ReplayAdaptiveCsv(std::string_view csv, stats::Direction direction,
                                               const ReplayOptions& options) {
  absl::StatusOr<std::vector<Observation>> parsed = ParseObservationsCsv(csv, direction);
  if (!parsed.ok()) return parsed.status();
  std::vector<size_t> lines;  // the line of each observation (records after the header)
  bool header = true;
  absl::Status s =
      ForEachCsvRecord(csv, CsvReadOptions{}, [&](size_t line, const std::vector<std::string>&) {
        if (!header) lines.push_back(line);
        header = false;
        return absl::OkStatus();
      });
  if (!s.ok()) return s;
  if (lines.size() != parsed->size()) {
    return absl::InternalError("CSV records and lines disagree");
  }
  return ReplayAdaptive(*parsed, lines, options);
}

absl::StatusOr<ReplayResult> ReplayAdaptive(const std::vector<Observation>& obs,
                                            std::vector<size_t> lines,
                                            const ReplayOptions& options) {
  if (lines.empty()) {
    for (size_t i = 0; i < obs.size(); ++i) lines.push_back(i + 2);
  }
  const v1::AdaptiveSpec& spec = options.adaptive;
  if (absl::Status s = ValidateSequentialSpec(spec); !s.ok()) return s;
  if (spec.stop() != v1::AdaptiveSpec::STOP_VERDICT && !(spec.target_ci() > 0)) {
    return absl::InvalidArgumentError(
        "target_ci: stop: precision needs a target above 0 (a ratio CI half-width such as 1%)");
  }
  if (spec.iterations().max() == 0 && spec.boots().max() == 0) {
    return absl::InvalidArgumentError(
        "iterations: nothing is adaptive: give iterations or boots as MIN..MAX");
  }
  if (spec.iterations().max() == 0 && options.iterations < 1) {
    return absl::InvalidArgumentError("iterations: at least 1");
  }
  if (spec.boots().max() == 0 && options.boots < 1) {
    return absl::InvalidArgumentError("boots: at least 1");
  }
  // Arms in order of appearance, the baseline first.
  std::vector<std::string> arms;
  for (const Observation& o : obs) {
    if (std::find(arms.begin(), arms.end(), o.arm) == arms.end()) arms.push_back(o.arm);
  }
  if (!options.baseline.empty()) {
    auto it = std::find(arms.begin(), arms.end(), options.baseline);
    if (it == arms.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("baseline: no arm \"", options.baseline, "\" in the CSV"));
    }
    std::rotate(arms.begin(), it, it + 1);
  }
  std::vector<std::string> metrics(spec.metrics().begin(), spec.metrics().end());
  if (metrics.empty()) {
    for (const Observation& o : obs) {
      if (std::find(metrics.begin(), metrics.end(), o.metric) == metrics.end()) {
        metrics.push_back(o.metric);
      }
    }
  }
  for (const std::string& m : metrics) {
    if (std::none_of(obs.begin(), obs.end(), [&](const Observation& o) { return o.metric == m; })) {
      return absl::InvalidArgumentError(absl::StrCat("metric: \"", m, "\" is not in the CSV"));
    }
  }

  // Boots: per arm, by the number their name ends with.
  std::map<std::string, std::map<uint64_t, std::string>> boot_names;  // arm -> number -> name
  std::map<std::pair<std::string, std::string>, size_t> first_line;   // (arm, boot) -> line
  for (size_t i = 0; i < obs.size(); ++i) {
    const Observation& o = obs[i];
    std::optional<uint64_t> n =
        o.boot.empty() ? std::optional<uint64_t>(0) : TrailingNumber(o.boot);
    if (!n) {
      return absl::InvalidArgumentError(absl::StrCat(
          "line ", lines[i], ": boot \"", o.boot,
          "\" does not end in a number (the replay takes boots in the order of their numbers)"));
    }
    auto [it, added] = boot_names[o.arm].emplace(*n, o.boot);
    if (!added && it->second != o.boot) {
      return absl::InvalidArgumentError(absl::StrCat(
          "line ", lines[i], ": boot \"", o.boot, "\" of arm \"", o.arm, "\" has number ", *n,
          " like boot \"", it->second, "\": boots must be numbered in order"));
    }
    first_line.emplace(std::make_pair(o.arm, o.boot), lines[i]);
  }
  std::map<std::pair<std::string, std::string>, size_t> rank;  // (arm, boot) -> rank
  for (const auto& [arm, by_number] : boot_names) {
    size_t r = 0;
    for (const auto& [number, name] : by_number) rank[{arm, name}] = r++;
  }
  // Iterations: per (arm, boot, sweep value, metric), from 0 or 1 without gaps or repeats.
  std::map<SeriesKey, std::vector<std::pair<uint32_t, size_t>>> series;
  for (size_t i = 0; i < obs.size(); ++i) {
    const Observation& o = obs[i];
    series[{o.arm, o.boot, o.param_name, o.param_value, o.metric}].emplace_back(o.iteration, i);
  }
  std::vector<Slot> slots(obs.size());
  for (auto& [key, its] : series) {
    std::sort(its.begin(), its.end());
    if (its.front().first > 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("line ", lines[its.front().second], ": the first iteration of boot \"",
                       std::get<1>(key), "\" of arm \"", std::get<0>(key), "\" (",
                       ReplayRowText(std::get<4>(key), std::get<2>(key), std::get<3>(key)), ") is ",
                       its.front().first, ": iterations must be numbered in order from 0 or 1"));
    }
    for (size_t j = 0; j < its.size(); ++j) {
      if (j > 0 && its[j].first != its[j - 1].first + 1) {
        return absl::InvalidArgumentError(absl::StrCat(
            "line ", lines[its[j].second], ": iteration ", its[j].first, " of boot \"",
            std::get<1>(key), "\" of arm \"", std::get<0>(key), "\" (",
            ReplayRowText(std::get<4>(key), std::get<2>(key), std::get<3>(key)), ") ",
            its[j].first == its[j - 1].first ? "is repeated"
                                             : absl::StrCat("follows ", its[j - 1].first),
            ": iterations must be numbered in order without gaps"));
      }
      slots[its[j].second] = {rank[{std::get<0>(key), std::get<1>(key)}], j};
    }
  }

  if (arms.size() < 2) return absl::InvalidArgumentError("the CSV has fewer than two arms");
  const uint32_t need_boots = spec.boots().max() > 0 ? spec.boots().max() : options.boots;
  const uint32_t need_iterations =
      spec.iterations().max() > 0 ? spec.iterations().max() : options.iterations;
  const std::string boots_option = absl::StrCat("--boots ", RangeText(spec.boots(), options.boots));
  const std::string iterations_option =
      absl::StrCat("--iterations ", RangeText(spec.iterations(), options.iterations));
  // Each arm's rows of the judged metrics: (param name, param value, metric).
  std::map<std::string, std::set<std::tuple<std::string, std::string, std::string>>> arm_rows;
  for (const auto& [key, its] : series) {
    if (std::find(metrics.begin(), metrics.end(), std::get<4>(key)) != metrics.end()) {
      arm_rows[std::get<0>(key)].emplace(std::get<2>(key), std::get<3>(key), std::get<4>(key));
    }
  }
  // What look `look` (1-based) asks for must be in the CSV: a run that stopped early has only
  // the samples its looks asked for, and a replay of it must take them (not refuse it for the
  // maxima it never reached). `plan_of(cell)`: iterations per boot rank of a (sweep value, arm).
  const auto check_has = [&](size_t look, const auto& plan_of) -> absl::Status {
    for (const std::string& arm : arms) {
      const std::map<uint64_t, std::string>& by_number = boot_names[arm];
      for (const auto& [name, value, metric] : arm_rows[arm]) {
        const std::vector<uint32_t>& plan = plan_of(SweepArm{name, value, arm});
        if (by_number.size() < plan.size()) {
          const std::string& last = by_number.rbegin()->second;
          return absl::InvalidArgumentError(absl::StrCat(
              boots_option, ": look ", look, " asks for ", plan.size(),
              " boots of every arm; arm \"", arm, "\" has ", by_number.size(), " (its last boot \"",
              last, "\" starts on line ", first_line[{arm, last}], ")"));
        }
        size_t r = 0;
        for (const auto& [number, boot] : by_number) {
          if (r >= plan.size()) break;
          const uint32_t wanted = plan[r++];
          auto it = series.find({arm, boot, name, value, metric});
          if (it == series.end()) {
            return absl::InvalidArgumentError(
                absl::StrCat("line ", first_line[{arm, boot}], ": boot \"", boot, "\" of arm \"",
                             arm, "\" has no samples of ", ReplayRowText(metric, name, value),
                             "; look ", look, " asks for them (", boots_option, ")"));
          }
          if (it->second.size() < wanted) {
            return absl::InvalidArgumentError(
                absl::StrCat("line ", lines[it->second.back().second], ": boot \"", boot,
                             "\" of arm \"", arm, "\" ends after ", it->second.size(),
                             " iterations of ", ReplayRowText(metric, name, value), "; look ", look,
                             " asks for ", wanted, " (", iterations_option, ")"));
          }
        }
      }
    }
    return absl::OkStatus();
  };

  ReplayResult result;
  result.sequential = spec.stop() == v1::AdaptiveSpec::STOP_VERDICT;
  for (const Observation& o : obs) {
    result.samples_available += std::find(arms.begin(), arms.end(), o.arm) != arms.end();
  }
  AdaptivePlan plan;
  plan.boots = spec.boots().max() > 0 ? spec.boots().min() : options.boots;
  plan.iterations_per_boot =
      spec.iterations().max() > 0 ? spec.iterations().min() : options.iterations;
  std::vector<uint32_t> boot_iterations(plan.boots, plan.iterations_per_boot);
  CompareOptions compare;
  compare.arm_order = arms;
  compare.cross_checks = false;  // never part of a decision (comparison.h)
  std::vector<RowOutcome> earlier;
  // stop: verdict measures only what StillMeasured names after each look, as the driver does
  // (Store::ExtendRun with RunExtension::measured): a (sweep value, arm) that left it keeps
  // the boots and iterations it had then.
  std::map<SweepArm, std::vector<uint32_t>> stopped;
  for (;;) {
    absl::Status has = check_has(result.looks.size() + 1,
                                 [&](const SweepArm& cell) -> const std::vector<uint32_t>& {
                                   auto it = stopped.find(cell);
                                   return it == stopped.end() ? boot_iterations : it->second;
                                 });
    if (!has.ok()) return has;
    std::vector<Observation> taken;
    for (size_t i = 0; i < obs.size(); ++i) {
      const Slot& slot = slots[i];
      const std::vector<uint32_t>* plan_of = &boot_iterations;
      if (!stopped.empty()) {
        auto it = stopped.find(SweepArm{obs[i].param_name, obs[i].param_value, obs[i].arm});
        if (it != stopped.end()) plan_of = &it->second;
      }
      if (slot.boot_rank < plan_of->size() && slot.position < (*plan_of)[slot.boot_rank]) {
        taken.push_back(obs[i]);
      }
    }
    absl::StatusOr<Comparison> comparison = Compare(taken, compare);
    if (!comparison.ok()) return comparison.status();
    ReplayLook look;
    look.plan = plan;
    look.samples = taken.size();
    look.decision = DecideAdaptive(spec, metrics, *comparison, plan, &earlier);
    for (RowOutcome& row : look.decision.rows) {
      const bool before = std::any_of(earlier.begin(), earlier.end(), [&](const RowOutcome& e) {
        return e.decided && e.metric == row.metric && e.param_name == row.param_name &&
               e.param_value == row.param_value && e.arm == row.arm;
      });
      // The driver's round numbers: 0 for the first look, one more per extension.
      if (row.decided && !before) row.decided_round = static_cast<uint32_t>(result.looks.size());
    }
    earlier = look.decision.rows;
    if (result.sequential && look.decision.action != AdaptiveDecision::Action::kStop) {
      const std::set<SweepArm> measured = StillMeasured(earlier, *comparison);
      for (const GroupResult& g : comparison->groups) {
        for (const ArmResult& a : g.arms) {
          SweepArm cell{g.param_name, g.param_value, a.arm};
          if (measured.count(cell) == 0) stopped.try_emplace(std::move(cell), boot_iterations);
        }
      }
    }
    const AdaptiveDecision::Action action = look.decision.action;
    const uint32_t next = look.decision.iterations_per_boot;
    result.looks.push_back(std::move(look));
    if (action == AdaptiveDecision::Action::kStop) {
      result.samples_used = taken.size();
      if (result.sequential) {
        result.rows = earlier;
        break;
      }
      for (const GroupResult& g : comparison->groups) {
        if (std::find(metrics.begin(), metrics.end(), g.metric) == metrics.end()) continue;
        for (size_t i = 1; i < g.arms.size(); ++i) {
          RowOutcome row;
          row.metric = g.metric;
          row.param_name = g.param_name;
          row.param_value = g.param_value;
          row.arm = g.arms[i].arm;
          row.label =
              absl::StrCat(g.metric, g.param_name.empty() && g.param_value.empty() ? "" : " ",
                           SweepLabel(g.param_name, g.param_value), ", arm ", g.arms[i].arm);
          row.verdict = g.arms[i].verdict;
          row.base_boots = g.arms[0].boots;
          row.arm_boots = g.arms[i].boots;
          row.base_samples = g.arms[0].n;
          row.arm_samples = g.arms[i].n;
          row.ratio = g.arms[i].test.ratio;
          row.p = g.arms[i].test.p;
          row.same_p = g.arms[i].test.same_p;
          result.rows.push_back(std::move(row));
        }
      }
      break;
    }
    if (action == AdaptiveDecision::Action::kAddBoot) {
      ++plan.boots;
      boot_iterations.push_back(next);
    } else {
      boot_iterations.back() = next;
    }
    plan.iterations_per_boot = next;
    // The up-front check bounds every plan the decisions can reach; this guards the loop.
    if (plan.boots > need_boots || next > need_iterations) {
      return absl::InternalError(absl::StrCat("the decision went past the options' maxima: ",
                                              result.looks.back().decision.reason));
    }
  }
  return result;
}

std::string RenderReplayText(const ReplayResult& result) {
  std::string out;
  for (size_t i = 0; i < result.looks.size(); ++i) {
    const ReplayLook& l = result.looks[i];
    absl::StrAppend(&out, "look ", i + 1, ": ", l.plan.boots, " boot", l.plan.boots == 1 ? "" : "s",
                    ", ", l.plan.iterations_per_boot, " iterations in the latest, ", l.samples,
                    " samples -> ", ActionName(l.decision.action), ": ", l.decision.reason, "\n");
  }
  absl::StrAppend(&out, "\n",
                  result.sequential ? "sequential verdicts (stop: verdict)"
                                    : "fixed-sample verdicts at the stop (stop: precision)",
                  "\n");
  absl::StrAppend(&out,
                  absl::StrFormat("%-40s %-8s %-13s %-17s %-8s %s\n", "row", "verdict", "boots b/a",
                                  "samples b/a", "ratio", result.sequential ? "decided" : ""));
  for (const RowOutcome& r : result.rows) {
    // stop: verdict: the look that decided the row; its (sweep value, arm) was measured no
    // more after it once every row there was decided.
    const std::string decided = !result.sequential ? ""
                                : r.decided        ? absl::StrCat("look ", r.decided_round + 1)
                                                   : "never";
    absl::StrAppend(
        &out, absl::StrFormat("%-40s %-8s %-13s %-17s %-8s %s\n", r.label, VerdictName(r.verdict),
                              absl::StrCat(r.base_boots, "/", r.arm_boots),
                              absl::StrCat(r.base_samples, "/", r.arm_samples),
                              r.ratio ? absl::StrFormat("%.4f", *r.ratio) : "-", decided));
  }
  const double share = result.samples_available > 0
                           ? 100.0 * static_cast<double>(result.samples_used) /
                                 static_cast<double>(result.samples_available)
                           : 0;
  absl::StrAppend(&out, absl::StrFormat("used %d of %d samples (%.1f%%)\n", result.samples_used,
                                        result.samples_available, share));
  return out;
}

std::string RenderReplayJson(const ReplayResult& result) {
  std::string out = absl::StrCat("{\"stop\":", result.sequential ? "\"verdict\"" : "\"precision\"",
                                 ",\"looks\":[");
  for (size_t i = 0; i < result.looks.size(); ++i) {
    const ReplayLook& l = result.looks[i];
    if (i > 0) out += ",";
    absl::StrAppend(&out, "{\"look\":", i + 1, ",\"boots\":", l.plan.boots,
                    ",\"iterations_per_boot\":", l.plan.iterations_per_boot,
                    ",\"samples\":", l.samples, ",\"action\":\"", ActionName(l.decision.action),
                    "\",\"next_iterations_per_boot\":", l.decision.iterations_per_boot,
                    ",\"reason\":", JsonQuote(l.decision.reason), ",\"rows\":[");
    for (size_t j = 0; j < l.decision.rows.size(); ++j) {
      if (j > 0) out += ",";
      AppendRowJson(out, l.decision.rows[j]);
    }
    out += "]}";
  }
  out += "],\"rows\":[";
  for (size_t j = 0; j < result.rows.size(); ++j) {
    if (j > 0) out += ",";
    AppendRowJson(out, result.rows[j]);
  }
  absl::StrAppend(&out, "],\"stop_reason\":",
                  JsonQuote(result.looks.empty() ? "" : result.looks.back().decision.reason),
                  ",\"samples_used\":", result.samples_used,
                  ",\"samples_available\":", result.samples_available, "}\n");
  return out;
}

}  // namespace tlbfleet::report
