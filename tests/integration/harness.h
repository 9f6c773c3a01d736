#pragma once
// Helpers for integration tests: start real tlbfleet processes, wait on conditions with a
// deadline (never a bare sleep), and talk to the controller.

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/temp_dir_for_test.h"
#include "tlbfleet/v1/fleet.grpc.pb.h"

namespace tlbfleet::testing {

std::string BinPath(const std::string& name);  // build/bin/<name>

// A child process with stdout+stderr appended to `log_path`. Killed (SIGKILL) on destruction
// if still running.
class Process {
 public:
  Process(std::vector<std::string> argv, std::string log_path);
  ~Process();
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;

  pid_t pid() const { return pid_; }
  void Signal(int sig);
  // Waits for exit; returns the wait status, or -1 on timeout.
  int Wait(std::chrono::milliseconds timeout);
  bool Running();
  std::string Log() const;

 private:
  pid_t pid_ = -1;
  bool reaped_ = false;
  std::string log_path_;
};

// Polls `condition` every 50 ms until true or `timeout`; returns its last value.
bool WaitFor(const std::function<bool()>& condition, std::chrono::milliseconds timeout);

// Runs a command, capturing stdout (stderr is merged when merge_stderr). Returns exit code.
int RunCommand(const std::vector<std::string>& argv, std::string* output,
               bool merge_stderr = false);

// The first column of the first row of `sql`, run read-only on the SQLite file `db_path`
// (waiting up to 5 s for the controller's writer); -1 when the query fails or has no row.
int64_t QueryInt(const std::string& db_path, const std::string& sql);
double QueryNumber(const std::string& db_path, const std::string& sql);

// Every row of `sql`, run read-only on the SQLite file `db_path` (waiting up to 5 s for the
// controller's writer), each column as text (NULL as ""); no rows when the query fails.
std::vector<std::vector<std::string>> QueryRows(const std::string& db_path, const std::string& sql);

// The whole file at `path`; "" when it cannot be read.
std::string ReadWholeFile(const std::string& path);

// common/temp_dir_for_test.h's, named tlbfleet-it-XXXXXX so that what an integration test
// left (TLBFLEET_KEEP_TEST_DIRS) is told apart from a unit test's.
class TempDir : public ::tlbfleet::TempDir {
 public:
  TempDir() : ::tlbfleet::TempDir("tlbfleet-it") {}
};

// A controller process plus a FleetService stub connected to it.
class ControllerProcess {
 public:
  ControllerProcess(const std::string& dir, std::vector<std::string> extra_args = {});
  int grpc_port() const { return grpc_port_; }
  int http_port() const { return http_port_; }
  std::string address() const { return "127.0.0.1:" + std::to_string(grpc_port_); }
  const std::string& db_path() const { return db_path_; }
  v1::FleetService::Stub& fleet() { return *stub_; }
  // An API token sent with the calls below (a controller that holds tokens needs one).
  void set_token(std::string token) { token_ = std::move(token); }
  Process& process() { return *process_; }
  // Number of hosts currently connected.
  int ConnectedHosts();
  // SubmitRun of `yaml` (named `source` in errors); the new run's id goes to *run_id.
  grpc::Status Submit(const std::string& yaml, std::string* run_id,
                      const std::string& source = "test.yaml");
  // The run as GetRun returns it; an empty Run when the call fails.
  v1::Run GetRun(const std::string& run_id);
  // Polls GetRun until the run has succeeded, failed or been cancelled, or `timeout`;
  // returns the last Run seen.
  v1::Run WaitForRunEnd(const std::string& run_id, std::chrono::milliseconds timeout);

 private:
  std::string db_path_;
  std::unique_ptr<Process> process_;
  int grpc_port_ = 0;
  int http_port_ = 0;
  std::unique_ptr<v1::FleetService::Stub> stub_;
  std::string token_;
  void Authorize(grpc::ClientContext& ctx) const;
};

}  // namespace tlbfleet::testing
