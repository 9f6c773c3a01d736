#pragma once
// Test helper (header-only, tests only): the one fake controller of the agent's tests. A
// real gRPC AgentService on 127.0.0.1 (any free port) that records everything agents send;
// the test decides what to answer, or lets it welcome every Hello itself.

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "grpcpp/grpcpp.h"
#include "tlbfleet/v1/agent.grpc.pb.h"

namespace tlbfleet::agent {

using AgentMessagePredicate = std::function<bool(const v1::AgentMessage&)>;

// A Welcome as a controller sends it (heartbeat every second, 30 s leases).
inline v1::ControllerMessage WelcomeMessage() {
  v1::ControllerMessage m;
  m.mutable_welcome()->set_controller_version("fake");
  m.mutable_welcome()->set_heartbeat_seconds(1);
  m.mutable_welcome()->set_lease_seconds(30);
  return m;
}

inline v1::ControllerMessage CompletionAckMessage(const std::string& lease) {
  v1::ControllerMessage m;
  m.mutable_completion_ack()->set_lease_id(lease);
  return m;
}

inline bool IsHello(const v1::AgentMessage& m) { return m.has_hello(); }
inline AgentMessagePredicate IsHeartbeat(v1::AgentState state) {
  return [state](const v1::AgentMessage& m) {
    return m.has_heartbeat() && m.heartbeat().state() == state;
  };
}
inline AgentMessagePredicate IsBatchOf(const std::string& lease) {
  return [lease](const v1::AgentMessage& m) {
    return m.has_samples() && m.samples().lease_id() == lease;
  };
}
inline AgentMessagePredicate IsCompleteOf(const std::string& lease) {
  return [lease](const v1::AgentMessage& m) {
    return m.has_complete() && m.complete().lease_id() == lease;
  };
}
// A note that belongs to no lease (a failed reboot).
inline bool IsAgentNote(const v1::AgentMessage& m) {
  return m.has_progress() && m.progress().lease_id().empty();
}

// Thread-safe: gRPC's threads call Connect(), the test the rest.
class FakeController final : public v1::AgentService::Service {
 public:
  // Answers each Hello with WelcomeMessage() at once (before the Hello is recorded), as a
  // real controller would; otherwise the test welcomes agents itself.
  void set_auto_welcome(bool on) {
    std::lock_guard<std::mutex> lock(mu_);
    auto_welcome_ = on;
  }

  grpc::Status Connect(
      grpc::ServerContext* ctx,
      grpc::ServerReaderWriter<v1::ControllerMessage, v1::AgentMessage>* stream) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stream_ = stream;
      ctx_ = ctx;
      ++connections_;
    }
    v1::AgentMessage message;
    while (stream->Read(&message)) {
      std::lock_guard<std::mutex> lock(mu_);
      if (message.has_hello() && auto_welcome_) stream->Write(WelcomeMessage());
      received_.push_back(message);
      cv_.notify_all();
    }
    std::lock_guard<std::mutex> lock(mu_);
    if (stream_ == stream) {  // not yet replaced by the agent's next stream
      stream_ = nullptr;
      ctx_ = nullptr;
    }
    cv_.notify_all();
    return grpc::Status::OK;
  }

  // Writes to the current stream; false when there is none.
  bool Send(const v1::ControllerMessage& message) {
    std::lock_guard<std::mutex> lock(mu_);
    return stream_ != nullptr && stream_->Write(message);
  }

  // Breaks the current stream, as a network failure or controller crash would.
  void DropStream() {
    std::lock_guard<std::mutex> lock(mu_);
    if (ctx_ != nullptr) ctx_->TryCancel();
  }

  // The first message at index >= *cursor that matches; moves *cursor past it. nullopt when
  // none came within `timeout`.
  std::optional<v1::AgentMessage> Await(
      const AgentMessagePredicate& match, size_t* cursor,
      std::chrono::milliseconds timeout = std::chrono::seconds(20)) {
    std::unique_lock<std::mutex> lock(mu_);
    std::optional<v1::AgentMessage> found;
    cv_.wait_for(lock, timeout, [&] {
      for (; *cursor < received_.size(); ++*cursor) {
        if (match(received_[*cursor])) {
          found = received_[(*cursor)++];
          return true;
        }
      }
      return false;
    });
    return found;
  }

  size_t received() {
    std::lock_guard<std::mutex> lock(mu_);
    return received_.size();
  }
  int connections() {
    std::lock_guard<std::mutex> lock(mu_);
    return connections_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;  // a message came, or a stream ended
  grpc::ServerReaderWriter<v1::ControllerMessage, v1::AgentMessage>* stream_ = nullptr;
  grpc::ServerContext* ctx_ = nullptr;
  bool auto_welcome_ = false;
  std::vector<v1::AgentMessage> received_;
  int connections_ = 0;
};

// A FakeController served on 127.0.0.1, port 0; shut down (2 s grace) on destruction.
class FakeControllerServer {
 public:
  FakeControllerServer() {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
    builder.RegisterService(&controller_);
    server_ = builder.BuildAndStart();
  }
  ~FakeControllerServer() { Shutdown(std::chrono::seconds(2)); }
  FakeControllerServer(const FakeControllerServer&) = delete;
  FakeControllerServer& operator=(const FakeControllerServer&) = delete;

  bool started() const { return server_ != nullptr; }  // ASSERT it in SetUp
  // "127.0.0.1:<port>", the agent's --controller.
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  FakeController& controller() { return controller_; }

  // The controller goes away: open streams end after `grace`, new ones are refused.
  void Shutdown(std::chrono::milliseconds grace = std::chrono::milliseconds(0)) {
    if (server_ != nullptr) server_->Shutdown(std::chrono::system_clock::now() + grace);
  }

 private:
  FakeController controller_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
};

}  // namespace tlbfleet::agent
