#pragma once
// The agent: holds one AgentService.Connect stream to the controller, runs the jobs it is
// assigned, and never loses a finished job's result.
//
// States (one at a time, every change logged):
//
//   recovering ──► connecting ──Welcome──► idle ◄──job ends──► running
//                      ▲                    │                    │
//                      └──stream breaks─────┴────────────────────┘
//   any ──Shutdown()──► stopping
//
// A job runs in its own thread and does not care about the stream: if the stream breaks
// mid-job the workload keeps running, its result is spooled when it ends and resent after
// the next Welcome. Every result goes to the spool before it is sent, and leaves it only
// when the controller acks (or rejects) the completion.
//
// The agent keeps the state machine, the host as the controller last heard of it and the job;
// the rest is in units it composes: the outbox (outbox.h: results until acked, and their
// replay), the connection (connection.h: the stream, Hello/Welcome, heartbeats, backoff) and
// the reboot flow (reboot_flow.h: RebootRequest to the reboot command).
//
// Thread-safe: Run() on one thread, Shutdown() and state() from any.

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "agent/builder/kernel_build.h"
#include "agent/builder/kernel_sources.h"
#include "agent/kernel/cpuid.h"
#include "agent/kernel/sysroot.h"
#include "agent/runner/assignment_check.h"
#include "agent/runner/boot_entries.h"
#include "agent/runner/build_runner.h"
#include "agent/runner/job.h"
#include "agent/runner/kernel_install.h"
#include "common/grpc_channel.h"

namespace tlbfleet::agent {

struct AgentOptions {
  std::string controller;  // "host:port"; required
  // The enrollment token (role agent) sent as `authorization` metadata on the stream;
  // empty for a controller in development mode.
  std::string token;
  // TLS to the controller (common/grpc_channel.h); plain text when tls.ca is empty.
  ClientTls tls;
  std::string state_dir;                      // required; created if missing
  const Sysroot* sysroot = nullptr;           // required; must outlive the Agent
  std::map<std::string, std::string> labels;  // HostInfo.labels
  // HostInfo.netserver: "address:port" of this agent's netserver as peers should dial it
  // (netserver.h); empty when it runs none. The server itself belongs to the caller.
  std::string netserver;
  // Workload names the agent advertises as "workload:<name>" and accepts. Empty: accept any
  // benchmark and let the child reject unknown ones (tests).
  std::vector<std::string> workloads;
  // Every assignment is checked against `workloads`, their schemas and the limits of
  // assignment_check.h before anything starts. false only for tests whose workloads are
  // shell scripts (ArgvBuilder).
  bool check_assignments = true;
  // Where a parameter resolved to a peer (netperf's `server`) may point
  // (--peer-network; default DefaultPeerNetworks()).
  std::vector<Network> peer_networks;
  double initial_backoff_seconds = 0.5;
  double max_backoff_seconds = 30;
  // Heartbeat period when Welcome.heartbeat_seconds is 0.
  unsigned default_heartbeat_seconds = 10;
  // A controller that accepts the stream but sends no Welcome within this is dropped.
  unsigned welcome_timeout_seconds = 30;
  ArgvBuilder argv_for = WorkloadArgv;
  // The CPUID instruction for HostInfo's TLB facts; null (tests, a fake sysroot) leaves
  // them out.
  const CpuidSource* cpuid = nullptr;
  // How this host reboots when the controller asks for a fresh boot (agent/kernel/reboot.h):
  // "syscall", a shell command line, or empty: this agent never reboots, and runs with more
  // than one boot per arm do not come to it.
  std::string reboot_command;
  // After the reboot command succeeded, how long to wait for the host to go down before
  // telling the controller the reboot failed.
  double reboot_grace_seconds = 120;
  // The kernels this agent may boot into by name (--boot-entries; boot_entries.h).
  std::vector<BootEntry> boot_entries;

  // Kernels from source (docs/kernels.md). The sources this agent builds from
  // (--kernel-sources); empty: it is no builder, and build tasks are ignored.
  builder::KernelSources kernel_sources;
  builder::BuilderOptions builder;  // make -j, ccache
  // How it installs a built kernel to boot it (--kernel-install-command; kernel_install.h);
  // empty: it boots none.
  std::string kernel_install_command;
  // Builds and fetched artifacts (--kernel-staging-dir); default <state_dir>/kernels.
  std::string kernel_staging_dir;
  // The controller's artifact store: uploads of builds, and the source fetches read from.
  // Null: a builder's builds end HOST_FAILED after building, and no built kernel is booted.
  ArtifactUploader upload_artifact;
  ArtifactSourceFactory artifact_source;
  // A build still running after this long is cancelled and ends HOST_FAILED "timed out
  // after ..." (--kernel-build-timeout; build_runner.h). Infinite: no limit.
  absl::Duration kernel_build_timeout = absl::Hours(3);
  // BuildProgress batching (build_runner.h); tests shorten it.
  double build_log_flush_seconds = 0.5;
};

// What the agent's metrics show (agent/metrics/agent_metrics.h), copied under its lock.
struct AgentStatus {
  bool connected = false;  // welcomed on the current stream
  bool job_running = false;
  // How the last workload process ended: its exit code, 128 + N when killed by signal N (as
  // a shell reports it); unset before the first workload of this agent process.
  std::optional<int> last_exit_status;
  uint64_t spool_records = 0;  // finished jobs' results not yet acknowledged
  uint64_t spool_bytes = 0;
  uint64_t reconnects = 0;  // connection attempts after the first
  // ceiling_degraded_reason() below: the agent will not write the ceiling, whatever the
  // file's permissions say.
  std::string ceiling_degraded_reason;
};

class Agent {
 public:
  enum class State { kRecovering, kConnecting, kIdle, kRunning, kStopping };
  static const char* StateName(State state);

  // Locks the state directory (one agent per directory: FAILED_PRECONDITION when another
  // holds it, INVALID_ARGUMENT when it is not writable; both name --state-dir), loads (or
  // creates) the agent id and opens the spool, moving corrupt records aside;
  // mounts debugfs/securityfs/tracefs when missing (real root only) and restores the flush
  // ceiling if the last run of the agent died mid-job in this boot (ceiling_control.h).
  static absl::StatusOr<std::unique_ptr<Agent>> Create(AgentOptions options);
  ~Agent();

  // Connects, reconnects with backoff, and serves the controller until Shutdown().
  // Returns once the stream is closed and the job thread (if any) has ended.
  absl::Status Run();

  // Asynchronous and idempotent: kills a running workload's process group (the job is
  // abandoned, not reported: its lease expires and the controller re-queues it), closes the
  // stream, and makes Run() return. The spool is left as it is.
  void Shutdown(const std::string& reason);

  State state() const;
  AgentStatus status() const;
  const std::string& agent_id() const;
  // The degraded-ceiling state (agent/kernel/ceiling_health.h) as last reported to the
  // controller: for metrics. Empty when the ceiling is known good.
  std::string ceiling_degraded_reason() const;

 private:
  class Impl;
  explicit Agent(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace tlbfleet::agent
