// `tlbfleet import-results` against a real controller: an mmtests results directory becomes a
// finished run that `tlbfleet compare` compares; the same directory again is that run; bad
// input exits 2 naming what is wrong and stores nothing. Imported arms join the series of a
// run a real agent measured (`--series`), and compare spans the two; an import above gRPC's
// message limit is refused whole, saying its size and the limit.

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>

#include "google/protobuf/util/json_util.h"
#include "tests/integration/harness.h"
#include "tlbfleet/v1/nightly.pb.h"

namespace tlbfleet::testing {
namespace {

// mmtests' layout as run-mmtests.sh leaves it: two kernels, ebizzy at 1 and 2 threads, three
// iterations each: 12 totals and 18 per-thread figures.
void WriteMmtestsEbizzy(const std::string& root) {
  std::map<std::string, std::string> files = {
      {"6.1/iter-0/kernel.version", "Linux ivy1 6.1.0-13-amd64 #1 SMP\n"},
      {"6.1/iter-0/tests-timestamp",
       "start :: 1700000000\ntest begin :: ebizzy 1700000010\ntest end :: ebizzy 1700000500 0\n"},
      {"6.6/iter-0/kernel.version", "Linux ivy1 6.6.0 #1 SMP\n"},
      {"6.6/iter-0/tests-timestamp",
       "start :: 1700001000\ntest begin :: ebizzy 1700001010\ntest end :: ebizzy 1700001500 0\n"},
  };
  for (const std::string arm : {"6.1", "6.6"}) {
    const double base = arm == "6.1" ? 3000 : 3300;
    for (int threads : {1, 2}) {
      for (int it = 1; it <= 3; ++it) {
        const double total = base * threads + it * 7;
        std::string line = std::to_string(static_cast<int>(total)) + " records/s";
        for (int t = 0; t < threads; ++t)
          line += " " + std::to_string(static_cast<int>(total) / threads);
        files[arm + "/iter-0/ebizzy/logs/ebizzy-" + std::to_string(threads) + "-" +
              std::to_string(it) + ".log"] = line + "\n";
      }
    }
  }
  for (const auto& [path, content] : files) {
    std::filesystem::create_directories(std::filesystem::path(root + "/" + path).parent_path());
    std::ofstream(root + "/" + path) << content;
  }
}

TEST(ImportIntegrationTest, ImportedMmtestsRunIsComparedAndNotImportedTwice) {
  TempDir dir;
  ControllerProcess controller(dir.path());
  ASSERT_GT(controller.grpc_port(), 0) << controller.process().Log();
  const std::string results = dir.path() + "/mmtests-log";
  WriteMmtestsEbizzy(results);
  const std::string cli = BinPath("tlbfleet");

  std::string out;
  ASSERT_EQ(RunCommand({cli, "--controller", controller.address(), "import-results", "--format",
                        "mmtests", results},
                       &out, true),
            0)
      << out;
  EXPECT_NE(out.find("imported 30 samples of ebizzy (6.1, 6.6)"), std::string::npos) << out;
  const std::string run_id =
      std::to_string(QueryInt(controller.db_path(), "SELECT MAX(id) FROM runs"));
  const v1::Run run = controller.GetRun(run_id);
  EXPECT_EQ(run.state(), v1::RUN_STATE_SUCCEEDED);
  EXPECT_EQ(run.created_unix(), 1700000000);
  EXPECT_EQ(run.finished_unix(), 1700001500);

  // compare over it, as over a run of our own.
  ASSERT_EQ(RunCommand({cli, "--controller", controller.address(), "compare", run_id}, &out, true),
            0)
      << out;
  EXPECT_NE(out.find("6.6"), std::string::npos) << out;
  EXPECT_NE(out.find("records_per_sec"), std::string::npos) << out;

  // The same directory, copied elsewhere: the same run, nothing stored.
  const std::string copy = dir.path() + "/copy";
  std::filesystem::copy(results, copy, std::filesystem::copy_options::recursive);
  ASSERT_EQ(RunCommand({cli, "--controller", controller.address(), "import-results", "--format",
                        "mmtests", copy},
                       &out, true),
            0)
      << out;
  EXPECT_NE(out.find("already imported as run " + run_id), std::string::npos) << out;
  EXPECT_EQ(QueryInt(controller.db_path(), "SELECT COUNT(*) FROM runs"), 1);

  // Bad input: exit 2 naming the file and line, nothing stored.
  std::ofstream(copy + "/6.6/iter-0/ebizzy/logs/ebizzy-2-3.log") << "x\nfast records/s 1\n";
  ASSERT_EQ(RunCommand({cli, "--controller", controller.address(), "import-results", "--format",
                        "mmtests", copy},
                       &out, true),
            2)
      << out;
  EXPECT_NE(out.find("6.6/iter-0/ebizzy/logs/ebizzy-2-3.log:2:"), std::string::npos) << out;
  ASSERT_EQ(RunCommand({cli, "--controller", controller.address(), "import-results", "--format",
                        "lkp", results},
                       &out, true),
            2)
      << out;
  EXPECT_NE(out.find("not an LKP result root"), std::string::npos) << out;
  EXPECT_EQ(QueryInt(controller.db_path(), "SELECT COUNT(*) FROM runs"), 1);
}

using namespace std::chrono_literals;

// `text` with every run of spaces made one: table rows compared without their column widths.
std::string Squeezed(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == ' ' && !out.empty() && out.back() == ' ') continue;
    out += c;
  }
  return out;
}

// `tlbfleet series --benchmark ebizzy --format json`, parsed; an empty list when it fails.
v1::ListSeriesResponse EbizzySeries(const std::string& cli, const std::string& address) {
  std::string out;
  v1::ListSeriesResponse list;
  if (RunCommand(
          {cli, "--controller", address, "series", "--benchmark", "ebizzy", "--format", "json"},
          &out) != 0) {
    return list;
  }
  if (!google::protobuf::util::JsonStringToMessage(out, &list).ok()) list.Clear();
  return list;
}

const v1::Series* SeriesOf(const v1::ListSeriesResponse& list, const std::string& param,
                           const std::string& run_id) {
  for (const v1::Series& s : list.series()) {
    if (s.key().param() != param || s.key().metric() != "records_per_sec") continue;
    for (const v1::SeriesPoint& p : s.points()) {
      if (p.run_id() == run_id) return &s;
    }
  }
  return nullptr;
}

// The issue's check: last year's mmtests results of two kernels and this week's run of ours
// on the same machine class, one series, compared across the runs.
TEST(ImportIntegrationTest, ImportedMmtestsArmsJoinTheSeriesOfARunOfOursAndCompareSpansThem) {
  TempDir dir;
  ControllerProcess controller(dir.path());
  ASSERT_GT(controller.grpc_port(), 0) << controller.process().Log();
  Process agent({BinPath("tlbfleet-agent"), "--controller", controller.address(), "--state-dir",
                 dir.path() + "/agent", "--max-backoff-seconds", "2"},
                dir.path() + "/agent.log");
  ASSERT_TRUE(WaitFor([&] { return controller.ConnectedHosts() == 1; }, 30s)) << agent.Log();
  std::string ours;
  grpc::Status submitted = controller.Submit(R"(
name: it-series-ebizzy
benchmark: ebizzy
params: {seconds: 1}
sweep: {threads: [1, 2]}
iterations: 3
arms: [{name: "6.12"}]
)",
                                             &ours);
  ASSERT_TRUE(submitted.ok()) << submitted.error_message();
  const v1::Run run = controller.WaitForRunEnd(ours, 180s);
  ASSERT_EQ(run.state(), v1::RUN_STATE_SUCCEEDED) << run.error() << agent.Log();

  // The nightly unit appends a finished run's points on its own thread.
  const std::string cli = BinPath("tlbfleet");
  v1::ListSeriesResponse list;
  ASSERT_TRUE(WaitFor(
      [&] {
        list = EbizzySeries(cli, controller.address());
        return SeriesOf(list, "threads=1", ours) != nullptr &&
               SeriesOf(list, "threads=2", ours) != nullptr;
      },
      30s))
      << list.DebugString() << controller.process().Log();
  const v1::Series one = *SeriesOf(list, "threads=1", ours);
  const v1::Series two = *SeriesOf(list, "threads=2", ours);
  EXPECT_EQ(one.key().config(), "seconds=1");
  ASSERT_EQ(one.points_size(), 1);

  // Each kernel of the mmtests directory joins series `one` as a run of its own.
  const std::string results = dir.path() + "/mmtests-log";
  WriteMmtestsEbizzy(results);
  std::map<std::string, std::string> imported;  // arm -> run
  for (const std::string arm : {"6.1", "6.6"}) {
    std::string out;
    ASSERT_EQ(RunCommand({cli, "--controller", controller.address(), "import-results", "--format",
                          "mmtests", "--arm", arm, "--series", one.id(), results},
                         &out, true),
              0)
        << out;
    EXPECT_NE(out.find("imported 15 samples of ebizzy (" + arm + ")"), std::string::npos) << out;
    EXPECT_NE(out.find("joined series " + one.id() + ": microarch \"" + one.key().microarch()),
              std::string::npos)
        << out;
    imported[arm] = std::to_string(QueryInt(controller.db_path(), "SELECT MAX(id) FROM runs"));
    // The run says what was declared rather than recorded.
    const auto rows =
        QueryRows(controller.db_path(), "SELECT spec_yaml FROM runs WHERE id = " + imported[arm]);
    ASSERT_EQ(rows.size(), 1u);
    EXPECT_NE(rows[0][0].find("declared at import (--series)"), std::string::npos) << rows[0][0];
  }

  // One series each for threads=1 and threads=2: the two kernels of 2023 first, ours last.
  ASSERT_TRUE(WaitFor(
      [&] {
        list = EbizzySeries(cli, controller.address());
        const v1::Series* s1 = SeriesOf(list, "threads=1", imported["6.6"]);
        const v1::Series* s2 = SeriesOf(list, "threads=2", imported["6.6"]);
        return s1 != nullptr && s2 != nullptr && s1->points_size() == 3 && s2->points_size() == 3;
      },
      30s))
      << list.DebugString();
  for (const v1::Series* s :
       {SeriesOf(list, "threads=1", ours), SeriesOf(list, "threads=2", ours)}) {
    ASSERT_NE(s, nullptr);
    EXPECT_TRUE(s->id() == one.id() || s->id() == two.id());
    ASSERT_EQ(s->points_size(), 3);
    EXPECT_EQ(s->points(0).run_id(), imported["6.1"]);
    EXPECT_EQ(s->points(0).finished_unix_ms(), int64_t{1700000500} * 1000);
    EXPECT_EQ(s->points(0).kernel_release(), "6.1.0-13-amd64");
    EXPECT_EQ(s->points(0).boot_ids_size(), 0);  // mmtests does not record boots
    EXPECT_EQ(s->points(1).run_id(), imported["6.6"]);
    EXPECT_EQ(s->points(1).kernel_release(), "6.6.0");
    EXPECT_EQ(s->points(2).run_id(), ours);
  }
  // threads=1 of 6.1: 3007, 3014, 3021 records/s.
  EXPECT_DOUBLE_EQ(SeriesOf(list, "threads=1", ours)->points(0).estimate(), 3014);
  // Nothing else was made of them: no series of an unknown machine.
  for (const v1::Series& s : list.series()) {
    EXPECT_TRUE(s.id() == one.id() || s.id() == two.id() || s.key().param().empty() ||
                s.key().metric() != "records_per_sec")
        << s.DebugString();
  }

  // compare across the imported kernel and our run: the ordinary comparison, row per arm.
  std::string out;
  ASSERT_EQ(RunCommand({cli, "--controller", controller.address(), "compare", imported["6.1"],
                        "--with", ours},
                       &out, true),
            0)
      << out;
  EXPECT_NE(out.find(imported["6.1"] + ":6.1"), std::string::npos) << out;
  EXPECT_NE(out.find(ours + ":6.12"), std::string::npos) << out;
  EXPECT_NE(out.find("records_per_sec"), std::string::npos) << out;
  EXPECT_NE(out.find("threads=2"), std::string::npos) << out;
  EXPECT_NE(out.find("across runs"), std::string::npos) << out;
  // The rows of the imported kernel are mmtests' own numbers (threads=1: 3007, 3014, 3021;
  // threads=2: 6007, 6014, 6021), the baseline of the run of ours.
  const std::string rows = Squeezed(out);
  for (const std::string row :
       {"records_per_sec (records/s, higher is better)", "Min threads=1 3007.00 ( 0.00%)",
        "Hmean threads=1 3013.99 ( 0.00%)", "Max threads=1 3021.00 ( 0.00%)",
        "Min threads=2 6007.00 ( 0.00%)", "Max threads=2 6021.00 ( 0.00%)",
        "BAmean-95 threads=2 6017.50 ( 0.00%)"}) {
    EXPECT_NE(rows.find(row), std::string::npos) << row << "\n" << out;
  }
  EXPECT_NE(rows.find("threads=1 " + imported["6.1"] + ":6.1 baseline"), std::string::npos) << out;
  EXPECT_NE(rows.find("threads=1 " + ours + ":6.12 "), std::string::npos) << out;
  ASSERT_EQ(RunCommand({cli, "--controller", controller.address(), "compare", imported["6.1"],
                        "--with", ours, "--format", "csv"},
                       &out, true),
            0)
      << out;
  EXPECT_NE(out.find(imported["6.1"] + ":6.1"), std::string::npos) << out;

  // The join cannot hold for both arms at once, nor for a series that is not there.
  ASSERT_EQ(RunCommand({cli, "--controller", controller.address(), "import-results", "--format",
                        "mmtests", "--series", one.id(), results},
                       &out, true),
            2)
      << out;
  EXPECT_NE(out.find("2 arms (6.1, 6.6)"), std::string::npos) << out;
  ASSERT_EQ(RunCommand({cli, "--controller", controller.address(), "import-results", "--format",
                        "mmtests", "--arm", "6.1", "--series", "999", results},
                       &out, true),
            2)
      << out;
  EXPECT_NE(out.find("--series: the controller has no series 999"), std::string::npos) << out;
  EXPECT_EQ(QueryInt(controller.db_path(), "SELECT COUNT(*) FROM runs"), 3);
}

// gRPC's 4 MiB message limit: a request of exactly 4 MiB reaches the importer, one byte more
// does not; the CLI refuses a larger directory before sending it, naming both sizes.
TEST(ImportIntegrationTest, AnImportAboveTheMessageLimitIsRefusedWholeNamingSizeAndLimit) {
  TempDir dir;
  ControllerProcess controller(dir.path());
  ASSERT_GT(controller.grpc_port(), 0) << controller.process().Log();
  constexpr size_t kLimit = size_t{4} << 20;
  auto request_of_size = [](size_t bytes) {
    v1::ImportResultsRequest request;
    request.set_format("mmtests");
    request.set_source("big");
    v1::ImportResultsRequest::File* f = request.add_files();
    f->set_path("big");  // not an mmtests layout: refused by the importer
    f->set_content(std::string(bytes, 'x'));
    while (request.ByteSizeLong() != bytes) {  // the length prefixes grow with the content
      const size_t now = request.ByteSizeLong();
      f->mutable_content()->resize(f->content().size() + bytes - now);
    }
    return request;
  };
  auto send = [&](const v1::ImportResultsRequest& request) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + 30s);
    v1::ImportResultsResponse response;
    return controller.fleet().ImportResults(&ctx, request, &response);
  };
  const grpc::Status at_limit = send(request_of_size(kLimit));
  EXPECT_EQ(at_limit.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << at_limit.error_message();
  const grpc::Status above = send(request_of_size(kLimit + 1));
  EXPECT_EQ(above.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << above.error_message();

  // Two arms of 2.5 MiB of logs each: 5 MiB in one request.
  const std::string results = dir.path() + "/mmtests-log";
  WriteMmtestsEbizzy(results);
  for (const std::string arm : {"6.1", "6.6"}) {
    std::ofstream(results + "/" + arm + "/iter-0/ebizzy/logs/monitor-vmstat.txt")
        << std::string(size_t{5} << 19, 'x');
  }
  std::string out;
  ASSERT_EQ(RunCommand({BinPath("tlbfleet"), "--controller", controller.address(), "import-results",
                        "--format", "mmtests", results},
                       &out, true),
            2)
      << out;
  EXPECT_NE(out.find("as one request; the controller receives at most 4194304 bytes (4.0 MiB"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("nothing was sent or stored"), std::string::npos) << out;
  EXPECT_NE(out.find("--arm (6.1: 2.5 MiB, 6.6: 2.5 MiB)"), std::string::npos) << out;
  EXPECT_EQ(QueryInt(controller.db_path(), "SELECT COUNT(*) FROM runs"), 0);
  // One arm fits.
  ASSERT_EQ(RunCommand({BinPath("tlbfleet"), "--controller", controller.address(), "import-results",
                        "--format", "mmtests", "--arm", "6.1", results},
                       &out, true),
            0)
      << out;
  EXPECT_EQ(QueryInt(controller.db_path(), "SELECT COUNT(*) FROM runs"), 1);
}

}  // namespace
}  // namespace tlbfleet::testing
