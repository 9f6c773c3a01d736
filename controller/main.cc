// tlbfleet-controller: the fleet's scheduler, store and API.
//
//   tlbfleet-controller --grpc-listen 127.0.0.1:7070 --http-listen 127.0.0.1:8080 --db PATH
//       [--artifact-dir DIR] [--artifact-quota 10G]
//   tlbfleet-controller token create --db PATH --role operator --name alice
//   tlbfleet-controller token list|revoke --db PATH ...
//   tlbfleet-controller audit --db PATH
//
// Exit codes: 0 stopped by a signal (or a command succeeded), 1 a failure while running,
// 2 a configuration mistake found at start (nothing was started).

#include <grpcpp/grpcpp.h>
#include <signal.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <optional>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/config/yaml_config.h"
#include "common/files.h"
#include "common/grpc_keepalive.h"
#include "common/logging.h"
#include "common/systemd/notifier.h"
#include "common/version.h"
#include "controller/admin/admin_commands.h"
#include "controller/api/artifact_service.h"
#include "controller/api/auth.h"
#include "controller/api/fleet_api.h"
#include "controller/api/grpc_services.h"
#include "controller/api/http_api.h"
#include "controller/api/http_server.h"
#include "controller/api/nightly_api.h"
#include "controller/api/nightly_service.h"
#include "controller/api/run_event_streams.h"
#include "controller/api/static_files.h"
#include "controller/api/tls.h"
#include "controller/artifacts/artifact_store.h"
#include "controller/artifacts/paths.h"
#include "controller/core/controller.h"
#include "controller/metrics/controller_metrics.h"
#include "controller/nightly/file_clock.h"
#include "controller/nightly/nightly.h"
#include "controller/store/auth_store.h"
#include "controller/store/nightly_store.h"
#include "controller/store/store.h"
#include "spdlog/spdlog.h"

namespace {

constexpr int kExitFailure = 1;
constexpr int kExitConfig = 2;

int Fail(int code, const std::string& message) {
  std::fprintf(stderr, "tlbfleet-controller: %s\n", message.c_str());
  return code;
}

struct DaemonOptions {
  std::string grpc_listen = "127.0.0.1:7070";
  std::string http_listen = "127.0.0.1:8080";
  std::string db_path = "tlbfleet.db";
  std::string ready_file;
  std::string dashboard_dir;
  double lease_seconds = 60;
  int store_batch_ms = 20;
  double heartbeat_seconds = 0;
  int max_attempts = 3;
  std::string nightly_clock_file;
  double reconnect_grace_seconds = 0;
  double reboot_return_seconds = 900;
  double session_hours = 12;
  std::string artifact_dir;  // "": paths::ArtifactDirForDatabase(db_path)
  std::string artifact_quota = "10G";
  tlbfleet::api::TlsFiles tls;
  bool insecure_no_tls = false;
};

// "10737418240", "512K", "10G", "1.5G", "10GiB": bytes, with a binary K/M/G/T suffix (an
// optional "B" or "iB" after it). nullopt for anything else, zero, or more than 2^64-1.
std::optional<uint64_t> ParseByteSize(std::string text) {
  text = absl::AsciiStrToUpper(absl::StripAsciiWhitespace(text));
  for (const char* unit_suffix : {"IB", "B"}) {
    const std::string suffix = unit_suffix;
    if (text.size() > suffix.size() + 1 &&
        text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0 &&
        std::string("KMGT").find(text[text.size() - suffix.size() - 1]) != std::string::npos) {
      text.resize(text.size() - suffix.size());
      break;
    }
  }
  int shift = 0;
  if (!text.empty()) {
    const size_t unit = std::string("KMGT").find(text.back());
    if (unit != std::string::npos) {
      shift = 10 * static_cast<int>(unit + 1);
      text.pop_back();
    }
  }
  if (text.empty() || text.find_first_not_of("0123456789.") != std::string::npos) {
    return std::nullopt;
  }
  uint64_t whole = 0;
  if (text.find('.') == std::string::npos) {
    if (!absl::SimpleAtoi(text, &whole) || whole == 0) return std::nullopt;
    if (shift > 0 && whole > (UINT64_MAX >> shift)) return std::nullopt;
    return whole << shift;
  }
  // A fraction only with a unit ("1.5G"), rounded down to a byte.
  double value = 0;
  if (shift == 0 || !absl::SimpleAtod(text, &value) || !(value > 0)) return std::nullopt;
  const double bytes = value * static_cast<double>(uint64_t{1} << shift);
  if (bytes < 1 || bytes >= 18446744073709551615.0) return std::nullopt;
  return static_cast<uint64_t>(bytes);
}

void WarnAboutAuthentication(tlbfleet::api::Authenticator& auth, bool loopback_only) {
  absl::StatusOr<bool> dev = auth.DevelopmentMode();
  if (dev.ok() && *dev) {
    spdlog::warn("**************************************************************************");
    spdlog::warn("DEVELOPMENT MODE: no API token exists and every listener is on loopback,");
    spdlog::warn("so requests are NOT authenticated: anyone on this machine acts as admin.");
    spdlog::warn("It ends with the first `tlbfleet-controller token create --db ...`.");
    spdlog::warn("**************************************************************************");
  } else if (!loopback_only) {
    absl::StatusOr<bool> any = auth.store().AnyToken();
    if (any.ok() && !*any) {
      spdlog::warn(
          "no API token exists and a listener is not on loopback: every request "
          "is refused until `tlbfleet-controller token create --db ...`");
    }
  }
}

int RunDaemon(const DaemonOptions& o) {
  namespace api = tlbfleet::api;
  // Signals are taken synchronously by the main thread; block them before threads start.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  auto grpc_addr = api::SplitHostPort(o.grpc_listen, "--grpc-listen");
  if (!grpc_addr.ok()) return Fail(kExitConfig, std::string(grpc_addr.status().message()));
  auto http_addr = api::SplitHostPort(o.http_listen, "--http-listen");
  if (!http_addr.ok()) return Fail(kExitConfig, std::string(http_addr.status().message()));
  const bool loopback_only =
      api::IsLoopbackHost(grpc_addr->first) && api::IsLoopbackHost(http_addr->first);
  if (absl::Status s = api::CheckTlsFiles(o.tls); !s.ok()) {
    return Fail(kExitConfig, std::string(s.message()));
  }
  if (!loopback_only && !o.tls.enabled() && !o.insecure_no_tls) {
    return Fail(
        kExitConfig,
        absl::StrCat(api::IsLoopbackHost(grpc_addr->first) ? "--http-listen " : "--grpc-listen ",
                     api::IsLoopbackHost(grpc_addr->first) ? o.http_listen : o.grpc_listen,
                     ": not a loopback address, and without TLS tokens and results would "
                     "cross the network in clear text; give --tls-cert and --tls-key, or "
                     "--insecure-no-tls to accept that"));
  }
  absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> grpc_credentials =
      api::GrpcServerCredentials(o.tls);
  if (!grpc_credentials.ok()) {
    return Fail(kExitConfig, std::string(grpc_credentials.status().message()));
  }
  std::optional<uint64_t> artifact_quota = ParseByteSize(o.artifact_quota);
  if (!artifact_quota) {
    return Fail(kExitConfig, absl::StrCat("--artifact-quota ", o.artifact_quota,
                                          ": not a size (bytes, or a number with K, M, G or T "
                                          "for KiB, MiB, GiB, TiB: 10G), or zero"));
  }

  tlbfleet::store::StoreOptions store_options;
  store_options.max_batch_ms = o.store_batch_ms;
  absl::StatusOr<std::unique_ptr<tlbfleet::store::Store>> store =
      tlbfleet::store::Store::Open(o.db_path, store_options);
  if (!store.ok()) {
    // A database that cannot be written (read-only file system, permissions) or is newer than
    // this binary: nothing to retry.
    return Fail(absl::IsFailedPrecondition(store.status()) ? kExitConfig : kExitFailure,
                absl::StrCat("--db ", o.db_path, ": ", store.status().message()));
  }
  absl::StatusOr<std::unique_ptr<tlbfleet::store::AuthStore>> auth_store =
      tlbfleet::store::AuthStore::Open(o.db_path);
  if (!auth_store.ok()) {
    return Fail(kExitConfig, absl::StrCat("--db ", o.db_path, ": ", auth_store.status().message()));
  }
  // Built kernels (docs/kernels.md, "Artifacts"): outside SQLite, with a quota of their own.
  const std::string artifact_dir =
      o.artifact_dir.empty() ? tlbfleet::artifacts::paths::ArtifactDirForDatabase(o.db_path)
                             : o.artifact_dir;
  tlbfleet::artifacts::ArtifactStore::Options artifact_options;
  artifact_options.quota_bytes = *artifact_quota;
  absl::StatusOr<std::unique_ptr<tlbfleet::artifacts::ArtifactStore>> artifacts =
      tlbfleet::artifacts::ArtifactStore::Open(artifact_dir, artifact_options);
  if (!artifacts.ok()) {
    // Another controller holding the directory, or one that cannot be written: nothing to
    // retry, as for --db.
    return Fail(absl::IsFailedPrecondition(artifacts.status()) ||
                        absl::IsPermissionDenied(artifacts.status())
                    ? kExitConfig
                    : kExitFailure,
                absl::StrCat("--artifact-dir ", artifact_dir, ": ", artifacts.status().message()));
  }

  tlbfleet::core::ControllerOptions options;
  options.lease_ms = static_cast<int64_t>(o.lease_seconds * 1000);
  options.heartbeat_ms = o.heartbeat_seconds > 0
                             ? static_cast<int64_t>(o.heartbeat_seconds * 1000)
                             : std::clamp<int64_t>(options.lease_ms / 4, 1000, 15000);
  options.max_attempts = o.max_attempts;
  options.tick_ms = std::clamp<int64_t>(options.lease_ms / 8, 50, 1000);
  options.reconnect_grace_ms = static_cast<int64_t>(o.reconnect_grace_seconds * 1000);
  options.reboot_return_ms = static_cast<int64_t>(o.reboot_return_seconds * 1000);
  options.artifacts = artifacts->get();
  // A builder answers in milliseconds; a submit does not wait long for one busy or stuck.
  options.resolve_at_submit = absl::Seconds(10);
  if (options.heartbeat_ms * 2 > options.lease_ms) {
    return Fail(kExitConfig,
                absl::StrCat("--heartbeat-seconds ", options.heartbeat_ms / 1000.0,
                             ": must be at most half of --lease-seconds ", o.lease_seconds,
                             " (a lease shorter than two heartbeats expires while its agent "
                             "is alive)"));
  }

  api::AuthOptions auth_options;
  auth_options.loopback_only = loopback_only;
  auth_options.session_ms = static_cast<int64_t>(o.session_hours * 3600e3);
  api::Authenticator auth(**auth_store, auth_options);
  api::AuditLog audit(**auth_store);

  std::unique_ptr<tlbfleet::core::Controller> controller =
      tlbfleet::core::Controller::Create(**store, options);
  tlbfleet::core::RunService& runs = controller->runs();

  // Nightly schedules, history and bisections: a unit beside the core, with a connection of
  // its own to the same database.
  absl::StatusOr<std::unique_ptr<tlbfleet::store::NightlyStore>> nightly_store =
      tlbfleet::store::NightlyStore::Open(o.db_path);
  if (!nightly_store.ok()) {
    return Fail(kExitConfig,
                absl::StrCat("--db ", o.db_path, ": ", nightly_store.status().message()));
  }
  std::unique_ptr<tlbfleet::nightly::FileClock> file_clock;
  tlbfleet::nightly::NightlyOptions nightly_options;
  if (!o.nightly_clock_file.empty()) {
    file_clock = std::make_unique<tlbfleet::nightly::FileClock>(o.nightly_clock_file);
    nightly_options.clock = file_clock.get();
    nightly_options.poll = absl::Milliseconds(100);
    spdlog::warn("nightly schedules follow the clock in {} (--nightly-clock-file)",
                 o.nightly_clock_file);
  }
  tlbfleet::nightly::Nightly nightly(runs, **nightly_store, nightly_options);
  controller->AddObserver(&nightly);

  tlbfleet::metrics::ControllerMetricsOptions metrics_options;
  metrics_options.primary_metric = [&runs](const std::string& benchmark) {
    for (const auto& w : runs.ListWorkloads().workloads()) {
      if (w.name() == benchmark) return w.primary_metric();
    }
    return std::string();
  };
  metrics_options.open_regressions = [&nightly]() -> absl::StatusOr<std::map<std::string, int>> {
    return tlbfleet::nightly::OpenRegressionsBySeries(nightly);
  };
  metrics_options.nightly_store_errors = [&nightly]() -> std::map<std::string, uint64_t> {
    const tlbfleet::nightly::NightlyStoreErrors errors = nightly.StoreErrors();
    return {{"read", errors.reads}, {"write", errors.writes}};
  };
  metrics_options.artifact_usage = [store = artifacts->get(), quota = *artifact_quota] {
    tlbfleet::metrics::ControllerMetricsOptions::ArtifactUsage usage;
    usage.used_bytes = store->UsedBytes();
    usage.quota_bytes = quota;
    usage.published = store->List().size();
    std::error_code ec;
    for (std::filesystem::directory_iterator it(
             tlbfleet::artifacts::paths::QuarantineDir(store->dir()), ec);
         !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
      ++usage.quarantined;
    }
    return usage;
  };
  tlbfleet::metrics::ControllerMetrics metrics(runs, metrics_options);
  controller->AddObserver(&metrics);
  api::GrpcCallHook count_call = [&metrics](const std::string& method, const std::string& code) {
    metrics.OnGrpcCall(method, code);
  };
  api::FleetApi fleet(runs, audit);
  api::AgentServiceImpl agent_service(controller->agents(), auth,
                                      /*require_client_certificate=*/!o.tls.client_ca.empty(),
                                      count_call);
  api::FleetServiceImpl fleet_service(fleet, auth, count_call);
  api::ArtifactServiceImpl::Options artifact_service_options;
  artifact_service_options.quota_bytes = *artifact_quota;
  artifact_service_options.require_client_certificate = !o.tls.client_ca.empty();
  artifact_service_options.on_call = count_call;
  api::ArtifactServiceImpl artifact_service(**artifacts, auth, artifact_service_options);

  api::NightlyApi nightly_api(nightly, audit);
  api::NightlyServiceImpl nightly_service(nightly_api, auth, count_call);

  int grpc_port = 0;
  grpc::ServerBuilder builder;
  builder.AddListeningPort(o.grpc_listen, *grpc_credentials, &grpc_port);
  builder.RegisterService(&agent_service);
  builder.RegisterService(&artifact_service);
  builder.RegisterService(&fleet_service);
  builder.RegisterService(&nightly_service);
  // Half-open agent streams are noticed within kHalfOpenDetectionMs (grpc_keepalive.h).
  tlbfleet::SetControllerKeepalive(builder);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (!server || grpc_port == 0) {
    return Fail(kExitConfig,
                absl::StrCat("--grpc-listen ", o.grpc_listen, ": cannot listen (address in use?)"));
  }

  api::StaticFiles files(o.dashboard_dir.empty() ? api::DefaultDashboardDir() : o.dashboard_dir);
  // Live run progress (SSE): told of every stored run event by the core.
  api::FacadeRunEventSource event_source(runs);
  api::RunEventStreams events(event_source);
  controller->AddObserver(&events);
  api::HttpApiOptions http_api_options;
  http_api_options.tls = o.tls.enabled();
  http_api_options.render_metrics = [&metrics] { return metrics.Render(); };
  http_api_options.nightly = &nightly_api;
  api::HttpApi http_api(fleet, auth, &events, &files, http_api_options);
  api::Router router;
  router.Add(boost::beast::http::verb::get, "/healthz", [](api::HttpRequest&) {
    api::HttpResponse r;
    r.content_type = "text/plain; charset=utf-8";
    r.body = "ok\n";
    return r;
  });
  http_api.Register(router);
  api::HttpServerOptions http_options;
  http_options.address = o.http_listen;
  http_options.tls_cert = o.tls.cert;
  http_options.tls_key = o.tls.key;
  http_options.on_response = [&metrics](const api::HttpResponseInfo& r) {
    metrics.OnHttpResponse(r.route, r.status, r.seconds);
    spdlog::debug("http {} {} {} {:.1f} ms from {}", r.method, r.path, r.status, r.seconds * 1e3,
                  r.peer);
  };
  auto http = api::HttpServer::Start(http_options, router);
  if (!http.ok()) {
    server->Shutdown();
    return Fail(kExitConfig, std::string(http.status().message()));
  }
  controller->Start();
  nightly.Start();
  spdlog::info("tlbfleet-controller {} listening: grpc {}:{} http {}:{} db {} lease {} s",
               tlbfleet::kVersion, grpc_addr->first, grpc_port, http_addr->first, (*http)->port(),
               o.db_path, o.lease_seconds);
  spdlog::info("artifacts: {} ({} of {} used)", artifact_dir,
               api::HumanBytes((*artifacts)->UsedBytes()), api::HumanBytes(*artifact_quota));
  spdlog::info("dashboard: {}",
               files.root().empty()
                   ? absl::StrCat("none (no index.html in ",
                                  o.dashboard_dir.empty()
                                      ? absl::StrJoin(api::DefaultDashboardDirs(), " or ")
                                      : o.dashboard_dir,
                                  ")")
                   : files.root());
  WarnAboutAuthentication(auth, loopback_only);
  if (!o.tls.enabled()) {
    if (!loopback_only) {
      spdlog::warn(
          "--insecure-no-tls: listening beyond loopback in clear text; tokens and "
          "results can be read on the network");
    }
  } else {
    spdlog::info("TLS on both listeners ({}){}", o.tls.cert,
                 o.tls.client_ca.empty() ? ""
                                         : absl::StrCat("; agents need a client certificate "
                                                        "signed by ",
                                                        o.tls.client_ca));
  }
  if (!o.ready_file.empty()) {
    std::string ready =
        absl::StrCat("{\"grpc_port\":", grpc_port, ",\"http_port\":", (*http)->port(),
                     ",\"pid\":", getpid(), "}\n");
    if (absl::Status s = tlbfleet::WriteFileAtomic(o.ready_file, ready); !s.ok()) {
      spdlog::error("--ready-file: {}", s.ToString());
    }
  }

  // The watchdog is petted only while the core answers (Snapshot takes its locks and reads
  // the database): a wedged controller is restarted by systemd.
  tlbfleet::SystemdNotifier systemd([&runs] { return runs.Snapshot().ok(); });
  systemd.Ready(absl::StrCat("serving: gRPC port ", grpc_port, ", HTTP port ", (*http)->port()));

  int signal_number = 0;
  sigwait(&signals, &signal_number);
  spdlog::info("signal {} received; shutting down", signal_number);
  nightly.Stop();
  systemd.Stopping(absl::StrCat("signal ", signal_number, ": shutting down"));
  controller->Stop();
  http->reset();
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  server->Wait();
  spdlog::info("stopped");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  DaemonOptions o;
  std::string log_level = "info";

  CLI::App app{"tlbfleet controller: schedules benchmark jobs onto agents and stores results"};
  app.set_version_flag("--version", tlbfleet::kVersion);
  app.require_subcommand(0, 1);
  app.add_option("--grpc-listen", o.grpc_listen,
                 "gRPC address for agents and clients (port 0: any)")
      ->capture_default_str();
  app.add_option("--http-listen", o.http_listen,
                 "HTTP address: JSON API, dashboard, /healthz (port 0: any)")
      ->capture_default_str();
  app.add_option("--db", o.db_path, "SQLite database file (created if missing)")
      ->capture_default_str();
  app.add_option("--artifact-dir", o.artifact_dir,
                 "where built kernels are kept (default: <db>.artifacts beside the database)");
  app.add_option("--artifact-quota", o.artifact_quota,
                 "the most the kept kernels may hold together, in bytes or with K, M, G or T "
                 "(binary units); the least recently used unpinned ones are evicted")
      ->capture_default_str();
  app.add_option("--dashboard-dir", o.dashboard_dir,
                 "built dashboard to serve at / (default: <binary's dir>/../dashboard/dist, "
                 "else <binary's dir>/../share/tlbfleet/dashboard)");
  app.add_option("--tls-cert", o.tls.cert, "TLS certificate chain (PEM) for both listeners");
  app.add_option("--tls-key", o.tls.key, "its private key (PEM)");
  app.add_option("--tls-client-ca", o.tls.client_ca,
                 "CA (PEM) that signed agents' client certificates: mutual TLS for agents");
  app.add_flag("--insecure-no-tls", o.insecure_no_tls,
               "allow a listener beyond loopback without TLS (tokens travel in clear text)");
  app.add_option("--session-hours", o.session_hours, "browser sessions (login) last this long")
      ->capture_default_str()
      ->check(CLI::Range(0.01, 24.0 * 90));
  app.add_option("--store-batch-ms", o.store_batch_ms,
                 "a store transaction takes no more writes after this long, so a lease waits at "
                 "most about this long behind sample ingest (0: no limit; higher: more samples/s, "
                 "slower dispatch under load; docs/performance.md)")
      ->capture_default_str()
      ->check(CLI::Range(0, 60000));
  app.add_option("--lease-seconds", o.lease_seconds,
                 "re-queue a job whose agent has been silent this long")
      ->capture_default_str()
      ->check(CLI::Range(1.0, 86400.0));
  app.add_option("--heartbeat-seconds", o.heartbeat_seconds,
                 "agent heartbeat interval (default: a quarter of the lease, at most 15)")
      ->check(CLI::Range(0.0, 3600.0));
  app.add_option("--max-attempts", o.max_attempts, "leases per job before its run fails")
      ->capture_default_str()
      ->check(CLI::Range(1, 100));
  app.add_option("--reconnect-grace-seconds", o.reconnect_grace_seconds,
                 "after a start or a storage outage, leases are not judged for this long, so "
                 "agents reconnect and report first (default: the lease plus 30 s)")
      ->check(CLI::Range(0.0, 86400.0));
  app.add_option("--reboot-return-seconds", o.reboot_return_seconds,
                 "a host asked to reboot that is not back on a new boot after this long fails "
                 "its run (the samples taken are kept)")
      ->capture_default_str()
      ->check(CLI::Range(1.0, 86400.0));
  app.add_option("--ready-file", o.ready_file,
                 "write {\"grpc_port\":N,\"http_port\":M,\"pid\":P} here once listening");
  app.add_option("--log-level", log_level, "trace|debug|info|warn|error")->capture_default_str();
  app.add_option("--nightly-clock-file", o.nightly_clock_file,
                 "for tests: nightly schedules read the time (seconds since the epoch, UTC) "
                 "from this file instead of the system clock");

  tlbfleet::AddYamlConfig(app,
                          "controller.yaml: these flags as `flag-name: value` (the command line "
                          "wins; an unknown key is an error)");

  // --- token ---
  CLI::App* token = app.add_subcommand("token", "API tokens: create, list, revoke");
  token->require_subcommand(1);
  tlbfleet::admin::TokenCreateOptions create;
  std::string token_db, token_name, list_format = "text";
  CLI::App* token_create =
      token->add_subcommand("create", "create a token; prints it once, alone on the last line");
  token_create->add_option("--db", create.db, "the controller's database")->required();
  token_create->add_option("--role", create.role, "viewer | operator | admin | agent")->required();
  token_create->add_option("--name", create.name, "who or what holds it (unique)")->required();
  token_create->add_option("--expires-days", create.expires_days, "valid this long (0: no end)")
      ->capture_default_str();
  CLI::App* token_list = token->add_subcommand("list", "list tokens (never their secrets)");
  token_list->add_option("--db", token_db, "the controller's database")->required();
  token_list->add_option("--format", list_format, "text | json")
      ->check(CLI::IsMember({"text", "json"}));
  CLI::App* token_revoke =
      token->add_subcommand("revoke", "revoke a token and end its browser sessions");
  token_revoke->add_option("--db", token_db, "the controller's database")->required();
  token_revoke->add_option("NAME", token_name, "the token's name (or id)")->required();

  // --- audit ---
  uint32_t audit_limit = 100;
  std::string audit_format = "text";
  std::string audit_db;
  CLI::App* audit = app.add_subcommand("audit", "print the audit log of mutating requests");
  audit->add_option("--db", audit_db, "the controller's database")->required();
  audit->add_option("--limit", audit_limit, "the newest this many entries")->capture_default_str();
  audit->add_option("--format", audit_format, "text | json")
      ->check(CLI::IsMember({"text", "json"}));

  // --- backup ---
  std::string backup_db, backup_out;
  CLI::App* backup = app.add_subcommand(
      "backup", "copy the database while the controller runs (SQLite's online backup)");
  backup->add_option("--db", backup_db, "the controller's database")->required();
  backup->add_option("--out", backup_out, "the copy to write (must not exist)")->required();

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? 0 : kExitConfig;
  }

  if (token_create->parsed())
    return tlbfleet::admin::TokenCreateCommand(create, std::cout, std::cerr);
  if (token_list->parsed()) {
    return tlbfleet::admin::TokenListCommand(token_db, list_format, std::cout, std::cerr);
  }
  if (token_revoke->parsed()) {
    return tlbfleet::admin::TokenRevokeCommand(token_db, token_name, std::cout, std::cerr);
  }
  if (backup->parsed()) {
    return tlbfleet::admin::BackupCommand(backup_db, backup_out, std::cout, std::cerr);
  }
  if (audit->parsed()) {
    return tlbfleet::admin::AuditCommand(audit_db, audit_limit, audit_format, std::cout, std::cerr);
  }

  tlbfleet::InitLogging("controller", log_level);
  int rc = RunDaemon(o);
  return rc == 0 || rc == kExitConfig ? rc : kExitFailure;
}
