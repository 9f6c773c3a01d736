#pragma once
// A builder's answers to the controller's questions about its kernel sources' git repositories
// (GitQuery -> GitAnswer, agent.proto): resolve a revision, list good..bad for a commit
// bisection, whether a commit's revert applies. The controller has no repository; only the
// agent's own, named by source, is asked. The revisions are single argv words for git
// (agent/builder/git_repo.h refuses one that starts with '-').

#include "agent/builder/kernel_sources.h"
#include "tlbfleet/v1/agent.pb.h"

namespace tlbfleet::agent {

// Answers `query` from `sources` (may take as long as a `git fetch` when query.fetch). An
// answer whose question is wrong (unknown source, a revision that does not resolve, good not
// an ancestor of bad) has `invalid` set; a host failure (git failing, a fetch that fails)
// only `error`.
v1::GitAnswer AnswerGitQuery(const builder::KernelSources& sources, const v1::GitQuery& query);

}  // namespace tlbfleet::agent
