#pragma once
// Pure formatting for the `tlbfleet` CLI: text tables, CSV, protobuf JSON. No I/O, no gRPC
// calls, so every output shape is unit-tested (format_test.cc).

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "controller/report/results_csv.h"
#include "google/protobuf/message.h"
#include "tlbfleet/v1/fleet.pb.h"

namespace tlbfleet::cli {

// The samples CSV and its helpers live with the report (the HTTP API serves the same bytes);
// CsvEscape and CsvRow are common/csv.h's.
using report::BetterName;
using report::FormatDouble;
using report::FormatResultsCsv;
using report::ResultsCsvHeader;
using report::ResultsCsvRow;

// A plain-text table: a header row and data rows, columns padded to their widest cell and
// separated by two spaces. Trailing spaces are trimmed. Not thread-safe.
class TextTable {
 public:
  enum class Align { kLeft, kRight };

  // One header per column; every row added later must have the same number of cells.
  explicit TextTable(std::vector<std::string> headers);

  // Default: every column left-aligned.
  void SetAlign(size_t column, Align align);
  void AddRow(std::vector<std::string> cells);
  // Rows end with '\n'. With no rows, only the header line is printed.
  std::string Render() const;

 private:
  std::vector<std::string> headers_;
  std::vector<Align> align_;
  std::vector<std::vector<std::string>> rows_;
};

// UTC, RFC 3339: "2026-11-29T22:50:01Z"; "-" for 0 (never set).
std::string FormatUnixTime(int64_t unix_seconds);

// "queued", "running", "succeeded", "failed", "cancelled", "unspecified".
std::string RunStateName(tlbfleet::v1::RunState state);
// succeeded + failed + cancelled: jobs that will not run again.
uint32_t JobsDone(const tlbfleet::v1::JobCounts& jobs);

// The `runs` table: ID NAME BENCHMARK STATE JOBS CREATED (JOBS = done/total).
std::string FormatRunsTable(const tlbfleet::v1::ListRunsResponse& runs);
// The `run` details: one "key: value" line per field, error last when present; an adaptive
// run with stop: verdict adds its options ("stop:") and ends with its rows' table.
std::string FormatRunDetails(const tlbfleet::v1::Run& run);

// "flush_ns entries=64, arm madvise": a row of an adaptive run with stop: verdict.
std::string AdaptiveRowLabel(const tlbfleet::v1::AdaptiveRow& row);
// The rows of an adaptive run with stop: verdict (Run.adaptive_rows), under a line counting
// the decided and measuring ones: ROW STATE (measuring or stopped) VERDICT ("-" while open)
// BOOTS B/A and SAMPLES B/A (what the row used per arm, baseline/arm: at its decision, or so
// far) RATIO (arm/baseline at its decision) P (the verdict test's) WHY (the controller's
// sentence). "" when the run has no such rows. FormatRunDetails ends with it.
std::string FormatAdaptiveRows(const tlbfleet::v1::Run& run);

// The CEILING cell of the hosts table: the value when the ceiling is writable,
// "locked: <reason>" when it is not, "-" when the agent has not said.
std::string CeilingCell(const tlbfleet::v1::CeilingInfo& ceiling);
// The first 8 characters of an agent id (enough to tell agents apart on screen).
std::string ShortAgentId(const std::string& agent_id);
// The `hosts` table: HOSTNAME AGENT MICROARCH CPUS KERNEL CEILING CONNECTED LEASE (and
// REBOOTS, NETSERVER, BOOT ENTRY when a host has them), then each host's boot entries with
// what they are expected to boot.
std::string FormatHostsTable(const tlbfleet::v1::ListHostsResponse& hosts);

// Protobuf's JSON mapping, pretty-printed, proto field names (snake_case), default-valued
// fields included so scripts can rely on every key. Ends with '\n'. On a serialisation
// error (not expected for our messages) returns a JSON object {"error": "..."}.
std::string ToJson(const google::protobuf::Message& message);

// Makes sure text printed to a terminal ends with exactly one newline ("" stays "").
std::string WithTrailingNewline(std::string text);

}  // namespace tlbfleet::cli
