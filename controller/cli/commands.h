#pragma once
// The `tlbfleet` commands, one method each, independent of command-line parsing so tests can
// run them against an in-process fake FleetService. Each returns the process exit code
// (exit_codes.h) and writes results to `out`, progress and errors to `err`.

#include <chrono>
#include <cstdint>
#include <ostream>
#include <string>

#include "common/clock.h"
#include "controller/cli/fleet_client.h"
#include "controller/report/flush_profile.h"
#include "grpcpp/support/status.h"

namespace tlbfleet::cli {

enum class OutputFormat { kText, kJson, kCsv };

struct WaitOptions {
  std::chrono::milliseconds timeout{0};  // 0 = wait for ever
  std::chrono::milliseconds poll_interval{500};
  bool quiet = false;  // no progress and no success line; errors are still printed
  // How long `wait` rides out a controller that stopped answering (restart, network blip)
  // after it has answered once, before giving up with exit code 4.
  std::chrono::milliseconds outage_grace{30000};
};

// The options of `compare` that shape its verdicts (docs/statistics.md); empty = default.
struct CompareFlags {
  std::string baseline;     // arm to compare against; empty = the first
  std::string margin;       // equivalence margin: "1%" or 0.01; in (0, 100 %)
  std::string level;        // confidence level: "95%" or 0.95; in (0, 1)
  std::string pairing;      // auto | boots | iterations | none
  bool unadjusted = false;  // each row on its own p (no Benjamini–Hochberg across rows)
  // Across runs: the other run, and one arm of each ("" = every arm).
  std::string with_run;
  std::string arm;
  std::string with_arm;
  // "" = tlbfleet's table (mmtests 0.15's rows with verdicts); "mmtests" = the rows today's
  // mmtests prints for the run's benchmark (controller/report/mmtests_table.h).
  std::string table;
};

// Not thread-safe. Every referenced object must outlive the Commands.
class Commands {
 public:
  Commands(FleetClient& client, std::ostream& out, std::ostream& err, Clock& clock,
           bool err_is_tty);

  // Reads `file` ("-" = stdin) and submits it. Prints "submitted run 7 (12 jobs)" and then
  // the run id alone on the last line of stdout.
  int Submit(const std::string& file);
  int Runs(uint32_t limit, OutputFormat format);
  int ShowRun(const std::string& run_id, OutputFormat format);
  // Polls the run until it is terminal: 0 succeeded, 1 failed/cancelled, 3 timeout.
  int Wait(const std::string& run_id, const WaitOptions& options);
  int Cancel(const std::string& run_id);
  int Hosts(OutputFormat format);
  int Results(const std::string& run_id, OutputFormat format);
  // A kernel build's whole log (text: the lines; json: the build and its lines).
  int BuildLog(int64_t task_id, OutputFormat format);
  // `flags.baseline` empty = the controller's default (the spec's first arm). Text is the
  // controller's Compare answer (the flags travel in the CompareRequest); JSON and CSV fetch
  // the samples (GetRun, GetResults) and compute the full comparison here, with the code
  // `CompareFromCsv` uses. An invalid flag exits 2 naming it, before any RPC.
  int Compare(const std::string& run_id, const CompareFlags& flags, OutputFormat format);
  // Offline: reads `arm,boot,param,iteration,metric,value` CSV from `file` ("-" = stdin) and
  // prints the full comparison (report/render.h) in `format`. Arms in first-appearance order
  // unless `flags.baseline` moves one to the front. Exit 2 on an unreadable or malformed
  // file, an invalid flag, or a pairing the boots do not allow.
  // The run's flush profile (report/flush_profile.h), arms side by side; `arms` non-empty
  // keeps only those arms (in that order), `param_value` one sweep value. With `flush_sizes`,
  // prints instead the tlbflush `flush_sizes` value replaying the (single) arm's local
  // flushes (docs/workloads/tlbflush.md); more than one arm is a usage error.
  int Profile(const std::string& run_id, const std::vector<std::string>& arms,
              const std::string& param_value, OutputFormat format, bool flush_sizes = false);
  int CompareFromCsv(const std::string& file, const CompareFlags& flags, bool lower_is_better,
                     OutputFormat format);

 private:
  // compare --table mmtests (one run): today's mmtests rows from the run's samples.
  int CompareMmtestsTable(const std::string& run_id, const v1::Report& report);
  // Prints the RPC failure and returns its exit code. `run_id` names the run for NOT_FOUND.
  int RpcFailure(const grpc::Status& status, const std::string& run_id);
  // Prints "tlbfleet: <message>" and returns `code`.
  int Error(int code, const std::string& message);
  int PrintFlushSizes(const std::string& run_id,
                      const std::vector<report::ArmFlushProfile>& profiles);

  FleetClient& client_;
  std::ostream& out_;
  std::ostream& err_;
  Clock& clock_;
  const bool err_is_tty_;
};

}  // namespace tlbfleet::cli
