#include "controller/core/adaptive_driver.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "catalogue/catalogue.h"
#include "controller/report/compare.h"
#include "controller/report/comparison.h"
#include "controller/report/sequential.h"
#include "spdlog/spdlog.h"

namespace tlbfleet::core {

namespace {

// Without a wake-up, a pass anyway this often (a missed wake-up, a failed read).
constexpr absl::Duration kSafetyNetInterval = absl::Seconds(5);

int64_t BackoffMs(int failures) {
  return std::min<int64_t>(int64_t{1000} << std::min(failures - 1, 6), 60'000);
}

bool SamePlan(const report::AdaptivePlan& a, const report::AdaptivePlan& b) {
  return a.iterations_per_boot == b.iterations_per_boot && a.boots == b.boots;
}

}  // namespace

AdaptiveDriver::AdaptiveDriver(store::Store& store, const Clock& clock, Extended on_extended)
    : store_(store), clock_(clock), on_extended_(std::move(on_extended)) {}

AdaptiveDriver::~AdaptiveDriver() { Stop(); }

void AdaptiveDriver::Start() {
  {
    absl::MutexLock lock(&mu_);
    woken_ = true;  // runs left waiting by a restart
  }
  worker_ = std::thread([this] { Loop(); });
}

void AdaptiveDriver::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  if (worker_.joinable()) worker_.join();
}

void AdaptiveDriver::Wake() {
  absl::MutexLock lock(&mu_);
  woken_ = true;
}

void AdaptiveDriver::Loop() {
  for (;;) {
    {
      absl::MutexLock lock(&mu_);
      auto woken_or_stopping = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return woken_ || stopping_;
      };
      mu_.AwaitWithTimeout(absl::Condition(&woken_or_stopping), kSafetyNetInterval);
      if (stopping_) return;
      woken_ = false;
    }
    DecideOnce();
  }
}

void AdaptiveDriver::DecideOnce() {
  std::vector<std::string> extended;
  {
    absl::MutexLock lock(&decide_mu_);
    absl::StatusOr<std::vector<store::ActiveRun>> runs = store_.AdaptiveRunsAwaitingDecision();
    if (!runs.ok()) {
      spdlog::error("adaptive runs: {}", runs.status().ToString());
      return;
    }
    std::map<std::string, Unwritten> still_waiting;
    for (const store::ActiveRun& run : *runs) {
      if (auto it = unwritten_.find(run.run_id); it != unwritten_.end()) {
        still_waiting.insert(unwritten_.extract(it));
      }
    }
    unwritten_ = std::move(still_waiting);  // runs no longer waiting need nothing kept
    for (const store::ActiveRun& run : *runs) Decide(run);
    extended.swap(extended_);
  }
  for (const std::string& run_id : extended) on_extended_(run_id);
}

void AdaptiveDriver::Decide(const store::ActiveRun& run) {
  const int64_t now = clock_.NowMillis();
  absl::StatusOr<v1::Run> stored = store_.GetRun(run.run_id);
  if (!stored.ok()) {
    spdlog::error("run={} adaptive decision: {}", run.run_id, stored.status().ToString());
    return;
  }
  const report::AdaptivePlan plan{stored->iterations_per_boot(), stored->boots()};
  auto kept = unwritten_.find(run.run_id);
  if (kept != unwritten_.end() && !SamePlan(kept->second.plan, plan)) {
    unwritten_.erase(kept);  // the plan changed meanwhile: decide afresh
    kept = unwritten_.end();
  }
  if (kept != unwritten_.end() && now < kept->second.retry_at_ms) return;

  report::AdaptiveDecision decision;
  std::optional<std::set<report::SweepArm>> measured;  // stop: verdict: what still gets jobs
  if (kept != unwritten_.end()) {
    decision = kept->second.decision;
    measured = kept->second.measured;
  } else {
    absl::StatusOr<std::vector<v1::Sample>> samples = store_.GetSamples(run.run_id);
    if (!samples.ok()) {
      spdlog::error("run={} adaptive decision: {}", run.run_id, samples.status().ToString());
      return;
    }
    std::vector<std::string> metrics(run.spec.adaptive().metrics().begin(),
                                     run.spec.adaptive().metrics().end());
    if (metrics.empty()) {
      const catalogue::WorkloadSchema* workload = catalogue::FindWorkload(run.spec.benchmark());
      if (workload != nullptr) metrics.emplace_back(workload->PrimaryMetric());
    }
    report::CompareOptions options;
    for (const v1::ArmSpec& arm : run.spec.arms()) options.arm_order.push_back(arm.name());
    absl::StatusOr<report::Comparison> comparison =
        report::Compare(report::ObservationsFromSamples(*samples), options);
    if (comparison.ok()) {
      // The rows of the previous look, as stored: a row decided then keeps its verdict (and
      // its (sweep value, arm) stays unmeasured) across a controller restart.
      std::vector<report::RowOutcome> earlier;
      for (const v1::AdaptiveRow& row : stored->adaptive_rows()) {
        earlier.push_back(report::FromAdaptiveRow(row));
      }
      decision = report::DecideAdaptive(run.spec.adaptive(), metrics, *comparison, plan, &earlier);
      if (!decision.rows.empty()) {
        for (report::RowOutcome& row : decision.rows) {
          const bool before = std::any_of(earlier.begin(), earlier.end(), [&](const auto& e) {
            return e.decided && e.metric == row.metric && e.param_name == row.param_name &&
                   e.param_value == row.param_value && e.arm == row.arm;
          });
          if (row.decided && !before) row.decided_round = stored->adaptive_rounds();
        }
        measured = report::StillMeasured(decision.rows, *comparison);
      }
    } else {
      decision.reason = absl::StrCat("stopped: the comparison failed: ",
                                     std::string(comparison.status().message()));
    }
  }
  absl::Status s = Write(run.run_id, decision, measured, stored->adaptive_rounds());
  if (s.ok()) {
    unwritten_.erase(run.run_id);
    if (decision.action != report::AdaptiveDecision::Action::kStop) {
      extended_.push_back(run.run_id);
    }
    return;
  }
  Unwritten& u = unwritten_[run.run_id];
  u.decision = decision;
  u.measured = measured;
  u.plan = plan;
  ++u.failures;
  u.retry_at_ms = now + BackoffMs(u.failures);
  spdlog::error("run={} adaptive decision not stored (attempt {} of {}): {}", run.run_id,
                u.failures, kMaxWriteFailures, s.ToString());
  if (u.failures < kMaxWriteFailures) return;
  const std::string error =
      absl::StrCat("the adaptive decision (", decision.reason, ") could not be stored after ",
                   u.failures, " attempts: ", s.message());
  if (absl::Status failed = store_.FailRun(run.run_id, error, now); !failed.ok()) {
    spdlog::error("run={} failing: {}", run.run_id, failed.ToString());
    return;  // the store is in trouble: retried later, still without a bootstrap
  }
  spdlog::warn("run={} failed: {}", run.run_id, error);
  unwritten_.erase(run.run_id);
}

absl::Status AdaptiveDriver::Write(const std::string& run_id,
                                   const report::AdaptiveDecision& decision,
                                   const std::optional<std::set<report::SweepArm>>& measured,
                                   uint32_t rounds) {
  const bool stop = decision.action == report::AdaptiveDecision::Action::kStop;
  std::vector<v1::AdaptiveRow> rows;
  for (const report::RowOutcome& row : decision.rows) {
    const bool measuring =
        measured && measured->count({row.param_name, row.param_value, row.arm}) > 0;
    rows.push_back(report::ToAdaptiveRow(row, measuring, stop));
  }
  if (stop) {
    spdlog::info("run={} adaptive: {}", run_id, decision.reason);
    return store_.FinishAdaptiveRun(run_id, decision.reason, clock_.NowMillis(), rows);
  }
  spdlog::info("run={} adaptive round {}: {}", run_id, rounds + 1, decision.reason);
  store::RunExtension extension;
  extension.add_boot = decision.action == report::AdaptiveDecision::Action::kAddBoot;
  extension.iterations_per_boot = decision.iterations_per_boot;
  extension.note = decision.reason;
  extension.rows = std::move(rows);
  if (measured) {
    extension.measured.emplace();
    for (const report::SweepArm& cell : *measured) {
      extension.measured->emplace(cell.param_name, cell.param_value, cell.arm);
    }
    for (const v1::AdaptiveRow& row : extension.rows) {
      if (row.decided() && row.decided_round() == rounds) {
        spdlog::info("run={} adaptive row {} {}={} arm {}: {}", run_id, row.metric(),
                     row.param_name(), row.param_value(), row.arm(), row.reason());
      }
    }
  }
  return store_.ExtendRun(run_id, extension, clock_.NowMillis());
}

}  // namespace tlbfleet::core
