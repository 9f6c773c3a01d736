#pragma once
// What nightly schedules and bisections keep (migration 11): schedules, the runs they start,
// series and their points, regressions, bisections. The nightly unit (controller/nightly) is
// its only user.
//
// It has a connection of its own to the database file that Store::Open created and migrated
// (SQLite serialises the two writers; WAL lets readers of either go on), so that the core's
// store and its lock are never held for nightly work, and the two units share no code path.
// Every method is one transaction. Thread-safe.

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "controller/store/sqlite.h"
#include "tlbfleet/v1/nightly.pb.h"

namespace tlbfleet::store {

// A run the controller starts on its own, under a unique run name.
struct Submission {
  std::string name;   // the run's name, unique
  std::string owner;  // "schedule:<id>" or "bisect:<id>"
  std::string spec_yaml;
  std::string run_id;  // "" until the run was submitted and recorded
};

// One point to append, with its series' key.
struct NewPoint {
  v1::SeriesKey key;
  v1::Better better = v1::BETTER_UNSPECIFIED;
  v1::SeriesPoint point;
};

class NightlyStore {
 public:
  // Opens a connection to `path`, which Store::Open must have migrated already.
  static absl::StatusOr<std::unique_ptr<NightlyStore>> Open(const std::string& path);

  // --- schedules ---
  // ALREADY_EXISTS for a name in use. `last_slot_ms` starts at `now_ms`.
  absl::StatusOr<v1::Schedule> AddSchedule(const v1::ScheduleSpec& spec,
                                           const std::string& spec_yaml, int64_t now_ms);
  absl::StatusOr<std::vector<v1::Schedule>> ListSchedules();
  // NOT_FOUND for an unknown id, INVALID_ARGUMENT for a malformed one.
  absl::StatusOr<v1::Schedule> GetSchedule(const std::string& id);
  // Resuming sets the latest slot handled to `now_ms`: nights missed while paused are not run.
  absl::StatusOr<v1::Schedule> SetPaused(const std::string& id, bool paused, int64_t now_ms);
  // Returns the schedule as it was. Its series and the runs it started stay.
  absl::StatusOr<v1::Schedule> RemoveSchedule(const std::string& id);
  // Schedule `id` handled the slot `slot_ms` by starting `submission`: both in one
  // transaction. FAILED_PRECONDITION when the schedule was removed or paused meanwhile.
  absl::Status TakeSlot(const std::string& id, int64_t slot_ms, const Submission& submission,
                        int64_t now_ms);

  // --- submissions ---
  // Records the intent (nothing if the name is already there).
  absl::Status BeginSubmission(const Submission& submission, int64_t now_ms);
  absl::StatusOr<std::vector<Submission>> PendingSubmissions();
  absl::StatusOr<std::optional<Submission>> SubmissionOfRun(const std::string& run_id);
  absl::StatusOr<std::optional<Submission>> SubmissionNamed(const std::string& name);
  // Records the run id; for a schedule's run also the schedule's last run and run count; for a
  // bisection's run also its state (`bisect`, when given), in the same transaction.
  absl::Status RecordSubmission(const std::string& name, const std::string& run_id,
                                const v1::BisectState* bisect, int64_t now_ms);

  // --- series ---
  absl::StatusOr<bool> RunSeen(const std::string& run_id);
  // Appends the points (creating their series) and marks the run seen. Returns the ids of the
  // series that got a point. A run already seen appends nothing.
  absl::StatusOr<std::vector<std::string>> AppendRun(const std::string& run_id,
                                                     const std::vector<NewPoint>& points,
                                                     int64_t now_ms);
  absl::StatusOr<v1::Series> GetSeries(const std::string& id, bool with_points);
  absl::StatusOr<std::vector<v1::Series>> ListSeries(const std::string& benchmark,
                                                     const std::string& metric, bool with_points);
  // First-bad runs of the series' change points already judged final.
  absl::StatusOr<std::set<std::string>> KnownFindings(const std::string& series_id);
  absl::Status AddImprovement(const std::string& series_id, const std::string& first_run);

  // --- regressions ---
  // Stores a new regression (status open) and its finding; returns it with its id.
  // ALREADY_EXISTS (and nothing written) when the series has a finding at that first bad run.
  absl::StatusOr<v1::Regression> AddRegression(v1::Regression regression, int64_t now_ms);
  absl::StatusOr<v1::Regression> GetRegression(const std::string& id);
  // Newest first; `statuses` empty = any; `limit` 0 = 100.
  absl::StatusOr<std::vector<v1::Regression>> ListRegressions(
      const std::vector<v1::RegressionStatus>& statuses, uint32_t limit);
  absl::StatusOr<v1::Regression> UpdateRegression(const v1::Regression& regression, int64_t now_ms);
  // Read, change and write in one transaction, so that the worker's note and a user's status
  // never overwrite each other. NOT_FOUND for an unknown id.
  absl::StatusOr<v1::Regression> SetRegressionStatus(const std::string& id,
                                                     v1::RegressionStatus status, int64_t now_ms);
  absl::Status SetRegressionNote(const std::string& id, const std::string& note, int64_t now_ms);
  absl::StatusOr<uint64_t> CountRegressions(v1::RegressionStatus status);

  // --- bisects ---
  // A new bisection's id (its row holds an empty state until SaveBisect).
  absl::StatusOr<std::string> CreateBisect(int64_t now_ms);
  absl::Status SaveBisect(const v1::BisectState& state, int64_t now_ms);
  // SaveBisect, and in the same transaction sets the note of the regression the bisection
  // works for (state.spec().regression_id()) and names the bisection in it: a regression
  // never names a bisection that was not stored, nor misses one that was.
  absl::Status SaveBisectAndNoteRegression(const v1::BisectState& state, const std::string& note,
                                           int64_t now_ms);
  absl::StatusOr<v1::BisectState> GetBisect(const std::string& id);
  // Newest first; `limit` 0 = 100; `running_only` for the ones to resume.
  absl::StatusOr<std::vector<v1::BisectState>> ListBisects(uint32_t limit, bool running_only);

  // --- for tests ---
  // Called with the method's name before each method touches the database; a status other
  // than OK fails the call with it, and nothing is read or written. Unset: no faults.
  using FaultHookForTest = std::function<absl::Status(std::string_view method, bool write)>;
  void SetFaultsForTest(FaultHookForTest hook);
  // Every write fails with `status` (OK: none does), as on a full disk, where reads go on.
  void FailWritesForTest(absl::Status status);

 private:
  explicit NightlyStore(std::unique_ptr<Database> db) : db_(std::move(db)) {}
  absl::Status Fault(std::string_view method, bool write);

  absl::Mutex mu_;
  std::unique_ptr<Database> db_ ABSL_GUARDED_BY(mu_);

  absl::Mutex fault_mu_;
  FaultHookForTest fault_ ABSL_GUARDED_BY(fault_mu_);
};

// Ids of schedules, regressions, series and bisections are decimal row ids; INVALID_ARGUMENT
// naming `field` for anything else.
absl::StatusOr<int64_t> ParseRowId(const std::string& id, const std::string& field);

}  // namespace tlbfleet::store
