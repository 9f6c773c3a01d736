// `seconds: auto` through a real submit (docs/iteration-length.md): the stored run spec holds
// the chosen length and says that it was chosen, across a restart, and the agent is sent the
// chosen length; bad input is refused naming the field with nothing stored.
#include <gtest/gtest.h>

#include <string>

#include "controller/core/controller_fixture_for_test.h"
#include "controller/core/fake_channel_for_test.h"
#include "controller/scheduler/iteration_length.h"

namespace tlbfleet::core {
namespace {

class IterationLengthSubmitTest : public ControllerFixture {};

constexpr char kAutoSpec[] =
    "name: auto\nbenchmark: ebizzy\nparams: {seconds: auto, threads: 2}\niterations: 2\n"
    "arms: [{name: a}, {name: b, params: {mmap: never}}]\n";

std::string Chosen() {
  const scheduler::IterationLengthModel* model = scheduler::FindIterationLengthModel("ebizzy");
  return std::to_string(scheduler::ChooseAutoSeconds(*model, {}));
}

TEST_F(IterationLengthSubmitTest, TheStoredSpecShowsTheChosenLengthAndThatItWasChosen) {
  const std::string run_id = Submit(kAutoSpec);
  ASSERT_FALSE(run_id.empty());
  for (int pass = 0; pass < 2; ++pass) {  // as submitted, then as a restarted controller reads it
    absl::StatusOr<v1::Run> run = runs().GetRun(run_id);
    ASSERT_TRUE(run.ok()) << run.status();
    EXPECT_EQ(run->spec().params().at("seconds"), Chosen()) << "pass " << pass;
    ASSERT_EQ(run->spec().auto_params().size(), 1u) << "pass " << pass;
    EXPECT_EQ(run->spec().auto_params().at("seconds"), "auto:1..10") << "pass " << pass;
    Restart();
  }
  // The agent runs the chosen length.
  FakeChannel channel;
  v1::Hello hello;
  hello.set_protocol_version(v1::PROTOCOL_VERSION_1);
  hello.set_agent_id("a1");
  hello.mutable_host()->set_hostname("host-a1");
  ASSERT_TRUE(agents().Register(&channel, hello).ok());
  Idle(channel);
  ASSERT_GE(channel.Count(v1::ControllerMessage::kAssignment), 1);
  EXPECT_EQ(channel.LastAssignment()->params().at("seconds"), Chosen());
}

TEST_F(IterationLengthSubmitTest, BadAutoIsRefusedNamingTheFieldAndNothingIsStored) {
  absl::StatusOr<v1::SubmitRunResponse> submitted = runs().Submit(
      "name: p\nbenchmark: pipetest\nparams: {seconds: auto}\narms: [{name: a}]\n", "p.yaml");
  ASSERT_FALSE(submitted.ok());
  EXPECT_EQ(submitted.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(std::string(submitted.status().message()).rfind("params.seconds: ", 0), 0u)
      << submitted.status();
  submitted = runs().Submit(
      "name: e\nbenchmark: ebizzy\nparams: {seconds: \"auto:0..3\"}\narms: [{name: a}]\n",
      "e.yaml");
  ASSERT_FALSE(submitted.ok());
  EXPECT_EQ(std::string(submitted.status().message()).rfind("params.seconds: ", 0), 0u)
      << submitted.status();
  absl::StatusOr<v1::ListRunsResponse> listed = runs().ListRuns({});
  ASSERT_TRUE(listed.ok()) << listed.status();
  EXPECT_EQ(listed->runs_size(), 0);
}

}  // namespace
}  // namespace tlbfleet::core
