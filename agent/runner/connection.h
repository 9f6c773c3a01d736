#pragma once
// The agent's connection to the controller: one AgentService.Connect stream at a time,
// dialled again with backoff whenever it breaks, until Stop().
//
// Each attempt makes a new channel (so it really dials instead of waiting out gRPC's own
// reconnect backoff in an old one), sends a Hello (its host, capabilities and running lease
// from the delegate; the protocol version, the agent id and every result the outbox holds from
// here), and reads the controller's messages on the thread that called Run(). A sender thread
// per stream waits for the Welcome (the stream is dropped after welcome_timeout_seconds),
// replays the outbox, then sends heartbeats every Welcome.heartbeat_seconds with the outbox's
// newly queued results in between. Attempts that fail wait 0.5 s doubling up to the maximum
// (backoff.h); a Welcome resets the delay.
//
// The connection handles Welcome, Reject, acks (into the outbox) and empty messages itself;
// assignments, cancels, reboot requests, build tasks and git questions go to the delegate.
//
// Thread-safe: Run() on one thread, everything else from any. Locks: the delegate is always
// called without the connection's locks held, so it may hold its own lock while it calls
// connected(), Send(), Reconnect() or Stop(); the outbox's lock (a leaf) is taken under the
// connection's.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "agent/runner/backoff.h"
#include "agent/runner/outbox.h"
#include "common/grpc_channel.h"
#include "grpcpp/grpcpp.h"
#include "tlbfleet/v1/agent.grpc.pb.h"

namespace tlbfleet::agent {

struct ConnectionOptions {
  std::string controller;  // "host:port"
  std::string agent_id;    // Hello.agent_id, and in log lines
  // The enrollment token sent as `authorization` metadata; empty: none.
  std::string token;
  ClientTls tls;  // plain text when tls.ca is empty
  double initial_backoff_seconds = 0.5;
  double max_backoff_seconds = 30;
  // Heartbeat period when Welcome.heartbeat_seconds is 0.
  unsigned default_heartbeat_seconds = 10;
  // A controller that accepts the stream but sends no Welcome within this is dropped.
  unsigned welcome_timeout_seconds = 30;
};

// What the connection asks of the agent. Called on the connection's threads (the reader that
// runs Run(), the per-stream sender), never with the connection's locks held.
class ConnectionDelegate {
 public:
  virtual ~ConnectionDelegate() = default;

  // A new stream's Hello: host, capabilities and running_lease_id (the connection adds the
  // rest). Fresh every time: after a reboot everything may have changed. An error fails the
  // attempt, which is retried after the backoff.
  virtual absl::StatusOr<v1::Hello> MakeHello() = 0;
  // The next heartbeat; nullopt when the controller's picture of the host (the last Hello)
  // is stale, and the connection should reconnect to send a fresh one instead.
  virtual std::optional<v1::Heartbeat> MakeHeartbeat() = 0;
  // connected() may have changed, or an attempt starts.
  virtual void OnConnectionChanged() = 0;

  virtual void OnAssignment(const v1::JobAssignment& assignment) = 0;
  virtual void OnCancel(const v1::CancelJob& cancel) = 0;
  virtual void OnReboot(const v1::RebootRequest& request) = 0;
  // Kernel builds (build_runner.h); an agent that is no builder ignores them.
  virtual void OnBuild(const v1::BuildTask& task) { (void)task; }
  virtual void OnCancelBuild(const v1::CancelBuild& cancel) { (void)cancel; }
  virtual void OnGitQuery(const v1::GitQuery& query) { (void)query; }
};

class Connection {
 public:
  // `outbox` and `delegate` must outlive the connection. Sets the outbox's on_queued.
  Connection(ConnectionOptions options, Outbox& outbox, ConnectionDelegate& delegate);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Dials, serves the stream, and dials again after a backoff, until Stop(). Returns once
  // the last stream is closed and its sender has ended; at once after an earlier Stop().
  void Run();
  // Asynchronous and idempotent: closes the current stream and makes Run() return.
  void Stop();
  // Drops the current stream (if any); Run() dials again with a fresh Hello.
  void Reconnect();

  // Writes one message on the current stream (gRPC allows one writer at a time: writes are
  // serialised). False when there is no stream or the write failed; best effort, for what
  // the outbox does not keep (progress notes).
  bool Send(const v1::AgentMessage& message);

  bool connected() const;       // welcomed on the current stream
  uint64_t reconnects() const;  // attempts after the first

 private:
  using Stream = grpc::ClientReaderWriter<v1::AgentMessage, v1::ControllerMessage>;

  // One attempt: dial, Hello, read until the stream ends. *welcomed: a Welcome came.
  absl::Status RunStream(bool* welcomed);
  void Handle(const v1::ControllerMessage& message, bool* welcomed);
  void OnWelcome(const v1::Welcome& welcome);
  void SenderLoop(grpc::ClientContext* ctx);

  const ConnectionOptions options_;
  Outbox& outbox_;
  ConnectionDelegate& delegate_;
  Backoff backoff_;  // used by Run() only

  mutable absl::Mutex mu_;
  absl::CondVar cv_;  // signalled on any change below, and when the outbox queues a lease
  // --- guarded by mu_ ---
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  bool connected_ ABSL_GUARDED_BY(mu_) = false;  // Welcome received on the current stream
  bool conn_stop_ ABSL_GUARDED_BY(mu_) = false;  // the current stream is being torn down
  grpc::ClientContext* ctx_ ABSL_GUARDED_BY(mu_) = nullptr;
  unsigned heartbeat_seconds_ ABSL_GUARDED_BY(mu_) = 0;
  bool accepts_shared_origin_ ABSL_GUARDED_BY(mu_) = false;  // the controller's Welcome
  uint64_t reconnects_ ABSL_GUARDED_BY(mu_) = 0;

  // --- guarded by write_mu_: gRPC allows one writer at a time ---
  absl::Mutex write_mu_;
  Stream* stream_ ABSL_GUARDED_BY(write_mu_) = nullptr;
};

}  // namespace tlbfleet::agent
