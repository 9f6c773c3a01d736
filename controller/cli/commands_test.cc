#include "controller/cli/commands.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <tuple>

#include "common/clock.h"
#include "controller/cli/exit_codes.h"
#include "controller/cli/fake_fleet_for_test.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/json_util.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"

namespace tlbfleet::cli {
namespace {

using ::testing::EndsWith;
using ::testing::HasSubstr;
using ::testing::StartsWith;
namespace v1 = tlbfleet::v1;

v1::Run MakeRun(v1::RunState state, uint32_t total, uint32_t succeeded, uint32_t running) {
  v1::Run run;
  run.set_id("7");
  run.set_state(state);
  run.mutable_jobs()->set_total(total);
  run.mutable_jobs()->set_succeeded(succeeded);
  run.mutable_jobs()->set_running(running);
  run.mutable_jobs()->set_queued(total - succeeded - running);
  return run;
}

FakeFleet::RunReply Ok(v1::Run run) { return {grpc::Status::OK, std::move(run)}; }

class CommandsTest : public ::testing::Test {
 protected:
  CommandsTest() : CommandsTest("") {}
  // `address` empty: the fake controller's (members are built before this body runs).
  explicit CommandsTest(const std::string& address) {
    FleetClientOptions options;
    options.address = address.empty() ? fleet_.address() : address;
    options.connect_timeout = std::chrono::milliseconds(2000);
    options.rpc_timeout = std::chrono::milliseconds(5000);
    client_ = *FleetClient::Create(options);
    commands_ = std::make_unique<Commands>(*client_, out_, err_, clock_, /*err_is_tty=*/false);
  }

  std::string WriteTempFile(const std::string& name, const std::string& contents) {
    // One directory per process and test: CTest runs tests in parallel, and two tests that
    // write the same name in a shared directory read each other's files.
    const std::string dir = ::testing::TempDir() + "/tlbfleet-cli-test-" +
                            std::to_string(::getpid()) + "-" +
                            ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::filesystem::create_directories(dir);
    std::string path = dir + "/" + name;
    std::ofstream(path) << contents;
    return path;
  }

  FakeFleet fleet_;
  FakeClock clock_;  // moves only when Wait sleeps
  const absl::Time start_ = clock_.Now();
  std::ostringstream out_, err_;
  std::unique_ptr<FleetClient> client_;
  std::unique_ptr<Commands> commands_;
};

TEST_F(CommandsTest, SubmitPrintsRunIdAloneOnLastLine) {
  v1::SubmitRunResponse response;
  response.set_run_id("7");
  response.set_jobs(12);
  fleet_.SetSubmitResponse(response);
  std::string path = WriteTempFile("spec.yaml", "name: nightly\nbenchmark: ebizzy\n");

  EXPECT_EQ(commands_->Submit(path), kExitOk);
  EXPECT_EQ(out_.str(), "submitted run 7 (12 jobs)\n7\n");
  EXPECT_EQ(fleet_.last_submit().spec_yaml(), "name: nightly\nbenchmark: ebizzy\n");
  EXPECT_EQ(fleet_.last_submit().source_name(), path);
}

TEST_F(CommandsTest, SubmitUnreadableFileIsUsageErrorWithoutRpc) {
  EXPECT_EQ(commands_->Submit("/nonexistent/spec.yaml"), kExitUsage);
  EXPECT_EQ(err_.str(),
            "tlbfleet: cannot read run spec: /nonexistent/spec.yaml: No such file or directory\n");
  EXPECT_EQ(fleet_.last_submit().source_name(), "");
}

TEST_F(CommandsTest, SubmitRejectedSpecPrintsControllerMessage) {
  fleet_.SetStatus(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                                "spec.yaml: arms[1].ceiling: \"x\" is not a page count"));
  std::string path = WriteTempFile("bad.yaml", "arms: []\n");
  EXPECT_EQ(commands_->Submit(path), kExitUsage);
  EXPECT_EQ(err_.str(), "tlbfleet: spec.yaml: arms[1].ceiling: \"x\" is not a page count\n");
  EXPECT_EQ(out_.str(), "");
}

TEST_F(CommandsTest, RunsTextAndJson) {
  v1::ListRunsResponse runs;
  *runs.add_runs() = MakeRun(v1::RUN_STATE_RUNNING, 12, 5, 1);
  fleet_.SetRuns(runs);
  EXPECT_EQ(commands_->Runs(5, OutputFormat::kText), kExitOk);
  EXPECT_EQ(fleet_.last_limit(), 5u);
  EXPECT_THAT(out_.str(), HasSubstr("running  5/12"));
  out_.str("");
  EXPECT_EQ(commands_->Runs(5, OutputFormat::kJson), kExitOk);
  EXPECT_THAT(out_.str(), HasSubstr("\"state\": \"RUN_STATE_RUNNING\""));
}

TEST_F(CommandsTest, UnknownRunIsNotFound) {
  fleet_.SetStatus(grpc::Status(grpc::StatusCode::NOT_FOUND, "no run 99"));
  EXPECT_EQ(commands_->ShowRun("99", OutputFormat::kText), kExitFailed);
  EXPECT_EQ(err_.str(), "tlbfleet: run 99 not found\n");
}

TEST_F(CommandsTest, WaitReportsProgressAndSucceeds) {
  fleet_.ScriptGetRun(
      {Ok(MakeRun(v1::RUN_STATE_QUEUED, 2, 0, 0)), Ok(MakeRun(v1::RUN_STATE_RUNNING, 2, 0, 1)),
       Ok(MakeRun(v1::RUN_STATE_RUNNING, 2, 0, 1)), Ok(MakeRun(v1::RUN_STATE_RUNNING, 2, 1, 1)),
       Ok(MakeRun(v1::RUN_STATE_SUCCEEDED, 2, 2, 0))});
  EXPECT_EQ(commands_->Wait("7", WaitOptions()), kExitOk);
  EXPECT_EQ(err_.str(),
            "run 7: 0/2 jobs done, 0 running\n"
            "run 7: 0/2 jobs done, 1 running\n"
            "run 7: 1/2 jobs done, 1 running\n"
            "run 7: 2/2 jobs done, 0 running\n"
            "run 7 succeeded: 2/2 jobs done\n");
  EXPECT_EQ(clock_.Now() - start_, absl::Milliseconds(2000));  // 4 polls * 0.5 s
}

TEST_F(CommandsTest, WaitQuietPrintsNothingOnSuccess) {
  fleet_.ScriptGetRun({Ok(MakeRun(v1::RUN_STATE_SUCCEEDED, 1, 1, 0))});
  WaitOptions options;
  options.quiet = true;
  EXPECT_EQ(commands_->Wait("7", options), kExitOk);
  EXPECT_EQ(err_.str(), "");
  EXPECT_EQ(out_.str(), "");
}

TEST_F(CommandsTest, WaitFailedRunPrintsErrorAndExitsOne) {
  v1::Run failed = MakeRun(v1::RUN_STATE_FAILED, 2, 1, 0);
  failed.mutable_jobs()->set_failed(1);
  failed.set_error("job 2 on ci-runner: ceiling not writable: kernel lockdown (integrity)");
  fleet_.ScriptGetRun({Ok(failed)});
  WaitOptions options;
  options.quiet = true;
  EXPECT_EQ(commands_->Wait("7", options), kExitFailed);
  EXPECT_EQ(err_.str(),
            "tlbfleet: run 7 failed: job 2 on ci-runner: ceiling not writable: kernel lockdown "
            "(integrity)\n");
}

TEST_F(CommandsTest, WaitCancelledRunExitsOne) {
  fleet_.ScriptGetRun({Ok(MakeRun(v1::RUN_STATE_CANCELLED, 2, 0, 0))});
  WaitOptions options;
  options.quiet = true;
  EXPECT_EQ(commands_->Wait("7", options), kExitFailed);
  EXPECT_EQ(err_.str(), "tlbfleet: run 7 cancelled\n");
}

TEST_F(CommandsTest, WaitTimesOutWithExitThree) {
  fleet_.ScriptGetRun({Ok(MakeRun(v1::RUN_STATE_RUNNING, 12, 5, 1))});
  WaitOptions options;
  options.timeout = std::chrono::milliseconds(2000);
  options.quiet = true;
  EXPECT_EQ(commands_->Wait("7", options), kExitTimeout);
  EXPECT_EQ(err_.str(),
            "tlbfleet: timed out after 2 s waiting for run 7 (running, 5/12 jobs done)\n");
  EXPECT_EQ(clock_.Now() - start_, absl::Milliseconds(2000));
  EXPECT_EQ(fleet_.get_run_calls(), 5);  // at 0, 0.5, 1, 1.5 and 2 s
}

TEST_F(CommandsTest, WaitRidesOutShortControllerOutage) {
  grpc::Status down(grpc::StatusCode::UNAVAILABLE, "Connection refused");
  fleet_.ScriptGetRun({Ok(MakeRun(v1::RUN_STATE_RUNNING, 1, 0, 1)),
                       {down, {}},
                       {down, {}},
                       Ok(MakeRun(v1::RUN_STATE_SUCCEEDED, 1, 1, 0))});
  EXPECT_EQ(commands_->Wait("7", WaitOptions()), kExitOk);
  EXPECT_THAT(err_.str(), HasSubstr("run 7: controller unreachable, retrying\n"));
  EXPECT_THAT(err_.str(), EndsWith("run 7 succeeded: 1/1 jobs done\n"));
}

TEST_F(CommandsTest, WaitGivesUpAfterOutageGrace) {
  grpc::Status down(grpc::StatusCode::UNAVAILABLE, "Connection refused");
  fleet_.ScriptGetRun({Ok(MakeRun(v1::RUN_STATE_RUNNING, 1, 0, 1)), {down, {}}});
  WaitOptions options;
  options.outage_grace = std::chrono::milliseconds(1000);
  options.quiet = true;
  EXPECT_EQ(commands_->Wait("7", options), kExitUnreachable);
  EXPECT_THAT(err_.str(), HasSubstr("tlbfleet: cannot reach controller at 127.0.0.1:"));
}

TEST_F(CommandsTest, WaitUnknownRun) {
  fleet_.ScriptGetRun({{grpc::Status(grpc::StatusCode::NOT_FOUND, ""), {}}});
  EXPECT_EQ(commands_->Wait("99", WaitOptions()), kExitFailed);
  EXPECT_EQ(err_.str(), "tlbfleet: run 99 not found\n");
}

TEST_F(CommandsTest, Cancel) {
  fleet_.SetCancelled(MakeRun(v1::RUN_STATE_CANCELLED, 2, 0, 0));
  EXPECT_EQ(commands_->Cancel("7"), kExitOk);
  EXPECT_EQ(out_.str(), "run 7 cancelled\n");
}

TEST_F(CommandsTest, HostsJsonIsTheListHostsResponse) {
  v1::ListHostsResponse hosts;
  hosts.add_hosts()->mutable_info()->set_hostname("ivy1");
  fleet_.SetHosts(hosts);
  EXPECT_EQ(commands_->Hosts(OutputFormat::kJson), kExitOk);
  EXPECT_THAT(out_.str(), StartsWith("{\n \"hosts\": ["));
  EXPECT_THAT(out_.str(), HasSubstr("\"hostname\": \"ivy1\""));
  EXPECT_THAT(out_.str(), HasSubstr("\"logical_cpus\": 0"));
}

TEST_F(CommandsTest, ResultsCsv) {
  v1::GetResultsResponse results;
  auto* sample = results.add_samples();
  sample->set_run_id("7");
  sample->set_arm("a,b");
  sample->set_value(2.5);
  fleet_.SetResults(results);
  EXPECT_EQ(commands_->Results("7", OutputFormat::kCsv), kExitOk);
  EXPECT_THAT(out_.str(), StartsWith("run_id,job_id,arm,"));
  EXPECT_THAT(out_.str(), EndsWith("\n7,0,\"a,b\",,,0,,,2.5,,,,,,false,,false,,,,0,,,\n"));
}

CompareFlags Baseline(const std::string& arm) {
  CompareFlags flags;
  flags.baseline = arm;
  return flags;
}

TEST_F(CommandsTest, CompareTextIsTheControllersRendering) {
  v1::CompareResponse response;
  response.set_text("ebizzy\n          base   c1");
  response.mutable_report()->add_arms("base");
  fleet_.SetCompare(response);
  EXPECT_EQ(commands_->Compare("7", Baseline("base"), OutputFormat::kText), kExitOk);
  EXPECT_EQ(out_.str(), "ebizzy\n          base   c1\n");
  EXPECT_EQ(fleet_.last_compare().baseline(), "base");
  // Unset options stay unset, so the controller applies its defaults.
  EXPECT_FALSE(fleet_.last_compare().has_margin());
  EXPECT_FALSE(fleet_.last_compare().has_level());
  EXPECT_EQ(fleet_.last_compare().pairing(), "");
  EXPECT_FALSE(fleet_.last_compare().unadjusted());
}

TEST_F(CommandsTest, CompareSendsTheVerdictOptions) {
  fleet_.SetCompare(v1::CompareResponse());
  CompareFlags flags;
  flags.margin = "2%";
  flags.level = "0.9";
  flags.pairing = "none";
  flags.unadjusted = true;
  EXPECT_EQ(commands_->Compare("7", flags, OutputFormat::kText), kExitOk) << err_.str();
  const v1::CompareRequest request = fleet_.last_compare();
  EXPECT_DOUBLE_EQ(request.margin(), 0.02);
  EXPECT_DOUBLE_EQ(request.level(), 0.9);
  EXPECT_EQ(request.pairing(), "none");
  EXPECT_TRUE(request.unadjusted());
}

// Bad options never reach the controller: exit 2, naming the flag.
TEST_F(CommandsTest, CompareRefusesBadOptionsNamingTheFlag) {
  const std::string path = WriteTempFile("compare.csv", "arm,boot,param,iteration,metric,value\n");
  for (const auto& [field, value, message] :
       {std::tuple{&CompareFlags::margin, "0", "--margin: must be above 0 and below 100 %"},
        std::tuple{&CompareFlags::margin, "100%", "--margin: must be above 0 and below 100 %"},
        std::tuple{&CompareFlags::margin, "-1%", "--margin: must be above 0"},
        std::tuple{&CompareFlags::margin, "lots", "--margin: expected a fraction such as 0.01"},
        std::tuple{&CompareFlags::level, "1", "--level: must be between 0 and 1"},
        std::tuple{&CompareFlags::level, "0%", "--level: must be between 0 and 1"},
        std::tuple{&CompareFlags::pairing, "boot",
                   "--pairing: expected auto, boots, iterations"}}) {
    CompareFlags flags;
    flags.*field = value;
    err_.str("");
    EXPECT_EQ(commands_->Compare("7", flags, OutputFormat::kText), kExitUsage) << value;
    EXPECT_THAT(err_.str(), HasSubstr(message)) << value;
    err_.str("");
    EXPECT_EQ(commands_->CompareFromCsv(path, flags, false, OutputFormat::kJson), kExitUsage);
    EXPECT_THAT(err_.str(), HasSubstr(message)) << value;
  }
  EXPECT_FALSE(fleet_.last_compare().has_margin());  // no RPC was made
}

constexpr char kCompareCsv[] =
    "arm,boot,param,iteration,metric,value\n"
    "mmap,b1,threads=1,0,records,100\n"
    "mmap,b1,threads=1,1,records,102\n"
    "mmap,b2,threads=1,0,records,101\n"
    "mmap,b2,threads=1,1,records,103\n"
    "malloc,b3,threads=1,0,records,110\n"
    "malloc,b3,threads=1,1,records,112\n"
    "malloc,b4,threads=1,0,records,111\n"
    "malloc,b4,threads=1,1,records,113\n";

TEST_F(CommandsTest, CompareFromCsvInEveryFormat) {
  const std::string path = WriteTempFile("compare.csv", kCompareCsv);
  EXPECT_EQ(commands_->CompareFromCsv(path, Baseline(""), false, OutputFormat::kText), kExitOk);
  EXPECT_THAT(out_.str(), HasSubstr("records (higher is better)"));
  EXPECT_THAT(out_.str(), HasSubstr("Hmean      threads=1"));
  EXPECT_THAT(out_.str(), HasSubstr("threads=1  malloc  better"));
  out_.str("");
  EXPECT_EQ(commands_->CompareFromCsv(path, Baseline("malloc"), true, OutputFormat::kJson),
            kExitOk);
  // The report message: arms baseline first, each record with its direction and verdict.
  EXPECT_THAT(out_.str(), HasSubstr("\"arms\": [\n  \"malloc\",\n  \"mmap\"\n ]"));
  EXPECT_THAT(out_.str(), HasSubstr("\"better\": \"lower\""));
  EXPECT_THAT(out_.str(), HasSubstr("\"verdict\": \"better\""));  // mmap is lower
  out_.str("");
  EXPECT_EQ(commands_->CompareFromCsv(path, Baseline(""), false, OutputFormat::kCsv), kExitOk);
  const std::string csv = out_.str();
  EXPECT_THAT(csv, StartsWith("arm,param,"));
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 3);
  EXPECT_EQ(err_.str(), "");
}

TEST_F(CommandsTest, CompareFromCsvErrorsAreUsageErrors) {
  EXPECT_EQ(
      commands_->CompareFromCsv("/nonexistent/x.csv", Baseline(""), false, OutputFormat::kText),
      kExitUsage);
  EXPECT_THAT(err_.str(), StartsWith("tlbfleet: cannot read CSV: /nonexistent/x.csv"));
  err_.str("");
  const std::string bad = WriteTempFile("bad.csv", "arm,value\nx,1\n");
  EXPECT_EQ(commands_->CompareFromCsv(bad, Baseline(""), false, OutputFormat::kText), kExitUsage);
  EXPECT_THAT(err_.str(), HasSubstr("the header lacks column \"boot\""));
  err_.str("");
  const std::string path = WriteTempFile("compare.csv", kCompareCsv);
  EXPECT_EQ(commands_->CompareFromCsv(path, Baseline("nope"), false, OutputFormat::kText),
            kExitUsage);
  EXPECT_THAT(err_.str(), HasSubstr("no arm named \"nope\""));
  // mmap and malloc ran in boots of their own: they cannot be paired.
  err_.str("");
  CompareFlags pair;
  pair.pairing = "boots";
  EXPECT_EQ(commands_->CompareFromCsv(path, pair, false, OutputFormat::kText), kExitUsage);
  EXPECT_THAT(err_.str(), HasSubstr("--pairing: pairing by boot needs at least 2 boots both arms "
                                    "were measured in"));
}

TEST_F(CommandsTest, CompareRunInEveryFormatRendersTheControllersReport) {
  // The controller computes the report; the CLI only renders it, in every format.
  v1::CompareResponse response;
  v1::Report* report = response.mutable_report();
  report->add_arms("mmap");
  report->add_arms("malloc");
  v1::Report::Group* group = report->add_groups();
  group->set_metric("records");
  for (const char* arm : {"mmap", "malloc"}) {
    v1::Report::Record* r = group->add_records();
    r->set_arm(arm);
    r->set_metric("records");
    r->set_better("higher");
    r->set_n(2);
    r->set_boots(1);
  }
  group->mutable_records(1)->set_welch_p(0.25);
  group->mutable_records(1)->set_verdict("unknown");
  response.set_text("the controller's text\n");
  fleet_.SetCompare(response);
  EXPECT_EQ(commands_->Compare("7", {}, OutputFormat::kCsv), kExitOk);
  EXPECT_THAT(out_.str(),
              StartsWith("arm,param,param_name,param_value,metric,unit,better,n,boots,"));
  EXPECT_THAT(out_.str(), HasSubstr("\nmmap,,,,records,,higher,2,1,"));
  EXPECT_THAT(out_.str(), HasSubstr("\nmalloc,,,,records,,higher,2,1,"));
  EXPECT_LT(out_.str().find("\nmmap,"), out_.str().find("\nmalloc,"));
  EXPECT_EQ(fleet_.last_compare().run_id(), "7");

  out_.str("");
  EXPECT_EQ(commands_->Compare("7", {}, OutputFormat::kJson), kExitOk);
  v1::Report parsed;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(out_.str(), &parsed).ok()) << out_.str();
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(parsed, *report));

  out_.str("");
  EXPECT_EQ(commands_->Compare("7", {}, OutputFormat::kText), kExitOk);
  EXPECT_EQ(out_.str(), "the controller's text\n");
}

class UnreachableTest : public CommandsTest {
 protected:
  UnreachableTest() : CommandsTest("unix:/nonexistent-tlbfleet-test/controller.sock") {}
};

TEST_F(UnreachableTest, OneClearLineAndExitFour) {
  EXPECT_EQ(commands_->Runs(0, OutputFormat::kText), kExitUnreachable);
  std::string err = err_.str();
  EXPECT_THAT(err, StartsWith("tlbfleet: cannot reach controller at "
                              "unix:/nonexistent-tlbfleet-test/controller.sock: "));
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  EXPECT_EQ(out_.str(), "");
}

// A TCP listener that never accepts: the handshake never completes, so only the connect
// (or call) deadline ends the wait.
TEST(ConnectDeadlineTest, SilentListenerHitsDeadline) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(::listen(fd, 1), 0);
  socklen_t len = sizeof(addr);
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);

  FleetClientOptions options;
  options.address = "127.0.0.1:" + std::to_string(ntohs(addr.sin_port));
  options.connect_timeout = std::chrono::milliseconds(300);
  options.rpc_timeout = std::chrono::milliseconds(300);
  auto client = *FleetClient::Create(options);
  v1::ListHostsResponse hosts;
  grpc::Status status = client->ListHosts(&hosts);
  EXPECT_EQ(ExitCodeForStatus(status.error_code()), kExitUnreachable) << status.error_message();
  ::close(fd);
}

}  // namespace
}  // namespace tlbfleet::cli

namespace tlbfleet::cli {
namespace {

TEST_F(CommandsTest, ProfilePrintsTheFlushTableAndRefusesUnknownArms) {
  v1::Run run = MakeRun(v1::RUN_STATE_SUCCEEDED, 2, 2, 0);
  run.mutable_spec()->add_arms()->set_name("c1");
  run.mutable_spec()->add_arms()->set_name("c512");
  fleet_.ScriptGetRun({Ok(run), Ok(run)});
  v1::GetResultsResponse results;
  for (const auto& [arm, series, value] :
       {std::tuple{"c1", "pages=-1", 90.0}, std::tuple{"c1", "pages=1", 10.0},
        std::tuple{"c512", "pages=65-128", 100.0}}) {
    v1::Sample* s = results.add_samples();
    s->set_arm(arm);
    s->set_metric("tlb_flush_events");
    s->set_series(series);
    s->set_value(value);
  }
  fleet_.SetResults(results);
  EXPECT_EQ(commands_->Profile("7", {}, "", OutputFormat::kText), kExitOk);
  EXPECT_THAT(out_.str(), HasSubstr(" GLOBAL:     90.00%   90.00%      0.00%    0.00%"));
  out_.str("");
  EXPECT_EQ(commands_->Profile("7", {"nope"}, "", OutputFormat::kText), kExitUsage);
  EXPECT_THAT(err_.str(), HasSubstr("--arm"));
}

// `profile --flush-sizes` turns one arm's local mm shootdowns into tlbflush's flush_sizes.
TEST_F(CommandsTest, ProfileFlushSizesForOneArm) {
  v1::Run run = MakeRun(v1::RUN_STATE_SUCCEEDED, 2, 2, 0);
  run.mutable_spec()->add_arms()->set_name("wide");
  run.mutable_spec()->add_arms()->set_name("other");
  fleet_.ScriptGetRun({Ok(run), Ok(run), Ok(run)});
  v1::GetResultsResponse results;
  for (const auto& [arm, series, value] :
       {std::tuple{"wide", "reason=3,pages=1", 57.0}, std::tuple{"wide", "reason=3,pages=2", 14.0},
        std::tuple{"wide", "reason=3,pages=-1", 2.0}, std::tuple{"wide", "reason=1,pages=1", 9.0},
        std::tuple{"other", "reason=3,pages=4", 1.0}}) {
    v1::Sample* s = results.add_samples();
    s->set_arm(arm);
    s->set_metric("tlb_flush_events");
    s->set_series(series);
    s->set_value(value);
  }
  fleet_.SetResults(results);
  EXPECT_EQ(commands_->Profile("7", {"wide"}, "", OutputFormat::kText, true), kExitOk);
  EXPECT_EQ(out_.str(), "flush_sizes: \"1:57,2:14\"\n");
  EXPECT_THAT(err_.str(), HasSubstr("2 full flushes left out"));
  out_.str("");
  EXPECT_EQ(commands_->Profile("7", {}, "", OutputFormat::kText, true), kExitUsage);
  EXPECT_THAT(err_.str(), HasSubstr("name one with --arm"));
}

}  // namespace
}  // namespace tlbfleet::cli
