// tlbfleet-agent: dials the controller, runs the benchmark jobs it is given, and streams
// their samples back. Runs as root on each lab host. See docs/agent.md.
//
//   tlbfleet-agent --controller HOST:PORT --state-dir DIR [--sysroot DIR] [--label k=v]...
//                  [--log-level info] [--max-backoff-seconds 30]
//                  [--netserver-listen ADDR:PORT [--netserver-advertise ADDR:PORT]]
//
// Hidden mode used by the agent itself for each job (in a child process):
//   tlbfleet-agent run-workload <workload> --json [--set k=v]...

#include <pthread.h>
#include <signal.h>

#include <atomic>
#include <cstring>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "CLI/CLI.hpp"
#include "agent/kernel/cpuid.h"
#include "agent/kernel/sysroot.h"
#include "agent/runner/agent.h"
#include "agent/runner/netserver.h"
#include "agent/workloads/bench_cli.h"
#include "agent/workloads/workload.h"
#include "common/logging.h"
#include "common/version.h"
#include "spdlog/spdlog.h"

namespace {

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
  CLI11_PARSE(app, argc, argv);

  std::map<std::string, std::string> labels;
  for (const std::string& label : label_args) {
    size_t eq = label.find('=');
    if (eq == std::string::npos || eq == 0) {
      std::fprintf(stderr, "--label %s: want key=value\n", label.c_str());
      return 2;
    }
    labels[label.substr(0, eq)] = label.substr(eq + 1);
  }

  // Before any thread exists: every thread inherits this mask, so SIGTERM/SIGINT reach only
  // the sigwait() below (the runner unblocks them again in workload children).
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  signal(SIGPIPE, SIG_IGN);

  tlbfleet::InitLogging("agent", log_level);
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
  options.state_dir = state_dir;
  options.sysroot = &sysroot;
  options.labels = labels;
  options.workloads = tlbfleet::workloads::Registry::Get().Names();
  options.max_backoff_seconds = max_backoff;
  options.reboot_command = reboot_command;
  options.netserver = netserver.advertise;
  // CPUID describes this machine, not a --sysroot tree.
  tlbfleet::agent::HardwareCpuid cpuid;
  if (sysroot_dir.empty()) options.cpuid = &cpuid;
  absl::StatusOr<std::unique_ptr<tlbfleet::agent::Agent>> agent =
      tlbfleet::agent::Agent::Create(std::move(options));
  if (!agent.ok()) {
    spdlog::critical("cannot start: {}", agent.status().ToString());
    return 1;
  }

  std::atomic<bool> finished{false};
  std::thread signal_thread([&] {
    for (;;) {
      int sig = 0;
      if (sigwait(&stop_signals, &sig) != 0) continue;
      if (finished.load()) return;
      (*agent)->Shutdown(strsignal(sig));
    }
  });

  absl::Status status = (*agent)->Run();
  finished.store(true);
  pthread_kill(signal_thread.native_handle(), SIGTERM);
  signal_thread.join();
  if (!status.ok()) {
    spdlog::critical("{}", status.ToString());
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 2 && std::strcmp(argv[1], "run-workload") == 0) {
    tlbfleet::workloads::LinkAllWorkloads();
    return tlbfleet::workloads::BenchMain(argc - 1, argv + 1);
  }
  return AgentMain(argc, argv);
}
