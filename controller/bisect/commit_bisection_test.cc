#include "controller/bisect/commit_bisection.h"

#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "controller/bisect/report.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tlbfleet::bisect {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

std::string Hash(int position) { return absl::StrFormat("c%02d", position); }

// A fake history: good is c00, the range c01..c<n>, bad is c<n>. From `culprit` on, the metric
// (higher is better) drops from 100 to 96. The comparison is the real ClassifyStep (and
// ClassifyAgainstParent, ClassifyEndpoints) on exact differences of the true means, so every
// verdict is deterministic; commits in `noisy` can't be told until a step has that many boots
// per arm.
struct FakeHistory {
  int n = 16;
  int culprit = 5;
  std::set<int> unbuildable;              // Next() asks for them: the driver skips them
  std::map<std::string, uint32_t> noisy;  // tested name -> boots per arm it needs
  bool parent_repeats = true;             // false: the culprit measures like its parent
  bool revert_fixes = true;               // false: bad with the culprit reverted measures like bad
  bool revert_applies = true;             // false: the driver calls SkipRevertCheck
  std::vector<std::string> searched;      // the commits of the search steps, skips included
  std::vector<StepKind> kinds;            // of every comparison, in order

  v1::BisectSpec Spec() const {
    v1::BisectSpec spec;
    spec.set_good(Hash(0));
    spec.set_bad(Hash(n));
    spec.set_benchmark("ebizzy");
    spec.set_metric("records_per_sec");
    spec.set_param("threads=4");
    v1::BisectCommits* commits = spec.mutable_commits();
    commits->set_source("linux");
    commits->set_good_rev("v6.1");
    commits->set_bad_rev("tlb-work");
    for (int i = 1; i <= n; ++i) {
      v1::BisectCommit* c = commits->add_range();
      c->set_hash(Hash(i));
      c->set_subject(absl::StrCat("subject ", i));
      c->set_author("A U Thor <a@example.org>");
    }
    return spec;
  }

  double Mean(const std::string& name) const {
    if (name.rfind("revert of ", 0) == 0) return revert_fixes ? 100 : 96;
    return std::stoi(name.substr(1)) >= culprit ? 96 : 100;
  }

  static Difference Compare(double tested, double reference) {
    if (tested == reference) return Difference::kSame;
    return tested > reference ? Difference::kBetter : Difference::kWorse;
  }

  static v1::ChangeInterval Pct(double tested, double reference) {
    v1::ChangeInterval i;
    const double p = (tested / reference - 1) * 100;
    i.set_estimate(p);
    i.set_low(p - 1.5);
    i.set_high(p + 1.5);
    return i;
  }

  absl::StatusOr<v1::BisectComparison> operator()(const StepRequest& r) {
    kinds.push_back(r.kind);
    v1::BisectComparison c;
    const double good = Mean(r.good);
    double tested = Mean(r.tested);
    if (r.kind == StepKind::kVerifyParent && !parent_repeats) tested = good;
    const double bad = Mean(r.bad);
    auto arm = [&](const std::string& entry, double mean) {
      v1::BisectArmFigures* f = c.add_arms();
      f->set_entry(entry);
      f->set_mean(mean);
      f->set_stddev_pct(1.0);
      f->set_boots(r.boots_per_arm);
      f->set_samples(r.boots_per_arm * 5);
    };
    const auto it = noisy.find(r.tested);
    const bool unclear = it != noisy.end() && r.boots_per_arm < it->second;
    arm(r.good, good);
    switch (r.kind) {
      case StepKind::kEndpointCheck:
        arm(r.bad, bad);
        *c.mutable_versus_good_pct() = Pct(bad, good);
        c.set_verdict(ClassifyEndpoints(unclear ? Difference::kUnknown : Compare(bad, good)));
        break;
      case StepKind::kVerifyParent:
        arm(r.tested, tested);
        *c.mutable_versus_good_pct() = Pct(tested, good);
        c.set_verdict(ClassifyAgainstParent(unclear ? Difference::kUnknown : Compare(tested, good),
                                            r.bad_is_worse));
        break;
      case StepKind::kSearch:
      case StepKind::kVerifyRevert:
        arm(r.tested, tested);
        arm(r.bad, bad);
        *c.mutable_versus_good_pct() = Pct(tested, good);
        *c.mutable_versus_bad_pct() = Pct(tested, bad);
        c.set_verdict(unclear ? v1::CANT_TELL
                              : ClassifyStep(Compare(tested, good), Compare(tested, bad),
                                             /*bad_is_worse=*/true,
                                             PlacementOf(c.versus_good_pct(), c.versus_bad_pct())));
        break;
    }
    c.set_summary(absl::StrCat("fake over ", r.run_ids.size(), " run(s)"));
    return c;
  }
};

// One call on the machine for what Next() asks: a run submitted or finished, a skip.
// Returns false when the bisection is done.
bool Act(CommitBisection* b, FakeHistory* history, int* next_run) {
  const NextAction a = b->Next();
  switch (a.kind) {
    case NextAction::Kind::kDone:
      return false;
    case NextAction::Kind::kAwaitRun:
      EXPECT_TRUE(b->Finished(a.run_id, std::ref(*history)).ok());
      return true;
    case NextAction::Kind::kMeasure:
      if (a.entries.size() == 3) {  // a search step, not the endpoint check
        const std::string& tested = a.entries[1];
        const bool new_step =
            b->state().steps().empty() ||
            b->state().steps().rbegin()->verdict() != v1::BISECT_VERDICT_UNSPECIFIED;
        if (new_step) history->searched.push_back(tested);
        if (history->unbuildable.count(std::stoi(tested.substr(1))) != 0) {
          EXPECT_TRUE(
              b->Skip(tested, absl::StrCat("build failed: ", tested, " does not link")).ok());
          return true;
        }
      }
      break;
    case NextAction::Kind::kVerifyParent:
      break;
    case NextAction::Kind::kVerifyRevert:
      if (!history->revert_applies) {
        EXPECT_TRUE(
            b->SkipRevertCheck(absl::StrCat("git revert ", a.revert, " conflicts in mm/tlb.c"))
                .ok());
        return true;
      }
      break;
  }
  EXPECT_TRUE(b->Submitted(absl::StrCat("r", (*next_run)++)).ok());
  return true;
}

void Drive(CommitBisection* b, FakeHistory* history) {
  int next_run = 1;
  for (int guard = 0; guard < 200; ++guard) {
    if (!Act(b, history, &next_run)) return;
  }
  ADD_FAILURE() << "the bisection did not end";
}

CommitBisection MustStart(const v1::BisectSpec& spec) {
  absl::StatusOr<CommitBisection> b = CommitBisection::Start("b1", spec);
  EXPECT_TRUE(b.ok()) << b.status();
  return *std::move(b);
}

std::vector<std::string> Hashes(std::initializer_list<int> positions) {
  std::vector<std::string> out;
  for (int p : positions) out.push_back(Hash(p));
  return out;
}

TEST(CommitBisectionTest, SixteenCommitsAreHalvedByCountAsGitDoes) {
  // The culprit at every position: the search tests these commits, in this order (the
  // midpoint of the bracket by count, as `git bisect` does on a linear history).
  const std::map<int, std::vector<int>> expected = {
      {1, {8, 4, 2, 1}},     {2, {8, 4, 2, 1}},     {3, {8, 4, 2, 3}},     {4, {8, 4, 2, 3}},
      {5, {8, 4, 6, 5}},     {6, {8, 4, 6, 5}},     {7, {8, 4, 6, 7}},     {8, {8, 4, 6, 7}},
      {9, {8, 12, 10, 9}},   {10, {8, 12, 10, 9}},  {11, {8, 12, 10, 11}}, {12, {8, 12, 10, 11}},
      {13, {8, 12, 14, 13}}, {14, {8, 12, 14, 13}}, {15, {8, 12, 14, 15}}, {16, {8, 12, 14, 15}},
  };
  for (const auto& [k, order] : expected) {
    FakeHistory history;
    history.culprit = k;
    CommitBisection b = MustStart(history.Spec());
    Drive(&b, &history);
    std::vector<std::string> want;
    for (int p : order) want.push_back(Hash(p));
    EXPECT_EQ(history.searched, want) << "culprit " << k;
    EXPECT_EQ(b.state().status(), v1::BISECT_FOUND) << "culprit " << k;
    EXPECT_EQ(b.state().first_bad(), Hash(k));
    EXPECT_EQ(b.state().verification().outcome(), v1::VERIFICATION_CONFIRMED) << "culprit " << k;
    // The endpoint check, four halvings, the parent check, the revert check.
    EXPECT_THAT(history.kinds, ElementsAre(StepKind::kEndpointCheck, StepKind::kSearch,
                                           StepKind::kSearch, StepKind::kSearch, StepKind::kSearch,
                                           StepKind::kVerifyParent, StepKind::kVerifyRevert))
        << "culprit " << k;
  }
}

TEST(CommitBisectionTest, EachStepMeasuresTheMidpointAgainstGoodAndBad) {
  FakeHistory history;
  CommitBisection b = MustStart(history.Spec());
  NextAction a = b.Next();
  ASSERT_EQ(a.kind, NextAction::Kind::kMeasure);
  EXPECT_EQ(a.step, 0u);
  EXPECT_EQ(a.entries, Hashes({0, 16}));  // the endpoint check
  EXPECT_EQ(a.boots, Bisection::kDefaultBootsPerRound);
  ASSERT_TRUE(b.Submitted("r1").ok());
  ASSERT_TRUE(b.Finished("r1", std::ref(history)).ok());
  a = b.Next();
  EXPECT_EQ(a.step, 1u);
  EXPECT_EQ(a.entries, Hashes({0, 8, 16}));
  ASSERT_TRUE(b.Submitted("r2").ok());
  ASSERT_TRUE(b.Finished("r2", std::ref(history)).ok());  // c08 like bad: (0, 8]
  EXPECT_EQ(b.Next().entries, Hashes({0, 4, 16}));
  EXPECT_EQ(b.state().steps(1).tested_index(), 8u);
  EXPECT_EQ(b.state().steps(1).verdict(), v1::LIKE_BAD);
}

TEST(CommitBisectionTest, AnUnbuildableMidpointIsSkippedForItsNearestNeighbours) {
  FakeHistory history;
  history.culprit = 11;
  history.unbuildable = {8, 7};  // the midpoint and the neighbour tried first
  CommitBisection b = MustStart(history.Spec());
  Drive(&b, &history);
  // 8 skipped, 7 skipped (older first on a tie), then 9; the rest halves around the skips.
  EXPECT_EQ(history.searched, Hashes({8, 7, 9, 12, 10, 11}));
  EXPECT_EQ(b.state().status(), v1::BISECT_FOUND);
  EXPECT_EQ(b.state().first_bad(), Hash(11));
  EXPECT_EQ(b.state().steps(1).verdict(), v1::SKIPPED);
  EXPECT_EQ(b.state().steps(1).skip_reason(), "build failed: c08 does not link");
  EXPECT_TRUE(b.state().steps(1).rounds().empty());  // nothing was measured
  const std::vector<std::string> log = CommitBisectLog(b.state());
  EXPECT_THAT(log, testing::Contains("#   skipped: build failed: c07 does not link"));
  EXPECT_THAT(log, testing::Contains("git bisect skip c07"));
}

TEST(CommitBisectionTest, OnlySkippedCommitsBetweenGoodAndBadGiveOneOf) {
  FakeHistory history;
  history.culprit = 5;
  history.unbuildable = {4};  // the culprit's parent
  CommitBisection b = MustStart(history.Spec());
  Drive(&b, &history);
  EXPECT_EQ(history.searched, Hashes({8, 4, 3, 5}));
  EXPECT_EQ(b.state().status(), v1::BISECT_ONE_OF);
  EXPECT_TRUE(b.state().first_bad().empty());
  EXPECT_THAT(b.state().first_bad_candidates(), ElementsAre("c04", "c05"));
  EXPECT_EQ(b.state().reason(),
            "only skipped commits lie between the last good c03 and the first bad c05: the first "
            "bad commit is one of c04 c05");
  EXPECT_FALSE(b.state().has_verification());  // no single commit to verify
  EXPECT_EQ(b.Next().kind, NextAction::Kind::kDone);
  const std::vector<std::string> log = CommitBisectLog(b.state());
  EXPECT_THAT(log, testing::Contains("# the first bad commit could be any of:"));
  EXPECT_THAT(log, testing::Contains("# [c04] subject 4"));
  EXPECT_THAT(log, testing::Contains("# [c05] subject 5"));
}

TEST(CommitBisectionTest, TheCulpritAtEitherEndIsFoundAndVerifiedAgainstItsParent) {
  for (const int k : {1, 16}) {
    FakeHistory history;
    history.culprit = k;
    CommitBisection b = MustStart(history.Spec());
    int next_run = 1;
    while (b.Next().kind != NextAction::Kind::kVerifyParent) {
      ASSERT_TRUE(Act(&b, &history, &next_run)) << "culprit " << k;
    }
    EXPECT_EQ(b.state().first_bad(), Hash(k));
    EXPECT_EQ(b.state().status(), v1::BISECT_RUNNING);  // until it is verified
    // The first commit's parent is good itself; bad's is the commit before it.
    EXPECT_EQ(b.Next().entries, Hashes({k - 1, k})) << "culprit " << k;
    Drive(&b, &history);
    EXPECT_EQ(b.state().status(), v1::BISECT_FOUND);
    EXPECT_EQ(b.state().verification().outcome(), v1::VERIFICATION_CONFIRMED);
  }
}

TEST(CommitBisectionTest, ASingleCommitRangeNeedsNoSearch) {
  FakeHistory history;
  history.n = 1;
  history.culprit = 1;
  v1::BisectSpec spec = history.Spec();
  spec.set_skip_endpoint_check(true);
  CommitBisection b = MustStart(spec);
  EXPECT_EQ(b.state().first_bad(), "c01");
  NextAction a = b.Next();
  EXPECT_EQ(a.kind, NextAction::Kind::kVerifyParent);
  EXPECT_EQ(a.step, 1u);
  EXPECT_EQ(a.entries, Hashes({0, 1}));
  Drive(&b, &history);
  EXPECT_EQ(b.state().verification().outcome(), v1::VERIFICATION_CONFIRMED);
}

TEST(CommitBisectionTest, CantTellAddsBootsToTheSameStepUntilItCan) {
  FakeHistory history;
  history.noisy["c08"] = 6;  // 3 rounds of 2 boots
  CommitBisection b = MustStart(history.Spec());
  Drive(&b, &history);
  ASSERT_EQ(b.state().status(), v1::BISECT_FOUND);
  EXPECT_EQ(b.state().first_bad(), "c05");
  const v1::BisectStep& step1 = b.state().steps(1);
  EXPECT_EQ(step1.tested(), "c08");
  ASSERT_EQ(step1.rounds_size(), 3);
  EXPECT_EQ(step1.rounds(0).comparison().verdict(), v1::CANT_TELL);
  EXPECT_EQ(step1.rounds(1).comparison().verdict(), v1::CANT_TELL);
  EXPECT_EQ(step1.verdict(), v1::LIKE_BAD);
  EXPECT_EQ(history.searched, Hashes({8, 4, 6, 5}));  // the same commits, one step longer
  const std::vector<std::string> log = CommitBisectLog(b.state());
  EXPECT_THAT(log, testing::Contains(
                       "#   run r2, 2 boots per arm so far: vs good -4.0% [-5.5%, -2.5%], vs bad "
                       "+0.0% [-1.5%, +1.5%] -> can't tell"));
  EXPECT_THAT(log, testing::Contains(
                       "#   run r4, 6 boots per arm so far: vs good -4.0% [-5.5%, -2.5%], vs bad "
                       "+0.0% [-1.5%, +1.5%] -> like bad"));
}

TEST(CommitBisectionTest, AtTheBootCapItStopsAndSaysBetweenWhichCommits) {
  FakeHistory history;
  history.noisy["c04"] = 100;  // never clear
  v1::BisectSpec spec = history.Spec();
  spec.set_max_boots_per_step(4);
  CommitBisection b = MustStart(spec);
  Drive(&b, &history);
  EXPECT_EQ(b.state().status(), v1::BISECT_AMBIGUOUS);
  EXPECT_EQ(b.state().reason(),
            "step 2: after 4 boots per arm, c04 could not be told like good or like bad (fake "
            "over 2 run(s)); the first bad commit is after c00 and at or before c08");
}

TEST(CommitBisectionTest, ResumesAfterEveryCallToTheSameState) {
  // Skips, a noisy step, a crash between Submitted() and Finished(), and a revert that does
  // not apply: the whole state round-trips through its serialised form after every call.
  auto make = [] {
    FakeHistory h;
    h.culprit = 11;
    h.unbuildable = {8};
    h.noisy["c11"] = 4;
    h.revert_applies = false;
    return h;
  };
  FakeHistory whole_history = make();
  CommitBisection whole = MustStart(whole_history.Spec());
  Drive(&whole, &whole_history);
  ASSERT_EQ(whole.state().status(), v1::BISECT_FOUND);

  FakeHistory history = make();
  std::string stored;
  ASSERT_TRUE(MustStart(history.Spec()).state().SerializeToString(&stored));
  int next_run = 1;
  int calls = 0;
  for (bool more = true; more && calls < 100; ++calls) {
    v1::BisectState state;
    ASSERT_TRUE(state.ParseFromString(stored));
    absl::StatusOr<CommitBisection> resumed = CommitBisection::Resume(state);
    ASSERT_TRUE(resumed.ok()) << resumed.status();
    more = Act(&*resumed, &history, &next_run);
    ASSERT_TRUE(resumed->state().SerializeToString(&stored));
  }
  EXPECT_GT(calls, 10);
  v1::BisectState final_state;
  ASSERT_TRUE(final_state.ParseFromString(stored));
  EXPECT_EQ(final_state.first_bad(), "c11");
  EXPECT_EQ(final_state.verification().outcome(), v1::VERIFICATION_CONFIRMED);
  EXPECT_EQ(final_state.SerializeAsString(), whole.state().SerializeAsString());
  EXPECT_EQ(history.searched, whole_history.searched);
}

TEST(CommitBisectionTest, AResumedPendingRunIsAwaitedNotSubmittedAgain) {
  FakeHistory history;
  CommitBisection b = MustStart(history.Spec());
  ASSERT_TRUE(b.Submitted("r1").ok());
  absl::StatusOr<CommitBisection> resumed = CommitBisection::Resume(b.state());
  ASSERT_TRUE(resumed.ok());
  const NextAction a = resumed->Next();
  EXPECT_EQ(a.kind, NextAction::Kind::kAwaitRun);
  EXPECT_EQ(a.run_id, "r1");
  EXPECT_EQ(resumed->Submitted("r2").code(), absl::StatusCode::kFailedPrecondition);
}

TEST(CommitBisectionTest, VerifiedCulpritIsConfirmedWithItsEvidence) {
  FakeHistory history;
  CommitBisection b = MustStart(history.Spec());
  Drive(&b, &history);
  const v1::BisectState& s = b.state();
  ASSERT_EQ(s.status(), v1::BISECT_FOUND);
  EXPECT_EQ(s.verification().outcome(), v1::VERIFICATION_CONFIRMED);
  EXPECT_EQ(s.verification().reason(),
            "c05 is again worse than its parent c04 (fake over 1 run(s)), and bad with it "
            "reverted measures like good (fake over 1 run(s))");
  EXPECT_TRUE(s.verification().revert_skipped().empty());
  const v1::BisectStep& parent = *(s.steps().rbegin() + 1);
  EXPECT_EQ(parent.kind(), v1::BISECT_STEP_VERIFY_PARENT);
  EXPECT_EQ(parent.good_index(), 4u);  // the parent's position
  EXPECT_EQ(parent.bad_index(), 5u);   // the culprit's
  EXPECT_EQ(parent.verdict(), v1::LIKE_BAD);
  EXPECT_DOUBLE_EQ(parent.rounds(0).comparison().versus_good_pct().estimate(), -4.0);
  const v1::BisectStep& revert = *s.steps().rbegin();
  EXPECT_EQ(revert.kind(), v1::BISECT_STEP_VERIFY_REVERT);
  EXPECT_EQ(revert.verdict(), v1::LIKE_GOOD);
  EXPECT_EQ(revert.rounds(0).comparison().arms(1).entry(), "revert of c05");
}

TEST(CommitBisectionTest, TheRevertCheckNamesTheCommitToRevertFromBad) {
  FakeHistory history;
  CommitBisection b = MustStart(history.Spec());
  int next_run = 1;
  while (b.Next().kind != NextAction::Kind::kVerifyRevert) {
    ASSERT_TRUE(Act(&b, &history, &next_run));
  }
  const NextAction a = b.Next();
  EXPECT_EQ(a.entries, Hashes({0, 16, 16}));
  EXPECT_EQ(a.revert, "c05");
}

TEST(CommitBisectionTest, ACulpritThatDoesNotRepeatAgainstItsParentIsNotReproduced) {
  FakeHistory history;
  history.parent_repeats = false;
  CommitBisection b = MustStart(history.Spec());
  Drive(&b, &history);
  EXPECT_EQ(b.state().status(), v1::BISECT_FOUND);
  EXPECT_EQ(b.state().first_bad(), "c05");
  EXPECT_EQ(b.state().verification().outcome(), v1::VERIFICATION_NOT_REPRODUCED);
  EXPECT_EQ(b.state().verification().reason(),
            "c05 did not measure worse than its parent c04 on fresh boots (fake over 1 run(s))");
  // No revert is measured for a culprit that did not repeat.
  EXPECT_EQ(history.kinds.back(), StepKind::kVerifyParent);
}

TEST(CommitBisectionTest, AParentCheckThatCannotTellAtTheCapIsNotReproduced) {
  FakeHistory history;
  v1::BisectSpec spec = history.Spec();
  spec.set_max_boots_per_step(2);  // one round per step
  CommitBisection b = MustStart(spec);
  int next_run = 1;
  while (b.Next().kind != NextAction::Kind::kVerifyParent) {
    ASSERT_TRUE(Act(&b, &history, &next_run));
  }
  history.noisy["c05"] = 100;  // clear in the search, never against its parent
  Drive(&b, &history);
  EXPECT_EQ(b.state().verification().outcome(), v1::VERIFICATION_NOT_REPRODUCED);
  EXPECT_EQ(b.state().verification().reason(),
            "after 2 boots per arm, c05 could not be told worse than its parent c04 (fake over 1 "
            "run(s))");
}

TEST(CommitBisectionTest, ARevertThatMeasuresLikeBadDoesNotFix) {
  FakeHistory history;
  history.revert_fixes = false;
  CommitBisection b = MustStart(history.Spec());
  Drive(&b, &history);
  EXPECT_EQ(b.state().status(), v1::BISECT_FOUND);
  EXPECT_EQ(b.state().verification().outcome(), v1::VERIFICATION_REVERT_DOES_NOT_FIX);
  EXPECT_EQ(b.state().verification().reason(),
            "bad with c05 reverted measured like bad (fake over 1 run(s))");
}

TEST(CommitBisectionTest, ARevertThatDoesNotApplyIsNotMeasuredAndTheReportSaysWhy) {
  FakeHistory history;
  history.revert_applies = false;
  CommitBisection b = MustStart(history.Spec());
  Drive(&b, &history);
  EXPECT_EQ(b.state().verification().outcome(), v1::VERIFICATION_CONFIRMED);
  EXPECT_EQ(b.state().verification().revert_skipped(), "git revert c05 conflicts in mm/tlb.c");
  EXPECT_EQ(b.state().verification().reason(),
            "c05 is again worse than its parent c04 (fake over 1 run(s)); its revert was not "
            "measured: git revert c05 conflicts in mm/tlb.c");
  EXPECT_EQ(history.kinds.back(), StepKind::kVerifyParent);  // nothing measured for the revert
  EXPECT_THAT(CommitBisectLog(b.state()),
              testing::Contains(HasSubstr("its revert was not measured: git revert c05")));
}

TEST(CommitBisectionTest, ARevertWhoseBootFailsIsSkippedWhilePending) {
  FakeHistory history;
  CommitBisection b = MustStart(history.Spec());
  int next_run = 1;
  while (b.Next().kind != NextAction::Kind::kVerifyRevert) {
    ASSERT_TRUE(Act(&b, &history, &next_run));
  }
  EXPECT_EQ(b.SkipRevertCheck("").code(), absl::StatusCode::kInvalidArgument);
  ASSERT_TRUE(b.Submitted("rv").ok());
  ASSERT_TRUE(b.SkipRevertCheck("the reverted kernel did not boot: panic in mm/init").ok());
  EXPECT_EQ(b.state().status(), v1::BISECT_FOUND);
  EXPECT_TRUE(b.state().pending_run_id().empty());
  EXPECT_EQ(b.state().steps().rbegin()->verdict(), v1::SKIPPED);
  EXPECT_EQ(b.SkipRevertCheck("again").code(), absl::StatusCode::kFailedPrecondition);
}

TEST(CommitBisectionTest, ACommitWhoseBootFailsIsSkippedWhileItsRunIsPending) {
  FakeHistory history;
  CommitBisection b = MustStart(history.Spec());
  int next_run = 1;
  ASSERT_TRUE(Act(&b, &history, &next_run));  // step 0 submitted
  ASSERT_TRUE(Act(&b, &history, &next_run));  // and finished
  ASSERT_TRUE(b.Submitted("r9").ok());        // step 1: c08
  // Only the open step's commit may be skipped now.
  EXPECT_EQ(b.Skip("c07", "no").code(), absl::StatusCode::kFailedPrecondition);
  ASSERT_TRUE(b.Skip("c08", "boot failed: no console after 300 s").ok());
  EXPECT_TRUE(b.state().pending_run_id().empty());
  EXPECT_EQ(b.state().steps(1).verdict(), v1::SKIPPED);
  EXPECT_EQ(b.state().steps(1).rounds_size(), 1);  // the run is kept as evidence
  EXPECT_EQ(b.Next().entries, Hashes({0, 7, 16}));
}

TEST(CommitBisectionTest, ACommitKnownNotToBuildCanBeSkippedBeforeItIsAskedFor) {
  FakeHistory history;
  CommitBisection b = MustStart(history.Spec());
  // Step 0 comes first.
  EXPECT_EQ(b.Skip("c08", "does not build").code(), absl::StatusCode::kFailedPrecondition);
  int next_run = 1;
  ASSERT_TRUE(Act(&b, &history, &next_run));
  ASSERT_TRUE(Act(&b, &history, &next_run));
  ASSERT_TRUE(b.Skip("c08", "does not build").ok());
  EXPECT_EQ(b.state().steps(1).number(), 1u);
  EXPECT_EQ(b.Skip("c08", "does not build").code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(b.Next().entries, Hashes({0, 7, 16}));
  EXPECT_EQ(b.Next().step, 2u);
}

TEST(CommitBisectionTest, SkippingGoodOrBadStopsTheBisection) {
  FakeHistory history;
  CommitBisection b = MustStart(history.Spec());
  ASSERT_TRUE(b.Submitted("r1").ok());
  ASSERT_TRUE(b.Skip("c16", "build failed: bad does not build with this config").ok());
  EXPECT_EQ(b.state().status(), v1::BISECT_FAILED);
  EXPECT_EQ(b.state().reason(),
            "bad c16 cannot be tested (build failed: bad does not build with this config); it is "
            "measured in every step");
  EXPECT_TRUE(b.state().pending_run_id().empty());
  EXPECT_EQ(b.Next().kind, NextAction::Kind::kDone);
  EXPECT_EQ(b.Skip("c03", "x").code(), absl::StatusCode::kFailedPrecondition);
}

TEST(CommitBisectionTest, SkipsOutsideTheBracketOrAfterTheSearchAreRefused) {
  FakeHistory history;
  CommitBisection b = MustStart(history.Spec());
  int next_run = 1;
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(Act(&b, &history, &next_run));  // step 0, c08 bad
  EXPECT_EQ(b.Skip("c12", "x").code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(b.Skip("c12", "x").message()), HasSubstr("already known like bad"));
  EXPECT_EQ(b.Skip("nope", "x").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(std::string(b.Skip("nope", "x").message()),
            "commit: unknown commit 'nope': neither good nor in c00..c16");
  EXPECT_EQ(std::string(b.Skip("c03", "").message()),
            "reason: empty: say why the commit cannot be tested");
  while (b.Next().kind != NextAction::Kind::kVerifyParent) {
    ASSERT_TRUE(Act(&b, &history, &next_run));
  }
  EXPECT_EQ(b.Skip("c05", "x").code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(b.SkipRevertCheck("x").code(), absl::StatusCode::kFailedPrecondition);
}

std::string StartError(const v1::BisectSpec& spec) {
  absl::StatusOr<CommitBisection> b = CommitBisection::Start("b1", spec);
  EXPECT_EQ(b.status().code(), absl::StatusCode::kInvalidArgument);
  return std::string(b.status().message());
}

TEST(CommitBisectionTest, BadInputIsRefusedNamingTheField) {
  FakeHistory history;
  v1::BisectSpec spec = history.Spec();
  spec.set_bad("c00");
  EXPECT_EQ(StartError(spec), "bad: good and bad are the same commit 'c00'");
  spec = history.Spec();
  spec.mutable_commits()->clear_range();
  EXPECT_EQ(StartError(spec),
            "commits.range: empty: no commit lies in c00..c16 (is good an ancestor of bad?)");
  spec = history.Spec();
  spec.set_bad("c99");
  EXPECT_EQ(StartError(spec), "bad: unknown commit 'c99': commits.range ends with 'c16'");
  spec = history.Spec();
  spec.set_bad("c09");
  EXPECT_EQ(StartError(spec),
            "bad: 'c09' is commits.range[8], not the last; good..bad ends with bad");
  spec = history.Spec();
  spec.set_good("c03");
  EXPECT_EQ(StartError(spec), "good: 'c03' is commits.range[2]; good..bad excludes good");
  spec = history.Spec();
  spec.set_good("");
  EXPECT_EQ(StartError(spec), "good: missing");
  spec = history.Spec();
  spec.mutable_commits()->mutable_range(3)->set_hash("c02");
  EXPECT_EQ(StartError(spec), "commits.range[3].hash: 'c02' appears twice");
  spec = history.Spec();
  spec.mutable_commits()->mutable_range(0)->clear_hash();
  EXPECT_EQ(StartError(spec), "commits.range[0].hash: empty");
  spec = history.Spec();
  spec.add_entries("e0");
  EXPECT_EQ(StartError(spec), "entries: a commit bisection lists commits.range, not boot entries");
  spec = history.Spec();
  spec.set_boots_per_round(4);
  spec.set_max_boots_per_step(3);
  EXPECT_EQ(StartError(spec), "max_boots_per_step: 3 is less than boots_per_round (4)");
  EXPECT_EQ(CommitBisection::Start("", history.Spec()).status().message(), "id: missing");
}

TEST(CommitBisectionTest, ACorruptStoredStateIsRefused) {
  FakeHistory history;
  CommitBisection b = MustStart(history.Spec());
  int next_run = 1;
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(Act(&b, &history, &next_run));  // step 1 pending
  auto error = [](const v1::BisectState& s) {
    return std::string(CommitBisection::Resume(s).status().message());
  };
  v1::BisectState s = b.state();
  s.set_pending_run_id("r7");
  EXPECT_EQ(error(s), "pending_run_id: 'r7' is not the open step's last run");
  s = b.state();
  s.mutable_steps(1)->set_tested("c09");
  EXPECT_EQ(error(s), "steps[1].tested: does not match commits.range");
  s = b.state();
  s.set_bad_index(17);
  EXPECT_EQ(error(s), "good_index: bracket [0, 17] does not fit 16 commits");
  s = b.state();
  s.set_first_bad("c99");
  EXPECT_EQ(error(s), "first_bad: unknown commit 'c99'");
  s = b.state();
  s.mutable_steps(1)->set_verdict(v1::SKIPPED);
  EXPECT_EQ(error(s), "steps[1].verdict: a skip needs a reason, and not in step 0");
  // Running, no step open, and nothing left between the bracket's ends.
  s = b.state();
  s.clear_pending_run_id();
  s.mutable_steps(1)->set_verdict(v1::LIKE_GOOD);
  s.set_good_index(15);
  EXPECT_EQ(error(s), "status: running, but no commit is left to test in the bracket");
  // A plain boot-entry state is not a commit bisection.
  v1::BisectState entries = b.state();
  entries.mutable_spec()->clear_commits();
  entries.mutable_spec()->add_entries("e0");
  EXPECT_EQ(CommitBisection::Resume(entries).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(CommitBisectionTest, AComparisonErrorChangesNothingAndARunFailureStops) {
  FakeHistory history;
  CommitBisection b = MustStart(history.Spec());
  ASSERT_TRUE(b.Submitted("r1").ok());
  EXPECT_EQ(b.Finished("r2", std::ref(history)).code(), absl::StatusCode::kFailedPrecondition);
  const std::string before = b.state().SerializeAsString();
  const StepComparator failing = [](const StepRequest&) -> absl::StatusOr<v1::BisectComparison> {
    return absl::UnavailableError("store busy");
  };
  EXPECT_EQ(b.Finished("r1", failing).code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(b.state().SerializeAsString(), before);
  const StepComparator skipping = [](const StepRequest&) {
    v1::BisectComparison c;
    c.set_verdict(v1::SKIPPED);  // only Skip() skips
    return absl::StatusOr<v1::BisectComparison>(c);
  };
  EXPECT_EQ(b.Finished("r1", skipping).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(b.state().SerializeAsString(), before);
  ASSERT_TRUE(b.RunFailed("r1", "host vm2 lost").ok());
  EXPECT_EQ(b.state().status(), v1::BISECT_FAILED);
  EXPECT_EQ(b.state().reason(), "step 0: run r1 failed: host vm2 lost");
  b = MustStart(history.Spec());
  ASSERT_TRUE(b.Submitted("r1").ok());
  b.Cancel();
  EXPECT_EQ(b.state().status(), v1::BISECT_CANCELLED);
  EXPECT_EQ(b.Next().kind, NextAction::Kind::kDone);
}

TEST(CommitBisectionTest, TheParentCheckKnowsWhichWayBadWent) {
  // Its runs hold neither reference, so the comparator is told which way bad went: from the
  // search's numbers (here 100 -> 96) in the metric's own sense of better.
  FakeHistory history;
  CommitBisection b = MustStart(history.Spec());
  int next_run = 1;
  while (b.Next().kind != NextAction::Kind::kVerifyParent) {
    ASSERT_TRUE(Act(&b, &history, &next_run));
  }
  bool bad_is_worse = false;
  const StepComparator probe = [&](const StepRequest& r) {
    bad_is_worse = r.bad_is_worse;
    EXPECT_EQ(r.kind, StepKind::kVerifyParent);
    EXPECT_EQ(r.good, "c04");
    EXPECT_EQ(r.tested, "c05");
    v1::BisectComparison c;
    c.set_verdict(v1::CANT_TELL);
    return absl::StatusOr<v1::BisectComparison>(c);
  };
  ASSERT_TRUE(b.Submitted("rp").ok());
  ASSERT_TRUE(b.Finished("rp", probe).ok());
  EXPECT_TRUE(bad_is_worse);  // 100 -> 96, higher is better
  v1::BisectState s = b.state();
  s.mutable_spec()->set_lower_is_better(true);  // 100 -> 96 is then an improvement
  absl::StatusOr<CommitBisection> lower = CommitBisection::Resume(s);
  ASSERT_TRUE(lower.ok()) << lower.status();
  ASSERT_TRUE(lower->Submitted("rq").ok());
  ASSERT_TRUE(lower->Finished("rq", probe).ok());
  EXPECT_FALSE(bad_is_worse);
}

TEST(CommitBisectLogTest, ReadsAndReplaysLikeGitBisectLog) {
  FakeHistory history;
  history.n = 6;
  history.culprit = 5;
  history.unbuildable = {3};
  CommitBisection b = MustStart(history.Spec());
  Drive(&b, &history);
  ASSERT_EQ(b.state().first_bad(), "c05");
  const std::vector<std::string> want = {
      "# bisect b1: ebizzy.records_per_sec (threads=4), source linux, 6 commits in v6.1..tlb-work",
      "git bisect start",
      "# bad: [c06] subject 6",
      "git bisect bad c06",
      "# good: [c00] v6.1",
      "git bisect good c00",
      "# step 0: bad against good",
      "#   run r1, 2 boots per arm so far: bad vs good -4.0% [-5.5%, -2.5%] -> differs from good",
      "#     fake over 1 run(s)",
      "# step 1: [c03] subject 3 (commit 3 of 6, between 0 and 6)",
      "#   skipped: build failed: c03 does not link",
      "git bisect skip c03",
      "# step 2: [c02] subject 2 (commit 2 of 6, between 0 and 6)",
      "#   run r2, 2 boots per arm so far: vs good +0.0% [-1.5%, +1.5%], vs bad +4.2% [+2.7%, "
      "+5.7%] -> like good",
      "#     fake over 1 run(s)",
      "git bisect good c02",
      "# step 3: [c04] subject 4 (commit 4 of 6, between 2 and 6)",
      "#   run r3, 2 boots per arm so far: vs good +0.0% [-1.5%, +1.5%], vs bad +4.2% [+2.7%, "
      "+5.7%] -> like good",
      "#     fake over 1 run(s)",
      "git bisect good c04",
      "# step 4: [c05] subject 5 (commit 5 of 6, between 4 and 6)",
      "#   run r4, 2 boots per arm so far: vs good -4.0% [-5.5%, -2.5%], vs bad +0.0% [-1.5%, "
      "+1.5%] -> like bad",
      "#     fake over 1 run(s)",
      "git bisect bad c05",
      "# first bad commit: [c05] subject 5",
      "# step 5: verify c05 against its parent c04 on fresh boots",
      "#   run r5, 2 boots per arm so far: vs parent -4.0% [-5.5%, -2.5%] -> again worse than its "
      "parent",
      "#     fake over 1 run(s)",
      "# step 6: verify: bad with c05 reverted, against good and bad",
      "#   run r6, 2 boots per arm so far: vs good +0.0% [-1.5%, +1.5%], vs bad +4.2% [+2.7%, "
      "+5.7%] -> like good: the revert fixes it",
      "#     fake over 1 run(s)",
      "# verification: confirmed: c05 is again worse than its parent c04 (fake over 1 run(s)), "
      "and bad with it reverted measures like good (fake over 1 run(s))",
  };
  EXPECT_EQ(CommitBisectLog(b.state()), want);
}

}  // namespace
}  // namespace tlbfleet::bisect

// The report of a commit bisection (report.h): it names the commit, its subject and author, the
// verification, the skips with their reasons, the lab time, and the replayable log.
namespace tlbfleet::bisect {
namespace {

TEST(CommitBisectionReportTest, NamesTheCommitTheSkipsTheVerificationAndTheLabTime) {
  FakeHistory history;
  history.culprit = 5;
  history.unbuildable = {8};
  CommitBisection b = MustStart(history.Spec());
  Drive(&b, &history);
  ASSERT_EQ(b.state().status(), v1::BISECT_FOUND);
  v1::BisectState state = b.state();
  int64_t total = 0;
  for (v1::BisectStep& step : *state.mutable_steps()) {
    for (v1::BisectRound& round : *step.mutable_rounds()) {
      round.set_run_seconds(600);
      total += 600;
    }
  }
  ASSERT_GT(total, 3600);
  const std::string report = RenderReport(state);
  EXPECT_THAT(report, HasSubstr("between v6.1 (c00) and tlb-work (c16) (16 commits of source "
                                "linux)"));
  EXPECT_THAT(report, HasSubstr("first bad commit: c05\n    subject 5\n    author: A U Thor "
                                "<a@example.org>\n"));
  EXPECT_THAT(report, HasSubstr("verification: confirmed: c05 is again worse than its parent"));
  // The skipped step has no rounds: its reason, and nothing measured.
  EXPECT_THAT(report, HasSubstr("c08 subject 8 (commit 8 of 16, between 0 and 16)\n"
                                "          skipped: build failed: c08 does not link\n"));
  EXPECT_THAT(report, HasSubstr(absl::StrFormat("lab time: %d h %02d min over", total / 3600,
                                                (total % 3600) / 60)));
  EXPECT_THAT(report, HasSubstr("10 min 00 s"));
  EXPECT_THAT(report, HasSubstr("git bisect skip c08\n"));
  EXPECT_THAT(report, HasSubstr("# first bad commit: [c05] subject 5\n"));
}

TEST(CommitBisectionReportTest, OneOfListsTheCandidatesWithTheirSubjects) {
  FakeHistory history;
  history.culprit = 5;
  history.unbuildable = {4};
  CommitBisection b = MustStart(history.Spec());
  Drive(&b, &history);
  ASSERT_EQ(b.state().status(), v1::BISECT_ONE_OF);
  const std::string report = RenderReport(b.state());
  EXPECT_THAT(report, HasSubstr("the first bad commit is one of (only skipped commits are "
                                "left):\n    c04 subject 4\n    c05 subject 5\n"));
  EXPECT_THAT(report, Not(HasSubstr("first bad commit: ")));
}

TEST(CommitBisectionReportTest, AJustStartedCommitBisectionRendersWithoutSteps) {
  FakeHistory history;
  CommitBisection b = MustStart(history.Spec());
  const std::string report = RenderReport(b.state());
  EXPECT_THAT(report, HasSubstr("bisect b1: running"));
  EXPECT_THAT(report, HasSubstr("  none\n"));
  EXPECT_THAT(report, HasSubstr("lab time: 0 s over 0 runs"));
}

}  // namespace
}  // namespace tlbfleet::bisect
