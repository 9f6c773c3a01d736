#include "tests/faults/fault_harness.h"

#include <grpcpp/grpcpp.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/mount.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <regex>
#include <sstream>

namespace tlbfleet::testing {

namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::mutex what_mu;  // TwoLeaseWatcher::what_

}  // namespace

int RunTool(const std::vector<std::string>& argv, std::string* output) {
  std::string out;
  int rc = RunCommand(argv, &out, /*merge_stderr=*/true);
  if (output != nullptr) *output = out;
  return rc;
}

// --- FaultController ----------------------------------------------------------------------

FaultController::FaultController(std::string dir, std::vector<std::string> args, std::string listen,
                                 const std::string& db_dir)
    : dir_(std::move(dir)),
      args_(std::move(args)),
      listen_(std::move(listen)),
      db_path_((db_dir.empty() ? dir_ : db_dir) + "/fleet.db") {
  host_ = listen_.substr(0, listen_.rfind(':'));
}

bool FaultController::Loopback() const {
  return host_.rfind("127.", 0) == 0 || host_ == "[::1]" || host_ == "localhost";
}

bool FaultController::MakeTokens() {
  if (Loopback() || !admin_token_.empty()) return true;
  auto create = [&](const std::string& role, std::string* token) {
    std::string out;
    if (RunCommand({BinPath("tlbfleet-controller"), "token", "create", "--db", db_path_, "--role",
                    role, "--name", "fault-" + role},
                   &out) != 0) {
      return false;
    }
    while (!out.empty() && out.back() == '\n') out.pop_back();
    *token = out.substr(out.rfind('\n') + 1);
    return token->rfind("tlbf_", 0) == 0;
  };
  std::string agent_token;
  if (!create("admin", &admin_token_) || !create("agent", &agent_token)) return false;
  agent_token_file_ = dir_ + "/agent.token";
  std::ofstream(agent_token_file_) << agent_token << "\n";
  std::filesystem::permissions(
      agent_token_file_, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  return true;
}

std::vector<std::string> FaultController::AgentArgs() const {
  if (agent_token_file_.empty()) return {};
  return {"--token-file", agent_token_file_};
}

void FaultController::Authorize(grpc::ClientContext* ctx) const {
  if (!admin_token_.empty()) ctx->AddMetadata("authorization", "Bearer " + admin_token_);
}

bool FaultController::Start() {
  if (!MakeTokens()) return false;
  const std::string ready = dir_ + "/controller.ready";
  std::filesystem::remove(ready);
  // The same port on a restart, so that agents find it again where they were.
  const std::string listen = port_ == 0 ? listen_ : host_ + ":" + std::to_string(port_);
  std::vector<std::string> argv = {BinPath("tlbfleet-controller"),
                                   "--grpc-listen",
                                   listen,
                                   "--http-listen",
                                   "127.0.0.1:0",
                                   "--db",
                                   db_path_,
                                   "--ready-file",
                                   ready};
  // A veth address is not loopback: the test accepts clear text on its own veth pair.
  if (!Loopback()) argv.push_back("--insecure-no-tls");
  argv.insert(argv.end(), args_.begin(), args_.end());
  process_ = std::make_unique<Process>(argv, dir_ + "/controller.log");
  std::string text;
  WaitFor(
      [&] {
        text = ReadFile(ready);
        return text.find('}') != std::string::npos || !process_->Running();
      },
      std::chrono::seconds(30));
  std::smatch m;
  if (!std::regex_search(text, m, std::regex("\"grpc_port\":(\\d+)"))) return false;
  port_ = std::stoi(m[1]);
  stub_ =
      v1::FleetService::NewStub(grpc::CreateChannel(address(), grpc::InsecureChannelCredentials()));
  return true;
}

void FaultController::Kill9() {
  if (process_ == nullptr) return;
  process_->Signal(SIGKILL);
  process_->Wait(std::chrono::seconds(10));
}

std::string FaultController::address() const { return host_ + ":" + std::to_string(port_); }

std::string FaultController::Log() const { return ReadFile(dir_ + "/controller.log"); }

grpc::Status FaultController::Submit(const std::string& yaml, std::string* run_id) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  Authorize(&ctx);
  v1::SubmitRunRequest request;
  request.set_spec_yaml(yaml);
  request.set_source_name("fault.yaml");
  v1::SubmitRunResponse response;
  grpc::Status s = stub_->SubmitRun(&ctx, request, &response);
  if (run_id != nullptr) *run_id = response.run_id();
  return s;
}

v1::Run FaultController::GetRun(const std::string& run_id) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  Authorize(&ctx);
  v1::GetRunRequest request;
  request.set_run_id(run_id);
  v1::Run run;
  if (!stub_->GetRun(&ctx, request, &run).ok()) return v1::Run();
  return run;
}

v1::Run FaultController::WaitForRunEnd(const std::string& run_id,
                                       std::chrono::milliseconds timeout) {
  v1::Run run;
  WaitFor(
      [&] {
        run = GetRun(run_id);
        return run.state() == v1::RUN_STATE_SUCCEEDED || run.state() == v1::RUN_STATE_FAILED ||
               run.state() == v1::RUN_STATE_CANCELLED;
      },
      timeout);
  return run;
}

int FaultController::ConnectedHosts() {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  Authorize(&ctx);
  v1::ListHostsResponse response;
  if (!stub_->ListHosts(&ctx, v1::ListHostsRequest(), &response).ok()) return -1;
  int n = 0;
  for (const v1::Host& h : response.hosts()) n += h.connected() ? 1 : 0;
  return n;
}

// --- FaultAgent ---------------------------------------------------------------------------

FaultAgent::FaultAgent(std::string dir, std::string name, std::vector<std::string> args,
                       std::vector<std::string> prefix)
    : dir_(std::move(dir)),
      name_(std::move(name)),
      args_(std::move(args)),
      prefix_(std::move(prefix)),
      state_dir_(dir_ + "/" + name_) {}

void FaultAgent::Start(const std::string& controller) {
  std::vector<std::string> argv = prefix_;
  for (const std::string& a : {BinPath("tlbfleet-agent"), std::string("--controller"), controller,
                               std::string("--state-dir"), state_dir_,
                               std::string("--max-backoff-seconds"), std::string("2")}) {
    argv.push_back(a);
  }
  argv.insert(argv.end(), args_.begin(), args_.end());
  process_ = std::make_unique<Process>(argv, dir_ + "/" + name_ + ".log");
}

void FaultAgent::Kill9() {
  if (process_ == nullptr) return;
  process_->Signal(SIGKILL);
  process_->Wait(std::chrono::seconds(10));
}

std::string FaultAgent::agent_id() const {
  std::string id = ReadFile(state_dir_ + "/agent-id");
  while (!id.empty() && (id.back() == '\n' || id.back() == ' ')) id.pop_back();
  return id;
}

std::string FaultAgent::Log() const { return ReadFile(dir_ + "/" + name_ + ".log"); }

int FaultAgent::SpooledLeases() const {
  int n = 0;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(state_dir_ + "/spool", ec)) {
    n += entry.path().extension() == ".pb" ? 1 : 0;
  }
  return n;
}

// --- NetNs --------------------------------------------------------------------------------

NetNs::NetNs() {
  static int counter = 0;
  const int id = (::getpid() * 4 + counter++) % 16000;
  name_ = "tlbf-" + std::to_string(::getpid()) + "-" + std::to_string(counter);
  host_if_ = "tfh" + std::to_string(id);
  ns_if_ = "tfn" + std::to_string(id);
  // A /30 per pair: .1 host, .2 namespace.
  const int net = id * 4;
  const std::string prefix = "10.213." + std::to_string(net / 256) + ".";
  host_ip_ = prefix + std::to_string(net % 256 + 1);
  ns_ip_ = prefix + std::to_string(net % 256 + 2);
  const std::string ip = "/usr/sbin/ip";
  ok_ = RunTool({ip, "netns", "add", name_}) == 0 &&
        RunTool({ip, "link", "add", host_if_, "type", "veth", "peer", "name", ns_if_}) == 0 &&
        RunTool({ip, "link", "set", ns_if_, "netns", name_}) == 0 &&
        RunTool({ip, "addr", "add", host_ip_ + "/30", "dev", host_if_}) == 0 &&
        RunTool({ip, "link", "set", host_if_, "up"}) == 0 &&
        RunTool({ip, "netns", "exec", name_, ip, "addr", "add", ns_ip_ + "/30", "dev", ns_if_}) ==
            0 &&
        RunTool({ip, "netns", "exec", name_, ip, "link", "set", ns_if_, "up"}) == 0 &&
        RunTool({ip, "netns", "exec", name_, ip, "link", "set", "lo", "up"}) == 0;
}

NetNs::~NetNs() {
  RunTool({"/usr/sbin/ip", "link", "del", host_if_});
  RunTool({"/usr/sbin/ip", "netns", "del", name_});
}

std::vector<std::string> NetNs::ExecPrefix() const {
  return {"/usr/sbin/ip", "netns", "exec", name_};
}

bool NetNs::SetLink(bool up) {
  return RunTool({"/usr/sbin/ip", "link", "set", host_if_, up ? "up" : "down"}) == 0;
}

bool NetNs::Blackhole(const std::string& address, bool on) {
  return RunTool({"/usr/sbin/ip", "netns", "exec", name_, "/usr/sbin/ip", "route",
                  on ? "add" : "del", "blackhole", address + "/32"}) == 0;
}

// --- Tmpfs --------------------------------------------------------------------------------

Tmpfs::Tmpfs(const std::string& parent, const std::string& size) : path_(parent + "/tmpfs") {
  std::filesystem::create_directories(path_);
  ok_ = ::mount("tmpfs", path_.c_str(), "tmpfs", 0, ("size=" + size).c_str()) == 0;
}

Tmpfs::~Tmpfs() {
  if (ok_) ::umount2(path_.c_str(), MNT_DETACH);
}

// --- TwoLeaseWatcher ----------------------------------------------------------------------

TwoLeaseWatcher::TwoLeaseWatcher(std::string db_path) : db_path_(std::move(db_path)) {
  thread_ = std::thread([this] {
    while (!stop_.load()) {
      sqlite3* db = nullptr;
      if (sqlite3_open_v2(db_path_.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK) {
        sqlite3_busy_timeout(db, 1000);
        sqlite3_stmt* stmt = nullptr;
        if (sqlite3_prepare_v2(db,
                               "SELECT agent_id, group_concat(lease_id) FROM jobs WHERE"
                               " state = 'leased' GROUP BY agent_id HAVING COUNT(*) > 1",
                               -1, &stmt, nullptr) == SQLITE_OK &&
            sqlite3_step(stmt) == SQLITE_ROW) {
          std::lock_guard<std::mutex> lock(what_mu);
          what_ = std::string(reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0))) +
                  " held " + reinterpret_cast<const char*>(sqlite3_column_text(stmt, 1));
          seen_.store(true);
        }
        sqlite3_finalize(stmt);
      }
      sqlite3_close(db);
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  });
}

TwoLeaseWatcher::~TwoLeaseWatcher() {
  stop_.store(true);
  thread_.join();
}

std::string TwoLeaseWatcher::what() const {
  std::lock_guard<std::mutex> lock(what_mu);
  return what_;
}

}  // namespace tlbfleet::testing
