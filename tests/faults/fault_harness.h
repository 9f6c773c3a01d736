#pragma once
// Helpers for the fault tests (label `faults`): a controller that can be killed and started
// again on the same database, agents that can be killed and restarted on their state
// directories (optionally inside a network namespace), network namespaces on veth pairs,
// tiny tmpfs mounts, and a watcher for "never two leases for one agent". Built on the
// integration harness (processes, WaitFor, QueryInt). Needs root (namespaces, mounts).

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "tests/integration/harness.h"

namespace tlbfleet::testing {

// A controller that can be killed and started again on the same database file.
class FaultController {
 public:
  // `listen` is the gRPC address ("127.0.0.1:0" or a veth address of a namespace's pair).
  // The database is `db_dir`/fleet.db (default: in `dir`, with the log).
  FaultController(std::string dir, std::vector<std::string> args,
                  std::string listen = "127.0.0.1:0", const std::string& db_dir = "");
  // Starts it (again), waits for its ready file; false if it did not come up.
  bool Start();
  void Kill9();
  bool Running() { return process_ != nullptr && process_->Running(); }

  std::string address() const;  // host:port agents and clients dial
  const std::string& host() const { return host_; }
  const std::string& db_path() const { return db_path_; }
  std::string Log() const;  // every start's output
  v1::FleetService::Stub& fleet() { return *stub_; }

  grpc::Status Submit(const std::string& yaml, std::string* run_id);
  v1::Run GetRun(const std::string& run_id);
  v1::Run WaitForRunEnd(const std::string& run_id, std::chrono::milliseconds timeout);
  int ConnectedHosts();  // -1 when the call fails
  int64_t Q(const std::string& sql) const { return QueryInt(db_path_, sql); }
  // What an agent needs to be let in: {} on loopback (development mode); beyond loopback,
  // where every request needs a token (docs/api.md), {"--token-file", an agent token}.
  std::vector<std::string> AgentArgs() const;

 private:
  bool Loopback() const;
  // Beyond loopback: an admin token for this harness's calls and an agent token file, made
  // once in the database before the first start.
  bool MakeTokens();
  void Authorize(grpc::ClientContext* ctx) const;

  const std::string dir_;
  const std::vector<std::string> args_;
  const std::string listen_;
  std::string host_;
  std::string db_path_;
  int port_ = 0;
  std::string admin_token_;
  std::string agent_token_file_;
  std::unique_ptr<Process> process_;
  std::unique_ptr<v1::FleetService::Stub> stub_;
};

// An agent on its own state directory, restartable on it.
class FaultAgent {
 public:
  // `prefix` runs it under another program (e.g. {"/usr/sbin/ip", "netns", "exec", NS}).
  FaultAgent(std::string dir, std::string name, std::vector<std::string> args,
             std::vector<std::string> prefix = {});
  void Start(const std::string& controller);
  void Kill9();
  bool Running() { return process_ != nullptr && process_->Running(); }
  Process& process() { return *process_; }
  const std::string& state_dir() const { return state_dir_; }
  std::string agent_id() const;  // from <state-dir>/agent-id ("" before the first start)
  std::string Log() const;
  int SpooledLeases() const;  // files in <state-dir>/spool

 private:
  const std::string dir_;
  const std::string name_;
  const std::vector<std::string> args_;
  const std::vector<std::string> prefix_;
  std::string state_dir_;
  std::unique_ptr<Process> process_;
};

// A network namespace joined to this one by a veth pair: host side `host_ip`, namespace
// side `ns_ip` (a /30 of 10.213.0.0/16 chosen from the pid). Removed on destruction.
class NetNs {
 public:
  NetNs();
  ~NetNs();
  bool ok() const { return ok_; }
  const std::string& name() const { return name_; }
  const std::string& host_ip() const { return host_ip_; }
  const std::string& ns_ip() const { return ns_ip_; }
  std::vector<std::string> ExecPrefix() const;  // runs a program inside the namespace
  bool SetLink(bool up);                        // the host side of the pair
  // Inside the namespace: drops every packet to `address` (a one-way blackhole), or stops.
  bool Blackhole(const std::string& address, bool on);

 private:
  bool ok_ = false;
  std::string name_, host_if_, ns_if_, host_ip_, ns_ip_;
};

// A tmpfs of `size` (e.g. "4m") mounted on a new directory under `parent`; unmounted on
// destruction.
class Tmpfs {
 public:
  Tmpfs(const std::string& parent, const std::string& size);
  ~Tmpfs();
  bool ok() const { return ok_; }
  const std::string& path() const { return path_; }

 private:
  bool ok_ = false;
  std::string path_;
};

// Polls the database every 20 ms and remembers whether it ever saw one agent holding two
// leased jobs at once.
class TwoLeaseWatcher {
 public:
  explicit TwoLeaseWatcher(std::string db_path);
  ~TwoLeaseWatcher();
  bool seen() const { return seen_.load(); }
  std::string what() const;

 private:
  std::string db_path_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> seen_{false};
  std::string what_;
  std::thread thread_;
};

// Runs `argv` (argv[0] a full path), returns its exit code; output to *output.
int RunTool(const std::vector<std::string>& argv, std::string* output = nullptr);

}  // namespace tlbfleet::testing
