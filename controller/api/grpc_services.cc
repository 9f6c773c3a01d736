#include "controller/api/grpc_services.h"

#include <deque>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "spdlog/spdlog.h"

namespace tlbfleet::api {

grpc::Status ToGrpc(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()), std::string(status.message()));
}

namespace {

// One agent's stream. Reads are handled one at a time (each OnReadDone starts the next
// read); writes go through a queue because the callback API allows one write in flight.
// Deletes itself in OnDone, after telling the controller the agent is gone.
class AgentStream final : public grpc::ServerBidiReactor<v1::AgentMessage, v1::ControllerMessage>,
                          public AgentChannel {
 public:
  AgentStream(Controller& controller, std::string peer)
      : controller_(controller), peer_(std::move(peer)) {
    StartRead(&incoming_);
  }

  void Send(const v1::ControllerMessage& message) override {
    absl::MutexLock lock(&mu_);
    if (closing_) return;
    outgoing_.push_back(message);
    if (!writing_) {
      writing_ = true;
      StartWrite(&outgoing_.front());
    }
  }

  std::string Peer() const override { return peer_; }

  void OnReadDone(bool ok) override {
    if (!ok) {  // the agent closed its side or the connection broke
      Close(grpc::Status::OK);
      return;
    }
    if (!registered_) {
      if (!incoming_.has_hello()) {
        Close(grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, "first message must be Hello"));
        return;
      }
      absl::Status s = controller_.Register(this, incoming_.hello());
      if (!s.ok()) {
        spdlog::warn("rejecting agent {} from {}: {}", incoming_.hello().agent_id(), peer_,
                     s.ToString());
        v1::ControllerMessage reject;
        reject.mutable_reject()->set_reason(std::string(s.message()));
        Send(reject);
        Close(ToGrpc(s));
        return;
      }
      registered_ = true;
    } else {
      controller_.OnMessage(this, incoming_);
    }
    StartRead(&incoming_);
  }

  void OnWriteDone(bool ok) override {
    absl::MutexLock lock(&mu_);
    outgoing_.pop_front();
    if (!ok) {
      // The stream is broken; reads will fail too and close it.
      outgoing_.clear();
      writing_ = false;
      closing_ = true;
      MaybeFinishLocked();
      return;
    }
    if (!outgoing_.empty()) {
      StartWrite(&outgoing_.front());
      return;
    }
    writing_ = false;
    MaybeFinishLocked();
  }

  void OnDone() override {
    controller_.Unregister(this);
    delete this;
  }

 private:
  // Finishes once queued writes are flushed: Finish must not race an in-flight write.
  void Close(grpc::Status status) {
    absl::MutexLock lock(&mu_);
    if (finish_status_.has_value()) return;
    closing_ = true;
    finish_status_ = std::move(status);
    MaybeFinishLocked();
  }

  void MaybeFinishLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (writing_ || finished_ || !finish_status_.has_value()) return;
    finished_ = true;
    Finish(*finish_status_);
  }

  Controller& controller_;
  const std::string peer_;
  v1::AgentMessage incoming_;  // only touched by the read chain
  bool registered_ = false;    // only touched by the read chain

  absl::Mutex mu_;
  std::deque<v1::ControllerMessage> outgoing_ ABSL_GUARDED_BY(mu_);
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool closing_ ABSL_GUARDED_BY(mu_) = false;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
  std::optional<grpc::Status> finish_status_ ABSL_GUARDED_BY(mu_);
};

template <typename Fn>
grpc::ServerUnaryReactor* Unary(grpc::CallbackServerContext* context, Fn&& fn) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(ToGrpc(fn()));
  return reactor;
}

// Runs `call` (returning StatusOr<T>) and moves its value into `*response`.
template <typename T, typename Call>
absl::Status Into(T* response, Call&& call) {
  absl::StatusOr<T> result = call();
  if (!result.ok()) return result.status();
  *response = std::move(*result);
  return absl::OkStatus();
}

}  // namespace

grpc::ServerBidiReactor<v1::AgentMessage, v1::ControllerMessage>* AgentServiceImpl::Connect(
    grpc::CallbackServerContext* context) {
  return new AgentStream(controller_, context->peer());
}

grpc::ServerUnaryReactor* FleetServiceImpl::SubmitRun(grpc::CallbackServerContext* context,
                                                      const v1::SubmitRunRequest* request,
                                                      v1::SubmitRunResponse* response) {
  return Unary(context, [&] {
    return Into(response,
                [&] { return controller_.Submit(request->spec_yaml(), request->source_name()); });
  });
}

grpc::ServerUnaryReactor* FleetServiceImpl::GetRun(grpc::CallbackServerContext* context,
                                                   const v1::GetRunRequest* request,
                                                   v1::Run* response) {
  return Unary(context, [&] {
    return Into(response, [&] { return controller_.GetRun(request->run_id()); });
  });
}

grpc::ServerUnaryReactor* FleetServiceImpl::ListRuns(grpc::CallbackServerContext* context,
                                                     const v1::ListRunsRequest* request,
                                                     v1::ListRunsResponse* response) {
  return Unary(context, [&] {
    return Into(response, [&] { return controller_.ListRuns(request->limit()); });
  });
}

grpc::ServerUnaryReactor* FleetServiceImpl::CancelRun(grpc::CallbackServerContext* context,
                                                      const v1::CancelRunRequest* request,
                                                      v1::Run* response) {
  return Unary(context, [&] {
    return Into(response, [&] { return controller_.CancelRun(request->run_id()); });
  });
}

grpc::ServerUnaryReactor* FleetServiceImpl::ListHosts(grpc::CallbackServerContext* context,
                                                      const v1::ListHostsRequest* request,
                                                      v1::ListHostsResponse* response) {
  return Unary(context, [&] { return Into(response, [&] { return controller_.ListHosts(); }); });
}

grpc::ServerUnaryReactor* FleetServiceImpl::GetResults(grpc::CallbackServerContext* context,
                                                       const v1::GetResultsRequest* request,
                                                       v1::GetResultsResponse* response) {
  return Unary(context, [&] {
    return Into(response, [&] { return controller_.GetResults(request->run_id()); });
  });
}

grpc::ServerUnaryReactor* FleetServiceImpl::Compare(grpc::CallbackServerContext* context,
                                                    const v1::CompareRequest* request,
                                                    v1::CompareResponse* response) {
  return Unary(context, [&] {
    return Into(response,
                [&] { return controller_.Compare(request->run_id(), request->baseline()); });
  });
}

}  // namespace tlbfleet::api
