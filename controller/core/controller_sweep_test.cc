// A run whose sweep depends on the host, through the controller: each host's slot is
// expanded with that host's CPUs when it takes the run.

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "controller/core/controller_fixture_for_test.h"

namespace tlbfleet::core {
namespace {

class Channel : public AgentChannel {
 public:
  void Send(const v1::ControllerMessage& message) override {
    if (message.has_assignment()) assignments.push_back(message.assignment());
  }
  std::string Peer() const override { return "fake"; }
  void Close(const absl::Status&) override {}
  std::vector<v1::JobAssignment> assignments;
};

class ControllerSweepTest : public ControllerFixture {
 protected:
  void SetUp() override { ControllerFixture::SetUp(); }

  // A host of `packages` x 4 cores x 2 SMT threads, one LLC and NUMA node per package.
  static v1::Hello Hello(const std::string& id, uint32_t packages) {
    v1::Hello hello;
    hello.set_protocol_version(v1::PROTOCOL_VERSION_1);
    hello.set_agent_id(id);
    v1::HostInfo* host = hello.mutable_host();
    host->set_hostname("host-" + id);
    host->set_logical_cpus(packages * 8);
    v1::CpuTopology* t = host->mutable_topology();
    t->set_cpus(packages * 8);
    t->set_packages(packages);
    t->set_cores(packages * 4);
    t->set_cpus_per_core(2);
    t->set_cpus_per_llc(8);
    t->set_numa_nodes(packages);
    t->set_cpus_per_numa_node(8);
    return hello;
  }
  // Completes the channel's last assignment with one sample; the next one follows.
  void Complete(Channel& channel) {
    const v1::JobAssignment a = channel.assignments.back();
    v1::AgentMessage batch;
    batch.mutable_samples()->set_lease_id(a.lease_id());
    batch.mutable_samples()->add_samples()->set_metric("records_per_sec");
    agents().OnMessage(&channel, batch);
    v1::AgentMessage done;
    done.mutable_complete()->set_lease_id(a.lease_id());
    done.mutable_complete()->set_status(v1::JOB_STATUS_SUCCEEDED);
    done.mutable_complete()->set_sample_count(1);
    agents().OnMessage(&channel, done);
  }
};

TEST_F(ControllerSweepTest, EachHostSweepsItsOwnTopology) {
  Channel one, two;
  ASSERT_TRUE(agents().Register(&one, Hello("one", 1)).ok());  // 8 CPUs
  ASSERT_TRUE(agents().Register(&two, Hello("two", 2)).ok());  // 16 CPUs
  absl::StatusOr<v1::SubmitRunResponse> submitted = runs().Submit(
      "name: topo\nbenchmark: ebizzy\nparams: {seconds: 1}\n"
      "sweep: {threads: {policy: topology, max: 2*ncpus}}\n"
      "arms: [{name: a}]\nhosts: {count: 2}\n",
      "topo.yaml");
  ASSERT_TRUE(submitted.ok()) << submitted.status();
  EXPECT_EQ(submitted->jobs(), 0u);
  Idle(one);
  Idle(two);
  for (int i = 0; i < 3; ++i) Complete(one);  // 1 2 8 16: the last is still leased
  for (int i = 0; i < 4; ++i) Complete(two);  // 1 2 8 16 32
  std::vector<std::string> values_one, values_two;
  for (const auto& a : one.assignments) values_one.push_back(a.param_value());
  for (const auto& a : two.assignments) values_two.push_back(a.param_value());
  EXPECT_EQ(values_one, (std::vector<std::string>{"1", "2", "8", "16"}));
  EXPECT_EQ(values_two, (std::vector<std::string>{"1", "2", "8", "16", "32"}));
  EXPECT_EQ(two.assignments.back().params().at("threads"), "32");
  absl::StatusOr<v1::Run> run = runs().GetRun(submitted->run_id());
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(run->jobs().total(), 9u);
  EXPECT_EQ(run->state(), v1::RUN_STATE_RUNNING);
  Complete(one);
  Complete(two);
  EXPECT_EQ(runs().GetRun(submitted->run_id())->state(), v1::RUN_STATE_SUCCEEDED);
}

TEST_F(ControllerSweepTest, ASweepOutOfBoundsOnTheHostFailsTheRunNamingIt) {
  Channel big;
  v1::Hello hello = Hello("big", 1);
  hello.mutable_host()->mutable_topology()->set_cpus(4096);
  ASSERT_TRUE(agents().Register(&big, hello).ok());
  absl::StatusOr<v1::SubmitRunResponse> submitted = runs().Submit(
      "name: big\nbenchmark: ebizzy\nsweep: {threads: {policy: fib, max: 2*ncpus}}\n"
      "arms: [{name: a}]\n",
      "big.yaml");
  ASSERT_TRUE(submitted.ok()) << submitted.status();
  Idle(big);
  absl::StatusOr<v1::Run> run = runs().GetRun(submitted->run_id());
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(run->state(), v1::RUN_STATE_FAILED);
  EXPECT_EQ(run->error(),
            "host host-big: sweep.threads.max: must be an integer in [1, 4096], got \"8192\" (on "
            "a host with ncpus=4096)");
  EXPECT_TRUE(big.assignments.empty());
}

}  // namespace
}  // namespace tlbfleet::core
