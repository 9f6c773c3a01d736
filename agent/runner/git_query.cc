#include "agent/runner/git_query.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "agent/builder/git_repo.h"

namespace tlbfleet::agent {
namespace {

// A wrong question (INVALID_ARGUMENT from the repository) is `invalid`; anything else is the
// host failing.
v1::GitAnswer GitQueryFailed(v1::GitAnswer answer, const absl::Status& status) {
  answer.set_error(std::string(status.message()));
  answer.set_invalid(absl::IsInvalidArgument(status));
  return answer;
}

absl::Status AddCommit(const builder::GitRepo& repo, const std::string& hash,
                       v1::GitAnswer& answer) {
  absl::StatusOr<builder::CommitInfo> info = repo.Describe(hash);
  if (!info.ok()) return info.status();
  v1::BisectCommit* commit = answer.add_commits();
  commit->set_hash(info->hash);
  commit->set_subject(info->subject);
  commit->set_author(info->author);
  return absl::OkStatus();
}

}  // namespace

v1::GitAnswer AnswerGitQuery(const builder::KernelSources& sources, const v1::GitQuery& query) {
  v1::GitAnswer answer;
  answer.set_query_id(query.query_id());
  absl::StatusOr<const builder::KernelSource*> source = sources.FindSource(query.source());
  if (!source.ok()) return GitQueryFailed(answer, source.status());
  const builder::GitRepo repo((*source)->repository);
  if (query.fetch() && !(*source)->remote.empty()) {
    if (absl::Status s = repo.Fetch((*source)->remote); !s.ok()) return GitQueryFailed(answer, s);
  }
  switch (query.kind()) {
    case v1::GitQuery::KIND_RESOLVE: {
      absl::StatusOr<std::string> hash = repo.ResolveCommit(query.rev());
      if (!hash.ok()) return GitQueryFailed(answer, hash.status());
      answer.set_resolved(*hash);
      if (absl::Status s = AddCommit(repo, *hash, answer); !s.ok()) {
        return GitQueryFailed(answer, s);
      }
      return answer;
    }
    case v1::GitQuery::KIND_BRANCH: {
      // After a fetch the remote's copy of the branch is the news; a local branch of that name
      // would be whatever someone last checked out.
      absl::StatusOr<std::string> hash = repo.ResolveBranch(
          query.rev(), query.fetch() ? absl::string_view((*source)->remote) : absl::string_view());
      if (!hash.ok()) return GitQueryFailed(answer, hash.status());
      answer.set_resolved(*hash);
      if (absl::Status s = AddCommit(repo, *hash, answer); !s.ok()) {
        return GitQueryFailed(answer, s);
      }
      return answer;
    }
    case v1::GitQuery::KIND_RANGE: {
      absl::StatusOr<bool> ancestor = repo.IsAncestor(query.good(), query.bad());
      if (!ancestor.ok()) return GitQueryFailed(answer, ancestor.status());
      if (!*ancestor) {
        return GitQueryFailed(
            answer, absl::InvalidArgumentError(absl::StrCat(
                        "good: ", query.good(), " is not an ancestor of bad ", query.bad())));
      }
      absl::StatusOr<std::vector<std::string>> range =
          repo.CommitsBetween(query.good(), query.bad());
      if (!range.ok()) return GitQueryFailed(answer, range.status());
      for (const std::string& hash : *range) {
        if (absl::Status s = AddCommit(repo, hash, answer); !s.ok()) {
          return GitQueryFailed(answer, s);
        }
      }
      return answer;
    }
    case v1::GitQuery::KIND_REVERT_APPLIES: {
      absl::StatusOr<bool> applies = repo.RevertApplies(query.rev(), query.onto());
      if (!applies.ok()) return GitQueryFailed(answer, applies.status());
      answer.set_revert_applies(*applies);
      return answer;
    }
    default:
      return GitQueryFailed(answer, absl::InvalidArgumentError(
                                        absl::StrCat("kind: unknown git question ", query.kind())));
  }
}

GitQueryWorkers::GitQueryWorkers(Answer answer, Send send, size_t max_threads)
    : answer_(std::move(answer)),
      send_(std::move(send)),
      max_threads_(max_threads > 0 ? max_threads : 1) {}

GitQueryWorkers::~GitQueryWorkers() {
  std::vector<std::thread> threads;
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    queue_.clear();
    threads.swap(threads_);
  }
  for (std::thread& t : threads) t.join();
}

void GitQueryWorkers::Submit(const v1::GitQuery& query) {
  absl::MutexLock lock(&mu_);
  if (stopping_) return;
  queue_.push_back(query);
  // A new worker only when none is free to take it, up to the bound.
  if (idle_ < queue_.size() && threads_.size() < max_threads_) {
    threads_.emplace_back([this] { Work(); });
  }
}

size_t GitQueryWorkers::threads() const {
  absl::MutexLock lock(&mu_);
  return threads_.size();
}

void GitQueryWorkers::Work() {
  absl::MutexLock lock(&mu_);
  while (true) {
    ++idle_;
    mu_.Await(absl::Condition(this, &GitQueryWorkers::HasWorkOrStops));
    --idle_;
    if (stopping_) return;
    const v1::GitQuery query = std::move(queue_.front());
    queue_.pop_front();
    mu_.Unlock();
    v1::AgentMessage message;
    *message.mutable_git_answer() = answer_(query);
    send_(message);
    mu_.Lock();
  }
}

}  // namespace tlbfleet::agent
