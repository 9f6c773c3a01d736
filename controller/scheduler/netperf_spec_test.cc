// netperf's `server` and `port` at submit: the controller checks them against the same
// schema as the agent and tlbfleet-bench, and errors name the field.

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "controller/scheduler/run_spec.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tlbfleet::scheduler {
namespace {

using ::testing::HasSubstr;

std::string Spec(const std::string& params, const std::string& arm_params = "{}") {
  return "name: np\nbenchmark: netperf\nparams: " + params +
         "\niterations: 1\narms: [{name: a, params: " + arm_params + "}]\n";
}

TEST(NetperfSpecTest, PeerLoopbackAndAddressesWithAPortAreAccepted) {
  for (const char* params :
       {"{server: peer}", "{server: ''}", "{server: '127.0.0.1'}", "{server: '::1'}",
        "{server: '192.0.2.10', port: 12865}", "{server: 'fd00::10', port: 12865}",
        "{test: tcp_rr, server: peer, seconds: 1}"}) {
    absl::StatusOr<v1::RunSpec> spec = ParseRunSpec(Spec(params), "np.yaml");
    EXPECT_TRUE(spec.ok()) << params << ": " << spec.status();
  }
}

TEST(NetperfSpecTest, BadServersAndPortsAreRefusedNamingTheField) {
  struct Case {
    std::string params;
    std::string arm_params;
    std::string field;
  };
  const std::vector<Case> cases = {
      {"{server: foo}", "{}", "params.server"},
      {"{}", "{server: 'not-an-ip'}", "arms[0].params.server"},
      {"{port: 70000}", "{}", "params.port"},
      // Valid alone, not together: the run and the arm combine into one job.
      // The error names where the parameter to change is set.
      {"{server: '192.0.2.10'}", "{}", "params.server: parameters of arms[0] do not combine"},
      {"{server: peer}", "{port: 5}", "arms[0].params.port: parameters of arms[0]"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<v1::RunSpec> spec = ParseRunSpec(Spec(c.params, c.arm_params), "np.yaml");
    EXPECT_EQ(spec.status().code(), absl::StatusCode::kInvalidArgument) << c.params;
    EXPECT_THAT(std::string(spec.status().message()), HasSubstr(c.field)) << c.params;
  }
}

}  // namespace
}  // namespace tlbfleet::scheduler
