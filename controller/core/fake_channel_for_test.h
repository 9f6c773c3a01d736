#pragma once
// An AgentChannel that keeps what the controller sent, for tests. Send, Count and
// LastAssignment may race with each other (a started controller's ticker); read `sent`
// directly only while the controller is not started.

#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "controller/core/agent_channel.h"

namespace tlbfleet::core {

class FakeChannel : public AgentChannel {
 public:
  explicit FakeChannel(std::string peer = "fake") : peer_(std::move(peer)) {}
  void Send(const v1::ControllerMessage& message) override {
    absl::MutexLock lock(&mu_);
    sent.push_back(message);
  }
  std::string Peer() const override { return peer_; }
  void Close(const absl::Status& status) override {
    absl::MutexLock lock(&mu_);
    if (closed.ok()) closed = status;
  }
  absl::Status closed_status() const {
    absl::MutexLock lock(&mu_);
    return closed;
  }
  int Count(v1::ControllerMessage::BodyCase body) const {
    absl::MutexLock lock(&mu_);
    int n = 0;
    for (const auto& m : sent) n += m.body_case() == body ? 1 : 0;
    return n;
  }
  const v1::JobAssignment* LastAssignment() const {
    absl::MutexLock lock(&mu_);
    for (auto it = sent.rbegin(); it != sent.rend(); ++it) {
      if (it->has_assignment()) return &it->assignment();
    }
    return nullptr;
  }
  std::vector<v1::ControllerMessage> sent;
  absl::Status closed;  // what Close() said (OK: not closed)

 private:
  std::string peer_;
  mutable absl::Mutex mu_;
};

}  // namespace tlbfleet::core
