#pragma once
// A simulated lab for tests of the nightly unit (header-only, tests only): one host whose
// agent is played in process against a real controller core and a real SQLite store. It
// takes the jobs the controller sends, answers each with samples whose value depends on the
// boot entry the host is on, and "reboots" into the entry a RebootRequest names (a new
// stream with a new boot_id). Entries are named e0, e1, ...; `value_of` decides what each
// measures. No thread: Drive() handles what the controller sent, until it is quiet.

#include <cmath>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "controller/core/agent_hub.h"
#include "controller/stats/bootstrap.h"

namespace tlbfleet::nightly {

class SimLab {
 public:
  // Queues what the controller sends; never calls back into it (it may hold its lock).
  class Channel : public core::AgentChannel {
   public:
    void Send(const v1::ControllerMessage& message) override {
      absl::MutexLock lock(&mu_);
      queue_.push_back(message);
    }
    std::string Peer() const override { return "sim"; }
    // The controller ends this stream (a lease check refused it, a newer stream replaced it):
    // the sim keeps whatever was queued and reconnects on its next Connect.
    void Close(const absl::Status& status) override {
      absl::MutexLock lock(&mu_);
      closed_ = status;
    }
    std::deque<v1::ControllerMessage> Take() {
      absl::MutexLock lock(&mu_);
      std::deque<v1::ControllerMessage> out;
      out.swap(queue_);
      return out;
    }

   private:
    absl::Mutex mu_;
    std::deque<v1::ControllerMessage> queue_;
    absl::Status closed_;
  };

  SimLab(std::vector<std::string> entries, std::function<double(const std::string&)> value_of)
      : entries_(std::move(entries)), value_of_(std::move(value_of)), rng_(42) {}

  // The kernel release each entry reports (default "6.1.0-<index>-amd64").
  std::map<std::string, std::string> releases;

  // Connects (or reconnects, after a controller restart) on the current boot.
  void Connect(core::AgentHub& controller) {
    controller_ = &controller;
    channel_ = std::make_unique<Channel>();
    absl::Status s = controller.Register(channel_.get(), Hello());
    if (!s.ok()) errors.push_back(s.ToString());
    SendIdle();
  }

  // Handles the controller's messages until there are none.
  void Drive() {
    for (;;) {
      std::deque<v1::ControllerMessage> messages = channel_->Take();
      if (messages.empty()) return;
      for (const v1::ControllerMessage& m : messages) {
        if (m.has_assignment()) RunJob(m.assignment());
        if (m.has_reboot()) Reboot(m.reboot());
      }
    }
  }

  const std::string& entry() const { return entry_; }
  int boots() const { return boots_; }
  std::vector<std::string> errors;

 private:
  v1::Hello Hello() const {
    v1::Hello hello;
    hello.set_protocol_version(v1::PROTOCOL_VERSION_1);
    hello.set_agent_id("sim-agent");
    v1::HostInfo* host = hello.mutable_host();
    host->set_hostname("sim");
    host->set_boot_id(absl::StrCat("boot-", boots_));
    host->set_kernel_release(ReleaseOf(entry_));
    host->mutable_cpu()->set_microarch("Sim");
    host->mutable_ceiling()->set_writable(true);
    host->set_can_reboot(true);
    host->set_boot_entry(entry_);
    for (const std::string& e : entries_) {
      v1::BootEntryInfo* info = host->add_boot_entries();
      info->set_name(e);
      info->set_release(ReleaseOf(e));
    }
    return hello;
  }

  std::string ReleaseOf(const std::string& entry) const {
    auto it = releases.find(entry);
    if (it != releases.end()) return it->second;
    for (size_t i = 0; i < entries_.size(); ++i) {
      if (entries_[i] == entry) return absl::StrCat("6.1.0-", i, "-amd64");
    }
    return "6.1.0-x-amd64";
  }

  void SendIdle() {
    v1::AgentMessage idle;
    idle.mutable_heartbeat()->set_state(v1::AGENT_STATE_IDLE);
    controller_->OnMessage(channel_.get(), idle);
  }

  void RunJob(const v1::JobAssignment& a) {
    v1::AgentMessage batch;
    v1::SampleBatch* b = batch.mutable_samples();
    b->set_lease_id(a.lease_id());
    b->set_job_id(a.job_id());
    v1::Sample* s = b->add_samples();
    s->set_seq(0);
    s->set_metric("usecs_per_op");
    s->set_unit("us/op");
    s->set_better(v1::BETTER_LOWER);
    // 0.5 % noise around the entry's value.
    s->set_value(value_of_(entry_) * (1 + 0.005 * rng_.Normal()));
    s->set_boot_id(absl::StrCat("boot-", boots_));
    s->set_boot_entry(entry_);
    s->set_kernel_release(ReleaseOf(entry_));
    s->set_microarch("Sim");
    s->set_host("sim");
    controller_->OnMessage(channel_.get(), batch);
    v1::AgentMessage done;
    v1::JobComplete* c = done.mutable_complete();
    c->set_lease_id(a.lease_id());
    c->set_job_id(a.job_id());
    c->set_status(a.boot_entry().empty() || a.boot_entry() == entry_ ? v1::JOB_STATUS_SUCCEEDED
                                                                     : v1::JOB_STATUS_FAILED);
    if (c->status() == v1::JOB_STATUS_FAILED) c->set_error("wrong boot entry");
    c->set_sample_count(1);
    controller_->OnMessage(channel_.get(), done);
  }

  void Reboot(const v1::RebootRequest& r) {
    controller_->Unregister(channel_.get());
    if (!r.boot_entry().empty()) entry_ = r.boot_entry();
    ++boots_;
    Connect(*controller_);
  }

  const std::vector<std::string> entries_;
  const std::function<double(const std::string&)> value_of_;
  stats::Rng rng_;
  core::AgentHub* controller_ = nullptr;
  std::unique_ptr<Channel> channel_;
  std::string entry_;
  int boots_ = 0;
};

}  // namespace tlbfleet::nightly
