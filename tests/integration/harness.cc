#include "tests/integration/harness.h"

#include <fcntl.h>
#include <grpcpp/grpcpp.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

namespace tlbfleet::testing {

std::string BinPath(const std::string& name) { return std::string(TLBFLEET_BIN_DIR) + "/" + name; }

Process::Process(std::vector<std::string> argv, std::string log_path)
    : log_path_(std::move(log_path)) {
  std::vector<char*> args;
  for (std::string& a : argv) args.push_back(a.data());
  args.push_back(nullptr);
  int log_fd = ::open(log_path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  pid_ = ::fork();
  if (pid_ == 0) {
    ::setpgid(0, 0);
    ::dup2(log_fd, 1);
    ::dup2(log_fd, 2);
    int devnull = ::open("/dev/null", O_RDONLY);
    ::dup2(devnull, 0);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  ::close(log_fd);
}

Process::~Process() {
  if (Running()) {
    Signal(SIGKILL);
    Wait(std::chrono::seconds(5));
  }
}

void Process::Signal(int sig) {
  if (pid_ > 0 && !reaped_) ::kill(pid_, sig);
}

int Process::Wait(std::chrono::milliseconds timeout) {
  int status = -1;
  bool done = WaitFor(
      [&] {
        if (reaped_) return true;
        pid_t r = ::waitpid(pid_, &status, WNOHANG);
        if (r == pid_) reaped_ = true;
        return reaped_;
      },
      timeout);
  return done ? status : -1;
}

bool Process::Running() {
  if (pid_ <= 0 || reaped_) return false;
  int status = 0;
  if (::waitpid(pid_, &status, WNOHANG) == pid_) {
    reaped_ = true;
    return false;
  }
  return true;
}

std::string Process::Log() const {
  std::ifstream in(log_path_);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool WaitFor(const std::function<bool()>& condition, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (condition()) return true;
    if (std::chrono::steady_clock::now() >= deadline) return condition();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

int RunCommand(const std::vector<std::string>& argv, std::string* output, bool merge_stderr) {
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) return -1;
  std::vector<std::string> copy = argv;
  std::vector<char*> args;
  for (std::string& a : copy) args.push_back(a.data());
  args.push_back(nullptr);
  pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(pipe_fds[1], 1);
    if (merge_stderr) ::dup2(pipe_fds[1], 2);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  ::close(pipe_fds[1]);
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(pipe_fds[0], buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  ::close(pipe_fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (output != nullptr) *output = out;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

ControllerProcess::ControllerProcess(const std::string& dir, std::vector<std::string> extra_args)
    : db_path_(dir + "/fleet.db") {
  std::string ready = dir + "/controller.ready";
  std::vector<std::string> argv = {BinPath("tlbfleet-controller"),
                                   "--grpc-listen",
                                   "127.0.0.1:0",
                                   "--http-listen",
                                   "127.0.0.1:0",
                                   "--db",
                                   db_path_,
                                   "--ready-file",
                                   ready};
  argv.insert(argv.end(), extra_args.begin(), extra_args.end());
  process_ = std::make_unique<Process>(argv, dir + "/controller.log");
  std::string text;
  WaitFor(
      [&] {
        std::ifstream in(ready);
        std::stringstream ss;
        ss << in.rdbuf();
        text = ss.str();
        return text.find('}') != std::string::npos;
      },
      std::chrono::seconds(30));
  std::smatch m;
  if (std::regex_search(text, m, std::regex("\"grpc_port\":(\\d+),\"http_port\":(\\d+)"))) {
    grpc_port_ = std::stoi(m[1]);
    http_port_ = std::stoi(m[2]);
  }
  stub_ =
      v1::FleetService::NewStub(grpc::CreateChannel(address(), grpc::InsecureChannelCredentials()));
}

void ControllerProcess::Authorize(grpc::ClientContext& ctx) const {
  if (!token_.empty()) ctx.AddMetadata("authorization", "Bearer " + token_);
}

int ControllerProcess::ConnectedHosts() {
  grpc::ClientContext ctx;
  Authorize(ctx);
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  v1::ListHostsResponse response;
  if (!stub_->ListHosts(&ctx, v1::ListHostsRequest(), &response).ok()) return -1;
  int n = 0;
  for (const v1::Host& h : response.hosts()) n += h.connected() ? 1 : 0;
  return n;
}

grpc::Status ControllerProcess::Submit(const std::string& yaml, std::string* run_id,
                                       const std::string& source) {
  grpc::ClientContext ctx;
  Authorize(ctx);
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  v1::SubmitRunRequest request;
  request.set_spec_yaml(yaml);
  request.set_source_name(source);
  v1::SubmitRunResponse response;
  grpc::Status s = stub_->SubmitRun(&ctx, request, &response);
  if (run_id != nullptr) *run_id = response.run_id();
  return s;
}

v1::Run ControllerProcess::GetRun(const std::string& run_id) {
  grpc::ClientContext ctx;
  Authorize(ctx);
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  v1::GetRunRequest request;
  request.set_run_id(run_id);
  v1::Run run;
  if (!stub_->GetRun(&ctx, request, &run).ok()) return v1::Run();
  return run;
}

v1::Run ControllerProcess::WaitForRunEnd(const std::string& run_id,
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

namespace {

// Runs `sql` and hands the first row's statement to `read`; false when there is none.
template <typename Read>
bool QueryFirstRow(const std::string& db_path, const std::string& sql, Read read) {
  sqlite3* db = nullptr;
  bool found = false;
  if (sqlite3_open_v2(db_path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK) {
    sqlite3_busy_timeout(db, 5000);
    sqlite3_stmt* stmt = nullptr;
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt, nullptr) == SQLITE_OK &&
        sqlite3_step(stmt) == SQLITE_ROW) {
      read(stmt);
      found = true;
    }
    sqlite3_finalize(stmt);
  }
  sqlite3_close(db);
  return found;
}

}  // namespace

int64_t QueryInt(const std::string& db_path, const std::string& sql) {
  int64_t value = -1;
  QueryFirstRow(db_path, sql, [&](sqlite3_stmt* stmt) { value = sqlite3_column_int64(stmt, 0); });
  return value;
}

double QueryNumber(const std::string& db_path, const std::string& sql) {
  double value = -1;
  QueryFirstRow(db_path, sql, [&](sqlite3_stmt* stmt) { value = sqlite3_column_double(stmt, 0); });
  return value;
}

std::vector<std::vector<std::string>> QueryRows(const std::string& db_path,
                                                const std::string& sql) {
  std::vector<std::vector<std::string>> rows;
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(db_path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK) {
    sqlite3_busy_timeout(db, 5000);
    sqlite3_stmt* stmt = nullptr;
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt, nullptr) == SQLITE_OK) {
      while (sqlite3_step(stmt) == SQLITE_ROW) {
        std::vector<std::string> row;
        for (int i = 0; i < sqlite3_column_count(stmt); ++i) {
          const unsigned char* text = sqlite3_column_text(stmt, i);
          row.emplace_back(text != nullptr ? reinterpret_cast<const char*>(text) : "");
        }
        rows.push_back(std::move(row));
      }
    }
    sqlite3_finalize(stmt);
  }
  sqlite3_close(db);
  return rows;
}

std::string ReadWholeFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace tlbfleet::testing
