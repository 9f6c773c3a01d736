// Nightly schedules that follow a kernel branch (docs/kernels.md, "Nightly on a branch"): each
// night the head is resolved by a builder (fetched), built once and measured by every arm; the
// nights share one series whose points carry their commits; a regression names the commit
// range between its two nights and, with `on_regression: bisect`, bisects it to the commit.
// The real core builds through the sim host (sim_lab_for_test.h), which also moves the branch.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "controller/nightly/nightly_fixture_for_test.h"

namespace tlbfleet::nightly {
namespace {

using ::testing::HasSubstr;

constexpr char kBranchScheduleYaml[] = R"(
name: pipetest-main
cron: "0 2 * * *"
kernel: {source: linux, branch: main, config: lab}
run:
  name: pipetest-main
  benchmark: pipetest
  params: {loops: 1000}
  iterations: 3
  arms: [{name: main}]
detect: {test: student-t, min_segment: 3}
)";

// 16 commits on lab-base; commit 11 makes pipetest 20 % slower; "main" moves as the test says.
class NightlyBranchTest : public NightlyTest {
 protected:
  NightlyBranchTest() {
    git_ = SimGit(16);
    git_.Commit(11).delta = 2.0;
    git_.branches["main"] = 0;
  }

  // Night `night` (from 2026-01-01, 02:00 UTC) with main's head at `head`; until its run was
  // handled (or refused: the schedule's run count does not move then).
  void Night(int night, int head) {
    git_.branches["main"] = head;
    clock_.Set(Utc(2026, 1, 1 + night, 2));
    for (int i = 0; i < 2000; ++i) {
      nightly_->RunPendingForTest();
      lab_.Drive();
      controller_->Tick();
      controller_->DeliverObserverCallsForTest();
      absl::StatusOr<v1::ListSchedulesResponse> s = nightly_->ListSchedules();
      if (s.ok() && s->schedules(0).runs() == static_cast<uint32_t>(night + 1) &&
          *nightly_store_->RunSeen(s->schedules(0).last_run_id())) {
        return;
      }
    }
  }

  void SettleBisect(const std::string& id) {
    for (int i = 0; i < 4000 && Bisect(id).status() == v1::BISECT_RUNNING; ++i) {
      nightly_->RunPendingForTest();
      lab_.Drive();
      controller_->Tick();
      controller_->DeliverObserverCallsForTest();
    }
  }

  std::string LastRunId() { return nightly_->ListSchedules()->schedules(0).last_run_id(); }
};

TEST_F(NightlyBranchTest, EachNightMeasuresTheHeadInOneSeriesAndARegressionIsBisectedToItsCommit) {
  const std::string yaml = std::string(kBranchScheduleYaml) + "on_regression: bisect\n";
  absl::StatusOr<v1::Schedule> schedule = nightly_->AddSchedule(yaml, "s.yaml");
  ASSERT_TRUE(schedule.ok()) << schedule.status();
  // main's head each night: 11 lands between nights 5 and 6; 16 twice (built once).
  const std::vector<int> heads = {2, 4, 6, 7, 9, 10, 13, 14, 15, 16, 16};
  std::vector<std::string> runs;
  for (size_t night = 0; night < heads.size(); ++night) {
    Night(static_cast<int>(night), heads[night]);
    const std::string run_id = LastRunId();
    ASSERT_EQ(nightly_->ListSchedules()->schedules(0).runs(), night + 1) << "night " << night;
    runs.push_back(run_id);
    // The run measures the head by its full hash, and says which branch it followed.
    absl::StatusOr<v1::Run> run = controller_->runs().GetRun(run_id);
    ASSERT_TRUE(run.ok()) << run.status();
    ASSERT_EQ(run->state(), v1::RUN_STATE_SUCCEEDED) << "night " << night << ": " << run->error();
    ASSERT_EQ(run->spec().arms_size(), 1);
    EXPECT_EQ(run->spec().arms(0).kernel().rev(), SimGit::Hash(heads[night]));
    EXPECT_EQ(run->spec().arms(0).kernel().branch(), "main");
    EXPECT_EQ(run->spec().arms(0).kernel().config(), "lab");
  }
  EXPECT_TRUE(lab_.errors.empty()) << lab_.errors[0];
  // Every night asked the builder to fetch before resolving the branch.
  int fetched = 0;
  for (const v1::GitQuery& q : runs_->queries) {
    if (q.kind() == v1::GitQuery::KIND_BRANCH) {
      EXPECT_EQ(q.rev(), "main");
      fetched += q.fetch() ? 1 : 0;
    }
  }
  EXPECT_GE(fetched, static_cast<int>(heads.size()));

  // One series over every night, whatever commit each measured; each point names its commit.
  v1::ListSeriesRequest request;
  request.set_with_points(true);
  request.set_metric("usecs_per_op");
  absl::StatusOr<v1::ListSeriesResponse> series = nightly_->ListSeries(request);
  ASSERT_TRUE(series.ok()) << series.status();
  ASSERT_EQ(series->series_size(), 1);
  const v1::Series& main = series->series(0);
  EXPECT_EQ(main.key().boot_entry(), "kernel:linux/main");
  EXPECT_EQ(main.key().config(), "kernel_config=lab loops=1000");
  ASSERT_EQ(main.points_size(), static_cast<int>(heads.size()));
  for (size_t night = 0; night < heads.size(); ++night) {
    EXPECT_EQ(main.points(static_cast<int>(night)).commit(), SimGit::Hash(heads[night]));
    EXPECT_FALSE(main.points(static_cast<int>(night)).build_id().empty());
  }

  // The regression names the commits of its two nights.
  std::vector<v1::Regression> found = Regressions();
  ASSERT_EQ(found.size(), 1u);
  const v1::Regression& r = found[0];
  EXPECT_EQ(r.first_bad_run(), runs[6]);
  EXPECT_EQ(r.last_good_run(), runs[5]);
  EXPECT_EQ(r.good_commit(), SimGit::Hash(10));
  EXPECT_EQ(r.bad_commit(), SimGit::Hash(13));
  EXPECT_EQ(r.kernel_source(), "linux");
  ASSERT_FALSE(r.bisect_id().empty()) << r.note();

  // ... and its bisection runs over 10..13 to commit 11, verified.
  SettleBisect(r.bisect_id());
  const v1::BisectState state = Bisect(r.bisect_id());
  EXPECT_EQ(state.spec().good(), SimGit::Hash(10));
  EXPECT_EQ(state.spec().bad(), SimGit::Hash(13));
  EXPECT_EQ(state.spec().commits().range_size(), 3);
  EXPECT_EQ(state.spec().commits().config(), "lab");
  EXPECT_EQ(state.spec().regression_id(), r.id());
  ASSERT_EQ(state.status(), v1::BISECT_FOUND) << state.reason();
  EXPECT_EQ(state.first_bad(), SimGit::Hash(11));
  EXPECT_EQ(state.verification().outcome(), v1::VERIFICATION_CONFIRMED)
      << state.verification().reason();
  EXPECT_THAT(Regressions()[0].note(), HasSubstr(SimGit::Hash(11)));
}

TEST_F(NightlyBranchTest, AHeadThatDidNotMoveIsNotBuiltAgain) {
  ASSERT_TRUE(nightly_->AddSchedule(kBranchScheduleYaml, "s.yaml").ok());
  Night(0, 3);
  const int after_first = lab_.builds;
  EXPECT_EQ(after_first, 1);
  Night(1, 3);
  Night(2, 3);
  EXPECT_EQ(lab_.builds, after_first);
  Night(3, 4);
  EXPECT_EQ(lab_.builds, after_first + 1);
  EXPECT_EQ(nightly_->ListSchedules()->schedules(0).runs(), 4u);
}

TEST_F(NightlyBranchTest, ANightWithoutABuilderWaitsAndABranchThatIsGoneIsThatNightsRefusal) {
  ASSERT_TRUE(nightly_->AddSchedule(kBranchScheduleYaml, "s.yaml").ok());
  Night(0, 2);
  ASSERT_EQ(nightly_->ListSchedules()->schedules(0).runs(), 1u);
  // No builder can answer at 02:00: the slot stays due, and runs once one answers.
  git_.available = false;
  clock_.Set(Utc(2026, 1, 2, 2));
  for (int i = 0; i < 20; ++i) nightly_->RunPendingForTest();
  EXPECT_EQ(nightly_->ListSchedules()->schedules(0).runs(), 1u);
  EXPECT_THAT(log_.str(), HasSubstr("the slot waits for a builder"));
  git_.available = true;
  Night(1, 5);
  ASSERT_EQ(nightly_->ListSchedules()->schedules(0).runs(), 2u);
  EXPECT_EQ(controller_->runs().GetRun(LastRunId())->spec().arms(0).kernel().rev(),
            SimGit::Hash(5));
  // The branch was deleted: that night is refused (logged), the next one runs again.
  git_.branches.erase("main");
  clock_.Set(Utc(2026, 1, 3, 2));
  for (int i = 0; i < 20; ++i) nightly_->RunPendingForTest();
  EXPECT_THAT(
      log_.str(),
      HasSubstr(
          "the run was refused: INVALID_ARGUMENT: kernel.branch: branch \"main\" does not exist"));
  Night(3, 6);
  EXPECT_EQ(controller_->runs().GetRun(LastRunId())->spec().arms(0).kernel().rev(),
            SimGit::Hash(6));
}

TEST_F(NightlyBranchTest, BadInputIsRefusedNamingTheFieldAndNothingIsStored) {
  const auto refused = [&](const std::string& yaml) {
    absl::StatusOr<v1::Schedule> s = nightly_->AddSchedule(yaml, "s.yaml");
    EXPECT_FALSE(s.ok()) << yaml;
    return s.status();
  };
  const auto with = [](const std::string& from, const std::string& to) {
    std::string yaml = kBranchScheduleYaml;
    const size_t at = yaml.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    if (at != std::string::npos) yaml.replace(at, from.size(), to);
    return yaml;
  };
  absl::Status s = refused(with("source: linux", "source: mainline"));
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_THAT(s.message(), HasSubstr("kernel.source: no builder agent has a kernel source named "
                                     "\"mainline\" (sources: linux)"));
  s = refused(with("config: lab", "config: big"));
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_THAT(s.message(), HasSubstr("kernel.config: source linux has no build config \"big\""));
  s = refused(with("branch: main", "branch: nope"));
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_THAT(s.message(), HasSubstr("kernel.branch: branch \"nope\" does not exist"));
  s = refused(with("branch: main, ", ""));
  EXPECT_THAT(s.message(), HasSubstr("kernel.branch: required"));
  s = refused(with("{name: main}", "{name: main, boot_entry: e1}"));
  EXPECT_THAT(s.message(), HasSubstr("run.arms[0].boot_entry: the schedule's kernel"));
  s = refused(std::string(kBranchScheduleYaml) +
              "on_regression: {action: bisect, entries: [e0, e1]}\n");
  EXPECT_THAT(s.message(), HasSubstr("on_regression.entries: a schedule that follows a kernel"));
  s = refused(with("kernel: {source: linux, branch: main, config: lab}", "kernel: main"));
  EXPECT_THAT(s.message(), HasSubstr("kernel: expected a map"));
  // No builder can answer: not the user's mistake, and not stored either.
  git_.available = false;
  s = refused(kBranchScheduleYaml);
  EXPECT_TRUE(absl::IsFailedPrecondition(s)) << s;
  EXPECT_THAT(s.message(), HasSubstr("kernel.branch: no builder of source linux could answer now"));
  EXPECT_EQ(nightly_->ListSchedules()->schedules_size(), 0);
  // Without `kernel`, `on_regression: bisect` still needs its entries.
  std::string plain = kScheduleYaml;
  s = refused(plain + "on_regression: bisect\n");
  EXPECT_THAT(s.message(), HasSubstr("on_regression.entries: a bisection needs at least two"));
}

}  // namespace
}  // namespace tlbfleet::nightly
