#include "controller/cli/progress.h"

#include <sstream>

#include "gtest/gtest.h"

namespace tlbfleet::cli {
namespace {

tlbfleet::v1::Run RunWith(uint32_t total, uint32_t succeeded, uint32_t running,
                          uint32_t failed = 0) {
  tlbfleet::v1::Run run;
  run.set_id("7");
  run.set_state(tlbfleet::v1::RUN_STATE_RUNNING);
  run.mutable_jobs()->set_total(total);
  run.mutable_jobs()->set_succeeded(succeeded);
  run.mutable_jobs()->set_running(running);
  run.mutable_jobs()->set_failed(failed);
  return run;
}

TEST(ProgressTextTest, Counts) {
  EXPECT_EQ(ProgressText(RunWith(12, 5, 1)), "run 7: 5/12 jobs done, 1 running");
  EXPECT_EQ(ProgressText(RunWith(12, 5, 1, 2)), "run 7: 7/12 jobs done, 1 running, 2 failed");
}

TEST(ProgressTextTest, SequentialRunCountsItsRows) {
  tlbfleet::v1::Run run = RunWith(40, 20, 1);
  for (int i = 0; i < 3; ++i) {
    tlbfleet::v1::AdaptiveRow* row = run.add_adaptive_rows();
    row->set_decided(i == 0);
    row->set_measuring(i != 0);
  }
  EXPECT_EQ(ProgressText(run), "run 7: 20/40 jobs done, 1 running; rows: 1/3 decided, 2 measuring");
}

TEST(ProgressTextTest, NoJobsYetShowsState) {
  tlbfleet::v1::Run run;
  run.set_id("7");
  run.set_state(tlbfleet::v1::RUN_STATE_QUEUED);
  EXPECT_EQ(ProgressText(run), "run 7: queued");
}

TEST(ProgressReporterTest, PipePrintsALineOnlyWhenCountsChange) {
  std::ostringstream out;
  ProgressReporter progress(out, /*is_tty=*/false);
  progress.Update(RunWith(12, 5, 1));
  progress.Update(RunWith(12, 5, 1));
  progress.Update(RunWith(12, 6, 1));
  progress.Finish();
  EXPECT_EQ(out.str(), "run 7: 5/12 jobs done, 1 running\nrun 7: 6/12 jobs done, 1 running\n");
}

TEST(ProgressReporterTest, TerminalRewritesOneLine) {
  std::ostringstream out;
  ProgressReporter progress(out, /*is_tty=*/true);
  progress.Update(RunWith(2, 0, 1));
  progress.Update(RunWith(2, 1, 1));
  progress.Finish();
  progress.Finish();  // idempotent
  EXPECT_EQ(out.str(),
            "\r\033[Krun 7: 0/2 jobs done, 1 running\r\033[Krun 7: 1/2 jobs done, 1 running\n");
}

}  // namespace
}  // namespace tlbfleet::cli
