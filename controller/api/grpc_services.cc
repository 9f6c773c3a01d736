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
  // A stream refused by authentication (`allowed` not OK) is finished at once, unread.
  AgentStream(AgentHub& hub, std::string peer, std::string principal, const absl::Status& allowed,
              const GrpcCallHook& on_call)
      : hub_(hub), peer_(std::move(peer)), principal_(std::move(principal)), on_call_(on_call) {
    if (!allowed.ok()) {
      Close(ToGrpc(allowed));
      return;
    }
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

  void Close(const absl::Status& status) override { Close(ToGrpc(status)); }

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
      absl::Status s = hub_.Register(this, incoming_.hello(), principal_);
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
      // Moved: the next read parses into a fresh message.
      hub_.OnMessage(this, std::move(incoming_));
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
    hub_.Unregister(this);
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
    if (on_call_) {
      on_call_(
          "AgentService/Connect",
          absl::StatusCodeToString(static_cast<absl::StatusCode>(finish_status_->error_code())));
    }
    Finish(*finish_status_);
  }

  AgentHub& hub_;
  const std::string peer_;
  const std::string principal_;  // the credential's principal; "" in development mode
  const GrpcCallHook& on_call_;  // the service's; outlives every stream
  v1::AgentMessage incoming_;    // only touched by the read chain
  bool registered_ = false;      // only touched by the read chain

  absl::Mutex mu_;
  std::deque<v1::ControllerMessage> outgoing_ ABSL_GUARDED_BY(mu_);
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool closing_ ABSL_GUARDED_BY(mu_) = false;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
  std::optional<grpc::Status> finish_status_ ABSL_GUARDED_BY(mu_);
};

}  // namespace

Caller GrpcCaller(grpc::CallbackServerContext* context, Authenticator& auth) {
  const auto& metadata = context->client_metadata();
  auto it = metadata.find("authorization");
  std::string value = it == metadata.end() ? "" : std::string(it->second.data(), it->second.size());
  return auth.FromToken(value, "grpc " + context->peer());
}

grpc::ServerBidiReactor<v1::AgentMessage, v1::ControllerMessage>* AgentServiceImpl::Connect(
    grpc::CallbackServerContext* context) {
  Caller caller = GrpcCaller(context, auth_);
  absl::Status allowed = caller.development_mode
                             ? absl::OkStatus()
                             : Require(caller, v1::ROLE_AGENT, "the agent stream");
  if (allowed.ok() && require_client_certificate_ &&
      (context->auth_context() == nullptr || !context->auth_context()->IsPeerAuthenticated())) {
    allowed = absl::UnauthenticatedError(
        "the agent stream needs a client certificate signed by the controller's "
        "--tls-client-ca");
  }
  if (!allowed.ok()) {
    spdlog::warn("refusing an agent stream from {}: {}", context->peer(), allowed.ToString());
  }
  return new AgentStream(hub_, context->peer(), caller.principal(), allowed, on_call_);
}

#define TLB_FLEET_METHOD(Name, Request, Response)                                                 \
  grpc::ServerUnaryReactor* FleetServiceImpl::Name(                                               \
      grpc::CallbackServerContext* context, const v1::Request* request, v1::Response* response) { \
    return Reply(context, api_.Name(GrpcCaller(context, auth_), *request), response, on_call_,    \
                 "FleetService/" #Name);                                                          \
  }

TLB_FLEET_METHOD(SubmitRun, SubmitRunRequest, SubmitRunResponse)
TLB_FLEET_METHOD(GetRun, GetRunRequest, Run)
TLB_FLEET_METHOD(ListRuns, ListRunsRequest, ListRunsResponse)
TLB_FLEET_METHOD(CancelRun, CancelRunRequest, Run)
TLB_FLEET_METHOD(ListHosts, ListHostsRequest, ListHostsResponse)
TLB_FLEET_METHOD(GetResults, GetResultsRequest, GetResultsResponse)
TLB_FLEET_METHOD(Compare, CompareRequest, CompareResponse)
TLB_FLEET_METHOD(ListWorkloads, ListWorkloadsRequest, ListWorkloadsResponse)
TLB_FLEET_METHOD(GetBuildLog, GetBuildLogRequest, GetBuildLogResponse)
TLB_FLEET_METHOD(ImportResults, ImportResultsRequest, ImportResultsResponse)

#undef TLB_FLEET_METHOD

}  // namespace tlbfleet::api
