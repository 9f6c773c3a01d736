// tlbfleet-controller: the fleet's scheduler, store and API.
//
//   tlbfleet-controller --grpc-listen 127.0.0.1:7070 --http-listen 127.0.0.1:8080 --db PATH

#include <grpcpp/grpcpp.h>
#include <signal.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>

#include "absl/strings/str_cat.h"
#include "common/files.h"
#include "common/logging.h"
#include "common/version.h"
#include "controller/api/controller.h"
#include "controller/api/grpc_services.h"
#include "controller/api/http_server.h"
#include "controller/store/store.h"
#include "spdlog/spdlog.h"

namespace {

int Fail(const std::string& message) {
  std::fprintf(stderr, "tlbfleet-controller: %s\n", message.c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::string grpc_listen = "127.0.0.1:7070";
  std::string http_listen = "127.0.0.1:8080";
  std::string db_path = "tlbfleet.db";
  std::string ready_file;
  std::string log_level = "info";
  double lease_seconds = 60;
  double heartbeat_seconds = 0;
  int max_attempts = 3;

  CLI::App app{"tlbfleet controller: schedules benchmark jobs onto agents and stores results"};
  app.set_version_flag("--version", tlbfleet::kVersion);
  app.add_option("--grpc-listen", grpc_listen, "gRPC address for agents and clients (port 0: any)")
      ->capture_default_str();
  app.add_option("--http-listen", http_listen, "HTTP address (/healthz)")->capture_default_str();
  app.add_option("--db", db_path, "SQLite database file (created if missing)")
      ->capture_default_str();
  app.add_option("--lease-seconds", lease_seconds,
                 "re-queue a job whose agent has been silent this long")
      ->capture_default_str()
      ->check(CLI::Range(1.0, 86400.0));
  app.add_option("--heartbeat-seconds", heartbeat_seconds,
                 "agent heartbeat interval (default: a quarter of the lease, at most 15)")
      ->check(CLI::Range(0.0, 3600.0));
  app.add_option("--max-attempts", max_attempts, "leases per job before its run fails")
      ->capture_default_str()
      ->check(CLI::Range(1, 100));
  app.add_option("--ready-file", ready_file,
                 "write {\"grpc_port\":N,\"http_port\":M,\"pid\":P} here once listening");
  app.add_option("--log-level", log_level, "trace|debug|info|warn|error")->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  tlbfleet::InitLogging("controller", log_level);

  // Signals are taken synchronously by the main thread; block them before threads start.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  absl::StatusOr<std::unique_ptr<tlbfleet::store::Store>> store =
      tlbfleet::store::Store::Open(db_path);
  if (!store.ok()) return Fail(absl::StrCat("--db ", db_path, ": ", store.status().message()));

  tlbfleet::api::ControllerOptions options;
  options.lease_ms = static_cast<int64_t>(lease_seconds * 1000);
  options.heartbeat_ms = heartbeat_seconds > 0
                             ? static_cast<int64_t>(heartbeat_seconds * 1000)
                             : std::clamp<int64_t>(options.lease_ms / 4, 1000, 15000);
  options.max_attempts = max_attempts;
  options.tick_ms = std::clamp<int64_t>(options.lease_ms / 8, 50, 1000);
  if (options.heartbeat_ms * 2 > options.lease_ms) {
    return Fail("--heartbeat-seconds: must be at most half of --lease-seconds");
  }
  tlbfleet::api::Controller controller(**store, options);
  tlbfleet::api::AgentServiceImpl agent_service(controller);
  tlbfleet::api::FleetServiceImpl fleet_service(controller);

  auto grpc_addr = tlbfleet::api::SplitHostPort(grpc_listen, "--grpc-listen");
  if (!grpc_addr.ok()) return Fail(std::string(grpc_addr.status().message()));
  int grpc_port = 0;
  grpc::ServerBuilder builder;
  builder.AddListeningPort(grpc_listen, grpc::InsecureServerCredentials(), &grpc_port);
  builder.RegisterService(&agent_service);
  builder.RegisterService(&fleet_service);
  // Agents behind NAT or idle links: keep the transport alive so dead peers are noticed.
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, 20000);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, 5000);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (!server || grpc_port == 0) {
    return Fail(absl::StrCat("--grpc-listen ", grpc_listen, ": cannot listen (address in use?)"));
  }

  auto http = tlbfleet::api::HttpServer::Start(http_listen);
  if (!http.ok()) {
    server->Shutdown();
    return Fail(std::string(http.status().message()));
  }
  controller.Start();
  spdlog::info("tlbfleet-controller {} listening: grpc {}:{} http {}:{} db {} lease {} s",
               tlbfleet::kVersion, grpc_addr->first, grpc_port, grpc_addr->first, (*http)->port(),
               db_path, lease_seconds);
  if (!ready_file.empty()) {
    std::string ready =
        absl::StrCat("{\"grpc_port\":", grpc_port, ",\"http_port\":", (*http)->port(),
                     ",\"pid\":", getpid(), "}\n");
    if (absl::Status s = tlbfleet::WriteFileAtomic(ready_file, ready); !s.ok()) {
      spdlog::error("--ready-file: {}", s.ToString());
    }
  }

  int signal_number = 0;
  sigwait(&signals, &signal_number);
  spdlog::info("signal {} received; shutting down", signal_number);
  controller.Stop();
  http->reset();
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  server->Wait();
  spdlog::info("stopped");
  return 0;
}
