#include "controller/cli/nightly_format.h"

#include "controller/cli/format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tlbfleet::cli {
namespace {

using ::testing::HasSubstr;

TEST(NightlyFormatTest, RegressionsShowTheSeriesTheChangeWithItsIntervalAndWhere) {
  tlbfleet::v1::ListRegressionsResponse list;
  tlbfleet::v1::Regression* r = list.add_regressions();
  r->set_id("3");
  r->set_status(tlbfleet::v1::REGRESSION_OPEN);
  r->mutable_series()->set_microarch("unknown");
  r->mutable_series()->set_boot_entry("nightly");
  r->mutable_series()->set_config("loops=20000");
  r->mutable_series()->set_benchmark("pipetest");
  r->mutable_series()->set_metric("usecs_per_op");
  r->mutable_relative()->set_estimate(0.123);
  r->mutable_relative()->set_low(0.101);
  r->mutable_relative()->set_high(0.145);
  r->set_first_bad_run("17");
  r->set_last_good_run("16");
  r->set_good_kernel("6.1.0-47-amd64");
  r->set_bad_kernel("6.1.0-52-amd64");
  r->set_note("bisect 2: first bad e5");
  const std::string text = FormatRegressionsTable(list);
  EXPECT_THAT(text, HasSubstr("unknown/nightly/loops=20000/pipetest/-/usecs_per_op"));
  EXPECT_THAT(text, HasSubstr("+12.3% [+10.1%, +14.5%]"));
  EXPECT_THAT(text, HasSubstr("run 17"));
  EXPECT_THAT(text, HasSubstr("6.1.0-47-amd64 -> 6.1.0-52-amd64"));
  EXPECT_THAT(text, HasSubstr("bisect 2: first bad e5"));
  EXPECT_THAT(text, HasSubstr("open"));
}

TEST(NightlyFormatTest, SchedulesAndBisects) {
  tlbfleet::v1::ListSchedulesResponse schedules;
  tlbfleet::v1::Schedule* s = schedules.add_schedules();
  s->set_id("1");
  s->mutable_spec()->set_name("pipetest-nightly");
  s->mutable_spec()->set_cron("0 2 * * *");
  s->set_next_slot_unix(1798768800);  // 2027-01-01T02:00:00Z
  s->set_runs(4);
  s->set_last_run_id("9");
  s->mutable_spec()->mutable_on_regression()->set_action(tlbfleet::v1::OnRegression::ACTION_BISECT);
  s->mutable_spec()->mutable_on_regression()->add_entries("a");
  s->mutable_spec()->mutable_on_regression()->add_entries("b");
  const std::string text = FormatSchedulesTable(schedules);
  EXPECT_THAT(text, HasSubstr("pipetest-nightly  0 2 * * *"));
  EXPECT_THAT(text, HasSubstr("active  2027-01-01T02:00:00Z"));
  EXPECT_THAT(text, HasSubstr("bisect (2 entries)"));

  tlbfleet::v1::ListBisectsResponse bisects;
  tlbfleet::v1::BisectState* b = bisects.add_bisects();
  b->set_id("2");
  b->set_status(tlbfleet::v1::BISECT_FOUND);
  b->set_first_bad("e5");
  b->mutable_spec()->add_entries("e0");
  b->mutable_spec()->set_good("e0");
  b->mutable_spec()->set_bad("e7");
  EXPECT_THAT(FormatBisectsTable(bisects), HasSubstr("found   1 entries  e0    e7"));
  EXPECT_THAT(FormatBisectsTable(bisects), HasSubstr("first bad: e5"));
  // Over commits: how many, and the revisions as the user wrote them.
  tlbfleet::v1::BisectCommits* commits = b->mutable_spec()->mutable_commits();
  commits->set_good_rev("v6.1");
  commits->set_bad_rev("main");
  for (int i = 0; i < 16; ++i) commits->add_range()->set_hash(std::string(40, 'a'));
  EXPECT_THAT(FormatBisectsTable(bisects), HasSubstr("found   16 commits  v6.1  main"));
}

TEST(NightlyFormatTest, ARegressionOfABranchNamesItsCommitRange) {
  tlbfleet::v1::ListRegressionsResponse regressions;
  tlbfleet::v1::Regression* r = regressions.add_regressions();
  r->set_id("3");
  r->set_first_bad_run("12");
  r->set_good_commit(std::string(40, 'a'));
  r->set_bad_commit(std::string(40, 'b'));
  r->set_good_kernel("6.1.0-lab");
  r->set_bad_kernel("6.1.0-lab");
  EXPECT_THAT(FormatRegressionsTable(regressions), HasSubstr("aaaaaaaaaaaa..bbbbbbbbbbbb"));
  tlbfleet::v1::ListSchedulesResponse schedules;
  tlbfleet::v1::Schedule* s = schedules.add_schedules();
  s->mutable_spec()->mutable_on_regression()->set_action(tlbfleet::v1::OnRegression::ACTION_BISECT);
  s->mutable_spec()->mutable_kernel()->set_source("linux");
  s->mutable_spec()->mutable_kernel()->set_branch("main");
  EXPECT_THAT(FormatSchedulesTable(schedules), HasSubstr("bisect (commits of linux main)"));
}

TEST(NightlyFormatTest, HostsListTheirBootEntries) {
  tlbfleet::v1::ListHostsResponse hosts;
  tlbfleet::v1::Host* h = hosts.add_hosts();
  h->set_agent_id("0123456789abcdef");
  h->mutable_info()->set_hostname("vm1");
  h->mutable_info()->set_boot_entry("new");
  tlbfleet::v1::BootEntryInfo* old_entry = h->mutable_info()->add_boot_entries();
  old_entry->set_name("old");
  old_entry->set_release("6.1.0-57-amd64");
  tlbfleet::v1::BootEntryInfo* new_entry = h->mutable_info()->add_boot_entries();
  new_entry->set_name("new");
  new_entry->set_release("6.12.*");
  new_entry->add_cmdline("tlbfleet.entry=new");
  const std::string text = FormatHostsTable(hosts);
  EXPECT_THAT(text, HasSubstr("BOOT ENTRY"));
  EXPECT_THAT(text, HasSubstr("boot entries:\n  vm1  old  release 6.1.0-57-amd64\n"));
  EXPECT_THAT(text,
              HasSubstr("  vm1  new (this boot)  release 6.12.*, cmdline tlbfleet.entry=new"));
  h->mutable_info()->set_boot_entry("");
  h->mutable_info()->set_boot_entry_error(
      "entry new expected release 6.12.*, booted 6.1.0-57-amd64");
  EXPECT_THAT(FormatHostsTable(hosts),
              HasSubstr("none (entry new expected release 6.12.*, booted 6.1.0-57-amd64)"));
}

}  // namespace
}  // namespace tlbfleet::cli
