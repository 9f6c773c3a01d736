#pragma once
// A bisection over git commits, as a pure, resumable state machine (issue 21): the commit that
// made a benchmark worse, found as `git bisect` finds it and verified as KernelCI verifies it.
//
// The commits are good..bad as `git rev-list --topo-order --reverse good..bad` lists them:
// oldest first, good excluded, bad included. Only linear history is handled: on a linear
// history that list is the ancestry, and halving it by count is halving the candidates; with
// merges, "between" would be a graph and git's weighting of it would be needed.
//
// Each step tests the commit halfway by count between the bracket's ends (the last commit known
// like good, the first known like bad) against the two original references, good and bad, in
// one run, exactly as Bisection (bisection.h) does with boot entries: the same StepComparator,
// the same "can't tell: more boots, up to a cap", the same endpoint check first. What commits add:
//
// - Skip(commit, reason) for a commit whose build or boot failed (`git bisect skip`). The next
//   pick is the untested, unskipped commit nearest the midpoint, alternating sides, the older
//   first on a tie: deterministic where git picks pseudo-randomly near the middle, so that a
//   bisection resumed or re-run asks for the same commits. When only skipped commits lie between
//   the last good and the first bad, the bisection ends as ONE_OF: "the first bad commit is one
//   of X Y Z", as git says it, not a single culprit.
// - Verification of the culprit before it is reported: it must again be worse than its parent
//   (towards bad) on fresh boots (kVerifyParent), and bad with the culprit reverted must measure
//   like good (kVerifyRevert) — unless the caller says the revert does not apply cleanly
//   (SkipRevertCheck(reason)), when the report says why it was not measured. The outcome is
//   CONFIRMED, NOT_REPRODUCED or REVERT_DOES_NOT_FIX, with the steps as its evidence.
// - CommitBisectLog(): the steps as lines a person can read and `git bisect replay`.
//
// Nothing here runs git or builds: the caller resolves the range, builds and boots each commit
// Next() names, and says what happened. The whole state is a v1::BisectState whose spec has
// `commits` (proto/tlbfleet/v1/nightly.proto); the caller stores it after every call that
// changes it, and Resume() continues exactly where it stood. Not thread-safe; one owner.

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "controller/bisect/bisection.h"
#include "tlbfleet/v1/nightly.pb.h"

namespace tlbfleet::bisect {

class CommitBisection {
 public:
  // INVALID_ARGUMENT naming the field: `entries` given, no commits.range (good == bad gives an
  // empty range), a commit without a hash or listed twice, good missing or inside the range, bad
  // missing or not the range's last commit, max_boots_per_step < boots_per_round. Defaults as
  // Bisection's: 2 boots per round, at most 8 per step.
  static absl::StatusOr<CommitBisection> Start(std::string id, v1::BisectSpec spec);
  // A stored state; INVALID_ARGUMENT when it is inconsistent (corrupt or hand-edited).
  static absl::StatusOr<CommitBisection> Resume(v1::BisectState state);

  const v1::BisectState& state() const { return state_; }
  // kMeasure (the endpoint check and the search), kVerifyParent, kVerifyRevert, kAwaitRun or
  // kDone. Entries are full commit hashes.
  NextAction Next() const;

  // As Bisection's: the measurement Next() asked for was submitted as `run_id`; run `run_id`
  // finished and `compare` judges the step over all its rounds (a failing `compare` changes
  // nothing); run `run_id` failed for a reason other than the tested kernel (the bisection
  // stops as FAILED). FAILED_PRECONDITION when the run is not the one expected.
  absl::Status Submitted(std::string run_id);
  absl::Status Finished(std::string_view run_id, const StepComparator& compare);
  absl::Status RunFailed(std::string_view run_id, std::string_view reason);

  // `commit` (a full hash) cannot be built or booted: the search goes on around it. It may be
  // the commit of the open step (a pending run of it ends: its boot failed) or, when no step is
  // open and step 0 is over, any untested commit inside the bracket. Good and bad are measured
  // in every step, so a skip of either stops the bisection as FAILED. INVALID_ARGUMENT for an
  // unknown commit or an empty reason; FAILED_PRECONDITION when the commit is already known
  // (outside the bracket), already skipped, not the open step's, or the search is over.
  absl::Status Skip(std::string_view commit, std::string_view reason);
  // Instead of measuring kVerifyRevert: the revert of the culprit does not apply cleanly to bad
  // (the caller's revert_applies is false) or its build or boot failed. The culprit counts as
  // CONFIRMED on its parent check alone and the verification says why the revert was not
  // measured. FAILED_PRECONDITION when Next() is not (awaiting) kVerifyRevert.
  absl::Status SkipRevertCheck(std::string_view reason);
  // Stops a running bisection (CANCELLED); a stopped one stays as it is.
  void Cancel();

 private:
  explicit CommitBisection(v1::BisectState state) : state_(std::move(state)) {}

  // What the next new step measures: its kind and the position of the commit it tests.
  struct Plan {
    StepKind kind = StepKind::kSearch;
    uint32_t position = 0;
  };
  Plan NextPlan() const;
  NextAction ActionFor(const Plan& plan, uint32_t step) const;
  bool HasOpenStep() const;
  uint32_t NextStepNumber() const;
  // After a verdict or a skip: ends the search when nothing is left to test between the
  // bracket's ends (the culprit found, or ONE_OF).
  void Settle();
  void Verified(v1::BisectVerificationOutcome outcome, std::string reason);

  v1::BisectState state_;
};

// The commit at `position` of a commit bisection: 0 is good, i is spec.commits().range(i - 1),
// so bad is at range_size(). `position` must be at most range_size().
const std::string& CommitAt(const v1::BisectSpec& spec, uint32_t position);

// The bisection as `git bisect log` would write it, with every step's numbers: the start, bad
// and good marks, then per step the commit, each round's comparison (percent changes with their
// intervals, boots per arm so far) and verdict as comments followed by its mark ("git bisect
// good|bad|skip <hash>"), skips with their reasons, the conclusion and the verification. Lines
// without a trailing newline; `git bisect replay` reads the marks and skips the comments.
std::vector<std::string> CommitBisectLog(const v1::BisectState& state);

}  // namespace tlbfleet::bisect
