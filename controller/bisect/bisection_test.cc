#include "controller/bisect/bisection.h"

#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "controller/bisect/report.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tlbfleet::bisect {
namespace {

using ::testing::HasSubstr;

// A fake lab: entries e0..e(n-1); from `switch_at` on the metric (higher is better) drops from
// 100 to 88. Entries in `noisy` can't be told apart until a step has `clear_after` boots per
// arm. The comparison is the real ClassifyStep on "calibrated" differences of the true means.
struct FakeLab {
  int n = 10;
  int switch_at = 5;
  std::map<std::string, uint32_t> noisy;  // entry -> boots per arm it needs
  bool bad_like_good = false;             // the endpoint check sees no difference
  int calls = 0;
  std::vector<std::string> seen_runs;

  v1::BisectSpec Spec() const {
    v1::BisectSpec spec;
    for (int i = 0; i < n; ++i) spec.add_entries(absl::StrCat("e", i));
    spec.set_good("e0");
    spec.set_bad(absl::StrCat("e", n - 1));
    spec.set_benchmark("ebizzy");
    spec.set_metric("records_per_sec");
    spec.set_param("threads=4");
    return spec;
  }

  double Mean(const std::string& entry) const {
    if (bad_like_good) return 100;
    return std::stoi(entry.substr(1)) >= switch_at ? 88 : 100;
  }

  Difference Compare(const std::string& a, const std::string& b) const {
    if (Mean(a) == Mean(b)) return Difference::kSame;
    return Mean(a) > Mean(b) ? Difference::kBetter : Difference::kWorse;
  }

  absl::StatusOr<v1::BisectComparison> operator()(const StepRequest& r) {
    ++calls;
    seen_runs = r.run_ids;
    v1::BisectComparison c;
    auto pct = [&](const std::string& a, const std::string& b) {
      v1::ChangeInterval i;
      const double p = (Mean(a) / Mean(b) - 1) * 100;
      i.set_estimate(p);
      i.set_low(p - 1.5);
      i.set_high(p + 1.5);
      return i;
    };
    const bool endpoint_check = r.kind == StepKind::kEndpointCheck;
    for (const std::string& e : endpoint_check
                                    ? std::vector<std::string>{r.good, r.bad}
                                    : std::vector<std::string>{r.good, r.tested, r.bad}) {
      v1::BisectArmFigures* f = c.add_arms();
      f->set_entry(e);
      f->set_mean(Mean(e));
      f->set_stddev_pct(1.0);
      f->set_boots(r.boots_per_arm);
      f->set_samples(r.boots_per_arm * 5);
    }
    *c.mutable_versus_good_pct() = pct(r.tested, r.good);
    const auto it = noisy.find(r.tested);
    const bool unclear = it != noisy.end() && r.boots_per_arm < it->second;
    if (endpoint_check) {
      c.set_verdict(ClassifyEndpoints(unclear ? Difference::kUnknown : Compare(r.bad, r.good)));
    } else {
      *c.mutable_versus_bad_pct() = pct(r.tested, r.bad);
      const Placement estimate = PlacementOf(c.versus_good_pct(), c.versus_bad_pct());
      c.set_verdict(unclear ? v1::CANT_TELL
                            : ClassifyStep(Compare(r.tested, r.good), Compare(r.tested, r.bad),
                                           /*bad_is_worse=*/true, estimate));
    }
    c.set_summary(absl::StrCat("fake comparison over ", r.run_ids.size(), " run(s)"));
    return c;
  }
};

// Runs the machine to the end; every run gets id "r<k>". Returns the number of runs.
int Drive(Bisection* b, FakeLab* lab, int* next_run) {
  int runs = 0;
  for (int guard = 0; guard < 100; ++guard) {
    const NextAction a = b->Next();
    if (a.kind == NextAction::Kind::kDone) return runs;
    std::string run_id = a.run_id;
    if (a.kind == NextAction::Kind::kMeasure) {
      run_id = absl::StrCat("r", (*next_run)++);
      EXPECT_TRUE(b->Submitted(run_id).ok());
      ++runs;
    }
    EXPECT_TRUE(b->Finished(run_id, std::ref(*lab)).ok());
  }
  ADD_FAILURE() << "the bisection did not end";
  return runs;
}

TEST(BisectionTest, FindsAPlantedSwitchAtEveryIndex) {
  for (int k = 1; k < 10; ++k) {
    FakeLab lab;
    lab.switch_at = k;
    absl::StatusOr<Bisection> b = Bisection::Start("b1", lab.Spec());
    ASSERT_TRUE(b.ok()) << b.status();
    int next_run = 1;
    const int runs = Drive(&*b, &lab, &next_run);
    EXPECT_EQ(b->state().status(), v1::BISECT_FOUND) << "k=" << k;
    EXPECT_EQ(b->state().first_bad(), absl::StrCat("e", k));
    // The endpoint check plus at most ceil(log2(9)) = 4 halvings.
    EXPECT_LE(runs, 5) << "k=" << k;
    EXPECT_GE(runs, 1 + 3);
    EXPECT_EQ(b->state().bad_index(), static_cast<uint32_t>(k));
    EXPECT_EQ(b->state().good_index(), static_cast<uint32_t>(k - 1));
  }
}

TEST(BisectionTest, EachStepMeasuresTheMidpointBetweenTheOriginalReferences) {
  FakeLab lab;
  absl::StatusOr<Bisection> b = Bisection::Start("b1", lab.Spec());
  ASSERT_TRUE(b.ok());
  NextAction a = b->Next();
  ASSERT_EQ(a.kind, NextAction::Kind::kMeasure);
  EXPECT_EQ(a.step, 0u);
  EXPECT_EQ(a.entries, (std::vector<std::string>{"e0", "e9"}));  // the endpoint check
  EXPECT_EQ(a.boots, Bisection::kDefaultBootsPerRound);
  ASSERT_TRUE(b->Submitted("r1").ok());
  ASSERT_TRUE(b->Finished("r1", std::ref(lab)).ok());
  a = b->Next();
  EXPECT_EQ(a.step, 1u);
  EXPECT_EQ(a.entries, (std::vector<std::string>{"e0", "e4", "e9"}));
  ASSERT_TRUE(b->Submitted("r2").ok());
  ASSERT_TRUE(b->Finished("r2", std::ref(lab)).ok());  // e4 is like good: bracket [4, 9]
  a = b->Next();
  EXPECT_EQ(a.entries, (std::vector<std::string>{"e0", "e6", "e9"}));
}

TEST(BisectionTest, CantTellAddsBootsToTheSameStepUntilItCan) {
  FakeLab lab;
  lab.noisy["e4"] = 6;  // the first midpoint needs 6 boots per arm (3 rounds of 2)
  absl::StatusOr<Bisection> b = Bisection::Start("b1", lab.Spec());
  ASSERT_TRUE(b.ok());
  int next_run = 1;
  Drive(&*b, &lab, &next_run);
  ASSERT_EQ(b->state().status(), v1::BISECT_FOUND);
  EXPECT_EQ(b->state().first_bad(), "e5");
  const v1::BisectStep& step1 = b->state().steps(1);
  EXPECT_EQ(step1.tested(), "e4");
  ASSERT_EQ(step1.rounds_size(), 3);
  EXPECT_EQ(step1.rounds(0).comparison().verdict(), v1::CANT_TELL);
  EXPECT_EQ(step1.rounds(1).comparison().verdict(), v1::CANT_TELL);
  EXPECT_EQ(step1.verdict(), v1::LIKE_GOOD);
  // The comparison saw every run of the step, not only the latest.
  EXPECT_EQ(b->state().steps(1).rounds(2).run_id(), "r4");
  const std::string report = RenderReport(b->state());
  EXPECT_THAT(report, HasSubstr("run r2 (2 boots per arm so far)"));
  EXPECT_THAT(report, HasSubstr("run r4 (6 boots per arm so far)"));
}

TEST(BisectionTest, AtTheBootCapItStopsAndReportsTheAmbiguity) {
  FakeLab lab;
  lab.noisy["e6"] = 100;  // never clear
  v1::BisectSpec spec = lab.Spec();
  spec.set_boots_per_round(2);
  spec.set_max_boots_per_step(6);
  absl::StatusOr<Bisection> b = Bisection::Start("b7", spec);
  ASSERT_TRUE(b.ok());
  int next_run = 1;
  const int runs = Drive(&*b, &lab, &next_run);
  EXPECT_EQ(b->state().status(), v1::BISECT_AMBIGUOUS);
  EXPECT_EQ(runs, 1 + 1 + 3);  // check, e4, then e6 three times (2 + 2 + 2 = the cap)
  EXPECT_TRUE(b->state().first_bad().empty());
  EXPECT_THAT(b->state().reason(),
              HasSubstr("step 2: after 6 boots per arm, 'e6' could not be told like good or "
                        "like bad"));
  EXPECT_THAT(b->state().reason(), HasSubstr("after 'e4' and at or before 'e9'"));
  const std::string report = RenderReport(b->state());
  EXPECT_THAT(report, HasSubstr("bisect b7: ambiguous"));
  EXPECT_THAT(report, HasSubstr("e6 (entry 6, between 4 and 9)"));
  EXPECT_THAT(report, HasSubstr("-> can't tell"));
  EXPECT_EQ(b->Next().kind, NextAction::Kind::kDone);
}

TEST(BisectionTest, ResumesFromSerialisedStateToTheSameAnswer) {
  FakeLab lab;
  lab.switch_at = 3;
  lab.noisy["e2"] = 4;
  // Uninterrupted, for reference.
  absl::StatusOr<Bisection> whole = Bisection::Start("b1", lab.Spec());
  int next_run = 1;
  Drive(&*whole, &lab, &next_run);
  ASSERT_EQ(whole->state().status(), v1::BISECT_FOUND);

  // Interrupted after every change: serialise, throw the object away, parse, resume. Also
  // "crash" between Submitted() and Finished(): the resumed machine waits for that run.
  absl::StatusOr<Bisection> b = Bisection::Start("b1", lab.Spec());
  std::string stored;
  ASSERT_TRUE(b->state().SerializeToString(&stored));
  int run = 1;
  for (int guard = 0; guard < 50; ++guard) {
    v1::BisectState state;
    ASSERT_TRUE(state.ParseFromString(stored));
    absl::StatusOr<Bisection> resumed = Bisection::Resume(state);
    ASSERT_TRUE(resumed.ok()) << resumed.status();
    const NextAction a = resumed->Next();
    if (a.kind == NextAction::Kind::kDone) break;
    if (a.kind == NextAction::Kind::kMeasure) {
      ASSERT_TRUE(resumed->Submitted(absl::StrCat("r", run++)).ok());
    } else {
      EXPECT_EQ(a.run_id, absl::StrCat("r", run - 1));
      ASSERT_TRUE(resumed->Finished(a.run_id, std::ref(lab)).ok());
    }
    ASSERT_TRUE(resumed->state().SerializeToString(&stored));
  }
  v1::BisectState final_state;
  ASSERT_TRUE(final_state.ParseFromString(stored));
  EXPECT_EQ(final_state.status(), v1::BISECT_FOUND);
  EXPECT_EQ(final_state.first_bad(), "e3");
  EXPECT_EQ(final_state.SerializeAsString(), whole->state().SerializeAsString());
}

TEST(BisectionTest, EndpointCheckStopsWhenBadIsLikeGood) {
  FakeLab lab;
  lab.bad_like_good = true;
  absl::StatusOr<Bisection> b = Bisection::Start("b1", lab.Spec());
  int next_run = 1;
  EXPECT_EQ(Drive(&*b, &lab, &next_run), 1);
  EXPECT_EQ(b->state().status(), v1::BISECT_NOT_REPRODUCED);
  EXPECT_THAT(b->state().reason(), HasSubstr("bad 'e9' measured like good 'e0'"));
}

TEST(BisectionTest, SkippingTheEndpointCheckStartsAtTheMidpoint) {
  FakeLab lab;
  v1::BisectSpec spec = lab.Spec();
  spec.set_skip_endpoint_check(true);
  absl::StatusOr<Bisection> b = Bisection::Start("b1", spec);
  EXPECT_EQ(b->Next().step, 1u);
  EXPECT_EQ(b->Next().entries[1], "e4");
  // Adjacent entries without a check: found at once, nothing measured.
  spec.clear_entries();
  spec.add_entries("e0");
  spec.add_entries("e9");
  absl::StatusOr<Bisection> adjacent = Bisection::Start("b2", spec);
  ASSERT_TRUE(adjacent.ok());
  EXPECT_EQ(adjacent->state().status(), v1::BISECT_FOUND);
  EXPECT_EQ(adjacent->state().first_bad(), "e9");
}

TEST(BisectionTest, AFailedRunOrAComparisonErrorIsHandled) {
  FakeLab lab;
  absl::StatusOr<Bisection> b = Bisection::Start("b1", lab.Spec());
  ASSERT_TRUE(b->Submitted("r1").ok());
  // Nothing else may be submitted while r1 is pending, and only r1 may finish.
  EXPECT_EQ(b->Submitted("r2").code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(b->Finished("r9", std::ref(lab)).code(), absl::StatusCode::kFailedPrecondition);
  // A comparison that fails changes nothing: the same run can be judged again.
  const std::string before = b->state().SerializeAsString();
  const StepComparator failing = [](const StepRequest&) -> absl::StatusOr<v1::BisectComparison> {
    return absl::UnavailableError("store busy");
  };
  EXPECT_EQ(b->Finished("r1", failing).code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(b->state().SerializeAsString(), before);
  const StepComparator no_verdict = [](const StepRequest&) {
    return absl::StatusOr<v1::BisectComparison>(v1::BisectComparison());
  };
  EXPECT_EQ(b->Finished("r1", no_verdict).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(b->state().SerializeAsString(), before);
  ASSERT_TRUE(b->RunFailed("r1", "job 3 timed out on vm1").ok());
  EXPECT_EQ(b->state().status(), v1::BISECT_FAILED);
  EXPECT_EQ(b->state().reason(), "step 0: run r1 failed: job 3 timed out on vm1");
  EXPECT_EQ(b->Next().kind, NextAction::Kind::kDone);
}

TEST(BisectionTest, CancelStopsARunningBisection) {
  FakeLab lab;
  absl::StatusOr<Bisection> b = Bisection::Start("b1", lab.Spec());
  ASSERT_TRUE(b->Submitted("r1").ok());
  b->Cancel();
  EXPECT_EQ(b->state().status(), v1::BISECT_CANCELLED);
  EXPECT_EQ(b->state().reason(), "cancelled while run r1 was pending");
  EXPECT_EQ(b->Next().kind, NextAction::Kind::kDone);
}

std::string StartError(const v1::BisectSpec& spec) {
  absl::StatusOr<Bisection> b = Bisection::Start("b1", spec);
  EXPECT_EQ(b.status().code(), absl::StatusCode::kInvalidArgument);
  return std::string(b.status().message());
}

TEST(BisectionTest, BadSpecsAreRefusedNamingTheField) {
  FakeLab lab;
  v1::BisectSpec spec = lab.Spec();
  spec.set_bad("e0");
  EXPECT_EQ(StartError(spec), "bad: good and bad are the same entry 'e0'");
  spec = lab.Spec();
  spec.set_good("e7");
  spec.set_bad("e2");
  EXPECT_EQ(StartError(spec),
            "bad: 'e2' (entry 2) comes before good 'e7' (entry 7); entries are listed oldest "
            "first");
  spec = lab.Spec();
  spec.set_good("e42");
  EXPECT_EQ(StartError(spec), "good: unknown entry 'e42'");
  spec = lab.Spec();
  spec.set_bad("");
  EXPECT_EQ(StartError(spec), "bad: missing");
  spec = lab.Spec();
  spec.add_entries("e3");
  EXPECT_EQ(StartError(spec), "entries[10]: 'e3' appears twice");
  spec = lab.Spec();
  spec.clear_entries();
  EXPECT_EQ(StartError(spec), "entries: at least two boot entries are needed");
  spec = lab.Spec();
  spec.set_boots_per_round(4);
  spec.set_max_boots_per_step(3);
  EXPECT_EQ(StartError(spec), "max_boots_per_step: 3 is less than boots_per_round (4)");
}

TEST(BisectionTest, ACorruptStoredStateIsRefused) {
  FakeLab lab;
  absl::StatusOr<Bisection> b = Bisection::Start("b1", lab.Spec());
  ASSERT_TRUE(b->Submitted("r1").ok());
  v1::BisectState state = b->state();
  state.set_pending_run_id("r5");
  EXPECT_THAT(std::string(Bisection::Resume(state).status().message()),
              HasSubstr("pending_run_id: 'r5' is not the open step's last run"));
  state = b->state();
  state.set_bad_index(42);
  EXPECT_THAT(std::string(Bisection::Resume(state).status().message()),
              HasSubstr("does not fit 10 entries"));
  state = b->state();
  state.mutable_steps(0)->set_tested("e3");
  EXPECT_THAT(std::string(Bisection::Resume(state).status().message()),
              HasSubstr("steps[0].tested: does not match entries"));
}

TEST(ClassifyStepTest, EvidenceForOneSideOnly) {
  using D = Difference;
  // Where one comparison alone is the evidence, the intervals place the entry on that side of
  // halfway (the next test is about when they do not).
  constexpr Placement kNearGood{.nearer_good = true};
  constexpr Placement kNearBad{.nearer_bad = true};
  constexpr Placement kNowhere;
  // Regression (bad is worse than good).
  EXPECT_EQ(ClassifyStep(D::kSame, D::kBetter, true, kNowhere), v1::LIKE_GOOD);
  EXPECT_EQ(ClassifyStep(D::kUnknown, D::kBetter, true, kNearGood), v1::LIKE_GOOD);
  EXPECT_EQ(ClassifyStep(D::kSame, D::kUnknown, true, kNowhere), v1::LIKE_GOOD);
  EXPECT_EQ(ClassifyStep(D::kWorse, D::kSame, true, kNowhere), v1::LIKE_BAD);
  EXPECT_EQ(ClassifyStep(D::kWorse, D::kUnknown, true, kNearBad), v1::LIKE_BAD);
  EXPECT_EQ(ClassifyStep(D::kUnknown, D::kSame, true, kNowhere), v1::LIKE_BAD);
  EXPECT_EQ(ClassifyStep(D::kUnknown, D::kUnknown, true, kNearBad), v1::CANT_TELL);
  // Between the two (worse than good and better than bad): two changes add up.
  EXPECT_EQ(ClassifyStep(D::kWorse, D::kBetter, true, kNowhere), v1::CANT_TELL);
  // The same as both: the references do not differ in this run.
  EXPECT_EQ(ClassifyStep(D::kSame, D::kSame, true, kNowhere), v1::CANT_TELL);
  // Improvement bisect (bad is better): mirrored.
  EXPECT_EQ(ClassifyStep(D::kBetter, D::kSame, false, kNowhere), v1::LIKE_BAD);
  EXPECT_EQ(ClassifyStep(D::kSame, D::kWorse, false, kNowhere), v1::LIKE_GOOD);
  EXPECT_EQ(ClassifyStep(D::kBetter, D::kUnknown, false, kNearBad), v1::LIKE_BAD);
  EXPECT_EQ(ClassifyEndpoints(D::kWorse), v1::LIKE_BAD);
  EXPECT_EQ(ClassifyEndpoints(D::kSame), v1::LIKE_GOOD);
  EXPECT_EQ(ClassifyEndpoints(D::kUnknown), v1::CANT_TELL);
}

v1::ChangeInterval Pct(double estimate, double low, double high) {
  v1::ChangeInterval c;
  c.set_estimate(estimate);
  c.set_low(low);
  c.set_high(high);
  return c;
}

// Regression: with good at 100 and bad at 96, an entry measured at 98 (worse than good, and
// its comparison with bad unknown) was called like bad, pinning the whole change on the first
// of two commits that each did half. "Like bad" now waits until the entry is shown not better
// than bad: the same as bad, or beyond it, or its interval against bad kept nearer bad than
// halfway. "Like good" mirrors it.
TEST(ClassifyStepTest, BetweenGoodAndBadIsNotLikeBadUntilNotBetterThanBad) {
  using D = Difference;
  // 98 against 100 and 96, 2 boots: worse than good; against bad, +2.1 % with an interval
  // reaching past halfway (98, +2.1 %).
  const Placement halfway = PlacementOf(Pct(-2.0, -3.5, -0.5), Pct(+2.1, -0.4, +4.6));
  EXPECT_FALSE(halfway.nearer_bad);
  EXPECT_FALSE(halfway.nearer_good);
  EXPECT_EQ(ClassifyStep(D::kWorse, D::kUnknown, true, halfway), v1::CANT_TELL);
  // More boots narrow it: then it is better than bad, and between for sure.
  EXPECT_EQ(ClassifyStep(D::kWorse, D::kBetter, true,
                         PlacementOf(Pct(-2.0, -2.6, -1.4), Pct(+2.1, +1.5, +2.7))),
            v1::CANT_TELL);
  // An entry like bad, at 96.2: its interval against bad stays on bad's side of halfway, even
  // though its estimate lies (just) between the two.
  const Placement near_bad = PlacementOf(Pct(-3.8, -4.6, -3.0), Pct(+0.2, -0.6, +1.0));
  EXPECT_TRUE(near_bad.nearer_bad);
  EXPECT_FALSE(near_bad.nearer_good);
  EXPECT_EQ(ClassifyStep(D::kWorse, D::kUnknown, true, near_bad), v1::LIKE_BAD);
  // The comparison's own "same as bad" is enough too.
  EXPECT_EQ(ClassifyStep(D::kWorse, D::kSame, true, halfway), v1::LIKE_BAD);
  // Like good, mirrored: better than bad, but against good its interval reaches past halfway.
  const Placement halfway_good = PlacementOf(Pct(-1.9, -4.4, +0.6), Pct(+2.2, +0.7, +3.7));
  EXPECT_FALSE(halfway_good.nearer_good);
  EXPECT_EQ(ClassifyStep(D::kUnknown, D::kBetter, true, halfway_good), v1::CANT_TELL);
  EXPECT_EQ(ClassifyStep(D::kSame, D::kBetter, true, halfway_good), v1::LIKE_GOOD);
  // An improvement bisect (bad at 104, better than good at 100): the same rule the other way.
  const Placement up_halfway = PlacementOf(Pct(+2.0, +0.5, +3.5), Pct(-1.9, -4.3, +0.5));
  EXPECT_FALSE(up_halfway.nearer_bad);
  EXPECT_EQ(ClassifyStep(D::kBetter, D::kUnknown, false, up_halfway), v1::CANT_TELL);
  const Placement up_near_bad = PlacementOf(Pct(+3.8, +3.0, +4.6), Pct(-0.2, -1.0, +0.6));
  EXPECT_TRUE(up_near_bad.nearer_bad);
  EXPECT_EQ(ClassifyStep(D::kBetter, D::kUnknown, false, up_near_bad), v1::LIKE_BAD);
  // No intervals: only the comparisons' own verdicts place it.
  EXPECT_EQ(ClassifyStep(D::kWorse, D::kUnknown, true, Placement()), v1::CANT_TELL);
}

TEST(ClassifyStepTest, PlacementIsAgainstHalfwayOnALogScale) {
  // Good 100, bad 120 (+20 %): halfway is sqrt(1.2) = 1.0954, i.e. -8.71 % from bad and
  // +9.54 % from good. A like-bad entry whose interval against bad just stays short of it:
  EXPECT_TRUE(PlacementOf(Pct(+20, +15, +25), Pct(0, -8.6, +8)).nearer_bad);
  EXPECT_FALSE(PlacementOf(Pct(+20, +15, +25), Pct(0, -8.8, +8)).nearer_bad);
  EXPECT_TRUE(PlacementOf(Pct(0, -5, +9.4), Pct(-16.7, -20, -12)).nearer_good);
  EXPECT_FALSE(PlacementOf(Pct(0, -5, +9.7), Pct(-16.7, -20, -12)).nearer_good);
  // Good and bad alike, or nonsense figures: nowhere.
  EXPECT_FALSE(PlacementOf(Pct(+1, 0, 2), Pct(+1, 0, 2)).nearer_bad);
  EXPECT_FALSE(PlacementOf(Pct(-100, -100, 0), Pct(0, -1, 1)).nearer_good);
}

TEST(ClassifyStepTest, TheParentCheckWantsTheSameDirectionAsBad) {
  using D = Difference;
  EXPECT_EQ(ClassifyAgainstParent(D::kWorse, /*bad_is_worse=*/true), v1::LIKE_BAD);
  EXPECT_EQ(ClassifyAgainstParent(D::kSame, true), v1::LIKE_GOOD);
  EXPECT_EQ(ClassifyAgainstParent(D::kBetter, true), v1::LIKE_GOOD);
  EXPECT_EQ(ClassifyAgainstParent(D::kUnknown, true), v1::CANT_TELL);
  EXPECT_EQ(ClassifyAgainstParent(D::kBetter, /*bad_is_worse=*/false), v1::LIKE_BAD);
  EXPECT_EQ(ClassifyAgainstParent(D::kWorse, false), v1::LIKE_GOOD);
}

TEST(BisectReportTest, ReadsLikeTheRobotsMail) {
  FakeLab lab;
  lab.switch_at = 5;
  absl::StatusOr<Bisection> b = Bisection::Start("b3", lab.Spec());
  int next_run = 1;
  Drive(&*b, &lab, &next_run);
  const std::string report = RenderReport(b->state());
  EXPECT_THAT(report, HasSubstr("bisect b3: found\n-12.0% regression of "
                                "ebizzy.records_per_sec (threads=4) between e0 and e9; first "
                                "bad: e5\n"));
  // The last good vs first bad table.
  EXPECT_THAT(report, HasSubstr("                e4                             e5\n"
                                "------------------  -----------------------------\n"
                                "           %stddev     %change            %stddev\n"));
  EXPECT_THAT(report, HasSubstr("          100 ±  1%     -12.0%             88 ±  1%  "
                                "ebizzy.records_per_sec (threads=4)\n"));
  // Every step with its comparison.
  EXPECT_THAT(report, HasSubstr("step 0  check: e9 against e0"));
  EXPECT_THAT(report, HasSubstr("step 1  e4 (entry 4, between 0 and 9)"));
  EXPECT_THAT(report, HasSubstr("vs good +0.0% [-1.5%, +1.5%], vs bad +13.6% [+12.1%, +15.1%] "
                                "-> like good"));
  EXPECT_THAT(report, HasSubstr("-> like bad"));
  EXPECT_THAT(report, HasSubstr("fake comparison over 1 run(s)"));
}

}  // namespace
}  // namespace tlbfleet::bisect
