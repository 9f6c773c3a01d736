#pragma once
// An in-process FleetService for the CLI tests: listens on 127.0.0.1 port 0, answers from
// canned messages and records what it was asked. Thread-safe (gRPC calls it from its pool).

#include <algorithm>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "controller/report/compare.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server.h"
#include "grpcpp/server_builder.h"
#include "tlbfleet/v1/fleet.grpc.pb.h"

namespace tlbfleet::cli {

class FakeFleet final : public tlbfleet::v1::FleetService::Service {
 public:
  // One scripted answer of GetRun: a status, or (when ok) the run.
  struct RunReply {
    grpc::Status status;
    tlbfleet::v1::Run run;
  };

  FakeFleet() {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
    builder.RegisterService(this);
    server_ = builder.BuildAndStart();
  }
  ~FakeFleet() override { server_->Shutdown(); }

  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }

  // Every call returns `status` when it is not OK (GetRun too, unless scripted).
  void SetStatus(grpc::Status status) {
    std::lock_guard<std::mutex> lock(mu_);
    status_ = std::move(status);
  }
  // GetRun answers these in order; the last one repeats.
  void ScriptGetRun(std::vector<RunReply> replies) {
    std::lock_guard<std::mutex> lock(mu_);
    get_run_.assign(replies.begin(), replies.end());
  }
  void SetSubmitResponse(tlbfleet::v1::SubmitRunResponse r) { Set(&submit_response_, r); }
  void SetRuns(tlbfleet::v1::ListRunsResponse r) { Set(&runs_, r); }
  void SetCancelled(tlbfleet::v1::Run r) { Set(&cancelled_, r); }
  void SetHosts(tlbfleet::v1::ListHostsResponse r) { Set(&hosts_, r); }
  void SetResults(tlbfleet::v1::GetResultsResponse r) { Set(&results_, r); }
  void SetCompare(tlbfleet::v1::CompareResponse r) {
    Set(&compare_, r);
    std::lock_guard<std::mutex> lock(mu_);
    compare_set_ = true;
  }

  tlbfleet::v1::SubmitRunRequest last_submit() { return Get(last_submit_); }
  tlbfleet::v1::CompareRequest last_compare() { return Get(last_compare_); }
  uint32_t last_limit() { return Get(last_limit_); }
  int get_run_calls() { return Get(get_run_calls_); }

  grpc::Status SubmitRun(grpc::ServerContext*, const tlbfleet::v1::SubmitRunRequest* request,
                         tlbfleet::v1::SubmitRunResponse* response) override {
    std::lock_guard<std::mutex> lock(mu_);
    last_submit_ = *request;
    *response = submit_response_;
    return status_;
  }
  grpc::Status GetRun(grpc::ServerContext*, const tlbfleet::v1::GetRunRequest*,
                      tlbfleet::v1::Run* response) override {
    std::lock_guard<std::mutex> lock(mu_);
    ++get_run_calls_;
    if (get_run_.empty())
      return status_.ok() ? grpc::Status(grpc::StatusCode::NOT_FOUND, "") : status_;
    RunReply reply = get_run_.front();
    if (get_run_.size() > 1) get_run_.pop_front();
    *response = reply.run;
    return reply.status;
  }
  grpc::Status ListRuns(grpc::ServerContext*, const tlbfleet::v1::ListRunsRequest* request,
                        tlbfleet::v1::ListRunsResponse* response) override {
    std::lock_guard<std::mutex> lock(mu_);
    last_limit_ = request->limit();
    *response = runs_;
    return status_;
  }
  grpc::Status CancelRun(grpc::ServerContext*, const tlbfleet::v1::CancelRunRequest*,
                         tlbfleet::v1::Run* response) override {
    std::lock_guard<std::mutex> lock(mu_);
    *response = cancelled_;
    return status_;
  }
  grpc::Status ListHosts(grpc::ServerContext*, const tlbfleet::v1::ListHostsRequest*,
                         tlbfleet::v1::ListHostsResponse* response) override {
    std::lock_guard<std::mutex> lock(mu_);
    *response = hosts_;
    return status_;
  }
  grpc::Status GetResults(grpc::ServerContext*, const tlbfleet::v1::GetResultsRequest*,
                          tlbfleet::v1::GetResultsResponse* response) override {
    std::lock_guard<std::mutex> lock(mu_);
    *response = results_;
    return status_;
  }
  grpc::Status Compare(grpc::ServerContext*, const tlbfleet::v1::CompareRequest* request,
                       tlbfleet::v1::CompareResponse* response) override {
    std::lock_guard<std::mutex> lock(mu_);
    last_compare_ = *request;
    if (!status_.ok() || compare_set_) {
      *response = compare_;
      return status_;
    }
    // No scripted answer: the controller's own pipeline over the fake's samples (arms in the
    // order they first appear), so that the CLI renders what a controller would send.
    report::RunReportOptions extras;
    if (!request->flush_param().empty()) extras.flush_param = request->flush_param();
    extras.ceiling_metric = request->ceiling_metric();
    report::CompareOptions options;
    for (const tlbfleet::v1::Sample& s : results_.samples()) {
      if (std::find(options.arm_order.begin(), options.arm_order.end(), s.arm()) ==
          options.arm_order.end()) {
        options.arm_order.push_back(s.arm());
      }
    }
    const std::vector<tlbfleet::v1::Sample> samples(results_.samples().begin(),
                                                    results_.samples().end());
    absl::StatusOr<tlbfleet::v1::CompareResponse> built =
        report::CompareRunSamples(samples, options, "fake", extras);
    if (!built.ok()) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                          std::string(built.status().message()));
    }
    *response = *std::move(built);
    return grpc::Status::OK;
  }

 private:
  template <typename T>
  void Set(T* field, const T& value) {
    std::lock_guard<std::mutex> lock(mu_);
    *field = value;
  }
  template <typename T>
  T Get(const T& field) {
    std::lock_guard<std::mutex> lock(mu_);
    return field;
  }

  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;

  std::mutex mu_;
  grpc::Status status_ ABSL_GUARDED_BY(mu_);
  std::deque<RunReply> get_run_ ABSL_GUARDED_BY(mu_);
  int get_run_calls_ ABSL_GUARDED_BY(mu_) = 0;
  tlbfleet::v1::SubmitRunResponse submit_response_ ABSL_GUARDED_BY(mu_);
  tlbfleet::v1::SubmitRunRequest last_submit_ ABSL_GUARDED_BY(mu_);
  tlbfleet::v1::ListRunsResponse runs_ ABSL_GUARDED_BY(mu_);
  uint32_t last_limit_ ABSL_GUARDED_BY(mu_) = 0;
  tlbfleet::v1::Run cancelled_ ABSL_GUARDED_BY(mu_);
  tlbfleet::v1::ListHostsResponse hosts_ ABSL_GUARDED_BY(mu_);
  tlbfleet::v1::GetResultsResponse results_ ABSL_GUARDED_BY(mu_);
  tlbfleet::v1::CompareResponse compare_ ABSL_GUARDED_BY(mu_);
  bool compare_set_ ABSL_GUARDED_BY(mu_) = false;
  tlbfleet::v1::CompareRequest last_compare_ ABSL_GUARDED_BY(mu_);
};

}  // namespace tlbfleet::cli
