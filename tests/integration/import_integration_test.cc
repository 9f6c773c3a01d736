// `tlbfleet import-results` against a real controller: an mmtests results directory becomes a
// finished run that `tlbfleet compare` compares; the same directory again is that run; bad
// input exits 2 naming what is wrong and stores nothing.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "tests/integration/harness.h"

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

}  // namespace
}  // namespace tlbfleet::testing
