// Writes the binary seed corpora (protobuf messages) of fuzz_agent_message and
// fuzz_assignment under DIR (tests/fuzz/corpus). Run by hand when the protocol changes:
//   build-fuzz/fuzz/fuzz_make_seeds tests/fuzz/corpus

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>

#include "tlbfleet/v1/agent.pb.h"

namespace {

using tlbfleet::v1::AgentMessage;

// One record of fuzz_agent_message's input: [kind][length LE16][bytes].
void Record(std::string& out, uint8_t kind, const std::string& bytes) {
  out.push_back(static_cast<char>(kind));
  out.push_back(static_cast<char>(bytes.size() & 0xff));
  out.push_back(static_cast<char>(bytes.size() >> 8));
  out += bytes;
}
void Tick(std::string& out, uint16_t steps) {
  out.push_back(2);
  out.push_back(static_cast<char>(steps & 0xff));
  out.push_back(static_cast<char>(steps >> 8));
}

std::string Hello(const std::string& id, const std::string& running = "",
                  const std::string& spooled = "") {
  tlbfleet::v1::Hello hello;
  hello.set_protocol_version(tlbfleet::v1::PROTOCOL_VERSION_1);
  hello.set_agent_id(id);
  hello.mutable_host()->set_hostname("host-" + id);
  hello.mutable_host()->set_boot_id("boot-A");
  hello.mutable_host()->set_can_reboot(true);
  hello.mutable_host()->mutable_ceiling()->set_writable(true);
  hello.set_running_lease_id(running);
  if (!spooled.empty()) hello.add_spooled()->set_lease_id(spooled);
  return hello.SerializeAsString();
}
std::string Heartbeat(tlbfleet::v1::AgentState state, const std::string& lease = "") {
  AgentMessage m;
  m.mutable_heartbeat()->set_state(state);
  m.mutable_heartbeat()->set_lease_id(lease);
  return m.SerializeAsString();
}
std::string Samples(const std::string& lease, int64_t job, int n) {
  AgentMessage m;
  m.mutable_samples()->set_lease_id(lease);
  m.mutable_samples()->set_job_id(job);
  for (int i = 0; i < n; ++i) {
    tlbfleet::v1::Sample* s = m.mutable_samples()->add_samples();
    s->set_seq(static_cast<uint64_t>(i));
    s->set_metric("records_per_sec");
    s->set_value(1000 + i);
  }
  return m.SerializeAsString();
}
// A batch whose samples share their origin (SampleBatch.shared_origin) but the last, which
// names its own boot.
std::string SamplesSharingOrigin(const std::string& lease, int64_t job, int n) {
  AgentMessage m;
  m.ParseFromString(Samples(lease, job, n));
  tlbfleet::v1::SampleOrigin* origin = m.mutable_samples()->mutable_shared_origin();
  origin->set_host("host-a1");
  origin->set_boot_id("boot-A");
  origin->set_kernel_release("6.1.0-28-amd64");
  origin->set_kernel_cmdline("ro quiet");
  origin->set_microarch("IvyBridge");
  m.mutable_samples()->mutable_samples(n - 1)->set_boot_id("boot-B");
  return m.SerializeAsString();
}
std::string Complete(const std::string& lease, int64_t job, int n,
                     tlbfleet::v1::JobStatus status = tlbfleet::v1::JOB_STATUS_SUCCEEDED) {
  AgentMessage m;
  m.mutable_complete()->set_lease_id(lease);
  m.mutable_complete()->set_job_id(job);
  m.mutable_complete()->set_status(status);
  m.mutable_complete()->set_sample_count(static_cast<uint64_t>(n));
  return m.SerializeAsString();
}

bool Write(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out << bytes;
  return static_cast<bool>(out);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: fuzz_make_seeds DIR\n");
    return 2;
  }
  const std::string dir = argv[1];
  using tlbfleet::v1::AGENT_STATE_IDLE;
  using tlbfleet::v1::AGENT_STATE_REBOOTING;
  using tlbfleet::v1::AGENT_STATE_RUNNING;
  bool ok = true;

  // A whole job: hello, idle (gets j1a1), samples, completion, idle again.
  std::string job;
  Record(job, 0, Hello("a1"));
  Record(job, 1, Heartbeat(AGENT_STATE_IDLE));
  Record(job, 1, Heartbeat(AGENT_STATE_RUNNING, "j1a1"));
  Record(job, 1, Samples("j1a1", 1, 3));
  Record(job, 1, Complete("j1a1", 1, 3));
  Record(job, 1, Heartbeat(AGENT_STATE_IDLE));
  ok &= Write(dir + "/fuzz_agent_message/one-job", job);

  // The same job, its samples' origin sent once per batch.
  std::string shared;
  Record(shared, 0, Hello("a1"));
  Record(shared, 1, Heartbeat(AGENT_STATE_IDLE));
  Record(shared, 1, Heartbeat(AGENT_STATE_RUNNING, "j1a1"));
  Record(shared, 1, SamplesSharingOrigin("j1a1", 1, 3));
  Record(shared, 1, Complete("j1a1", 1, 3));
  ok &= Write(dir + "/fuzz_agent_message/shared-origin", shared);

  // Gone past the lease, back with the result spooled.
  std::string spooled;
  Record(spooled, 0, Hello("a1"));
  Record(spooled, 1, Heartbeat(AGENT_STATE_IDLE));
  Record(spooled, 3, "");
  Tick(spooled, 500);
  Record(spooled, 0, Hello("a1", "", "j1a1"));
  Record(spooled, 1, Samples("j1a1", 1, 2));
  Record(spooled, 1, Complete("j1a1", 1, 2));
  ok &= Write(dir + "/fuzz_agent_message/spooled-after-expiry", spooled);

  // A second agent id, a refusal, a rebooting heartbeat, a wrong sample count.
  std::string mixed;
  Record(mixed, 0, Hello("b2", "j9a1"));
  Record(mixed, 1, Heartbeat(AGENT_STATE_IDLE));
  Record(mixed, 1, Complete("j1a1", 1, 0, tlbfleet::v1::JOB_STATUS_REFUSED));
  Record(mixed, 1, Heartbeat(AGENT_STATE_REBOOTING));
  Record(mixed, 1, Heartbeat(AGENT_STATE_IDLE));
  Record(mixed, 1, Samples("j1a2", 1, 1));
  Record(mixed, 1, Complete("j1a2", 1, 5));
  Tick(mixed, 50);
  ok &= Write(dir + "/fuzz_agent_message/refused-rebooting-miscount", mixed);

  // Assignments: a valid one, netperf with a peer, one with shell syntax.
  tlbfleet::v1::JobAssignment a;
  a.set_lease_id("j1a1");
  a.set_job_id(1);
  a.set_run_id("1");
  a.set_benchmark("ebizzy");
  (*a.mutable_params())["seconds"] = "3";
  (*a.mutable_params())["threads"] = "2";
  a.set_arm("a");
  a.set_iteration(1);
  a.set_ceiling("33");
  a.set_timeout_seconds(600);
  ok &= Write(dir + "/fuzz_assignment/ebizzy", a.SerializeAsString());
  a.set_benchmark("netperf");
  a.mutable_params()->clear();
  (*a.mutable_params())["test"] = "TCP_RR";
  (*a.mutable_params())["server"] = "127.0.0.1";
  a.set_peer_host("peer");
  a.add_monitors("vmstat");
  ok &= Write(dir + "/fuzz_assignment/netperf-peer", a.SerializeAsString());
  (*a.mutable_params())["server"] = "127.0.0.1; reboot";
  ok &= Write(dir + "/fuzz_assignment/shell", a.SerializeAsString());
  return ok ? 0 : 1;
}
