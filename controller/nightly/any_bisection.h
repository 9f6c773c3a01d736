#pragma once
// One stored bisection, whichever kind it is: over boot entries (bisect::Bisection) or over
// commits (bisect::CommitBisection, when its spec has `commits`). The nightly unit drives both
// alike (start, submit, finish, fail, cancel, resume); what only commits have (skips, the revert
// check) is asked for through commits().

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "controller/bisect/bisection.h"
#include "controller/bisect/commit_bisection.h"
#include "tlbfleet/v1/nightly.pb.h"

namespace tlbfleet::nightly {

// A spec or state over commits: its range, or at least the revisions to list it from.
inline bool IsCommitBisection(const v1::BisectSpec& spec) { return spec.has_commits(); }

class AnyBisection {
 public:
  static absl::StatusOr<AnyBisection> Start(std::string id, v1::BisectSpec spec) {
    if (IsCommitBisection(spec)) {
      absl::StatusOr<bisect::CommitBisection> b =
          bisect::CommitBisection::Start(std::move(id), std::move(spec));
      if (!b.ok()) return b.status();
      return AnyBisection(*std::move(b));
    }
    absl::StatusOr<bisect::Bisection> b = bisect::Bisection::Start(std::move(id), std::move(spec));
    if (!b.ok()) return b.status();
    return AnyBisection(*std::move(b));
  }
  static absl::StatusOr<AnyBisection> Resume(v1::BisectState state) {
    if (IsCommitBisection(state.spec())) {
      absl::StatusOr<bisect::CommitBisection> b = bisect::CommitBisection::Resume(std::move(state));
      if (!b.ok()) return b.status();
      return AnyBisection(*std::move(b));
    }
    absl::StatusOr<bisect::Bisection> b = bisect::Bisection::Resume(std::move(state));
    if (!b.ok()) return b.status();
    return AnyBisection(*std::move(b));
  }

  const v1::BisectState& state() const {
    return std::visit([](const auto& b) -> const v1::BisectState& { return b.state(); }, b_);
  }
  bisect::NextAction Next() const {
    return std::visit([](const auto& b) { return b.Next(); }, b_);
  }
  // Next() asks for a run to be submitted (a measurement or a verification).
  bool WantsRun() const {
    const bisect::NextAction::Kind k = Next().kind;
    return k == bisect::NextAction::Kind::kMeasure ||
           k == bisect::NextAction::Kind::kVerifyParent ||
           k == bisect::NextAction::Kind::kVerifyRevert;
  }
  absl::Status Submitted(std::string run_id) {
    return std::visit([&](auto& b) { return b.Submitted(std::move(run_id)); }, b_);
  }
  absl::Status Finished(std::string_view run_id, const bisect::StepComparator& compare) {
    return std::visit([&](auto& b) { return b.Finished(run_id, compare); }, b_);
  }
  absl::Status RunFailed(std::string_view run_id, std::string_view reason) {
    return std::visit([&](auto& b) { return b.RunFailed(run_id, reason); }, b_);
  }
  void Cancel() {
    std::visit([](auto& b) { b.Cancel(); }, b_);
  }
  // The commit bisection, or nullptr for one over boot entries.
  bisect::CommitBisection* commits() { return std::get_if<bisect::CommitBisection>(&b_); }

 private:
  explicit AnyBisection(bisect::Bisection b) : b_(std::move(b)) {}
  explicit AnyBisection(bisect::CommitBisection b) : b_(std::move(b)) {}

  std::variant<bisect::Bisection, bisect::CommitBisection> b_;
};

}  // namespace tlbfleet::nightly
