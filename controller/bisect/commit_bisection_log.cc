// CommitBisectLog (commit_bisection.h): a commit bisection as `git bisect log` writes it, with
// the numbers behind every step.

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"
#include "controller/bisect/bisect_state.h"
#include "controller/bisect/commit_bisection.h"

namespace tlbfleet::bisect {

namespace {

std::string Short(absl::string_view hash) { return std::string(hash.substr(0, 12)); }

// "[<hash>] <subject>", as `git bisect log` names a commit.
std::string Named(const v1::BisectSpec& spec, absl::string_view hash) {
  for (const v1::BisectCommit& c : spec.commits().range()) {
    if (c.hash() == hash) return absl::StrCat("[", hash, "] ", c.subject());
  }
  if (hash == spec.good() && !spec.commits().good_rev().empty()) {
    return absl::StrCat("[", hash, "] ", spec.commits().good_rev());
  }
  return absl::StrCat("[", hash, "]");
}

std::string StepHeader(const v1::BisectSpec& spec, const v1::BisectStep& step) {
  const std::string prefix = absl::StrCat("# step ", step.number(), ": ");
  switch (KindOfStep(step)) {
    case StepKind::kEndpointCheck:
      return absl::StrCat(prefix, "bad against good");
    case StepKind::kSearch:
      return absl::StrCat(prefix, Named(spec, step.tested()), " (commit ", step.tested_index(),
                          " of ", spec.commits().range_size(), ", between ", step.good_index(),
                          " and ", step.bad_index(), ")");
    case StepKind::kVerifyParent:
      return absl::StrCat(prefix, "verify ", Short(step.tested()), " against its parent ",
                          Short(CommitAt(spec, step.tested_index() - 1)), " on fresh boots");
    case StepKind::kVerifyRevert:
      return absl::StrCat(prefix, "verify: bad with ", Short(step.tested()),
                          " reverted, against good and bad");
  }
  return prefix;
}

std::string RoundVerdict(StepKind kind, v1::BisectVerdict verdict) {
  if (verdict == v1::CANT_TELL) return "can't tell";
  const bool bad = verdict == v1::LIKE_BAD;
  switch (kind) {
    case StepKind::kEndpointCheck:
      return bad ? "differs from good" : "like good: not reproduced";
    case StepKind::kSearch:
      return BisectVerdictName(verdict);
    case StepKind::kVerifyParent:
      return bad ? "again worse than its parent" : "not worse than its parent";
    case StepKind::kVerifyRevert:
      return bad ? "like bad: the revert does not fix it" : "like good: the revert fixes it";
  }
  return BisectVerdictName(verdict);
}

void AppendRounds(const v1::BisectStep& step, std::vector<std::string>* lines) {
  const StepKind kind = KindOfStep(step);
  uint32_t boots = 0;
  for (const v1::BisectRound& r : step.rounds()) {
    boots += r.boots();
    std::string line = absl::StrCat("#   run ", r.run_id(), ", ", boots, " boots per arm so far: ");
    const v1::BisectComparison& c = r.comparison();
    if (c.verdict() == v1::BISECT_VERDICT_UNSPECIFIED) {
      // A closed step's round without a comparison: its run ended without one (a skip).
      lines->push_back(absl::StrCat(
          line, step.verdict() == v1::BISECT_VERDICT_UNSPECIFIED ? "measuring" : "not measured"));
      continue;
    }
    const char* versus = kind == StepKind::kEndpointCheck  ? "bad vs good "
                         : kind == StepKind::kVerifyParent ? "vs parent "
                                                           : "vs good ";
    absl::StrAppend(&line, versus, PctInterval(c.versus_good_pct()));
    if (c.has_versus_bad_pct())
      absl::StrAppend(&line, ", vs bad ", PctInterval(c.versus_bad_pct()));
    absl::StrAppend(&line, " -> ", RoundVerdict(kind, c.verdict()));
    lines->push_back(std::move(line));
    if (!c.summary().empty()) lines->push_back(absl::StrCat("#     ", c.summary()));
  }
}

}  // namespace

std::vector<std::string> CommitBisectLog(const v1::BisectState& state) {
  const v1::BisectSpec& spec = state.spec();
  const v1::BisectCommits& commits = spec.commits();
  std::vector<std::string> lines;
  std::string what =
      spec.benchmark().empty() ? spec.metric() : absl::StrCat(spec.benchmark(), ".", spec.metric());
  if (!spec.param().empty()) absl::StrAppend(&what, " (", spec.param(), ")");
  lines.push_back(absl::StrCat(
      "# bisect ", state.id(), ": ", what, ", source ",
      commits.source().empty() ? "?" : commits.source(), ", ", spec.commits().range_size(),
      " commits in ", commits.good_rev().empty() ? Short(spec.good()) : commits.good_rev(), "..",
      commits.bad_rev().empty() ? Short(spec.bad()) : commits.bad_rev()));
  lines.push_back("git bisect start");
  lines.push_back(absl::StrCat("# bad: ", Named(spec, spec.bad())));
  lines.push_back(absl::StrCat("git bisect bad ", spec.bad()));
  lines.push_back(absl::StrCat("# good: ", Named(spec, spec.good())));
  lines.push_back(absl::StrCat("git bisect good ", spec.good()));
  const std::string first_bad =
      state.first_bad().empty()
          ? ""
          : absl::StrCat("# first bad commit: ", Named(spec, state.first_bad()));
  bool first_bad_said = false;
  for (const v1::BisectStep& step : state.steps()) {
    // The conclusion of the search, before the steps that verify it.
    if (!first_bad.empty() && !first_bad_said && step.kind() != v1::BISECT_STEP_SEARCH) {
      lines.push_back(first_bad);
      first_bad_said = true;
    }
    lines.push_back(StepHeader(spec, step));
    AppendRounds(step, &lines);
    if (step.verdict() == v1::SKIPPED) {
      lines.push_back(
          absl::StrCat("#   ", KindOfStep(step) == StepKind::kSearch ? "skipped" : "not measured",
                       ": ", step.skip_reason()));
    }
    if (KindOfStep(step) != StepKind::kSearch) continue;
    if (step.verdict() == v1::LIKE_GOOD) {
      lines.push_back(absl::StrCat("git bisect good ", step.tested()));
    } else if (step.verdict() == v1::LIKE_BAD) {
      lines.push_back(absl::StrCat("git bisect bad ", step.tested()));
    } else if (step.verdict() == v1::SKIPPED) {
      lines.push_back(absl::StrCat("git bisect skip ", step.tested()));
    }
  }
  if (state.status() == v1::BISECT_ONE_OF) {
    lines.push_back("# only skipped commits are left to test");
    lines.push_back("# the first bad commit could be any of:");
    for (const std::string& c : state.first_bad_candidates()) {
      lines.push_back(absl::StrCat("# ", Named(spec, c)));
    }
  } else if (!first_bad.empty() && !first_bad_said) {
    lines.push_back(first_bad);
  }
  const v1::BisectVerification& v = state.verification();
  if (v.outcome() != v1::VERIFICATION_UNSPECIFIED) {
    lines.push_back(
        absl::StrCat("# verification: ", VerificationName(v.outcome()), ": ", v.reason()));
  }
  if (state.status() != v1::BISECT_RUNNING && state.status() != v1::BISECT_FOUND &&
      state.status() != v1::BISECT_ONE_OF) {
    lines.push_back(
        absl::StrCat("# stopped, ", BisectStatusName(state.status()), ": ", state.reason()));
  }
  return lines;
}

}  // namespace tlbfleet::bisect
