// The hub: kernels built from source (docs/kernels.md). Builder agents (HostInfo.kernel_sources)
// take the queued builds of active runs one at a time, beside their jobs; what they report is
// kept by the store (store/builds.h), which also fails a run whose build failed. A run's
// jobs wait for its builds (store/dispatch.cc); the artifacts of its builds are pinned in the
// artifact store until it ends.

#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "controller/artifacts/artifact_store.h"
#include "controller/core/hub.h"
#include "spdlog/spdlog.h"

namespace tlbfleet::core {

namespace {

constexpr char kRunPinPrefix[] = "run:";

v1::ControllerMessage CancelBuildMessage(int64_t task_id, const std::string& reason) {
  v1::ControllerMessage m;
  m.mutable_cancel_build()->set_task_id(task_id);
  m.mutable_cancel_build()->set_reason(reason);
  return m;
}

}  // namespace

void Hub::DispatchBuildsLocked() {
  if (!builds_maybe_queued_ || stopping_ || store_outage_) return;
  bool any_builder = false;
  bool taken = false;
  for (auto& [id, s] : sessions_) {
    Session* session = &s;
    if (session->broken || session->build_task != 0 || session->stopping_build != 0 ||
        session->host.kernel_sources().empty()) {
      continue;
    }
    any_builder = true;
    absl::StatusOr<std::optional<v1::KernelBuild>> build =
        store_.TakeBuild(session->agent_id, session->host, Now());
    if (!build.ok()) {
      spdlog::error("builds: taking one for agent={}: {}", session->agent_id,
                    build.status().ToString());
      NoteStoreFailureLocked(build.status());
      return;
    }
    if (!build->has_value()) continue;
    taken = true;
    const v1::KernelBuild& b = **build;
    absl::StatusOr<std::string> run_id = store_.RunOfBuild(b.task_id());
    session->build_task = b.task_id();
    session->build_run_id = run_id.ok() ? *run_id : "";
    spdlog::info("build {} (run={} arm {}: {} {} config {}) -> builder host={} agent={}",
                 b.task_id(), session->build_run_id, b.arm(), b.kernel().source(), b.kernel().rev(),
                 b.kernel().config(), session->host.hostname(), session->agent_id);
    v1::ControllerMessage message;
    v1::BuildTask* task = message.mutable_build();
    task->set_task_id(b.task_id());
    task->set_source(b.kernel().source());
    task->set_rev(b.kernel().rev());
    task->set_config(b.kernel().config());
    task->set_revert(b.kernel().revert());
    session->channel->Send(message);
  }
  // Nothing queued that a connected builder can build: look again when something changes
  // (a run is submitted, a build is given back, a builder connects).
  if (!taken || !any_builder) builds_maybe_queued_ = false;
}

void Hub::HandleBuildProgressLocked(Session& session, const v1::BuildProgress& progress) {
  absl::StatusOr<store::builds::ProgressResult> result =
      store_.BuildProgress(session.agent_id, progress, Now());
  if (!result.ok()) {
    spdlog::error("build {}: storing its progress failed: {}", progress.task_id(),
                  result.status().ToString());
    NoteStoreFailureLocked(result.status());
    return;
  }
  if (!result->accepted) {
    // Not this agent's build any more (given back, its run ended): it stops building it.
    StopBuildLocked(session, progress.task_id(), "this build is not yours");
    return;
  }
  if (!progress.commit().empty()) {
    spdlog::info("build {}: {} resolved to {} ({})", progress.task_id(), session.host.hostname(),
                 progress.commit(), progress.subject());
  }
  if (!result->reusable.has_value()) return;
  // The same commit and config were built before: its artifact serves, if still kept.
  const v1::KernelBuild& from = *result->reusable;
  if (options_.artifacts == nullptr || !options_.artifacts->Manifest(from.artifact_id()).ok()) {
    return;
  }
  absl::StatusOr<store::builds::CompleteResult> reused =
      store_.ReuseBuild(progress.task_id(), from, Now());
  if (!reused.ok() || !reused->accepted) return;
  spdlog::info("build {}: commit {} was built by build {} (artifact {}); not built again",
               progress.task_id(), progress.commit(), from.task_id(), from.artifact_id());
  StopBuildLocked(session, progress.task_id(),
                  absl::StrCat("built already by build ", from.task_id()));
  OnBuildDoneLocked(session, reused->build, std::to_string(result->run_id));
}

void Hub::HandleBuildCompleteLocked(Session& session, const v1::BuildComplete& complete) {
  absl::StatusOr<store::builds::CompleteResult> result =
      store_.CompleteBuild(session.agent_id, complete, Now());
  if (!result.ok()) {
    spdlog::error("build {}: storing its end failed: {}", complete.task_id(),
                  result.status().ToString());
    NoteStoreFailureLocked(result.status());
    return;
  }
  const std::string run_id = session.build_task == complete.task_id() ? session.build_run_id : "";
  if (session.build_task == complete.task_id()) session.build_task = 0;
  if (session.stopping_build == complete.task_id()) session.stopping_build = 0;
  builds_maybe_queued_ = true;  // this builder is free again
  if (!result->accepted) return;
  const v1::KernelBuild& b = result->build;
  spdlog::info("build {} on host={}: {}{}", b.task_id(), session.host.hostname(), b.state(),
               b.reason().empty() ? "" : absl::StrCat(" (", b.reason(), ")"));
  OnBuildDoneLocked(session, b, run_id);
}

void Hub::StopBuildLocked(Session& session, int64_t task_id, const std::string& reason) {
  session.channel->Send(CancelBuildMessage(task_id, reason));
  if (session.build_task == task_id) session.build_task = 0;
  // Busy until it says the build ended: a build sent before would be refused as "busy".
  if (session.stopping_build != task_id) {
    session.stopping_build = task_id;
    session.stopping_since_ms = Now();
  }
}

void Hub::OnBuildDoneLocked(Session& session, const v1::KernelBuild& build,
                            const std::string& run_id) {
  if (session.build_task == build.task_id()) session.build_task = 0;
  std::string run = run_id;
  if (run.empty()) {
    absl::StatusOr<std::string> of = store_.RunOfBuild(build.task_id());
    if (of.ok()) run = *of;
  }
  if (build.state() == "succeeded" && options_.artifacts != nullptr && !run.empty()) {
    // Kept while the run may boot it: eviction never takes a pinned artifact.
    if (absl::Status s = options_.artifacts->Pin(build.artifact_id(), kRunPinPrefix + run);
        !s.ok()) {
      spdlog::warn("build {}: pinning artifact {} for run {} failed: {}", build.task_id(),
                   build.artifact_id(), run, s.ToString());
    }
  }
  if (!run.empty()) active_runs_.MarkStale(run);
  work_since_ms_ = Now();
  dispatch_needed_ = true;
}

absl::StatusOr<v1::GitAnswer> Hub::QueryGit(v1::GitQuery query, absl::Duration timeout) {
  absl::MutexLock lock(&mu_);
  Session* builder = nullptr;
  for (auto& [id, s] : sessions_) {
    if (s.broken) continue;
    for (const v1::KernelSourceInfo& source : s.host.kernel_sources()) {
      if (source.name() == query.source()) builder = &s;
    }
    if (builder != nullptr) break;
  }
  if (builder == nullptr) {
    return absl::UnavailableError(
        absl::StrCat("no builder agent with kernel source \"", query.source(), "\" is connected"));
  }
  const int64_t id = next_git_query_++;
  const std::string agent_id = builder->agent_id;
  const std::string hostname = builder->host.hostname();
  query.set_query_id(id);
  git_queries_[id] = agent_id;
  v1::ControllerMessage message;
  *message.mutable_git_query() = query;
  builder->channel->Send(message);
  // Waits without the lock; the builder's answer (OnMessage) or its going away ends the wait.
  auto answered_or_gone = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return git_answers_.count(id) > 0 || sessions_.Find(agent_id) == nullptr || stopping_;
  };
  mu_.AwaitWithTimeout(absl::Condition(&answered_or_gone), timeout);
  git_queries_.erase(id);
  auto answer = git_answers_.find(id);
  if (answer == git_answers_.end()) {
    if (sessions_.Find(agent_id) == nullptr) {
      return absl::UnavailableError(
          absl::StrCat("builder ", hostname, " went away before it answered"));
    }
    return absl::DeadlineExceededError(absl::StrCat("builder ", hostname, " did not answer within ",
                                                    absl::FormatDuration(timeout)));
  }
  v1::GitAnswer out = std::move(answer->second);
  git_answers_.erase(answer);
  if (!out.error().empty()) {
    return out.invalid() ? absl::InvalidArgumentError(out.error())
                         : absl::UnavailableError(absl::StrCat(hostname, ": ", out.error()));
  }
  return out;
}

void Hub::ReleaseBuildsOfLocked(const Session& session, const std::string& reason) {
  if (session.build_task == 0) return;
  absl::StatusOr<std::vector<int64_t>> released =
      store_.ReleaseBuilds(session.agent_id, reason, Now());
  if (!released.ok()) {
    spdlog::error("agent={}: giving back its build failed: {}", session.agent_id,
                  released.status().ToString());
    return;
  }
  if (!released->empty()) {
    spdlog::info("agent={}: build {} given back ({})", session.agent_id, session.build_task,
                 reason);
  }
  builds_maybe_queued_ = true;
}

void Hub::CheckBuildsLocked() {
  // A build whose run ended (cancelled, failed) is stopped on its builder.
  for (auto& [id, s] : sessions_) {
    Session* session = &s;
    if (session->build_task == 0 || session->build_run_id.empty()) continue;
    absl::StatusOr<std::optional<v1::KernelBuild>> build = store_.GetBuild(session->build_task);
    if (!build.ok() || !build->has_value()) continue;
    if ((*build)->state() == "cancelled") {
      spdlog::info("build {}: its run {} ended; telling host={} to stop", session->build_task,
                   session->build_run_id, session->host.hostname());
      StopBuildLocked(*session, session->build_task, (*build)->reason());
    }
  }
  // A builder that never says its stopped build ended (a lost message) is not kept busy for
  // ever: after a minute it is offered builds again (at worst it refuses one as busy, which
  // counts as a host failure and is retried).
  for (auto& [id, s] : sessions_) {
    if (s.stopping_build != 0 && Now() - s.stopping_since_ms > 60'000) {
      spdlog::warn("agent={}: build {} was told to stop a minute ago and never said it ended",
                   s.agent_id, s.stopping_build);
      s.stopping_build = 0;
      builds_maybe_queued_ = true;
    }
  }
  // Pins of runs that ended are released (at most every 30 s: it lists the store).
  if (options_.artifacts == nullptr || Now() - last_pin_check_ms_ < 30'000) return;
  last_pin_check_ms_ = Now();
  std::set<std::string> owners;
  for (const artifacts::ArtifactInfo& info : options_.artifacts->List()) {
    for (const std::string& owner : info.pins) {
      if (absl::StartsWith(owner, kRunPinPrefix)) owners.insert(owner);
    }
  }
  for (const std::string& owner : owners) {
    absl::StatusOr<v1::Run> run = store_.GetRun(owner.substr(sizeof(kRunPinPrefix) - 1));
    const bool ended =
        !run.ok() ? absl::IsNotFound(run.status())
                  : (run->state() != v1::RUN_STATE_QUEUED && run->state() != v1::RUN_STATE_RUNNING);
    if (!ended) continue;
    if (absl::Status s = options_.artifacts->UnpinOwner(owner); !s.ok()) {
      spdlog::warn("artifacts: unpinning those of {} failed: {}", owner, s.ToString());
    }
  }
}

}  // namespace tlbfleet::core
