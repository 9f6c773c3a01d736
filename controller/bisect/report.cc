#include "controller/bisect/report.h"

#include <cmath>
#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "controller/bisect/bisect_state.h"
#include "controller/bisect/bisection.h"

namespace tlbfleet::bisect {

namespace {

std::string MetricName(const v1::BisectSpec& spec) {
  std::string name =
      spec.benchmark().empty() ? spec.metric() : absl::StrCat(spec.benchmark(), ".", spec.metric());
  if (!spec.param().empty()) absl::StrAppend(&name, " (", spec.param(), ")");
  return name;
}

std::string Pct(double pct) { return absl::StrFormat("%+.1f%%", pct); }

// The latest figures measured for `entry`, newest step and round first.
std::optional<v1::BisectArmFigures> LatestFigures(const v1::BisectState& state,
                                                  const std::string& entry) {
  for (auto step = state.steps().rbegin(); step != state.steps().rend(); ++step) {
    for (auto round = step->rounds().rbegin(); round != step->rounds().rend(); ++round) {
      for (const v1::BisectArmFigures& f : round->comparison().arms()) {
        if (f.entry() == entry) return f;
      }
    }
  }
  return std::nullopt;
}

// bad vs good in percent: from the endpoint check when there was one, else from the latest
// step (every step measures both references).
std::optional<double> HeadlineChange(const v1::BisectState& state) {
  for (const v1::BisectStep& step : state.steps()) {
    if (step.number() == 0 && step.verdict() != v1::BISECT_VERDICT_UNSPECIFIED) {
      return step.rounds().rbegin()->comparison().versus_good_pct().estimate();
    }
  }
  const std::optional<v1::BisectArmFigures> good = LatestFigures(state, state.spec().good());
  const std::optional<v1::BisectArmFigures> bad = LatestFigures(state, state.spec().bad());
  if (good && bad && good->mean() != 0) return (bad->mean() / good->mean() - 1) * 100;
  return std::nullopt;
}

std::string Figure(const std::optional<v1::BisectArmFigures>& f) {
  if (!f) return absl::StrFormat("%18s", "n/a");
  return absl::StrFormat("%13.6g ±%3.0f%%", f->mean(), f->stddev_pct());
}

void AppendHeadline(const v1::BisectState& state, std::string* out) {
  const v1::BisectSpec& spec = state.spec();
  absl::StrAppend(out, "bisect ", state.id(), ": ", BisectStatusName(state.status()), "\n");
  if (const std::optional<double> change = HeadlineChange(state)) {
    const bool worse = spec.lower_is_better() ? *change > 0 : *change < 0;
    absl::StrAppend(out, Pct(*change), " ", worse ? "regression" : "improvement", " of ",
                    MetricName(spec), " between ", spec.good(), " and ", spec.bad());
  } else {
    absl::StrAppend(out, "change of ", MetricName(spec), " between ", spec.good(), " and ",
                    spec.bad());
  }
  if (state.status() == v1::BISECT_FOUND) {
    absl::StrAppend(out, "; first bad: ", state.first_bad(), "\n");
  } else {
    absl::StrAppend(out, "\n");
    if (!state.reason().empty()) absl::StrAppend(out, state.reason(), "\n");
  }
}

// The last good vs first bad table, from the latest figures of each.
void AppendTable(const v1::BisectState& state, std::string* out) {
  const std::string& last_good = state.spec().entries(static_cast<int>(state.good_index()));
  const std::string& first_bad = state.first_bad();
  const std::optional<v1::BisectArmFigures> g = LatestFigures(state, last_good);
  const std::optional<v1::BisectArmFigures> b = LatestFigures(state, first_bad);
  std::string pct = "n/a";
  if (g && b && g->mean() != 0) pct = Pct((b->mean() / g->mean() - 1) * 100);
  absl::StrAppend(
      out, "\n", absl::StrFormat("%18s  %29s\n", last_good, first_bad),
      "------------------  -----------------------------\n",
      "           %stddev     %change            %stddev\n",
      "               \\          |                   \\\n",
      absl::StrFormat("%s  %9s  %s  %s\n", Figure(g), pct, Figure(b), MetricName(state.spec())));
  if (g && b) {
    absl::StrAppend(out, absl::StrFormat("%18s  %29s\n", absl::StrCat(g->boots(), " boots"),
                                         absl::StrCat(b->boots(), " boots")));
  }
}

void AppendStep(const v1::BisectSpec& spec, const v1::BisectStep& step, std::string* out) {
  if (step.number() == 0) {
    absl::StrAppend(out, "  step 0  check: ", step.tested(), " against ", spec.good(), "\n");
  } else {
    absl::StrAppend(out, "  step ", step.number(), "  ", step.tested(), " (entry ",
                    step.tested_index(), ", between ", step.good_index(), " and ", step.bad_index(),
                    ")\n");
  }
  uint32_t boots = 0;
  for (const v1::BisectRound& r : step.rounds()) {
    boots += r.boots();
    absl::StrAppend(out, "          run ", r.run_id(), " (", boots, " boots per arm so far): ");
    const v1::BisectComparison& c = r.comparison();
    if (c.verdict() == v1::BISECT_VERDICT_UNSPECIFIED) {
      absl::StrAppend(out, "measuring\n");
      continue;
    }
    absl::StrAppend(out, "vs good ", PctInterval(c.versus_good_pct()));
    if (c.has_versus_bad_pct()) absl::StrAppend(out, ", vs bad ", PctInterval(c.versus_bad_pct()));
    std::string verdict = BisectVerdictName(c.verdict());
    if (step.number() == 0) {
      verdict = c.verdict() == v1::LIKE_BAD    ? "differs from good"
                : c.verdict() == v1::LIKE_GOOD ? "like good: not reproduced"
                                               : "can't tell";
    }
    absl::StrAppend(out, " -> ", verdict, "\n");
    if (!c.summary().empty()) absl::StrAppend(out, "            ", c.summary(), "\n");
  }
  for (const v1::BisectArmFigures& f : step.rounds().rbegin()->comparison().arms()) {
    absl::StrAppend(
        out, absl::StrFormat("            %-24s %12.6g ±%3.0f%%  %u boots, %u samples", f.entry(),
                             f.mean(), f.stddev_pct(), f.boots(), f.samples()));
    if (!f.kernel_release().empty()) absl::StrAppend(out, ", kernel ", f.kernel_release());
    absl::StrAppend(out, "\n");
  }
}

}  // namespace

std::string RenderReport(const v1::BisectState& state) {
  std::string out;
  AppendHeadline(state, &out);
  if (state.status() == v1::BISECT_FOUND) AppendTable(state, &out);
  absl::StrAppend(&out, "\nsteps (each run measures the tested entry with good ",
                  state.spec().good(), " and bad ", state.spec().bad(), "):\n");
  if (state.steps().empty()) absl::StrAppend(&out, "  none\n");
  for (const v1::BisectStep& step : state.steps()) AppendStep(state.spec(), step, &out);
  return out;
}

}  // namespace tlbfleet::bisect
