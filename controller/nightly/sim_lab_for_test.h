#pragma once
// A simulated lab for tests of the nightly unit (header-only, tests only): one host whose
// agent is played in process against a real controller core and a real SQLite store. It
// takes the jobs the controller sends, answers each with samples whose value depends on the
// boot entry the host is on, and "reboots" into the entry a RebootRequest names (a new
// stream with a new boot_id). Entries are named e0, e1, ...; `value_of` decides what each
// measures. No thread: Drive() handles what the controller sent, until it is quiet.
//
// With a SimGit (a linear history of commits, each changing the measured value by its
// `delta`), the same host is also a builder of source "linux" (config "lab") and installs the
// kernels it built: a BuildTask resolves the revision, fails for a commit marked unbuildable
// (or a revert marked as not applying), else publishes a small artifact into the controller's
// artifact store and completes; a RebootRequest naming a built kernel boots it, and its jobs
// measure that commit (with the revert taken off). SimRunService answers
// RunService::QueryGit from the same history: the real QueryGit waits for an agent's answer
// on another thread, which a single-threaded sim cannot give.

#include <cmath>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "common/artifacts/artifact_for_test.h"
#include "controller/artifacts/artifact_store.h"
#include "controller/core/agent_hub.h"
#include "controller/core/run_service.h"
#include "controller/stats/bootstrap.h"

namespace tlbfleet::nightly {

// A linear git history for the sim: `base` (position 0) and commits on top of it, oldest
// first. Revisions are full hashes or the tags (`lab-base`, `lab-tip` by default).
struct SimCommit {
  std::string hash, subject, author;
  double delta = 0;         // what it adds to the measured value
  std::string unbuildable;  // non-empty: its build fails with this reason
};

class SimGit {
 public:
  // `n` commits on top of the base; commit i (1-based) has hash "ii" repeated (40 digits).
  explicit SimGit(int n = 0) {
    base = Hash(0);
    for (int i = 1; i <= n; ++i) {
      commits.push_back({Hash(i), absl::StrCat("mm: change ", i),
                         absl::StrCat("Dev ", i, " <dev", i, "@example.org>"), 0, ""});
    }
    tags["lab-base"] = base;
    if (n > 0) tags["lab-tip"] = commits.back().hash;
  }
  static std::string Hash(int i) {
    std::string h;
    for (int k = 0; k < 20; ++k) absl::StrAppend(&h, absl::StrFormat("%02d", i % 100));
    return h;
  }
  SimCommit& Commit(int i) { return commits[static_cast<size_t>(i - 1)]; }

  // The position of a revision (0 = base), or nullopt.
  std::optional<int> Position(const std::string& rev) const {
    std::string hash = rev;
    if (auto t = tags.find(rev); t != tags.end()) hash = t->second;
    if (hash == base) return 0;
    for (size_t i = 0; i < commits.size(); ++i) {
      if (commits[i].hash == hash) return static_cast<int>(i + 1);
    }
    return std::nullopt;
  }
  std::string HashAt(int position) const {
    return position == 0 ? base : commits[static_cast<size_t>(position - 1)].hash;
  }
  // The value a kernel of `hash` (with `revert` reverted, if given) measures.
  double ValueOf(const std::string& hash, const std::string& revert) const {
    double v = base_value;
    const int end = Position(hash).value_or(0);
    const int reverted = revert.empty() ? -1 : Position(revert).value_or(-1);
    for (int p = 1; p <= end; ++p) {
      if (p != reverted) v += commits[static_cast<size_t>(p - 1)].delta;
    }
    return v;
  }

  // As a builder answers GitQuery (agent.proto).
  absl::StatusOr<v1::GitAnswer> Answer(const v1::GitQuery& q) const {
    if (!available) return absl::UnavailableError("builder sim went away before it answered");
    v1::GitAnswer a;
    const auto resolve = [&](const std::string& rev) -> absl::StatusOr<int> {
      std::optional<int> p = Position(rev);
      if (!p) {
        return absl::InvalidArgumentError(
            absl::StrCat("revision ", rev, " does not resolve in source linux"));
      }
      return *p;
    };
    switch (q.kind()) {
      case v1::GitQuery::KIND_RESOLVE: {
        absl::StatusOr<int> p = resolve(q.rev());
        if (!p.ok()) return p.status();
        a.set_resolved(HashAt(*p));
        if (*p > 0) *a.add_commits() = ToProto(commits[static_cast<size_t>(*p - 1)]);
        return a;
      }
      case v1::GitQuery::KIND_BRANCH: {
        auto b = branches.find(q.rev());
        if (b == branches.end()) {
          return absl::InvalidArgumentError(
              absl::StrCat("branch \"", q.rev(), "\" does not exist in source linux"));
        }
        a.set_resolved(HashAt(b->second));
        if (b->second > 0) *a.add_commits() = ToProto(commits[static_cast<size_t>(b->second - 1)]);
        return a;
      }
      case v1::GitQuery::KIND_RANGE: {
        absl::StatusOr<int> good = resolve(q.good());
        if (!good.ok()) return good.status();
        absl::StatusOr<int> bad = resolve(q.bad());
        if (!bad.ok()) return bad.status();
        if (*good >= *bad) {
          return absl::InvalidArgumentError(
              absl::StrCat("good ", q.good(), " is not an ancestor of bad ", q.bad()));
        }
        for (int p = *good + 1; p <= *bad; ++p) {
          *a.add_commits() = ToProto(commits[static_cast<size_t>(p - 1)]);
        }
        return a;
      }
      case v1::GitQuery::KIND_REVERT_APPLIES: {
        absl::StatusOr<int> p = resolve(q.rev());
        if (!p.ok()) return p.status();
        a.set_revert_applies(revert_conflicts.count(HashAt(*p)) == 0);
        if (!a.revert_applies()) a.set_error("CONFLICT (content): Merge conflict in mm/memory.c");
        return a;
      }
      default:
        return absl::InvalidArgumentError("unknown query kind");
    }
  }

  static v1::BisectCommit ToProto(const SimCommit& c) {
    v1::BisectCommit out;
    out.set_hash(c.hash);
    out.set_subject(c.subject);
    out.set_author(c.author);
    return out;
  }

  std::string base;
  std::vector<SimCommit> commits;
  std::map<std::string, std::string> tags;
  std::set<std::string> revert_conflicts;  // commits whose revert does not apply onto the tip
  std::map<std::string, int> branches;     // branch -> the position of its head
  double base_value = 10.0;
  bool available = true;  // false: QueryGit is UNAVAILABLE (no builder)
};

// The controller's RunService with QueryGit answered by a SimGit; everything else is the real
// core's.
class SimRunService : public core::RunService {
 public:
  SimRunService(core::RunService& real, const SimGit* git) : real_(real), git_(git) {}
  using core::RunService::Compare;

  absl::StatusOr<v1::SubmitRunResponse> Submit(const std::string& spec_yaml,
                                               const std::string& source) override {
    return real_.Submit(spec_yaml, source);
  }
  absl::StatusOr<v1::Run> GetRun(const std::string& run_id) override {
    return real_.GetRun(run_id);
  }
  absl::StatusOr<v1::ListRunsResponse> ListRuns(const v1::ListRunsRequest& request) override {
    return real_.ListRuns(request);
  }
  absl::StatusOr<v1::Run> CancelRun(const std::string& run_id) override {
    return real_.CancelRun(run_id);
  }
  absl::StatusOr<v1::ListHostsResponse> ListHosts() override { return real_.ListHosts(); }
  absl::StatusOr<v1::GetResultsResponse> GetResults(const std::string& run_id) override {
    return real_.GetResults(run_id);
  }
  absl::StatusOr<v1::CompareResponse> Compare(const v1::CompareRequest& request) override {
    return real_.Compare(request);
  }
  const v1::ListWorkloadsResponse& ListWorkloads() override { return real_.ListWorkloads(); }
  absl::StatusOr<std::vector<v1::RunEvent>> RunEventsSince(const std::string& run_id,
                                                           uint64_t after_id,
                                                           uint32_t limit) override {
    return real_.RunEventsSince(run_id, after_id, limit);
  }
  absl::StatusOr<v1::GitAnswer> QueryGit(v1::GitQuery query, absl::Duration timeout) override {
    queries.push_back(query);
    if (git_ == nullptr || git_->commits.empty()) return real_.QueryGit(query, timeout);
    if (query.source() != "linux") {
      return absl::UnavailableError(absl::StrCat("no builder agent with kernel source \"",
                                                 query.source(), "\" is connected"));
    }
    return git_->Answer(query);
  }
  absl::StatusOr<v1::GetBuildLogResponse> GetBuildLog(int64_t task_id) override {
    return real_.GetBuildLog(task_id);
  }
  absl::StatusOr<core::FleetSnapshot> Snapshot() override { return real_.Snapshot(); }

  std::vector<v1::GitQuery> queries;  // every question asked, in order

 private:
  core::RunService& real_;
  const SimGit* git_;
};

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
    // The controller told the builder to stop build `task` (it was built before).
    bool BuildCancelled(int64_t task) {
      absl::MutexLock lock(&mu_);
      for (const v1::ControllerMessage& m : queue_) {
        if (m.has_cancel_build() && m.cancel_build().task_id() == task) return true;
      }
      return false;
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
  // Set both to make the host a builder of source "linux" that installs its kernels.
  const SimGit* git = nullptr;
  artifacts::ArtifactStore* artifacts = nullptr;
  // Builds this host ran to the end (not those the controller found built already).
  int builds = 0;

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
        if (m.has_build()) Build(m.build());
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
    if (git != nullptr) {
      host->set_arch("x86_64");
      host->set_can_install_kernels(true);
      v1::KernelSourceInfo* source = host->add_kernel_sources();
      source->set_name("linux");
      source->set_arch("x86_64");
      source->add_configs("lab");
    }
    return hello;
  }

  struct Built {
    std::string commit, revert;
  };

  void Build(const v1::BuildTask& task) {
    const auto complete = [&](v1::BuildStatus status, const std::string& reason) {
      v1::AgentMessage m;
      m.mutable_build_complete()->set_task_id(task.task_id());
      m.mutable_build_complete()->set_status(status);
      m.mutable_build_complete()->set_reason(reason);
      controller_->OnMessage(channel_.get(), m);
    };
    std::optional<int> position = git == nullptr ? std::nullopt : git->Position(task.rev());
    if (!position) {
      complete(v1::BUILD_STATUS_BAD_REVISION,
               absl::StrCat("revision ", task.rev(), " does not resolve in source linux"));
      return;
    }
    const std::string hash = git->HashAt(*position);
    v1::AgentMessage progress;
    progress.mutable_build_progress()->set_task_id(task.task_id());
    progress.mutable_build_progress()->set_commit(hash);
    if (*position > 0) {
      progress.mutable_build_progress()->set_subject(git->commits[*position - 1].subject);
      progress.mutable_build_progress()->set_author(git->commits[*position - 1].author);
    }
    controller_->OnMessage(channel_.get(), progress);
    if (channel_->BuildCancelled(task.task_id())) {
      // Built before: its artifact serves. A builder says a stopped build ended, as the agent's
      // build runner does; until then the controller keeps it busy.
      complete(v1::BUILD_STATUS_CANCELLED, "cancelled by the controller");
      return;
    }
    if (*position > 0 && !git->commits[*position - 1].unbuildable.empty()) {
      complete(v1::BUILD_STATUS_FAILED, git->commits[*position - 1].unbuildable);
      return;
    }
    std::string revert;
    if (!task.revert().empty()) {
      std::optional<int> r = git->Position(task.revert());
      if (!r || git->revert_conflicts.count(git->HashAt(*r)) > 0) {
        complete(v1::BUILD_STATUS_FAILED,
                 absl::StrCat("the revert of ", task.revert(), " does not apply onto ", hash));
        return;
      }
      revert = git->HashAt(*r);
    }
    const std::string build_id =
        absl::StrCat("sim-", hash.substr(0, 12), revert.empty() ? "" : "-r", revert.substr(0, 12));
    artifacts::TestArtifact a = artifacts::MakeSizedArtifact(build_id, 300);
    a.manifest.commit = hash;
    if (artifacts != nullptr) {
      absl::StatusOr<artifacts::UploadState> up = artifacts->BeginUpload(a.manifest);
      if (!up.ok()) errors.push_back(up.status().ToString());
      for (const auto& [name, bytes] : a.contents) {
        if (up.ok()) artifacts->AppendChunk(up->upload_id, name, 0, bytes).IgnoreError();
      }
      if (up.ok()) {
        absl::StatusOr<std::string> done = artifacts->FinishUpload(up->upload_id);
        if (!done.ok()) errors.push_back(done.status().ToString());
      }
    }
    built_[build_id] = {hash, revert};
    ++builds;
    v1::AgentMessage m;
    v1::BuildComplete* c = m.mutable_build_complete();
    c->set_task_id(task.task_id());
    c->set_status(v1::BUILD_STATUS_SUCCEEDED);
    c->set_commit(hash);
    c->set_artifact_id(a.id());
    c->set_build_id(build_id);
    c->set_kernel_release(a.manifest.kernel_release);
    controller_->OnMessage(channel_.get(), m);
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
    // 0.5 % noise around the entry's (the built kernel's) value.
    const double value =
        kernel_.has_value() ? git->ValueOf(kernel_->commit, kernel_->revert) : value_of_(entry_);
    s->set_value(value * (1 + 0.005 * rng_.Normal()));
    if (kernel_.has_value()) s->set_commit(kernel_->commit);
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
    kernel_.reset();
    if (auto b = built_.find(r.kernel().build_id()); b != built_.end()) kernel_ = b->second;
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
  std::map<std::string, Built> built_;  // by build id
  std::optional<Built> kernel_;         // the built kernel the host runs, if it does
};

}  // namespace tlbfleet::nightly
