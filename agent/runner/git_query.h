#pragma once
// A builder's answers to the controller's questions about its kernel sources' git repositories
// (GitQuery -> GitAnswer, agent.proto): resolve a revision, list good..bad for a commit
// bisection, whether a commit's revert applies. The controller has no repository; only the
// agent's own, named by source, is asked. The revisions are single argv words for git
// (agent/builder/git_repo.h refuses one that starts with '-').

#include <cstddef>
#include <deque>
#include <functional>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "agent/builder/kernel_sources.h"
#include "tlbfleet/v1/agent.pb.h"

namespace tlbfleet::agent {

// Answers `query` from `sources` (may take as long as a `git fetch` when query.fetch). An
// answer whose question is wrong (unknown source, a revision that does not resolve, good not
// an ancestor of bad) has `invalid` set; a host failure (git failing, a fetch that fails)
// only `error`.
v1::GitAnswer AnswerGitQuery(const builder::KernelSources& sources, const v1::GitQuery& query);

// Answers the controller's git questions off the stream's reader (a fetch may take minutes),
// on a bounded number of threads: a queue and at most `max_threads` workers, started as
// questions come and kept until destruction. Not one thread per question: a controller that
// asks (and times out, and asks again) while a fetch hangs would otherwise pile threads up.
// Two by default, so a question that needs no fetch is not stuck behind one that does.
//
// Thread-safe. `answer` and `send` run on the workers, never with the queue's lock held.
class GitQueryWorkers {
 public:
  using Answer = std::function<v1::GitAnswer(const v1::GitQuery& query)>;
  using Send = std::function<void(const v1::AgentMessage& message)>;

  GitQueryWorkers(Answer answer, Send send, size_t max_threads = 2);
  // Drops the questions not started (the controller asks again when it times out) and waits
  // for the ones being answered.
  ~GitQueryWorkers();
  GitQueryWorkers(const GitQueryWorkers&) = delete;
  GitQueryWorkers& operator=(const GitQueryWorkers&) = delete;

  // Queues `query`; its GitAnswer goes to `send` once a worker answered it.
  void Submit(const v1::GitQuery& query);

  // How many worker threads exist (at most max_threads).
  size_t threads() const;

 private:
  void Work();
  bool HasWorkOrStops() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return stopping_ || !queue_.empty();
  }

  const Answer answer_;
  const Send send_;
  const size_t max_threads_;

  mutable absl::Mutex mu_;
  std::deque<v1::GitQuery> queue_ ABSL_GUARDED_BY(mu_);
  size_t idle_ ABSL_GUARDED_BY(mu_) = 0;  // workers waiting for a question
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_ ABSL_GUARDED_BY(mu_);
};

}  // namespace tlbfleet::agent
