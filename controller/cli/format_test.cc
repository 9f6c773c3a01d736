#include "controller/cli/format.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tlbfleet::cli {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(CsvEscapeTest, PlainFieldIsUnchanged) {
  EXPECT_EQ(CsvEscape("ebizzy"), "ebizzy");
  EXPECT_EQ(CsvEscape(""), "");
  EXPECT_EQ(CsvEscape("6.1.0-13-amd64"), "6.1.0-13-amd64");
}

TEST(CsvEscapeTest, CommaQuoteAndNewlineAreQuoted) {
  EXPECT_EQ(CsvEscape("a,b"), "\"a,b\"");
  EXPECT_EQ(CsvEscape("say \"hi\""), "\"say \"\"hi\"\"\"");
  EXPECT_EQ(CsvEscape("line1\nline2"), "\"line1\nline2\"");
  EXPECT_EQ(CsvEscape("cr\r"), "\"cr\r\"");
  EXPECT_EQ(CsvEscape("\""), "\"\"\"\"");
}

TEST(CsvRowTest, JoinsEscapedFields) { EXPECT_EQ(CsvRow({"a", "b,c", ""}), "a,\"b,c\",\n"); }

TEST(FormatDoubleTest, ShortestRoundTrip) {
  EXPECT_EQ(FormatDouble(1.5), "1.5");
  EXPECT_EQ(FormatDouble(12345), "12345");
  EXPECT_EQ(FormatDouble(0.1), "0.1");
  EXPECT_EQ(std::stod(FormatDouble(1.0 / 3.0)), 1.0 / 3.0);
}

TEST(FormatUnixTimeTest, UtcRfc3339) {
  EXPECT_EQ(FormatUnixTime(0), "-");
  EXPECT_EQ(FormatUnixTime(1700000000), "2023-11-14T22:13:20Z");
}

TEST(TextTableTest, PadsColumnsAndTrimsTrailingSpace) {
  TextTable table({"ID", "NAME", "N"});
  table.SetAlign(2, TextTable::Align::kRight);
  table.AddRow({"7", "nightly", "5"});
  table.AddRow({"12", "x", "100"});
  EXPECT_EQ(table.Render(),
            "ID  NAME       N\n"
            "7   nightly    5\n"
            "12  x        100\n");
}

TEST(TextTableTest, EmptyTablePrintsHeader) {
  TextTable table({"A", "B"});
  EXPECT_EQ(table.Render(), "A  B\n");
}

tlbfleet::v1::Run MakeRun() {
  tlbfleet::v1::Run run;
  run.set_id("7");
  run.mutable_spec()->set_name("nightly");
  run.mutable_spec()->set_benchmark("ebizzy");
  run.set_state(tlbfleet::v1::RUN_STATE_RUNNING);
  run.mutable_jobs()->set_total(12);
  run.mutable_jobs()->set_succeeded(4);
  run.mutable_jobs()->set_failed(1);
  run.mutable_jobs()->set_running(1);
  run.mutable_jobs()->set_queued(6);
  run.set_created_unix(1700000000);
  return run;
}

TEST(FormatRunsTableTest, OneRowPerRun) {
  tlbfleet::v1::ListRunsResponse runs;
  *runs.add_runs() = MakeRun();
  EXPECT_EQ(FormatRunsTable(runs),
            "ID  NAME     BENCHMARK  STATE    JOBS  CREATED\n"
            "7   nightly  ebizzy     running  5/12  2023-11-14T22:13:20Z\n");
}

TEST(FormatRunDetailsTest, ShowsCountsAndError) {
  tlbfleet::v1::Run run = MakeRun();
  run.set_state(tlbfleet::v1::RUN_STATE_FAILED);
  run.set_error("job 3: ceiling locked on host a");
  auto* arm = run.mutable_spec()->add_arms();
  arm->set_name("base");
  arm->set_ceiling("default");
  run.mutable_spec()->add_arms()->set_name("c1");
  run.mutable_spec()->set_iterations(3);
  std::string text = FormatRunDetails(run);
  EXPECT_THAT(text, HasSubstr("state:      failed\n"));
  EXPECT_THAT(text, HasSubstr("jobs:       5/12 done (4 succeeded, 1 failed, 0 cancelled), "
                              "1 running, 6 queued\n"));
  EXPECT_THAT(text, HasSubstr("arms:       base (ceiling default), c1\n"));
  EXPECT_THAT(text, HasSubstr("iterations: 3\n"));
  EXPECT_THAT(text, HasSubstr("finished:   -\n"));
  EXPECT_THAT(text, HasSubstr("error:      job 3: ceiling locked on host a\n"));
}

TEST(FormatRunDetailsTest, AdaptiveRunShowsThePlanSoFarAndWhyItStopped) {
  tlbfleet::v1::Run run;
  run.set_id("9");
  run.set_state(tlbfleet::v1::RUN_STATE_SUCCEEDED);
  run.mutable_spec()->set_iterations(3);
  run.mutable_spec()->set_boots(2);
  auto* adaptive = run.mutable_spec()->mutable_adaptive();
  adaptive->mutable_iterations()->set_min(3);
  adaptive->mutable_iterations()->set_max(30);
  adaptive->mutable_boots()->set_min(2);
  adaptive->mutable_boots()->set_max(6);
  adaptive->set_target_ci(0.01);
  run.set_iterations_per_boot(6);
  run.set_boots(4);
  run.set_adaptive_rounds(3);
  run.set_stop_reason("target reached after 6 iterations x 4 boots per arm");
  std::string text = FormatRunDetails(run);
  EXPECT_THAT(text, HasSubstr("iterations: 6 (adaptive 3..30)\n"));
  EXPECT_THAT(text, HasSubstr("boots:      4 (adaptive 2..6)\n"));
  EXPECT_THAT(text, HasSubstr("target:     ratio CI half-width 1.00%, 3 rounds so far\n"));
  EXPECT_THAT(text, HasSubstr("stopped:    target reached after 6 iterations x 4 boots per arm\n"));
}

// A sequential run with two rows: one decided early and stopped, one still measuring.
tlbfleet::v1::Run MakeSequentialRun() {
  tlbfleet::v1::Run run;
  run.set_id("11");
  run.set_state(tlbfleet::v1::RUN_STATE_RUNNING);
  run.mutable_spec()->set_benchmark("ebizzy");
  auto* adaptive = run.mutable_spec()->mutable_adaptive();
  adaptive->mutable_boots()->set_min(2);
  adaptive->mutable_boots()->set_max(8);
  adaptive->set_stop(tlbfleet::v1::AdaptiveSpec::STOP_VERDICT);
  adaptive->set_level(0.9);
  adaptive->set_spending(tlbfleet::v1::AdaptiveSpec::SPENDING_POCOCK);
  run.set_iterations_per_boot(10);
  run.set_boots(4);
  run.set_adaptive_rounds(2);
  tlbfleet::v1::AdaptiveRow* fast = run.add_adaptive_rows();
  fast->set_metric("records");
  fast->set_param_name("threads");
  fast->set_param_value("4");
  fast->set_arm("malloc");
  fast->set_verdict("better");
  fast->set_decided(true);
  fast->set_measuring(false);
  fast->set_decided_round(1);
  fast->set_base_boots(3);
  fast->set_arm_boots(3);
  fast->set_base_samples(30);
  fast->set_arm_samples(30);
  fast->set_ratio(1.05964);
  fast->set_p(0.00021);
  fast->set_look_alpha(0.0034);
  fast->set_reason("better at look 2: p 0.00021 < 0.0034");
  tlbfleet::v1::AdaptiveRow* open = run.add_adaptive_rows();
  open->set_metric("records");
  open->set_param_name("threads");
  open->set_param_value("1");
  open->set_arm("malloc");
  open->set_measuring(true);
  open->set_base_boots(4);
  open->set_arm_boots(4);
  open->set_base_samples(40);
  open->set_arm_samples(40);
  open->set_reason("no verdict yet at information 0.50");
  return run;
}

TEST(FormatAdaptiveRowsTest, OneLinePerRowWithStateVerdictUseRatioAndWhy) {
  EXPECT_EQ(FormatAdaptiveRows(MakeSequentialRun()),
            "rows: 1 of 2 decided, 1 measuring (B/A: baseline/arm)\n"
            "ROW                            STATE      VERDICT  BOOTS B/A  SAMPLES B/A   "
            "RATIO        P  WHY\n"
            "records threads=4, arm malloc  stopped    better         3/3        30/30  "
            "1.0596  0.00021  better at look 2: p 0.00021 < 0.0034\n"
            "records threads=1, arm malloc  measuring  -              4/4        40/40       "
            "-        -  no verdict yet at information 0.50\n");
}

TEST(FormatAdaptiveRowsTest, NothingForARunWithoutRows) {
  EXPECT_EQ(FormatAdaptiveRows(MakeRun()), "");
  EXPECT_THAT(FormatRunDetails(MakeRun()), Not(HasSubstr("rows:")));
}

TEST(FormatAdaptiveRowsTest, RowLabelWithAndWithoutASweep) {
  tlbfleet::v1::AdaptiveRow row;
  row.set_metric("ops");
  row.set_arm("b");
  EXPECT_EQ(AdaptiveRowLabel(row), "ops, arm b");
  row.set_param_value("4");
  EXPECT_EQ(AdaptiveRowLabel(row), "ops 4, arm b");
  row.set_param_name("threads");
  EXPECT_EQ(AdaptiveRowLabel(row), "ops threads=4, arm b");
}

TEST(FormatRunDetailsTest, SequentialRunShowsItsOptionsThenItsRows) {
  tlbfleet::v1::Run run = MakeSequentialRun();
  run.set_stop_reason("adding boot 5 of at most 8: 1 of 2 rows without a verdict");
  const std::string text = FormatRunDetails(run);
  EXPECT_THAT(text, HasSubstr("boots:         4 (adaptive 2..8)\n"));
  EXPECT_THAT(text, HasSubstr("stop:          verdict at level 0.9 (margin 1.00% for same, "
                              "Pocock spending), 2 rounds so far\n"));
  EXPECT_THAT(text, Not(HasSubstr("target:")));
  EXPECT_THAT(text, HasSubstr("last decision: adding boot 5"));
  // The table comes last, after a blank line.
  const size_t table = text.find("\nrows: 1 of 2 decided, 1 measuring");
  ASSERT_NE(table, std::string::npos) << text;
  EXPECT_GT(table, text.find("last decision:"));
  EXPECT_EQ(text.substr(table + 1), FormatAdaptiveRows(run));
}

TEST(ToJsonTest, CarriesTheAdaptiveRows) {
  const std::string json = ToJson(MakeSequentialRun());
  EXPECT_THAT(json, HasSubstr("\"adaptive_rows\": ["));
  EXPECT_THAT(json, HasSubstr("\"verdict\": \"better\""));
  EXPECT_THAT(json, HasSubstr("\"measuring\": true"));
  EXPECT_THAT(json, HasSubstr("\"base_samples\": \"30\""));  // uint64 as a string (proto JSON)
  EXPECT_THAT(json, HasSubstr("\"ratio\": 1.05964"));
  EXPECT_THAT(json, HasSubstr("\"reason\": \"no verdict yet at information 0.50\""));
}

TEST(CeilingCellTest, WritableShowsValue) {
  tlbfleet::v1::CeilingInfo ceiling;
  ceiling.set_readable(true);
  ceiling.set_writable(true);
  ceiling.set_has_value(true);
  ceiling.set_value(33);
  EXPECT_EQ(CeilingCell(ceiling), "33");
}

TEST(CeilingCellTest, LockedShowsReason) {
  tlbfleet::v1::CeilingInfo ceiling;
  ceiling.set_readable(true);
  ceiling.set_has_value(true);
  ceiling.set_value(33);
  ceiling.set_reason("kernel lockdown (integrity)");
  ceiling.set_lockdown("integrity");
  EXPECT_EQ(CeilingCell(ceiling), "locked: kernel lockdown (integrity)");
}

TEST(CeilingCellTest, LockedWithoutReasonFallsBackToLockdownMode) {
  tlbfleet::v1::CeilingInfo ceiling;
  ceiling.set_lockdown("confidentiality");
  EXPECT_EQ(CeilingCell(ceiling), "locked: kernel lockdown (confidentiality)");
  EXPECT_EQ(CeilingCell(tlbfleet::v1::CeilingInfo()), "-");
}

TEST(FormatHostsTableTest, LockedDownHost) {
  tlbfleet::v1::ListHostsResponse hosts;
  auto* open = hosts.add_hosts();
  open->set_agent_id("0123456789abcdef");
  open->set_connected(true);
  open->set_current_lease("lease-42");
  open->mutable_info()->set_hostname("ivy1");
  open->mutable_info()->set_kernel_release("6.1.0-13-amd64");
  open->mutable_info()->set_logical_cpus(8);
  open->mutable_info()->mutable_cpu()->set_microarch("IvyBridge");
  open->mutable_info()->mutable_ceiling()->set_writable(true);
  open->mutable_info()->mutable_ceiling()->set_has_value(true);
  open->mutable_info()->mutable_ceiling()->set_value(33);

  auto* locked = hosts.add_hosts();
  locked->set_agent_id("fedcba98");
  locked->mutable_info()->set_hostname("ci-runner");
  locked->mutable_info()->set_kernel_release("6.1.0-13-amd64");
  locked->mutable_info()->set_logical_cpus(2);
  locked->mutable_info()->mutable_ceiling()->set_reason("kernel lockdown (integrity)");

  EXPECT_EQ(FormatHostsTable(hosts),
            "HOSTNAME   AGENT     MICROARCH  CPUS  KERNEL          CEILING                      "
            "        CONNECTED  LEASE\n"
            "ivy1       01234567  IvyBridge     8  6.1.0-13-amd64  33                           "
            "        yes        lease-42\n"
            "ci-runner  fedcba98  -             2  6.1.0-13-amd64  locked: kernel lockdown "
            "(integrity)  no         -\n");
}

TEST(FormatHostsTableTest, AHostAskedToRebootIsRebootingNotLost) {
  tlbfleet::v1::ListHostsResponse hosts;
  for (bool connected : {true, false}) {
    auto* h = hosts.add_hosts();
    h->set_agent_id(connected ? "aaaaaaaa" : "bbbbbbbb");
    h->set_connected(connected);
    h->set_rebooting(true);
    h->set_rebooting_for_run("7");
    h->mutable_info()->set_hostname(connected ? "going" : "away");
  }
  auto* lost = hosts.add_hosts();
  lost->set_agent_id("cccccccc");
  lost->mutable_info()->set_hostname("lost");
  const std::string table = FormatHostsTable(hosts);
  EXPECT_THAT(table, HasSubstr("yes, rebooting"));
  EXPECT_THAT(table, ::testing::ContainsRegex("away +bbbbbbbb .* rebooting "));
  EXPECT_THAT(table, ::testing::ContainsRegex("lost +cccccccc .* no "));
}

// A host whose restore failed: the ceiling it holds now, flagged, and why in its own column.
TEST(FormatHostsTableTest, DegradedHost) {
  tlbfleet::v1::ListHostsResponse hosts;
  auto* h = hosts.add_hosts();
  h->set_agent_id("0123456789abcdef");
  h->set_connected(true);
  h->mutable_info()->set_hostname("ivy1");
  h->mutable_info()->set_logical_cpus(8);
  h->mutable_info()->mutable_ceiling()->set_has_value(true);
  h->mutable_info()->mutable_ceiling()->set_value(34);
  h->mutable_info()->mutable_ceiling()->set_reason("degraded: restore to 33 failed");
  h->mutable_info()->set_ceiling_degraded(true);
  h->mutable_info()->set_ceiling_degraded_reason("restore to 33 failed");
  auto* ok = hosts.add_hosts();
  ok->mutable_info()->set_hostname("ivy2");
  ok->mutable_info()->mutable_ceiling()->set_writable(true);
  ok->mutable_info()->mutable_ceiling()->set_has_value(true);
  ok->mutable_info()->mutable_ceiling()->set_value(33);
  const std::string table = FormatHostsTable(hosts);
  EXPECT_THAT(table, HasSubstr("LEASE  DEGRADED\n"));
  EXPECT_THAT(table, HasSubstr("34 DEGRADED"));
  EXPECT_THAT(table, HasSubstr("restore to 33 failed\n"));
  EXPECT_THAT(table, ::testing::ContainsRegex("ivy2 .* 33 .* -\n"));
}

TEST(FormatHostsTableTest, NetserverColumnWhenAHostRunsOne) {
  tlbfleet::v1::ListHostsResponse hosts;
  auto* peer = hosts.add_hosts();
  peer->set_agent_id("0123456789abcdef");
  peer->set_connected(true);
  peer->mutable_info()->set_hostname("b");
  peer->mutable_info()->set_netserver("127.0.0.2:12865");
  auto* plain = hosts.add_hosts();
  plain->set_agent_id("fedcba98");
  plain->mutable_info()->set_hostname("a");
  const std::string table = FormatHostsTable(hosts);
  EXPECT_NE(table.find("LEASE  NETSERVER\n"), std::string::npos) << table;
  EXPECT_NE(table.find("-      127.0.0.2:12865\n"), std::string::npos) << table;
  EXPECT_NE(table.find("no         -      -\n"), std::string::npos) << table;
}

TEST(FormatHostsTableTest, RebootsColumnWhenAHostCanReboot) {
  tlbfleet::v1::ListHostsResponse hosts;
  auto* vm = hosts.add_hosts();
  vm->set_agent_id("0123456789abcdef");
  vm->set_connected(true);
  vm->mutable_info()->set_hostname("vm1");
  vm->mutable_info()->set_can_reboot(true);
  auto* plain = hosts.add_hosts();
  plain->set_agent_id("fedcba98");
  plain->mutable_info()->set_hostname("a");
  const std::string table = FormatHostsTable(hosts);
  EXPECT_NE(table.find("LEASE  REBOOTS\n"), std::string::npos) << table;
  EXPECT_NE(table.find("yes        -      yes\n"), std::string::npos) << table;
  EXPECT_NE(table.find("no         -      no\n"), std::string::npos) << table;
  tlbfleet::v1::ListHostsResponse none;
  *none.add_hosts() = *plain;
  EXPECT_EQ(FormatHostsTable(none).find("REBOOTS"), std::string::npos);
}

TEST(ResultsCsvTest, HeaderAndQuotedRow) {
  tlbfleet::v1::GetResultsResponse results;
  auto* s = results.add_samples();
  s->set_run_id("7");
  s->set_job_id(3);
  s->set_arm("ceiling,1");
  s->set_param_name("threads");
  s->set_param_value("4");
  s->set_iteration(2);
  s->set_metric("records/s");
  s->set_value(12345.5);
  s->set_unit("ops \"per\" sec");
  s->set_better(tlbfleet::v1::BETTER_HIGHER);
  s->set_host("ivy1");
  s->set_boot_id("b00t");
  s->set_kernel_release("6.1.0");
  s->set_ceiling_applied(true);
  s->set_ceiling(1);
  s->set_agent_id("0d60fd02-aaaa");
  s->set_machine_id("4c4c4544");
  s->set_slot(1);
  s->set_excluded("slot 1 restarted: ivy1 was lost");
  auto* t = results.add_samples();
  t->set_run_id("7");
  t->set_metric("latency");
  t->set_series("thread0");
  t->set_value(0.25);
  t->set_better(tlbfleet::v1::BETTER_LOWER);

  EXPECT_EQ(FormatResultsCsv(results),
            "run_id,job_id,arm,param_name,param_value,iteration,metric,series,value,unit,better,"
            "host,boot_id,kernel_release,ceiling_applied,ceiling,ceiling_observed,peer_host,"
            "agent_id,machine_id,slot,excluded,commit,build_id\n"
            "7,3,\"ceiling,1\",threads,4,2,records/s,,12345.5,\"ops \"\"per\"\" sec\",higher,"
            "ivy1,b00t,6.1.0,true,1,false,,0d60fd02-aaaa,4c4c4544,1,slot 1 restarted: ivy1 was "
            "lost,,\n"
            "7,0,,,,0,latency,thread0,0.25,,lower,,,,false,,false,,,,0,,,\n");
  // A job whose arm set no ceiling still says which one it ran under; a netperf peer job
  // names its peer.
  t->set_ceiling_observed(true);
  t->set_ceiling(33);
  t->set_peer_host("b2-07");
  EXPECT_THAT(FormatResultsCsv(results),
              HasSubstr("7,0,,,,0,latency,thread0,0.25,,lower,,,,false,33,true,b2-07,,,0,,,\n"));
}

TEST(ToJsonTest, ProtoFieldNamesAndDefaults) {
  tlbfleet::v1::Run run = MakeRun();
  std::string json = ToJson(run);
  EXPECT_THAT(json, HasSubstr("\"created_unix\": \"1700000000\""));
  EXPECT_THAT(json, HasSubstr("\"state\": \"RUN_STATE_RUNNING\""));
  EXPECT_THAT(json, HasSubstr("\"cancelled\": 0"));  // defaults are printed
  EXPECT_EQ(json.back(), '\n');
}

TEST(WithTrailingNewlineTest, ExactlyOne) {
  EXPECT_EQ(WithTrailingNewline(""), "");
  EXPECT_EQ(WithTrailingNewline("a"), "a\n");
  EXPECT_EQ(WithTrailingNewline("a\n\n\n"), "a\n");
}

}  // namespace
}  // namespace tlbfleet::cli
