// The nightly unit on a real core (in process, real SQLite) with a simulated host: schedules
// on a fake clock, series and regressions, bisections (also across a restart), bad input.
#include "controller/nightly/nightly.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include "controller/nightly/nightly_fixture_for_test.h"
#include "gmock/gmock.h"

namespace tlbfleet::nightly {
namespace {

using ::testing::HasSubstr;

TEST_F(NightlyTest, AMonthOfNightsFlagsTheSwitchOnceAndNothingBefore) {
  lab_.releases["nightly"] = "6.1.0-47-amd64";
  absl::StatusOr<v1::Schedule> schedule = nightly_->AddSchedule(kScheduleYaml, "s.yaml");
  ASSERT_TRUE(schedule.ok()) << schedule.status();
  const int kSwitch = 15;
  std::vector<std::string> runs;
  int flagged_on = -1;
  for (int night = 0; night < 30; ++night) {
    switched_ = night >= kSwitch;
    clock_.Set(Utc(2026, 1, 1 + night, 2));
    Settle([&] {
      auto s = nightly_->ListSchedules();
      return s.ok() && s->schedules(0).runs() == static_cast<uint32_t>(night + 1) &&
             controller_->runs().GetRun(s->schedules(0).last_run_id())->state() ==
                 v1::RUN_STATE_SUCCEEDED &&
             *nightly_store_->RunSeen(s->schedules(0).last_run_id());
    });
    const v1::Schedule now = nightly_->ListSchedules()->schedules(0);
    ASSERT_EQ(now.runs(), static_cast<uint32_t>(night + 1)) << "night " << night;
    runs.push_back(now.last_run_id());
    const std::vector<v1::Regression> found = Regressions();
    if (night < kSwitch) {
      ASSERT_TRUE(found.empty()) << "night " << night << ": " << found[0].summary();
    } else if (!found.empty() && flagged_on < 0) {
      flagged_on = night;
    }
  }
  EXPECT_TRUE(lab_.errors.empty()) << lab_.errors[0];
  const std::vector<v1::Regression> found = Regressions();
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].first_bad_run(), runs[kSwitch]);
  EXPECT_EQ(found[0].last_good_run(), runs[kSwitch - 1]);
  EXPECT_EQ(found[0].status(), v1::REGRESSION_OPEN);
  EXPECT_EQ(found[0].series().boot_entry(), "nightly");
  EXPECT_EQ(found[0].series().metric(), "usecs_per_op");
  EXPECT_EQ(found[0].series().config(), "loops=1000");
  EXPECT_EQ(found[0].schedule_id(), schedule->id());
  EXPECT_NEAR(found[0].relative().estimate(), 0.2, 0.02);
  EXPECT_GT(found[0].ratio().low(), 1.1);
  EXPECT_GE(flagged_on, kSwitch);
  EXPECT_LE(flagged_on, kSwitch + 4);
  // One point per night in the series, each a fresh boot into the entry.
  absl::StatusOr<v1::ListSeriesResponse> series = nightly_->ListSeries([] {
    v1::ListSeriesRequest r;
    r.set_with_points(true);
    r.set_metric("usecs_per_op");
    return r;
  }());
  ASSERT_TRUE(series.ok());
  ASSERT_EQ(series->series_size(), 1);
  EXPECT_EQ(series->series(0).points_size(), 30);
  EXPECT_EQ(series->series(0).points(0).boot_entry(), "nightly");
  EXPECT_EQ(series->series(0).points(0).schedule_id(), schedule->id());
  EXPECT_EQ(lab_.boots(), 30);
  // Acknowledged, then fixed.
  v1::UpdateRegressionRequest ack;
  ack.set_id(found[0].id());
  ack.set_status(v1::REGRESSION_ACKNOWLEDGED);
  EXPECT_EQ(nightly_->UpdateRegression(ack)->status(), v1::REGRESSION_ACKNOWLEDGED);
  v1::ListRegressionsRequest open;
  open.add_statuses(v1::REGRESSION_OPEN);
  EXPECT_EQ(nightly_->ListRegressions(open)->regressions_size(), 0);
}

TEST_F(NightlyTest, SlotsMissedWhileDownRunOnceAndPausedNightsNotAtAll) {
  ASSERT_TRUE(nightly_->AddSchedule(kScheduleYaml, "s.yaml").ok());
  clock_.Set(Utc(2026, 1, 1, 3));
  Settle([&] { return nightly_->ListSchedules()->schedules(0).runs() == 1; });
  Close();
  clock_.Set(Utc(2026, 1, 5, 3));  // down for four nights
  Open();
  Settle();
  v1::Schedule s = nightly_->ListSchedules()->schedules(0);
  EXPECT_EQ(s.runs(), 2u);
  EXPECT_EQ(s.last_slot_unix(), absl::ToUnixSeconds(Utc(2026, 1, 5, 2)));
  ASSERT_TRUE(nightly_->PauseSchedule(s.id()).ok());
  clock_.Set(Utc(2026, 1, 8, 3));
  Settle();
  EXPECT_EQ(nightly_->ListSchedules()->schedules(0).runs(), 2u);
  ASSERT_TRUE(nightly_->ResumeSchedule(s.id()).ok());
  Settle();
  EXPECT_EQ(nightly_->ListSchedules()->schedules(0).runs(), 2u);  // nothing due until tomorrow
  clock_.Set(Utc(2026, 1, 9, 2));
  Settle([&] { return nightly_->ListSchedules()->schedules(0).runs() == 3; });
  EXPECT_EQ(nightly_->ListSchedules()->schedules(0).runs(), 3u);
  ASSERT_TRUE(nightly_->RemoveSchedule(s.id()).ok());
  EXPECT_EQ(nightly_->ListSchedules()->schedules_size(), 0);
}

TEST_F(NightlyTest, ABisectionNamesTheFirstBadEntry) {
  absl::StatusOr<v1::BisectState> started = nightly_->StartBisect(kBisectYaml, "b.yaml");
  ASSERT_TRUE(started.ok()) << started.status();
  Settle([&] { return Bisect(started->id()).status() != v1::BISECT_RUNNING; });
  const v1::BisectState state = Bisect(started->id());
  ASSERT_EQ(state.status(), v1::BISECT_FOUND) << state.reason();
  EXPECT_EQ(state.first_bad(), "e5");
  EXPECT_EQ(state.spec().metric(), "usecs_per_op");
  EXPECT_TRUE(state.spec().lower_is_better());
  const std::string report = nightly_->GetBisect(started->id())->report();
  EXPECT_THAT(report, HasSubstr("regression of pipetest.usecs_per_op between e0 and e7; first "
                                "bad: e5"));
  // Every measurement ran each entry on two boots of its own, in one round per step: 2 x 2
  // for the endpoints, then 2 x 3 per step.
  EXPECT_EQ(lab_.boots(), 4 + 6 * (state.steps_size() - 1));
}

TEST_F(NightlyTest, ABisectionKilledMidStepResumesToTheSameAnswer) {
  absl::StatusOr<v1::BisectState> started = nightly_->StartBisect(kBisectYaml, "b.yaml");
  ASSERT_TRUE(started.ok()) << started.status();
  // Run until step 1's measurement is under way, then lose everything in memory.
  Settle([&] {
    const v1::BisectState s = Bisect(started->id());
    return s.steps_size() >= 2 && !s.pending_run_id().empty() &&
           controller_->runs().GetRun(s.pending_run_id())->jobs().succeeded() > 0;
  });
  const std::string pending = Bisect(started->id()).pending_run_id();
  ASSERT_FALSE(pending.empty());
  Close();
  clock_.Advance(absl::Minutes(5));  // the lease the host held on the old stream expires
  Open();
  controller_->Tick();
  Settle([&] { return Bisect(started->id()).status() != v1::BISECT_RUNNING; });
  const v1::BisectState state = Bisect(started->id());
  ASSERT_EQ(state.status(), v1::BISECT_FOUND) << state.reason();
  EXPECT_EQ(state.first_bad(), "e5");
  // The run that was under way was finished, not submitted again.
  EXPECT_EQ(state.steps(1).rounds(0).run_id(), pending);
  EXPECT_EQ(state.steps(1).rounds_size(), 1);
}

TEST_F(NightlyTest, ARunSubmittedJustBeforeACrashIsFoundByItsNameNotSubmittedTwice) {
  absl::StatusOr<v1::BisectState> started = nightly_->StartBisect(kBisectYaml, "b.yaml");
  ASSERT_TRUE(started.ok());
  const std::string first = Bisect(started->id()).pending_run_id();
  ASSERT_FALSE(first.empty());
  // Undo the recording, as if the controller died between submitting and recording the run.
  Close();
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(Db().c_str(), &db), SQLITE_OK);
  ASSERT_EQ(
      sqlite3_exec(db, "UPDATE nightly_submissions SET run_id = ''", nullptr, nullptr, nullptr),
      SQLITE_OK);
  sqlite3_close(db);
  {
    auto raw = *store::NightlyStore::Open(Db());
    v1::BisectState before = *raw->GetBisect(started->id());
    before.clear_steps();
    before.clear_pending_run_id();
    ASSERT_TRUE(raw->SaveBisect(before, 0).ok());
  }
  Open();
  nightly_->RunPendingForTest();
  EXPECT_EQ(Bisect(started->id()).pending_run_id(), first);
  EXPECT_EQ(controller_->runs().ListRuns(v1::ListRunsRequest())->runs_size(), 1);
  Settle([&] { return Bisect(started->id()).status() != v1::BISECT_RUNNING; });
  EXPECT_EQ(Bisect(started->id()).first_bad(), "e5");
}

TEST_F(NightlyTest, ARegressionWhoseActionIsBisectFindsTheFirstBadEntry) {
  // The nightly entry boots e2's kernel, then e6's: the bisection runs between those two.
  lab_.releases["nightly"] = "6.1.0-2-amd64";
  const std::string yaml = std::string(kScheduleYaml) +
                           "on_regression: {action: bisect, entries: [e0, e1, e2, e3, e4, e5, "
                           "e6, e7], boots_per_round: 1, max_boots_per_step: 2}\n"
                           "detect: {test: student-t, min_segment: 3}\n";
  absl::StatusOr<v1::Schedule> schedule = nightly_->AddSchedule(yaml, "s.yaml");
  ASSERT_TRUE(schedule.ok()) << schedule.status();
  for (int night = 0; night < 7; ++night) {
    switched_ = night >= 3;
    if (switched_) lab_.releases["nightly"] = "6.1.0-6-amd64";
    clock_.Set(Utc(2026, 1, 1 + night, 2));
    Settle([&] {
      auto s = nightly_->ListSchedules()->schedules(0);
      return s.runs() == static_cast<uint32_t>(night + 1) &&
             *nightly_store_->RunSeen(s.last_run_id());
    });
  }
  std::vector<v1::Regression> found = Regressions();
  ASSERT_EQ(found.size(), 1u);
  ASSERT_FALSE(found[0].bisect_id().empty()) << found[0].note();
  EXPECT_EQ(found[0].good_kernel(), "6.1.0-2-amd64");
  EXPECT_EQ(found[0].bad_kernel(), "6.1.0-6-amd64");
  Settle([&] { return Bisect(found[0].bisect_id()).status() != v1::BISECT_RUNNING; });
  const v1::BisectState state = Bisect(found[0].bisect_id());
  EXPECT_EQ(state.spec().good(), "e2");
  EXPECT_EQ(state.spec().bad(), "e6");
  EXPECT_EQ(state.spec().regression_id(), found[0].id());
  ASSERT_EQ(state.status(), v1::BISECT_FOUND) << state.reason();
  EXPECT_EQ(state.first_bad(), "e5");
  EXPECT_THAT(Regressions()[0].note(), HasSubstr("first bad e5"));
}

TEST_F(NightlyTest, BadInputIsRefusedNamingTheField) {
  auto schedule_error = [&](const std::string& from, const std::string& to) {
    std::string yaml = kScheduleYaml;
    yaml.replace(yaml.find(from), from.size(), to);
    absl::StatusOr<v1::Schedule> s = nightly_->AddSchedule(yaml, "s.yaml");
    EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument) << to;
    return std::string(s.status().message());
  };
  EXPECT_THAT(schedule_error("0 2 * * *", "0 24 * * *"),
              HasSubstr("cron: cron field 2 (hour) '24': 24 is out of range 0-23"));
  EXPECT_THAT(schedule_error("0 2 * * *", "0 2 * *"), HasSubstr("cron: "));
  EXPECT_THAT(schedule_error("benchmark: pipetest", "benchmark: nope"),
              HasSubstr("run.benchmark: unknown benchmark \"nope\""));
  EXPECT_THAT(schedule_error("name: pipetest-nightly\ncron", "name: a b\ncron"),
              HasSubstr("name: must be"));
  // The detector's options (issue 25): each refusal names its field.
  auto detect_error = [&](const std::string& detect) {
    const std::string yaml = std::string(kScheduleYaml) + "detect: " + detect + "\n";
    absl::StatusOr<v1::Schedule> s = nightly_->AddSchedule(yaml, "s.yaml");
    EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument) << detect;
    return std::string(s.status().message());
  };
  EXPECT_THAT(detect_error("{serial: markov}"),
              HasSubstr("detect.serial: expected ar1, independent or block, got \"markov\""));
  EXPECT_THAT(detect_error("{serial: block}"),
              HasSubstr("detect.block_length: required with serial: block"));
  EXPECT_THAT(detect_error("{serial: block, block_length: 0}"), HasSubstr("detect.block_length"));
  EXPECT_THAT(detect_error("{block_length: 4}"),
              HasSubstr("detect.block_length: only with serial: block"));
  EXPECT_THAT(detect_error("{drift: {threshold: -0.01}}"),
              HasSubstr("detect.drift.threshold: must be a fraction of the level in [0, 1)"));
  EXPECT_THAT(detect_error("{drift: {slope: 1}}"), HasSubstr("detect.drift.slope"));
  EXPECT_THAT(detect_error("{drift: {detect: false, opens_regression: true}}"),
              HasSubstr("detect.drift.opens_regression: needs drifts detected"));
  EXPECT_THAT(detect_error("{min_segment: 51}"), HasSubstr("detect.min_segment"));
  EXPECT_EQ(nightly_->ListSchedules()->schedules_size(), 0);  // nothing stored
  ASSERT_TRUE(nightly_->AddSchedule(kScheduleYaml, "s.yaml").ok());
  EXPECT_EQ(nightly_->AddSchedule(kScheduleYaml, "s.yaml").status().code(),
            absl::StatusCode::kAlreadyExists);

  auto bisect_error = [&](const std::string& from, const std::string& to) {
    std::string yaml = kBisectYaml;
    yaml.replace(yaml.find(from), from.size(), to);
    absl::StatusOr<v1::BisectState> b = nightly_->StartBisect(yaml, "b.yaml");
    EXPECT_EQ(b.status().code(), absl::StatusCode::kInvalidArgument) << to;
    return std::string(b.status().message());
  };
  EXPECT_THAT(bisect_error("bad: e7", "bad: e0"),
              HasSubstr("bad: good and bad are the same entry 'e0'"));
  EXPECT_THAT(bisect_error("good: e0\nbad: e7", "good: e7\nbad: e0"),
              HasSubstr("bad: 'e0' (entry 0) comes before good 'e7'"));
  EXPECT_THAT(bisect_error("bad: e7", "bad: e9"), HasSubstr("bad: unknown entry 'e9'"));
  EXPECT_THAT(bisect_error("e6, e7]", "e6, e7, zz]"),
              HasSubstr("entries[8]: no host the run selects has boot entry 'zz'"));
  EXPECT_THAT(bisect_error("boots_per_round: 2", "boots_per_round: 2\nmetric: nope"),
              HasSubstr("metric: unknown metric \"nope\" of pipetest"));
  EXPECT_THAT(bisect_error("e6, e7]", "e6, 'e 7']"), HasSubstr("entries[7]: 'e 7' is not"));
  // Nothing was started.
  EXPECT_EQ(nightly_->ListBisects(0)->bisects_size(), 0);
  EXPECT_EQ(controller_->runs().ListRuns(v1::ListRunsRequest())->runs_size(), 0);
}

}  // namespace
}  // namespace tlbfleet::nightly
