// Adaptive runs with `stop: verdict` through a real controller and agent on loopback, their
// stored samples exported (`tlbfleet results --format csv`, the one writer of a run's
// samples) into the CSV `compare --from-csv` reads, and replayed by `tlbfleet adaptive
// --from-csv` (report::ReplayAdaptiveCsv: DecideAdaptive and the sequential rule, the
// functions the controller's driver calls): the replay must arrive at the run's stop — the
// same looks, plan, stop reason and samples, and row by row (Run.adaptive_rows) the same
// verdicts and use (issue 22).
//
// The replay takes what the looks ask for (a run that stopped early has only that) and, as
// the driver does, measures no more a (sweep value, arm) whose rows are all decided
// (report::StillMeasured): ReplayOfARunAtItsMaximumArrivesAtItsStop runs a design that goes
// to its maximum, RowsStopOnTheirOwnAndTheReplayArrivesAtTheSameStop one whose rows stop
// alone and early; in both everything must agree.

#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/csv.h"
#include "tests/integration/harness.h"

namespace tlbfleet::testing {
namespace {

using namespace std::chrono_literals;
using google::protobuf::Struct;
using google::protobuf::Value;

// (metric, arm, param as the replay's CSV writes it: "name=value" or "").
using CellKey = std::tuple<std::string, std::string, std::string>;

// The run's samples as the replay's CSV.
struct Exported {
  std::string csv;
  size_t samples = 0;
  std::map<CellKey, size_t> per_cell;
  std::set<std::string> boot_ids;
};

// The results CSV (controller/report/results_csv.h) as the replay's CSV
// (arm,boot,param,iteration,metric,value): per-thread series and samples left out of
// comparisons dropped, as the driver's comparison drops them (ObservationsFromSamples); each
// arm's boots named b0, b1, ... in the order they ran (by their first job id).
absl::Status ExportForReplay(const std::string& results_csv, Exported* out) {
  std::map<std::string, size_t> column;
  struct Row {
    int64_t job_id;
    std::string arm, boot_id, param, iteration, metric, value;
  };
  std::vector<Row> rows;
  absl::Status s = ForEachCsvRecord(
      results_csv, CsvReadOptions{},
      [&](size_t, const std::vector<std::string>& fields) -> absl::Status {
        if (column.empty()) {
          for (size_t i = 0; i < fields.size(); ++i) column[fields[i]] = i;
          for (const char* name : {"job_id", "arm", "param_name", "param_value", "iteration",
                                   "metric", "series", "value", "boot_id", "excluded"}) {
            if (!column.contains(name)) {
              return absl::InvalidArgumentError(absl::StrCat("results CSV lacks ", name));
            }
          }
          return absl::OkStatus();
        }
        auto f = [&](const char* name) { return fields.at(column.at(name)); };
        if (!f("series").empty() || !f("excluded").empty()) return absl::OkStatus();
        const std::string param = f("param_name").empty()
                                      ? f("param_value")
                                      : absl::StrCat(f("param_name"), "=", f("param_value"));
        rows.push_back({std::stoll(f("job_id")), f("arm"), f("boot_id"), param, f("iteration"),
                        f("metric"), f("value")});
        return absl::OkStatus();
      });
  if (!s.ok()) return s;
  std::map<std::pair<std::string, std::string>, int64_t> first_job;  // (arm, boot_id)
  for (const Row& r : rows) {
    auto [it, added] = first_job.emplace(std::make_pair(r.arm, r.boot_id), r.job_id);
    if (!added) it->second = std::min(it->second, r.job_id);
  }
  std::map<std::string, std::vector<std::pair<int64_t, std::string>>> by_arm;
  for (const auto& [key, job] : first_job) by_arm[key.first].emplace_back(job, key.second);
  std::map<std::pair<std::string, std::string>, std::string> boot_name;
  for (auto& [arm, boots] : by_arm) {
    std::sort(boots.begin(), boots.end());
    for (size_t i = 0; i < boots.size(); ++i) {
      boot_name[{arm, boots[i].second}] = absl::StrCat("b", i);
    }
  }
  out->csv = "arm,boot,param,iteration,metric,value\n";
  for (const Row& r : rows) {
    out->csv +=
        CsvRow({r.arm, boot_name[{r.arm, r.boot_id}], r.param, r.iteration, r.metric, r.value});
    ++out->samples;
    out->boot_ids.insert(r.boot_id);
    ++out->per_cell[{r.metric, r.arm, r.param}];
  }
  return absl::OkStatus();
}

const Value& Field(const Struct& s, const std::string& name) {
  static const Value kNull;
  auto it = s.fields().find(name);
  return it == s.fields().end() ? kNull : it->second;
}
double Number(const Struct& s, const std::string& a, const std::string& b) {
  return Field(Field(s, a).struct_value(), b).number_value();
}

std::string ParamOf(const v1::AdaptiveRow& row) {
  return row.param_name().empty() ? row.param_value()
                                  : absl::StrCat(row.param_name(), "=", row.param_value());
}

// The replay's row (JSON) of a stored row; nullptr when there is none.
const Struct* ReplayRowOf(const Struct& replay, const v1::AdaptiveRow& stored) {
  for (const Value& v : Field(replay, "rows").list_value().values()) {
    const Struct& r = v.struct_value();
    if (Field(r, "arm").string_value() == stored.arm() &&
        Field(r, "metric").string_value() == stored.metric() &&
        Field(r, "param").string_value() == ParamOf(stored)) {
      return &r;
    }
  }
  return nullptr;
}

class SequentialReplayIntegrationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    controller_ = std::make_unique<ControllerProcess>(dir_.path());
    ASSERT_GT(controller_->grpc_port(), 0) << controller_->process().Log();
    agent_ = std::make_unique<Process>(
        std::vector<std::string>{BinPath("tlbfleet-agent"), "--controller", controller_->address(),
                                 "--state-dir", dir_.path() + "/agent", "--max-backoff-seconds",
                                 "2"},
        dir_.path() + "/agent.log");
    ASSERT_TRUE(WaitFor([&] { return controller_->ConnectedHosts() == 1; }, 30s)) << Logs();
  }

  std::string Logs() {
    return "--- controller\n" + controller_->process().Log() + "\n--- agent\n" + agent_->Log();
  }

  // Submits `yaml`, waits for the run to succeed and exports its samples.
  void RunToEnd(const std::string& yaml, v1::Run* run, Exported* exported) {
    std::string run_id;
    grpc::Status submitted = controller_->Submit(yaml, &run_id, "it.yaml");
    ASSERT_TRUE(submitted.ok()) << submitted.error_message();
    *run = controller_->WaitForRunEnd(run_id, 240s);
    ASSERT_EQ(run->state(), v1::RUN_STATE_SUCCEEDED) << run->error() << "\n" << Logs();
    ASSERT_FALSE(run->stop_reason().empty());
    std::string results;
    ASSERT_EQ(RunCommand({BinPath("tlbfleet"), "--controller", controller_->address(), "results",
                          run_id, "--format", "csv"},
                         &results),
              0)
        << results;
    ASSERT_TRUE(ExportForReplay(results, exported).ok());
    ASSERT_GT(exported->samples, 0u);
    EXPECT_EQ(exported->boot_ids.size(), 1u);  // one host, one boot: nothing rebooted
  }

  // `tlbfleet adaptive --from-csv` over `exported` with `flags`; its exit code, and its
  // stdout (with stderr) in *out.
  int Replay(const Exported& exported, std::vector<std::string> flags, std::string* out) {
    const std::string path = dir_.path() + "/replay.csv";
    std::ofstream(path) << exported.csv;
    std::vector<std::string> argv = {BinPath("tlbfleet"), "adaptive", "--from-csv", path};
    argv.insert(argv.end(), flags.begin(), flags.end());
    return RunCommand(argv, out, /*merge_stderr=*/true);
  }

  // Everything the run says about its stop, against the replay's JSON.
  void ExpectSameStop(const v1::Run& run, const Exported& exported, const std::string& json) {
    Struct replay;
    ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(json, &replay).ok()) << json;
    const auto& looks = Field(replay, "looks").list_value().values();
    ASSERT_FALSE(looks.empty()) << json;
    const Struct& last = looks.rbegin()->struct_value();
    // One look per decision the driver took: its rounds, then the stop.
    EXPECT_EQ(looks.size(), run.adaptive_rounds() + 1) << json << "\nrun: " << run.stop_reason();
    EXPECT_EQ(Field(last, "action").string_value(), "stop") << json;
    EXPECT_EQ(Field(last, "iterations_per_boot").number_value(), run.iterations_per_boot());
    EXPECT_EQ(Field(last, "boots").number_value(), run.boots());
    // The same stop, word for word (its verdict counts, information and level per row).
    EXPECT_EQ(Field(replay, "stop_reason").string_value(), run.stop_reason()) << json;
    // The driver had every stored sample at its last look; so had the replay.
    EXPECT_EQ(Field(replay, "samples_used").number_value(), exported.samples);
    EXPECT_EQ(Field(replay, "samples_available").number_value(), exported.samples);

    // Row by row: the run's own rows (GetRun) against the replay's.
    const auto& rows = Field(replay, "rows").list_value().values();
    ASSERT_EQ(static_cast<int>(rows.size()), run.adaptive_rows_size()) << json;
    for (const v1::AdaptiveRow& stored : run.adaptive_rows()) {
      const std::string label =
          absl::StrCat(stored.metric(), " ", ParamOf(stored), " ", stored.arm());
      const Struct* r = ReplayRowOf(replay, stored);
      ASSERT_NE(r, nullptr) << label << "\n" << json;
      EXPECT_FALSE(stored.measuring()) << label;  // the run has stopped
      EXPECT_EQ(Field(*r, "decided").bool_value(), stored.decided()) << label;
      if (stored.decided()) {
        EXPECT_EQ(Field(*r, "verdict").string_value(), stored.verdict()) << label;
        // The look that decided it: the driver's round, counted from 1.
        EXPECT_EQ(Field(*r, "decided_look").number_value(), stored.decided_round() + 1) << label;
      } else {
        EXPECT_EQ(stored.verdict(), "") << label;
      }
      EXPECT_EQ(Number(*r, "samples", "baseline"), stored.base_samples()) << label;
      EXPECT_EQ(Number(*r, "samples", "arm"), stored.arm_samples()) << label;
      EXPECT_EQ(Number(*r, "boots", "baseline"), stored.base_boots()) << label;
      EXPECT_EQ(Number(*r, "boots", "arm"), stored.arm_boots()) << label;
      if (stored.has_ratio()) {
        EXPECT_NEAR(Field(*r, "ratio").number_value(), stored.ratio(), 1e-12 * stored.ratio())
            << label;
      }
      EXPECT_NEAR(Field(*r, "look_alpha").number_value(), stored.look_alpha(), 1e-15) << label;
    }
  }

  TempDir dir_;
  std::unique_ptr<ControllerProcess> controller_;
  std::unique_ptr<Process> agent_;
};

// The replay's flags for the runs below: their adaptive options, as a user would type them
// (the replay takes one direction for the whole file: the judged metrics are lower-is-better).
std::vector<std::string> ReplayFlags(const std::string& level, const std::string& margin,
                                     const std::string& baseline,
                                     const std::vector<std::string>& metrics) {
  std::vector<std::string> flags = {"--iterations",     "5..40",  "--stop",   "verdict",
                                    "--level",          level,    "--margin", margin,
                                    "--baseline",       baseline, "--format", "json",
                                    "--lower-is-better"};
  for (const std::string& m : metrics) {
    flags.push_back("--metric");
    flags.push_back(m);
  }
  return flags;
}

TEST_F(SequentialReplayIntegrationTest, ReplayOfARunAtItsMaximumArrivesAtItsStop) {
  // Two arms alike, judged on two metrics: no verdict is due (a false one has a chance of at
  // most 1 - level = 0.1 %, and `same` within 0.1 % is out of reach of this machine's noise),
  // so the run looks at 5 (nothing testable), 10, 20 and 40 iterations and stops at its
  // maximum — the run whose samples the replay can take in full (see the top of the file).
  // 4 MB regions keep a job near 50 ms.
  v1::Run run;
  Exported exported;
  ASSERT_NO_FATAL_FAILURE(RunToEnd(R"(
name: it-sequential
benchmark: tlbflush
params: {region_mb: 4, threads: 1, entries: 16}
iterations: {min: 5, max: 40, metrics: [flush_ns, cost_ns]}
adaptive: {stop: verdict, level: 0.999, margin: 0.1%}
arms:
  - {name: munmap, params: {flush: munmap}}
  - {name: copy,   params: {flush: munmap}}
)",
                                   &run, &exported));
  EXPECT_EQ(run.boots(), 1u);
  EXPECT_EQ(run.iterations_per_boot(), 40u) << run.stop_reason();
  EXPECT_EQ(run.adaptive_rounds(), 3u) << run.stop_reason();  // 5 -> 10 -> 20 -> 40
  ASSERT_EQ(run.adaptive_rows_size(), 2) << run.DebugString();
  for (const auto& [key, n] : exported.per_cell) {
    EXPECT_EQ(n, run.iterations_per_boot()) << std::get<0>(key) << " " << std::get<1>(key);
  }
  std::string json;
  ASSERT_EQ(
      Replay(exported, ReplayFlags("0.999", "0.1%", "munmap", {"flush_ns", "cost_ns"}), &json), 0)
      << json;
  ExpectSameStop(run, exported, json);

  // `tlbfleet run` shows the stop and the rows, as stored.
  std::string shown;
  ASSERT_EQ(
      RunCommand({BinPath("tlbfleet"), "--controller", controller_->address(), "run", run.id()},
                 &shown),
      0)
      << shown;
  EXPECT_NE(shown.find(run.stop_reason()), std::string::npos) << shown;
  EXPECT_NE(shown.find("rows: 0 of 2 decided, 0 measuring"), std::string::npos) << shown;
  EXPECT_NE(shown.find("flush_ns, arm copy"), std::string::npos) << shown;
  EXPECT_NE(shown.find("cost_ns, arm copy"), std::string::npos) << shown;
}

TEST_F(SequentialReplayIntegrationTest, RowsStopOnTheirOwnAndTheReplayArrivesAtTheSameStop) {
  // An arm that differs (256 pages a flush against 1: flush_ns about 5 times, decided early)
  // and a copy of the baseline (no verdict due): the first arm's row stops alone while the
  // copy's goes on.
  v1::Run run;
  Exported exported;
  ASSERT_NO_FATAL_FAILURE(RunToEnd(R"(
name: it-sequential-rows
benchmark: tlbflush
params: {region_mb: 4, threads: 1}
iterations: {min: 5, max: 40, metrics: [flush_ns]}
adaptive: {stop: verdict, level: 0.95, margin: 3%}
arms:
  - {name: one,  params: {entries: 1}}
  - {name: copy, params: {entries: 1}}
  - {name: many, params: {entries: 256}}
)",
                                   &run, &exported));
  ASSERT_EQ(run.adaptive_rows_size(), 2) << run.DebugString();

  // What each row says it used is what the store holds: a row whose arm got no jobs after
  // its decision has exactly the samples it was decided on; a row measured to the stop has
  // the run's iterations; the baseline is measured as long as its longest arm.
  bool stopped_alone = false;
  size_t longest_arm = 0;
  for (const v1::AdaptiveRow& row : run.adaptive_rows()) {
    const std::string label = absl::StrCat(row.metric(), " ", row.arm());
    EXPECT_FALSE(row.measuring()) << label;  // the run has stopped
    const size_t arm = exported.per_cell[{row.metric(), row.arm(), ParamOf(row)}];
    longest_arm = std::max(longest_arm, arm);
    if (row.decided()) {
      EXPECT_FALSE(row.verdict().empty()) << label;
      EXPECT_LE(row.arm_samples(), arm) << label;
    } else {
      EXPECT_EQ(row.verdict(), "") << label;
    }
    if (arm < run.iterations_per_boot()) {
      stopped_alone = true;
      EXPECT_TRUE(row.decided()) << label;  // only a decided row stops alone
      EXPECT_EQ(row.arm_samples(), arm) << label;
      EXPECT_LT(row.decided_round(), run.adaptive_rounds()) << label;
    } else {
      EXPECT_EQ(arm, run.iterations_per_boot()) << label;
    }
  }
  EXPECT_EQ((exported.per_cell[{"flush_ns", "one", ""}]), longest_arm);
  // Five times the flush time is a verdict, however noisy this machine is.
  for (const v1::AdaptiveRow& row : run.adaptive_rows()) {
    if (row.arm() != "many") continue;
    EXPECT_TRUE(row.decided()) << row.reason();
    EXPECT_EQ(row.verdict(), "worse") << row.reason();  // flush_ns: lower is better
  }

  // The many-entries row stops alone in practice (five times the flush time is decided at
  // 10 or 20 iterations); the replay must reach the same stop whether or not it did.
  if (!stopped_alone) std::cout << "no row stopped alone this time: " << run.stop_reason() << "\n";
  std::string json;
  ASSERT_EQ(Replay(exported, ReplayFlags("0.95", "3%", "one", {"flush_ns"}), &json), 0) << json;
  ExpectSameStop(run, exported, json);

  // `tlbfleet compare RUN` reports the sequential verdicts of the judged rows.
  std::string compared;
  ASSERT_EQ(RunCommand({BinPath("tlbfleet"), "--controller", controller_->address(), "compare",
                        run.id(), "--format", "json"},
                       &compared),
            0)
      << compared;
  EXPECT_NE(compared.find("sequential verdict (stop: verdict): worse at look"), std::string::npos)
      << compared;
}

}  // namespace
}  // namespace tlbfleet::testing
