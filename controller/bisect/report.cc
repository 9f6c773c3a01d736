#include "controller/bisect/report.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "controller/bisect/bisect_state.h"
#include "controller/bisect/bisection.h"
#include "controller/bisect/commit_bisection.h"

namespace tlbfleet::bisect {

namespace {

std::string MetricName(const v1::BisectSpec& spec) {
  std::string name =
      spec.benchmark().empty() ? spec.metric() : absl::StrCat(spec.benchmark(), ".", spec.metric());
  if (!spec.param().empty()) absl::StrAppend(&name, " (", spec.param(), ")");
  return name;
}

std::string Pct(double pct) { return absl::StrFormat("%+.1f%%", pct); }

bool OverCommits(const v1::BisectSpec& spec) { return spec.has_commits(); }

// The commit of a commit bisection's range (or good), for its subject and author.
const v1::BisectCommit* FindCommit(const v1::BisectSpec& spec, const std::string& hash) {
  for (const v1::BisectCommit& c : spec.commits().range()) {
    if (c.hash() == hash) return &c;
  }
  return nullptr;
}

// "0123456789ab subject", as `git log --oneline` names a commit.
std::string OneLine(const v1::BisectSpec& spec, const std::string& hash) {
  const v1::BisectCommit* c = FindCommit(spec, hash);
  std::string out = hash.substr(0, 12);
  if (c != nullptr && !c->subject().empty()) absl::StrAppend(&out, " ", c->subject());
  return out;
}

// A reference as the user named it: "lab-base (0123456789ab)".
std::string Reference(const v1::BisectSpec& spec, bool good) {
  const std::string& hash = good ? spec.good() : spec.bad();
  if (!OverCommits(spec)) return hash;
  const std::string& rev = good ? spec.commits().good_rev() : spec.commits().bad_rev();
  if (rev.empty() || rev == hash) return hash.substr(0, 12);
  return absl::StrCat(rev, " (", hash.substr(0, 12), ")");
}

// The last good entry or commit: the bracket's lower end.
std::string LastGood(const v1::BisectState& state) {
  const v1::BisectSpec& spec = state.spec();
  if (OverCommits(spec)) {
    if (state.good_index() > static_cast<uint32_t>(spec.commits().range_size())) return "";
    return CommitAt(spec, state.good_index());
  }
  if (state.good_index() >= static_cast<uint32_t>(spec.entries_size())) return "";
  return spec.entries(static_cast<int>(state.good_index()));
}

// "revert of 0123456789ab": full hashes in `text` cut to 12 digits.
std::string ShortHashes(const std::string& text) {
  std::string out;
  size_t i = 0;
  while (i < text.size()) {
    size_t j = i;
    while (j < text.size() && std::isxdigit(static_cast<unsigned char>(text[j]))) ++j;
    if (j - i >= 40) {
      out += text.substr(i, 12);
    } else {
      out += text.substr(i, std::max<size_t>(j - i, 1));
    }
    i = std::max(j, i + 1);
  }
  return out;
}

std::string Duration(int64_t seconds) {
  if (seconds < 60) return absl::StrCat(seconds, " s");
  if (seconds < 3600) return absl::StrFormat("%d min %02d s", seconds / 60, seconds % 60);
  return absl::StrFormat("%d h %02d min", seconds / 3600, (seconds % 3600) / 60);
}

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
                    MetricName(spec), " between ", Reference(spec, true), " and ",
                    Reference(spec, false));
  } else {
    absl::StrAppend(out, "change of ", MetricName(spec), " between ", Reference(spec, true),
                    " and ", Reference(spec, false));
  }
  if (OverCommits(spec)) {
    absl::StrAppend(out, " (", spec.commits().range_size(), " commits of source ",
                    spec.commits().source(), ")\n");
    if (!state.first_bad().empty()) {
      const v1::BisectCommit* c = FindCommit(spec, state.first_bad());
      absl::StrAppend(out, "first bad commit: ", state.first_bad(), "\n");
      if (c != nullptr && !c->subject().empty()) absl::StrAppend(out, "    ", c->subject(), "\n");
      if (c != nullptr && !c->author().empty()) {
        absl::StrAppend(out, "    author: ", c->author(), "\n");
      }
      const v1::BisectVerification& v = state.verification();
      if (v.outcome() == v1::VERIFICATION_UNSPECIFIED) {
        absl::StrAppend(out, "verification: ",
                        state.status() == v1::BISECT_RUNNING ? "measuring" : "not verified", "\n");
      } else {
        absl::StrAppend(out, "verification: ", VerificationName(v.outcome()), ": ", v.reason(),
                        "\n");
      }
    }
    if (state.status() == v1::BISECT_ONE_OF) {
      absl::StrAppend(out, "the first bad commit is one of (only skipped commits are left):\n");
      for (const std::string& c : state.first_bad_candidates()) {
        absl::StrAppend(out, "    ", OneLine(spec, c), "\n");
      }
    }
    if (state.status() != v1::BISECT_FOUND && state.status() != v1::BISECT_RUNNING &&
        !state.reason().empty()) {
      absl::StrAppend(out, state.reason(), "\n");
    }
    return;
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
  // Over commits the last good is the culprit's parent (the bracket's lower end).
  const std::string last_good = LastGood(state);
  const std::string& first_bad = state.first_bad();
  if (last_good.empty() || first_bad.empty()) return;
  const std::optional<v1::BisectArmFigures> g = LatestFigures(state, last_good);
  const std::optional<v1::BisectArmFigures> b = LatestFigures(state, first_bad);
  std::string pct = "n/a";
  if (g && b && g->mean() != 0) pct = Pct((b->mean() / g->mean() - 1) * 100);
  absl::StrAppend(
      out, "\n",
      absl::StrFormat("%18s  %29s\n",
                      OverCommits(state.spec()) ? last_good.substr(0, 12) : last_good,
                      OverCommits(state.spec()) ? first_bad.substr(0, 12) : first_bad),
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
  const bool commits = OverCommits(spec);
  const std::string tested = commits ? OneLine(spec, step.tested()) : step.tested();
  switch (KindOfStep(step)) {
    case StepKind::kEndpointCheck:
      absl::StrAppend(out, "  step 0  check: ", commits ? "bad" : step.tested(), " against ",
                      commits ? "good" : spec.good(), "\n");
      break;
    case StepKind::kSearch:
      absl::StrAppend(out, "  step ", step.number(), "  ", tested, " (",
                      commits ? "commit " : "entry ", step.tested_index(),
                      commits ? absl::StrCat(" of ", spec.commits().range_size()) : "",
                      ", between ", step.good_index(), " and ", step.bad_index(), ")\n");
      break;
    case StepKind::kVerifyParent:
      absl::StrAppend(out, "  step ", step.number(), "  verify: ", step.tested().substr(0, 12),
                      " against its parent ",
                      step.tested_index() > 0 && commits
                          ? CommitAt(spec, step.tested_index() - 1).substr(0, 12)
                          : std::string("?"),
                      " on fresh boots\n");
      break;
    case StepKind::kVerifyRevert:
      absl::StrAppend(out, "  step ", step.number(), "  verify: bad with ",
                      step.tested().substr(0, 12), " reverted, against good and bad\n");
      break;
  }
  if (step.verdict() == v1::SKIPPED) {
    absl::StrAppend(out, "          ",
                    KindOfStep(step) == StepKind::kSearch ? "skipped: " : "not measured: ",
                    step.skip_reason(), "\n");
  }
  uint32_t boots = 0;
  for (const v1::BisectRound& r : step.rounds()) {
    boots += r.boots();
    absl::StrAppend(out, "          run ", r.run_id(), " (", boots, " boots per arm so far");
    if (r.run_seconds() > 0) absl::StrAppend(out, ", ", Duration(r.run_seconds()));
    absl::StrAppend(out, "): ");
    const v1::BisectComparison& c = r.comparison();
    if (c.verdict() == v1::BISECT_VERDICT_UNSPECIFIED) {
      absl::StrAppend(
          out, step.verdict() == v1::BISECT_VERDICT_UNSPECIFIED ? "measuring\n" : "not measured\n");
      continue;
    }
    absl::StrAppend(out, KindOfStep(step) == StepKind::kVerifyParent ? "vs parent " : "vs good ",
                    PctInterval(c.versus_good_pct()));
    if (c.has_versus_bad_pct()) absl::StrAppend(out, ", vs bad ", PctInterval(c.versus_bad_pct()));
    std::string verdict = BisectVerdictName(c.verdict());
    switch (KindOfStep(step)) {
      case StepKind::kEndpointCheck:
        verdict = c.verdict() == v1::LIKE_BAD    ? "differs from good"
                  : c.verdict() == v1::LIKE_GOOD ? "like good: not reproduced"
                                                 : "can't tell";
        break;
      case StepKind::kVerifyParent:
        verdict = c.verdict() == v1::LIKE_BAD    ? "again worse than its parent"
                  : c.verdict() == v1::LIKE_GOOD ? "not worse than its parent"
                                                 : "can't tell";
        break;
      default:
        break;
    }
    absl::StrAppend(out, " -> ", verdict, "\n");
    if (!c.summary().empty()) absl::StrAppend(out, "            ", c.summary(), "\n");
  }
  if (step.rounds().empty()) return;  // a skipped commit: nothing measured
  for (const v1::BisectArmFigures& f : step.rounds().rbegin()->comparison().arms()) {
    absl::StrAppend(out, absl::StrFormat("            %-24s %12.6g ±%3.0f%%  %u boots, %u samples",
                                         commits ? ShortHashes(f.entry()) : f.entry(), f.mean(),
                                         f.stddev_pct(), f.boots(), f.samples()));
    if (!f.kernel_release().empty()) absl::StrAppend(out, ", kernel ", f.kernel_release());
    absl::StrAppend(out, "\n");
  }
}

// Lab time: every round's run, from submission to end.
void AppendLabTime(const v1::BisectState& state, std::string* out) {
  int64_t seconds = 0;
  int runs = 0;
  for (const v1::BisectStep& step : state.steps()) {
    for (const v1::BisectRound& r : step.rounds()) {
      seconds += r.run_seconds();
      ++runs;
    }
  }
  absl::StrAppend(out, "lab time: ", Duration(seconds), " over ", runs,
                  runs == 1 ? " run" : " runs", "\n");
}

}  // namespace

std::string RenderReport(const v1::BisectState& state) {
  std::string out;
  const v1::BisectSpec& spec = state.spec();
  AppendHeadline(state, &out);
  if (state.status() == v1::BISECT_FOUND) AppendTable(state, &out);
  absl::StrAppend(&out, "\nsteps (each run measures the tested ",
                  OverCommits(spec) ? "commit" : "entry", " with good ", Reference(spec, true),
                  " and bad ", Reference(spec, false), "):\n");
  if (state.steps().empty()) absl::StrAppend(&out, "  none\n");
  for (const v1::BisectStep& step : state.steps()) AppendStep(spec, step, &out);
  if (OverCommits(spec)) {
    absl::StrAppend(&out, "\n");
    AppendLabTime(state, &out);
    absl::StrAppend(&out, "\ngit bisect log (git bisect replay reads it):\n");
    for (const std::string& line : CommitBisectLog(state)) absl::StrAppend(&out, line, "\n");
  }
  return out;
}

}  // namespace tlbfleet::bisect
