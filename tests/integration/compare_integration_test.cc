// The Compare RPC on a real controller over loopback gRPC, after a real agent measured two
// arms: the report carries each arm's verdict with its scope, and bad verdict options are
// INVALID_ARGUMENT naming the field (exit 2 naming it in the CLI).

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "google/protobuf/util/json_util.h"
#include "google/protobuf/util/message_differencer.h"
#include "tests/integration/harness.h"
#include "tests/integration/http_client.h"

namespace tlbfleet::testing {
namespace {

using namespace std::chrono_literals;

class CompareIntegrationTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    controller_ = new ControllerProcess(dir_->path());
    ASSERT_GT(controller_->grpc_port(), 0) << controller_->process().Log();
    agent_ = new Process({BinPath("tlbfleet-agent"), "--controller", controller_->address(),
                          "--state-dir", dir_->path() + "/agent", "--max-backoff-seconds", "2"},
                         dir_->path() + "/agent.log");
    ASSERT_TRUE(WaitFor([] { return controller_->ConnectedHosts() == 1; }, 30s));
    // One boot, 5 iterations per arm: a within-boot comparison, like the quickstart's.
    grpc::Status s = controller_->Submit(R"(
name: it-compare
benchmark: pipetest
params: {loops: 2000}
iterations: 5
arms:
  - {name: short, params: {loops: 2000}}
  - {name: long,  params: {loops: 4000}}
)",
                                         run_id_);
    ASSERT_TRUE(s.ok()) << s.error_message();
    const v1::Run run = controller_->WaitForRunEnd(*run_id_, 180s);
    ASSERT_EQ(run.state(), v1::RUN_STATE_SUCCEEDED) << run.error() << agent_->Log();
  }
  static void TearDownTestSuite() {
    delete agent_;
    delete controller_;
    delete dir_;
  }

  static grpc::Status Compare(const v1::CompareRequest& request, v1::CompareResponse* response) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + 30s);
    return controller_->fleet().Compare(&ctx, request, response);
  }

  static v1::CompareRequest Request() {
    v1::CompareRequest request;
    request.set_run_id(*run_id_);
    return request;
  }

  static TempDir* dir_;
  static ControllerProcess* controller_;
  static Process* agent_;
  static std::string* run_id_;
};
TempDir* CompareIntegrationTest::dir_ = nullptr;
ControllerProcess* CompareIntegrationTest::controller_ = nullptr;
Process* CompareIntegrationTest::agent_ = nullptr;
std::string* CompareIntegrationTest::run_id_ = new std::string;

TEST_F(CompareIntegrationTest, TheReportCarriesEachVerdictWithItsScope) {
  v1::CompareResponse response;
  grpc::Status s = Compare(Request(), &response);
  ASSERT_TRUE(s.ok()) << s.error_message();
  const v1::Report& report = response.report();
  EXPECT_DOUBLE_EQ(report.level(), 0.95);
  EXPECT_DOUBLE_EQ(report.margin(), 0.01);
  EXPECT_TRUE(report.adjusted());
  bool found = false;
  for (const v1::Report::Group& g : report.groups()) {
    if (g.metric() != "usecs_per_op") continue;
    found = true;
    ASSERT_EQ(g.verdicts_size(), 1);
    const v1::Report::Verdict& v = g.verdicts(0);
    EXPECT_EQ(v.arm(), "long");
    EXPECT_EQ(v.scope(), "within-boot");
    EXPECT_EQ(v.design(), "unpaired-iterations");
    EXPECT_EQ(v.units_base(), 5u);
    EXPECT_TRUE(v.has_ratio() && v.has_ci_low() && v.has_ci_high() && v.has_p() && v.has_q());
    EXPECT_LE(v.ci_low(), v.ratio());
    EXPECT_GE(v.q(), v.p());
    EXPECT_FALSE(v.verdict().empty());
    EXPECT_FALSE(v.notes().empty());
  }
  EXPECT_TRUE(found);
  // The text reads as the quickstart shows it: the verdict line names its scope, and a note
  // says what a one-boot result can speak for.
  EXPECT_NE(response.text().find("Verdicts: ratio of geometric means"), std::string::npos)
      << response.text();
  EXPECT_NE(response.text().find("within-boot"), std::string::npos);
  EXPECT_NE(response.text().find("within one boot: both arms were measured in one boot"),
            std::string::npos)
      << response.text();
}

// One report, computed once: what gRPC answers, what the dashboard reads over HTTP and what
// `tlbfleet compare --format json` prints are the same message, field by field; CSV and text
// are renderings of it.
TEST_F(CompareIntegrationTest, TheCliTheDashboardAndGrpcGetTheSameReport) {
  v1::CompareResponse grpc_response;
  ASSERT_TRUE(Compare(Request(), &grpc_response).ok());
  const v1::Report& report = grpc_response.report();
  ASSERT_GT(report.groups_size(), 0);
  ASSERT_EQ(report.groups(0).records_size(), 2);

  const HttpResult http =
      HttpCall(controller_->http_port(), "GET", "/api/v1/runs/" + *run_id_ + "/compare");
  ASSERT_EQ(http.status, 200) << http.body;
  v1::CompareResponse http_response;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(http.body, &http_response).ok())
      << http.body;
  std::string diff;
  google::protobuf::util::MessageDifferencer differ;
  differ.ReportDifferencesToString(&diff);
  EXPECT_TRUE(differ.Compare(http_response.report(), report)) << diff;
  EXPECT_EQ(http_response.text(), grpc_response.text());

  std::string json;
  ASSERT_EQ(RunCommand({BinPath("tlbfleet"), "--controller", controller_->address(), "compare",
                        *run_id_, "--format", "json"},
                       &json),
            0)
      << json;
  v1::Report cli;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(json, &cli).ok()) << json;
  diff.clear();
  EXPECT_TRUE(differ.Compare(cli, report)) << diff;

  std::string csv;
  ASSERT_EQ(RunCommand({BinPath("tlbfleet"), "--controller", controller_->address(), "compare",
                        *run_id_, "--format", "csv"},
                       &csv),
            0);
  size_t records = 0;
  for (const v1::Report::Group& g : report.groups()) records += g.records_size();
  EXPECT_EQ(static_cast<size_t>(std::count(csv.begin(), csv.end(), '\n')), records + 1) << csv;
  std::string text;
  ASSERT_EQ(
      RunCommand({BinPath("tlbfleet"), "--controller", controller_->address(), "compare", *run_id_},
                 &text),
      0);
  EXPECT_EQ(text, grpc_response.text());
}

TEST_F(CompareIntegrationTest, AcrossRunsTheVerdictsAreCalibratedAndSaySo) {
  std::string other;
  ASSERT_TRUE(controller_
                  ->Submit(R"(
name: it-compare-again
benchmark: pipetest
iterations: 5
arms:
  - {name: short, params: {loops: 2000}}
)",
                           &other)
                  .ok());
  ASSERT_EQ(controller_->WaitForRunEnd(other, 180s).state(), v1::RUN_STATE_SUCCEEDED);
  v1::CompareRequest request = Request();
  request.set_with_run_id(other);
  request.set_arm("long");
  v1::CompareResponse response;
  grpc::Status s = Compare(request, &response);
  ASSERT_TRUE(s.ok()) << s.error_message();
  const v1::Report& report = response.report();
  EXPECT_EQ(report.scope(), "across runs");
  ASSERT_EQ(report.arms_size(), 2);
  EXPECT_EQ(report.arms(0), *run_id_ + ":long");
  EXPECT_EQ(report.arms(1), other + ":short");
  bool noted = false;
  for (const v1::Report::Group& g : report.groups()) {
    ASSERT_EQ(g.verdicts_size(), 1);
    EXPECT_TRUE(g.verdicts(0).has_ratio());
    for (const std::string& note : g.verdicts(0).notes()) {
      noted = noted || note.find("across runs: these arms come from runs") == 0;
    }
  }
  EXPECT_TRUE(noted);
  EXPECT_NE(response.text().find("across runs"), std::string::npos);
  // The CLI asks the same, and a choice that names nothing is a usage error naming it.
  std::string out;
  EXPECT_EQ(RunCommand({BinPath("tlbfleet"), "--controller", controller_->address(), "compare",
                        *run_id_, "--with", other, "--with-arm", "nope"},
                       &out, true),
            2)
      << out;
  EXPECT_NE(out.find("with_arm: run " + other + " has no arm named \"nope\""), std::string::npos)
      << out;
  EXPECT_EQ(RunCommand({BinPath("tlbfleet"), "--controller", controller_->address(), "compare",
                        *run_id_, "--with", other},
                       &out),
            0)
      << out;
  EXPECT_NE(out.find(other + ":short"), std::string::npos) << out;
}

TEST_F(CompareIntegrationTest, BadVerdictOptionsAreInvalidArgumentNamingTheField) {
  struct Case {
    void (*set)(v1::CompareRequest*);
    const char* field;
  };
  const Case cases[] = {
      {[](v1::CompareRequest* r) { r->set_margin(0); }, "margin: "},
      {[](v1::CompareRequest* r) { r->set_margin(1); }, "margin: "},
      {[](v1::CompareRequest* r) { r->set_margin(-0.01); }, "margin: "},
      {[](v1::CompareRequest* r) { r->set_level(0); }, "level: "},
      {[](v1::CompareRequest* r) { r->set_level(1.5); }, "level: "},
      {[](v1::CompareRequest* r) { r->set_pairing("sideways"); }, "pairing: "},
      // One boot: nothing to pair boots by.
      {[](v1::CompareRequest* r) { r->set_pairing("boots"); }, "pairing: "},
  };
  for (const Case& c : cases) {
    v1::CompareRequest request = Request();
    c.set(&request);
    v1::CompareResponse response;
    grpc::Status s = Compare(request, &response);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << request.ShortDebugString();
    EXPECT_EQ(s.error_message().rfind(c.field, 0), 0u) << s.error_message();
  }
  // Valid ones are taken.
  v1::CompareRequest request = Request();
  request.set_margin(0.05);
  request.set_level(0.9);
  request.set_pairing("iterations");
  request.set_unadjusted(true);
  v1::CompareResponse response;
  ASSERT_TRUE(Compare(request, &response).ok());
  EXPECT_DOUBLE_EQ(response.report().margin(), 0.05);
  EXPECT_FALSE(response.report().adjusted());
  for (const v1::Report::Group& g : response.report().groups()) {
    if (g.verdicts_size() > 0) {
      EXPECT_EQ(g.verdicts(0).design(), "paired-iterations");
    }
  }
}

TEST_F(CompareIntegrationTest, TheCliRefusesBadOptionsWithExitTwoNamingTheFlag) {
  std::string out;
  EXPECT_EQ(RunCommand({BinPath("tlbfleet"), "--controller", controller_->address(), "compare",
                        *run_id_, "--margin", "150%"},
                       &out, true),
            2);
  EXPECT_NE(out.find("--margin: must be above 0 and below 100 %"), std::string::npos) << out;
  EXPECT_EQ(RunCommand({BinPath("tlbfleet"), "--controller", controller_->address(), "compare",
                        *run_id_, "--pairing", "boots"},
                       &out, true),
            2);
  EXPECT_NE(out.find("pairing: pairing by boot needs at least 2 boots"), std::string::npos) << out;
  EXPECT_EQ(RunCommand({BinPath("tlbfleet"), "--controller", controller_->address(), "compare",
                        *run_id_, "--level", "0.9", "--format", "csv"},
                       &out),
            0)
      << out;
  EXPECT_NE(out.find(",within-boot,unpaired-iterations,"), std::string::npos) << out;
}

}  // namespace
}  // namespace tlbfleet::testing
