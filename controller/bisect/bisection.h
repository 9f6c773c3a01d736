#pragma once
// A bisection over an ordered list of boot entries, as a pure, resumable state machine.
//
// Given entries (oldest first), one that behaves well (`good`) and a later one that behaves
// badly (`bad`), it finds the first entry that behaves like `bad`. Each step measures the
// entry halfway between the current bracket's ends against the two *original* references,
// good and bad, in the same run (so drift hits all three alike), and an injected comparison
// (the calibrated verdict of controller/report, in production) says whether the tested entry
// is like good, like bad, or can't tell yet. "Can't tell" adds another round of boots to the
// same step, up to a cap per step; at the cap the bisection stops as AMBIGUOUS and says
// between which entries the first bad one lies. Unless skipped, step 0 first measures bad
// against good, to check that the difference is real.
//
// The whole state is a v1::BisectState (proto/tlbfleet/v1/nightly.proto): the caller stores it
// after every call that changes it, and Resume() continues where it stood, including a run
// that was submitted but whose result was not yet recorded (Next() then says kAwaitRun).
//
// Not thread-safe; one owner at a time.

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "tlbfleet/v1/nightly.pb.h"

namespace tlbfleet::bisect {

// What the caller must do next.
struct NextAction {
  enum class Kind {
    kMeasure,   // submit a run with one arm per entry of `entries`, `boots` boots each
    kAwaitRun,  // wait for run `run_id`, then call Finished() or RunFailed()
    kDone,      // the bisection has stopped (state().status says how)
    // Commit bisections only (commit_bisection.h), once the culprit is found; submitted and
    // reported like kMeasure:
    kVerifyParent,  // entries: parent, culprit, on fresh boots
    kVerifyRevert,  // entries: good, bad, bad; the middle arm is bad with `revert` reverted
  };
  Kind kind = Kind::kDone;
  uint32_t step = 0;
  std::vector<std::string> entries;  // good, tested, bad (the endpoint check: good, bad)
  uint32_t boots = 0;                // per arm
  std::string run_id;
  std::string revert;  // kVerifyRevert: the commit to revert from bad for the middle arm
};

// What a step's measurement decides; the arms of its runs are named kGoodArm, kTestedArm and
// kBadArm (calibrated.h) after StepRequest's good, tested and bad.
enum class StepKind {
  kEndpointCheck,  // bad against good (arms good, bad)
  kSearch,         // tested against good and bad (arms good, tested, bad)
  kVerifyParent,   // commit bisections: the culprit (tested) against its parent (good)
  kVerifyRevert,   // commit bisections: bad with the culprit (tested) reverted, against good
                   // and bad (arms good, tested, bad)
};

// What the comparison gets: one step, measured over one or more runs.
struct StepRequest {
  const v1::BisectSpec* spec = nullptr;
  uint32_t step = 0;
  StepKind kind = StepKind::kSearch;
  // The endpoint check: tested is bad. The parent check: good is the culprit's parent. The
  // revert check: tested is "revert of <culprit>", bad with the culprit reverted.
  std::string good, tested, bad;
  std::vector<std::string> run_ids;  // every round of the step so far, oldest first
  uint32_t boots_per_arm = 0;        // over those runs
  // Which way bad differs from good, as the search measured it: the parent check has neither
  // reference in its runs to tell "again worse" from "better".
  bool bad_is_worse = true;
};

// Returns the step's evidence and verdict (LIKE_GOOD, LIKE_BAD or CANT_TELL). In the endpoint
// check LIKE_BAD means "bad differs from good", LIKE_GOOD "bad behaves like good". In the
// parent check LIKE_BAD means "again worse than its parent, towards bad" (ClassifyAgainstParent);
// the revert check is judged as a search step (LIKE_GOOD: the revert measures like good).
using StepComparator = std::function<absl::StatusOr<v1::BisectComparison>(const StepRequest&)>;

class Bisection {
 public:
  static constexpr uint32_t kDefaultBootsPerRound = 2;
  static constexpr uint32_t kDefaultMaxBootsPerStep = 8;

  // INVALID_ARGUMENT naming the field: no entries, an empty or repeated entry name, good or
  // bad unknown, good == bad, good after bad, max_boots_per_step < boots_per_round.
  static absl::StatusOr<Bisection> Start(std::string id, v1::BisectSpec spec);
  // A stored state; INVALID_ARGUMENT when it is inconsistent (corrupt or hand-edited).
  static absl::StatusOr<Bisection> Resume(v1::BisectState state);

  const v1::BisectState& state() const { return state_; }
  NextAction Next() const;

  // The measurement Next() asked for was submitted as `run_id`. FAILED_PRECONDITION when
  // Next() did not ask for one.
  absl::Status Submitted(std::string run_id);
  // Run `run_id` (the pending one) finished; `compare` judges the step over all its rounds.
  // When `compare` fails, its error is returned and nothing changes (call again).
  absl::Status Finished(std::string_view run_id, const StepComparator& compare);
  // Run `run_id` failed: the bisection stops as FAILED with the reason.
  absl::Status RunFailed(std::string_view run_id, std::string_view reason);
  // Stops a running bisection (CANCELLED); a stopped one stays as it is.
  void Cancel();

 private:
  explicit Bisection(v1::BisectState state) : state_(std::move(state)) {}
  bool HasOpenStep() const;
  void CheckFound();

  v1::BisectState state_;
};

// How a tested entry compares with a reference, by the calibrated comparison, in the
// metric's own sense of better.
enum class Difference { kBetter, kWorse, kSame, kUnknown };

// Where the tested entry lies on the way from good to bad, as far as the comparison's intervals
// show it: nearer bad than the halfway point (its whole interval against bad stays on bad's side
// of halfway), or nearer good (its interval against good stays on good's side). Neither when
// the intervals reach over halfway, or are missing.
struct Placement {
  bool nearer_bad = false;
  bool nearer_good = false;
};

// From the comparison's two percent changes with their intervals, tested / good - 1 and
// tested / bad - 1 (BisectComparison's versus_good_pct and versus_bad_pct); their estimates
// give the way from good to bad (bad / good), halved on a log scale. Needs no sense of better.
Placement PlacementOf(const v1::ChangeInterval& versus_good_pct,
                      const v1::ChangeInterval& versus_bad_pct);

// The verdict of a step from two comparisons of the tested entry: with good and with bad.
// `bad_is_worse` says which way bad differs from good (false when bisecting an improvement).
// Evidence for "like bad": it differs from good towards bad, or is the same as bad, or is
// beyond bad; for "like good" the mirror image. With evidence for neither or for both (it
// lies between them, as when two changes add up), the step can't tell.
// Differing from good is not evidence enough on its own: with good at 100 and bad at 96, an
// entry at 98 (worse than good, can't tell against bad) lies between them, and calling it bad
// pins the whole change on the first of two commits that each did half. So "like bad" also
// needs it to be shown not better than bad: the same as bad, beyond bad, or — what a noisy lab
// can show without an equivalence test at a 1 % margin — its interval against bad keeps it
// nearer bad than halfway (`estimate`). "Like good" mirrors it. Until then the step can't tell,
// and more boots are measured.
v1::BisectVerdict ClassifyStep(Difference versus_good, Difference versus_bad, bool bad_is_worse,
                               Placement estimate);

// The parent check of a commit bisection: the culprit against its parent. LIKE_BAD when it
// differs again towards bad, LIKE_GOOD when it is the same or differs the other way (the change
// did not repeat), CANT_TELL when the comparison can't tell.
v1::BisectVerdict ClassifyAgainstParent(Difference culprit_versus_parent, bool bad_is_worse);

// The endpoint check: bad differs from good (LIKE_BAD), is the same (LIKE_GOOD), or unknown.
v1::BisectVerdict ClassifyEndpoints(Difference bad_versus_good);

const char* BisectStatusName(v1::BisectStatus status);     // "running", "found", ...
const char* BisectVerdictName(v1::BisectVerdict verdict);  // "like good", ...
// "confirmed", "not reproduced", "revert does not fix", "not verified".
const char* VerificationName(v1::BisectVerificationOutcome outcome);

}  // namespace tlbfleet::bisect
