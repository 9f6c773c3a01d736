#include "agent/runner/connection.h"

#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/grpc_keepalive.h"
#include "spdlog/spdlog.h"

namespace tlbfleet::agent {

Connection::Connection(ConnectionOptions options, Outbox& outbox, ConnectionDelegate& delegate)
    : options_(std::move(options)),
      outbox_(outbox),
      delegate_(delegate),
      backoff_(options_.initial_backoff_seconds, options_.max_backoff_seconds) {
  outbox_.set_on_queued([this] {
    absl::MutexLock lock(&mu_);
    cv_.SignalAll();
  });
}

// By then nothing may queue into the outbox any more (the contract of set_on_queued).
Connection::~Connection() { outbox_.set_on_queued(nullptr); }

void Connection::Run() {
  int attempt = 0;
  bool first_attempt = true;
  for (;;) {
    {
      absl::MutexLock lock(&mu_);
      if (stop_) break;
      if (!first_attempt) ++reconnects_;
      first_attempt = false;
    }
    delegate_.OnConnectionChanged();
    ++attempt;
    spdlog::info("connecting to {} (attempt {}) agent={}", options_.controller, attempt,
                 options_.agent_id);
    bool welcomed = false;
    absl::Status status = RunStream(&welcomed);
    if (welcomed) {
      backoff_.Reset();
      attempt = 0;
    }
    absl::MutexLock lock(&mu_);
    if (stop_) break;
    double delay = backoff_.NextDelaySeconds();
    spdlog::warn("{} {}: {}; retrying in {:.2f} s",
                 welcomed ? "lost the stream to" : "cannot connect to", options_.controller,
                 std::string(status.message()), delay);
    absl::Time until = absl::Now() + absl::Seconds(delay);
    while (!stop_ && absl::Now() < until) cv_.WaitWithDeadline(&mu_, until);
  }
}

void Connection::Stop() {
  absl::MutexLock lock(&mu_);
  stop_ = true;
  if (ctx_ != nullptr) ctx_->TryCancel();
  cv_.SignalAll();
}

void Connection::Reconnect() {
  absl::MutexLock lock(&mu_);
  if (ctx_ != nullptr) ctx_->TryCancel();
}

bool Connection::connected() const {
  absl::MutexLock lock(&mu_);
  return connected_;
}

uint64_t Connection::reconnects() const {
  absl::MutexLock lock(&mu_);
  return reconnects_;
}

absl::Status Connection::RunStream(bool* welcomed) {
  // Keepalive pings notice a half-open stream within kHalfOpenDetectionMs (grpc_keepalive.h).
  grpc::ChannelArguments args;
  SetAgentKeepalive(args);
  absl::StatusOr<std::shared_ptr<grpc::Channel>> made =
      MakeChannel(options_.controller, options_.tls, args);
  if (!made.ok()) return made.status();
  std::shared_ptr<grpc::Channel> channel = *std::move(made);
  std::unique_ptr<v1::AgentService::Stub> stub = v1::AgentService::NewStub(channel);
  grpc::ClientContext ctx;
  if (!options_.token.empty()) ctx.AddMetadata("authorization", "Bearer " + options_.token);
  {
    absl::MutexLock lock(&mu_);
    if (stop_) return absl::CancelledError("stopping");
    ctx_ = &ctx;
    conn_stop_ = false;
  }
  // Its running lease is read before the outbox is listed: a job that ends in between is
  // then in the outbox (it is kept before it counts as done), so each lease is in one list
  // or the other.
  absl::StatusOr<v1::Hello> hello = delegate_.MakeHello();
  if (!hello.ok()) {
    absl::MutexLock lock(&mu_);
    ctx_ = nullptr;
    return hello.status();
  }
  std::unique_ptr<Stream> stream = stub->Connect(&ctx);
  {
    absl::MutexLock lock(&write_mu_);
    stream_ = stream.get();
  }

  v1::AgentMessage hello_message;
  *hello_message.mutable_hello() = *std::move(hello);
  hello_message.mutable_hello()->set_protocol_version(v1::PROTOCOL_VERSION_1);
  hello_message.mutable_hello()->set_agent_id(options_.agent_id);
  for (v1::SpooledLease& lease : outbox_.Summaries()) {
    *hello_message.mutable_hello()->add_spooled() = std::move(lease);
  }

  std::thread sender;
  if (Send(hello_message)) {
    sender = std::thread([this, &ctx] { SenderLoop(&ctx); });
  }
  v1::ControllerMessage message;
  while (stream->Read(&message)) Handle(message, welcomed);

  {
    absl::MutexLock lock(&mu_);
    conn_stop_ = true;
    connected_ = false;
    ctx_ = nullptr;
    cv_.SignalAll();
  }
  delegate_.OnConnectionChanged();
  if (sender.joinable()) sender.join();
  {
    absl::MutexLock lock(&write_mu_);
    stream_ = nullptr;
  }
  grpc::Status status = stream->Finish();
  if (status.ok()) return absl::UnavailableError("the controller closed the stream");
  return absl::UnavailableError(
      absl::StrCat(status.error_message(), " (grpc code ", status.error_code(), ")"));
}

bool Connection::Send(const v1::AgentMessage& message) {
  absl::MutexLock lock(&write_mu_);
  return stream_ != nullptr && stream_->Write(message);
}

// Per stream: waits for Welcome, then sends heartbeats and queued results. Ends when the
// stream is torn down; a failed write cancels the stream so the reader ends too.
void Connection::SenderLoop(grpc::ClientContext* ctx) {
  const absl::Time welcome_deadline = absl::Now() + absl::Seconds(options_.welcome_timeout_seconds);
  absl::Time next_heartbeat = absl::InfinitePast();
  const auto write = [this](const v1::AgentMessage& message) { return Send(message); };
  absl::MutexLock lock(&mu_);
  while (!conn_stop_) {
    if (!connected_) {
      if (absl::Now() >= welcome_deadline) {
        spdlog::warn("no Welcome from {} within {} s; dropping the stream", options_.controller,
                     options_.welcome_timeout_seconds);
        ctx->TryCancel();
        return;
      }
      cv_.WaitWithDeadline(&mu_, welcome_deadline);
      continue;
    }
    bool ok = true;
    // The first heartbeat makes the controller dispatch to this agent, so the outbox is
    // replayed before it; later heartbeats interleave with resends.
    const bool queued = outbox_.HasQueued();
    const bool replaying = next_heartbeat == absl::InfinitePast() && queued;
    if (absl::Now() >= next_heartbeat && !replaying) {
      next_heartbeat = absl::Now() + absl::Seconds(heartbeat_seconds_);
      mu_.Unlock();
      std::optional<v1::Heartbeat> heartbeat = delegate_.MakeHeartbeat();
      if (!heartbeat.has_value()) {  // the last Hello is stale: say so in a fresh one
        ctx->TryCancel();
        mu_.Lock();
        return;
      }
      v1::AgentMessage message;
      *message.mutable_heartbeat() = *std::move(heartbeat);
      ok = Send(message);
      mu_.Lock();
    } else if (queued) {
      const bool share_origin = accepts_shared_origin_;
      mu_.Unlock();
      if (std::optional<v1::SpooledJob> record = outbox_.PopNext(); record.has_value()) {
        ok = WriteRecord(*record, share_origin, write);
      }
      mu_.Lock();
    } else {
      cv_.WaitWithDeadline(&mu_, next_heartbeat);
    }
    if (!ok) {
      spdlog::warn("write to {} failed; dropping the stream", options_.controller);
      ctx->TryCancel();
      return;
    }
  }
}

void Connection::Handle(const v1::ControllerMessage& message, bool* welcomed) {
  switch (message.body_case()) {
    case v1::ControllerMessage::kWelcome:
      *welcomed = true;
      OnWelcome(message.welcome());
      break;
    case v1::ControllerMessage::kReject:
      spdlog::warn("controller {} rejected this agent: {}", options_.controller,
                   message.reject().reason());
      break;
    case v1::ControllerMessage::kAssignment:
      delegate_.OnAssignment(message.assignment());
      break;
    case v1::ControllerMessage::kSampleAck:
      outbox_.OnSampleAck(message.sample_ack());
      break;
    case v1::ControllerMessage::kCompletionAck:
      outbox_.OnCompletionAck(message.completion_ack());
      break;
    case v1::ControllerMessage::kCancel:
      delegate_.OnCancel(message.cancel());
      break;
    case v1::ControllerMessage::kReboot:
      delegate_.OnReboot(message.reboot());
      break;
    case v1::ControllerMessage::kBuild:
      delegate_.OnBuild(message.build());
      break;
    case v1::ControllerMessage::kCancelBuild:
      delegate_.OnCancelBuild(message.cancel_build());
      break;
    case v1::ControllerMessage::kGitQuery:
      delegate_.OnGitQuery(message.git_query());
      break;
    case v1::ControllerMessage::BODY_NOT_SET:
      spdlog::warn("ignoring an empty message from {}", options_.controller);
      break;
  }
}

void Connection::OnWelcome(const v1::Welcome& welcome) {
  // Queued before the sender sees connected_: it replays them before its first heartbeat.
  const size_t resend = outbox_.QueueAllForResend();
  {
    absl::MutexLock lock(&mu_);
    connected_ = true;
    heartbeat_seconds_ = welcome.heartbeat_seconds() > 0 ? welcome.heartbeat_seconds()
                                                         : options_.default_heartbeat_seconds;
    accepts_shared_origin_ = welcome.accepts_shared_origin();
    spdlog::info(
        "welcomed by controller {} version {} (heartbeat {} s, lease {} s); "
        "resending {} finished lease(s)",
        options_.controller, welcome.controller_version(), heartbeat_seconds_,
        welcome.lease_seconds(), resend);
    cv_.SignalAll();
  }
  delegate_.OnConnectionChanged();
}

}  // namespace tlbfleet::agent
