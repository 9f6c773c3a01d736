// tlbfleet-agent: dials the controller, runs the benchmark jobs it is given, and streams
// their samples back. Runs as root on each lab host. See docs/agent.md.
//
//   tlbfleet-agent --controller HOST:PORT --state-dir DIR [--sysroot DIR] [--label k=v]...
//                  [--log-level info] [--max-backoff-seconds 30]
//                  [--netserver-listen ADDR:PORT [--netserver-advertise ADDR:PORT]]
//                  [--metrics-listen ADDR:PORT]
//                  [--kernel-sources FILE] [--kernel-install-command CMD]
//                  [--kernel-staging-dir DIR] [--kernel-build-timeout 3h]
//
// Hidden mode used by the agent itself for each job (in a child process):
//   tlbfleet-agent run-workload <workload> --json [--set k=v]...
//
// An operator's statement that the flush ceiling's good value is N (clears a degraded
// ceiling; see agent/kernel/ceiling_health.h):
//   tlbfleet-agent ceiling-known-good --state-dir DIR --value N [--sysroot DIR]

#include <pthread.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "agent/builder/kernel_sources.h"
#include "agent/kernel/ceiling.h"
#include "agent/kernel/ceiling_health.h"
#include "agent/kernel/cpuid.h"
#include "agent/kernel/sysroot.h"
#include "agent/metrics/agent_metrics.h"
#include "agent/runner/agent.h"
#include "agent/runner/netserver.h"
#include "agent/runner/paths.h"
#include "agent/workloads/bench_cli.h"
#include "agent/workloads/workload.h"
#include "common/artifacts/artifact_rpc.h"
#include "common/config/yaml_config.h"
#include "common/grpc_channel.h"
#include "common/logging.h"
#include "common/systemd/notifier.h"
#include "common/token_file.h"
#include "common/version.h"
#include "spdlog/spdlog.h"

namespace {

// --kernel-build-timeout: "3h", "90m", "1h30m", "5400s" (absl::ParseDuration), a plain number
// of seconds, or 0 for no limit.
bool ParseBuildTimeout(const std::string& text, absl::Duration* out) {
  double seconds = 0;
  if (absl::SimpleAtod(text, &seconds)) {
    if (!(seconds >= 0)) return false;
    *out = seconds == 0 ? absl::InfiniteDuration() : absl::Seconds(seconds);
    return true;
  }
  absl::Duration d;
  if (!absl::ParseDuration(text, &d) || d < absl::ZeroDuration()) return false;
  *out = d == absl::ZeroDuration() ? absl::InfiniteDuration() : d;
  return true;
}

// How long one ArtifactService call may take: a 1 MiB chunk, or FinishUpload checksumming a
// kernel's files on the controller.
constexpr auto kArtifactCallDeadline = std::chrono::minutes(2);

// The controller's ArtifactService: the same address, TLS and token as the agent's stream
// (connection.cc), on a channel of its own so that an upload never waits behind the stream.
// The channel dials lazily: an agent that never builds or boots a built kernel never uses it.
absl::Status WireArtifactTransport(const std::string& controller, const tlbfleet::ClientTls& tls,
                                   const std::string& token,
                                   tlbfleet::agent::AgentOptions& options) {
  absl::StatusOr<std::shared_ptr<grpc::Channel>> channel =
      tlbfleet::MakeChannel(controller, tls, grpc::ChannelArguments());
  if (!channel.ok()) return channel.status();
  std::shared_ptr<tlbfleet::v1::ArtifactService::StubInterface> stub =
      tlbfleet::v1::ArtifactService::NewStub(*channel);
  tlbfleet::artifacts::PrepareContext prepare = [token](grpc::ClientContext& ctx) {
    if (!token.empty()) ctx.AddMetadata("authorization", "Bearer " + token);
    ctx.set_deadline(std::chrono::system_clock::now() + kArtifactCallDeadline);
  };
  options.upload_artifact =
      [stub, prepare](const std::string& dir,
                      const std::function<bool()>& cancelled) -> absl::StatusOr<std::string> {
    absl::StatusOr<tlbfleet::artifacts::UploadResult> uploaded =
        tlbfleet::artifacts::UploadArtifact(*stub, prepare, dir, cancelled);
    if (!uploaded.ok()) return uploaded.status();
    spdlog::info("artifact {} uploaded ({} bytes sent{})", uploaded->artifact_id,
                 uploaded->bytes_sent, uploaded->already_published ? ", already published" : "");
    return uploaded->artifact_id;
  };
  options.artifact_source = [stub, prepare] {
    return tlbfleet::artifacts::MakeGrpcChunkSource(stub, prepare);
  };
  return absl::OkStatus();
}

int AgentMain(int argc, char** argv) {
  std::string controller;
  std::string state_dir;
  std::string sysroot_dir;
  std::vector<std::string> label_args;
  std::string log_level = "info";
  double max_backoff = 30;
  std::string reboot_command;
  std::string netserver_listen;
  std::string netserver_advertise;
  std::string boot_entries_file;
  std::vector<std::string> peer_network_args;
  std::string kernel_sources_file;
  std::string kernel_install_command;
  std::string kernel_staging_dir;
  std::string kernel_build_timeout = "3h";

  CLI::App app{"tlbfleet agent: runs benchmark jobs for a tlbfleet controller"};
  app.set_version_flag("--version", tlbfleet::kVersion);
  app.add_option("--controller", controller, "controller gRPC address, host:port")->required();
  app.add_option("--state-dir", state_dir, "agent id and result spool live here")->required();
  app.add_option("--sysroot", sysroot_dir,
                 "prefix for /sys, /proc and /etc paths (testing; default: the real root)");
  app.add_option("--label", label_args, "host label k=v sent to the controller (repeatable)");
  app.add_option("--log-level", log_level, "trace, debug, info, warn or error")
      ->capture_default_str();
  app.add_option("--max-backoff-seconds", max_backoff,
                 "upper bound of the reconnect delay (starts at 0.5 s, doubles)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--reboot-command", reboot_command,
                 "how this host reboots when a run needs a fresh boot: a shell command line "
                 "(e.g. \"systemctl reboot\") or \"syscall\" for reboot(2); without it the "
                 "agent never reboots and takes no multi-boot runs");
  app.add_option("--netserver-listen", netserver_listen,
                 "run a netperf server for other agents' `server: peer` jobs on ADDR:PORT "
                 "(port 0: any free port; IPv6 as [ADDR]:PORT)");
  app.add_option("--netserver-advertise", netserver_advertise,
                 "the ADDR:PORT peers should dial (default: the listen address and the port it "
                 "bound; required with a wildcard listen address)")
      ->needs("--netserver-listen");
  app.add_option("--boot-entries", boot_entries_file,
                 "YAML file with this host's boot entries (boot_entries: name, select, reboot, "
                 "expect: {release, cmdline}); the controller may ask for a reboot into one by "
                 "name (docs/agent.md)");
  app.add_option("--kernel-sources", kernel_sources_file,
                 "YAML file with the kernel sources (git repositories) and build configs this "
                 "agent builds kernels from for the controller (docs/kernels.md); without it the "
                 "agent is no builder");
  app.add_option("--kernel-install-command", kernel_install_command,
                 "shell command line that installs a kernel built from source so the next boot "
                 "runs it (TLBFLEET_KERNEL_IMAGE, TLBFLEET_BUILD_TAG... in its environment; "
                 "docs/agent.md); without it the agent boots no built kernel");
  app.add_option("--kernel-staging-dir", kernel_staging_dir,
                 "where builds and fetched kernel artifacts are kept (default: "
                 "<state-dir>/kernels)");
  app.add_option("--kernel-build-timeout", kernel_build_timeout,
                 "a kernel build (with its upload) running longer than this is cancelled and "
                 "reported as a host failure: a duration such as 3h, 90m or 5400s (default 3h; "
                 "0: no limit)")
      ->check([](const std::string& text) -> std::string {
        absl::Duration unused;
        return ParseBuildTimeout(text, &unused) ? "" : "want a duration such as 3h, 90m or 5400s";
      });
  tlbfleet::ClientTls tls;
  app.add_option("--tls-ca", tls.ca, "CA (PEM) of the controller's certificate: use TLS");
  app.add_option("--tls-cert", tls.cert,
                 "client certificate (PEM) for a controller that requires one (mutual TLS)");
  app.add_option("--tls-key", tls.key, "its private key (PEM)");
  app.add_option("--tls-server-name", tls.server_name,
                 "the name the controller's certificate carries, when not the --controller host");
  std::string metrics_listen;
  app.add_option("--metrics-listen", metrics_listen,
                 "serve Prometheus metrics at http://ADDR:PORT/metrics (port 0: any free port; "
                 "IPv6 as [ADDR]:PORT; conventionally port 9470)");
  std::string token_file;
  app.add_option("--token-file", token_file,
                 "file holding the enrollment token (role agent) the controller requires unless "
                 "it runs in development mode");
  app.add_option("--peer-network", peer_network_args,
                 "networks (ADDR/PREFIX, repeatable) a netperf job may be sent to test against; "
                 "default: loopback and the networks of this host's interfaces");
  tlbfleet::AddYamlConfig(app,
                          "agent.yaml: these flags as `flag-name: value` (a list for --label; the "
                          "command line wins; an unknown key is an error)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // A configuration mistake (a flag or a config file): exit 2, nothing started.
    return app.exit(e) == 0 ? 0 : 2;
  }

  std::vector<tlbfleet::agent::BootEntry> boot_entries;
  if (!boot_entries_file.empty()) {
    absl::StatusOr<std::vector<tlbfleet::agent::BootEntry>> loaded =
        tlbfleet::agent::LoadBootEntries(boot_entries_file);
    if (!loaded.ok()) {
      std::fprintf(stderr, "%s\n", std::string(loaded.status().message()).c_str());
      return 2;
    }
    boot_entries = *std::move(loaded);
  }

  tlbfleet::agent::builder::KernelSources kernel_sources;
  if (!kernel_sources_file.empty()) {
    absl::StatusOr<tlbfleet::agent::builder::KernelSources> loaded =
        tlbfleet::agent::builder::KernelSources::Load(kernel_sources_file);
    if (!loaded.ok()) {
      std::fprintf(stderr, "%s\n", std::string(loaded.status().message()).c_str());
      return 2;
    }
    kernel_sources = *std::move(loaded);
  }

  std::map<std::string, std::string> labels;
  for (const std::string& label : label_args) {
    size_t eq = label.find('=');
    if (eq == std::string::npos || eq == 0) {
      std::fprintf(stderr, "--label %s: want key=value\n", label.c_str());
      return 2;
    }
    labels[label.substr(0, eq)] = label.substr(eq + 1);
  }

  std::vector<tlbfleet::agent::Network> peer_networks;
  for (const std::string& text : peer_network_args) {
    absl::StatusOr<tlbfleet::agent::Network> network = tlbfleet::agent::Network::Parse(text);
    if (!network.ok()) {
      std::fprintf(stderr, "--peer-network %s\n", std::string(network.status().message()).c_str());
      return 2;
    }
    peer_networks.push_back(*network);
  }
  if (peer_networks.empty()) peer_networks = tlbfleet::agent::DefaultPeerNetworks();

  // Before any thread exists: every thread inherits this mask, so SIGTERM/SIGINT reach only
  // the sigwait() below (the runner unblocks them again in workload children).
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  signal(SIGPIPE, SIG_IGN);

  tlbfleet::InitLogging("agent", log_level);
  if (absl::Status s = tlbfleet::CheckClientTls(tls); !s.ok()) {
    spdlog::critical("cannot start: {}", std::string(s.message()));
    return 2;
  }
  std::string token;
  if (!token_file.empty()) {
    std::string warning;
    absl::StatusOr<std::string> read =
        tlbfleet::ReadTokenFile(token_file, "--token-file", &warning);
    if (!read.ok()) {
      spdlog::critical("cannot start: {}", std::string(read.status().message()));
      return 2;
    }
    if (!warning.empty()) spdlog::warn("{}", warning);
    token = *std::move(read);
  }
  tlbfleet::workloads::LinkAllWorkloads();

  // Lives as long as the agent: peers may be sent to it whenever this agent is idle.
  tlbfleet::agent::Netserver netserver;
  if (!netserver_listen.empty()) {
    absl::StatusOr<tlbfleet::agent::Netserver> started =
        tlbfleet::agent::StartNetserver(netserver_listen, netserver_advertise);
    if (!started.ok()) {
      spdlog::critical("cannot start: {}", std::string(started.status().message()));
      return absl::IsInvalidArgument(started.status()) ? 2 : 1;  // 2: a bad flag, as for --label
    }
    netserver = *std::move(started);
  }

  tlbfleet::agent::Sysroot sysroot(sysroot_dir);
  tlbfleet::agent::AgentOptions options;
  options.controller = controller;
  options.token = token;
  options.tls = tls;
  options.state_dir = state_dir;
  options.sysroot = &sysroot;
  options.labels = labels;
  // An agent built without the run loop of a workload the controller's catalogue offers would
  // accept specs it cannot run: refuse to start instead (a build error, not an operator's).
  if (absl::Status covered = tlbfleet::workloads::Registry::Get().CheckCoversCatalogue();
      !covered.ok()) {
    std::fprintf(stderr, "tlbfleet-agent: %s\n", std::string(covered.message()).c_str());
    return 1;
  }
  options.workloads = tlbfleet::workloads::Registry::Get().Names();
  options.peer_networks = std::move(peer_networks);
  options.max_backoff_seconds = max_backoff;
  options.reboot_command = reboot_command;
  options.netserver = netserver.advertise;
  options.boot_entries = std::move(boot_entries);
  options.kernel_sources = std::move(kernel_sources);
  options.kernel_install_command = kernel_install_command;
  options.kernel_staging_dir = kernel_staging_dir;
  ParseBuildTimeout(kernel_build_timeout, &options.kernel_build_timeout);  // checked by CLI11
  if (absl::Status s = WireArtifactTransport(controller, tls, token, options); !s.ok()) {
    spdlog::critical("cannot start: {}", std::string(s.message()));
    return 2;
  }
  // CPUID describes this machine, not a --sysroot tree.
  tlbfleet::agent::HardwareCpuid cpuid;
  if (sysroot_dir.empty()) options.cpuid = &cpuid;
  absl::StatusOr<std::unique_ptr<tlbfleet::agent::Agent>> agent =
      tlbfleet::agent::Agent::Create(std::move(options));
  if (!agent.ok()) {
    spdlog::critical("cannot start: {}", agent.status().ToString());
    // A flag that cannot work (an unwritable or busy --state-dir) is the operator's to fix.
    return absl::IsInvalidArgument(agent.status()) || absl::IsFailedPrecondition(agent.status())
               ? 2
               : 1;
  }

  // After the agent exists (the metrics read its status) and before it runs; a bad or busy
  // address is a configuration mistake: exit 2 with nothing started.
  std::unique_ptr<tlbfleet::agent::MetricsServer> metrics_server;
  if (!metrics_listen.empty()) {
    tlbfleet::agent::AgentMetricsSources sources;
    tlbfleet::agent::Agent* running = agent->get();
    sources.status = [running] { return running->status(); };
    sources.sysroot = &sysroot;
    absl::StatusOr<std::unique_ptr<tlbfleet::agent::MetricsServer>> started =
        tlbfleet::agent::MetricsServer::Start(
            metrics_listen, std::make_shared<tlbfleet::agent::AgentMetrics>(std::move(sources)));
    if (!started.ok()) {
      spdlog::critical("cannot start: {}", std::string(started.status().message()));
      return 2;
    }
    metrics_server = *std::move(started);
    spdlog::info("serving metrics on port {} (--metrics-listen {})", metrics_server->port(),
                 metrics_listen);
  }

  // The watchdog is petted while the agent's state can be read (its lock is not stuck).
  tlbfleet::agent::Agent* watched = agent->get();
  tlbfleet::SystemdNotifier systemd([watched] {
    watched->status();
    return true;
  });
  systemd.Ready(absl::StrCat("agent ", watched->agent_id(), " for controller ", controller));

  std::atomic<bool> finished{false};
  std::thread signal_thread([&] {
    for (;;) {
      int sig = 0;
      if (sigwait(&stop_signals, &sig) != 0) continue;
      if (finished.load()) return;
      systemd.Stopping(strsignal(sig));
      (*agent)->Shutdown(strsignal(sig));
    }
  });

  absl::Status status = (*agent)->Run();
  finished.store(true);
  pthread_kill(signal_thread.native_handle(), SIGTERM);
  signal_thread.join();
  metrics_server.reset();  // before the agent its metrics read
  if (!status.ok()) {
    spdlog::critical("{}", status.ToString());
    return 1;
  }
  return 0;
}

int CeilingKnownGoodMain(int argc, char** argv) {
  std::string state_dir;
  std::string sysroot_dir;
  int64_t value = -1;
  CLI::App app{
      "Tells this host's agent that the flush ceiling's good value (the one this boot started "
      "with) is --value: writes it, reads it back, and clears the agent's degraded state, so "
      "it takes ceiling jobs again"};
  app.add_option("--state-dir", state_dir, "the agent's --state-dir")->required();
  app.add_option("--value", value, "the good value, in pages (the kernel's default is 33)")
      ->required()
      ->check(CLI::Range(int64_t{0}, tlbfleet::agent::kMaxCeiling));
  app.add_option("--sysroot", sysroot_dir, "the agent's --sysroot (testing)");
  CLI11_PARSE(app, argc, argv);
  tlbfleet::agent::Sysroot sysroot(sysroot_dir);
  absl::Status s = tlbfleet::agent::DeclareCeilingKnownGood(
      sysroot, tlbfleet::agent::paths::CeilingJournalFile(state_dir),
      tlbfleet::agent::paths::CeilingDegradedFile(state_dir), value);
  if (!s.ok()) {
    std::fprintf(stderr, "ceiling-known-good: %s\n", std::string(s.message()).c_str());
    return absl::IsInvalidArgument(s) ? 2 : 1;
  }
  std::printf(
      "flush ceiling set to %lld and recorded as this boot's value; the agent reports it at "
      "its next heartbeat\n",
      static_cast<long long>(value));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 2 && std::strcmp(argv[1], "run-workload") == 0) {
    tlbfleet::workloads::LinkAllWorkloads();
    return tlbfleet::workloads::BenchMain(argc - 1, argv + 1);
  }
  if (argc >= 2 && std::strcmp(argv[1], "ceiling-known-good") == 0) {
    return CeilingKnownGoodMain(argc - 1, argv + 1);
  }
  return AgentMain(argc, argv);
}
