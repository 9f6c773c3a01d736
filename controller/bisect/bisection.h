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
  };
  Kind kind = Kind::kDone;
  uint32_t step = 0;
  std::vector<std::string> entries;  // good, tested, bad (the endpoint check: good, bad)
  uint32_t boots = 0;                // per arm
  std::string run_id;
};

// What the comparison gets: one step, measured over one or more runs.
struct StepRequest {
  const v1::BisectSpec* spec = nullptr;
  uint32_t step = 0;
  bool endpoint_check = false;  // then `tested` is spec->bad()
  std::string good, tested, bad;
  std::vector<std::string> run_ids;  // every round of the step so far, oldest first
  uint32_t boots_per_arm = 0;        // over those runs
};

// Returns the step's evidence and verdict (not BISECT_VERDICT_UNSPECIFIED). In the endpoint
// check LIKE_BAD means "bad differs from good", LIKE_GOOD "bad behaves like good".
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

// The verdict of a step from two comparisons of the tested entry: with good and with bad.
// `bad_is_worse` says which way bad differs from good (false when bisecting an improvement).
// Evidence for "like bad": it differs from good towards bad, or is the same as bad, or is
// beyond bad; for "like good" the mirror image. With evidence for neither or for both (it
// lies between them, as when two changes add up), the step can't tell.
v1::BisectVerdict ClassifyStep(Difference versus_good, Difference versus_bad, bool bad_is_worse);

// The endpoint check: bad differs from good (LIKE_BAD), is the same (LIKE_GOOD), or unknown.
v1::BisectVerdict ClassifyEndpoints(Difference bad_versus_good);

const char* BisectStatusName(v1::BisectStatus status);     // "running", "found", ...
const char* BisectVerdictName(v1::BisectVerdict verdict);  // "like good", ...

}  // namespace tlbfleet::bisect
