#include "controller/cli/adaptive_command.h"

#include <unistd.h>

#include <fstream>
#include <sstream>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/clock.h"
#include "controller/cli/app.h"
#include "controller/cli/exit_codes.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tlbfleet::cli {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;

class AdaptiveCliTest : public ::testing::Test {
 protected:
  int Run(std::vector<std::string> args) {
    args.insert(args.begin(), "tlbfleet");
    std::vector<const char*> argv;
    for (const auto& a : args) argv.push_back(a.c_str());
    out_.str("");
    err_.str("");
    return RunCli(static_cast<int>(argv.size()), argv.data(), out_, err_, env_, clock_);
  }

  std::string WriteCsv(const std::string& text) {
    const std::string path =
        absl::StrCat(::testing::TempDir(), "/adaptive_", getpid(), "_", ++files_, ".csv");
    std::ofstream(path) << text;
    return path;
  }

  // 2 arms x 4 boots x 10 iterations, shared boots; "new" is 10 % faster.
  std::string ClearChangeCsv() {
    std::string csv = "arm,boot,param,iteration,metric,value\n";
    const double wiggle[] = {0.4, -0.3, 0.1, -0.5, 0.2, 0.3, -0.1, -0.4, 0.5, 0.0};
    for (int b = 0; b < 4; ++b) {
      for (int i = 0; i < 10; ++i) {
        const double boot = 1 + 0.01 * b;
        absl::StrAppend(&csv, "base,b", b, ",threads=1,", i, ",ops,", 100 * boot + wiggle[i], "\n");
        absl::StrAppend(&csv, "new,b", b, ",threads=1,", i, ",ops,",
                        110 * boot + wiggle[(i + 3) % 10], "\n");
      }
    }
    return csv;
  }

  CliEnvironment env_;
  FakeClock clock_;
  std::ostringstream out_, err_;
  int files_ = 0;
};

TEST_F(AdaptiveCliTest, ReplaysLooksAndPrintsEachRowsVerdictAndUse) {
  const std::string csv = WriteCsv(ClearChangeCsv());
  ASSERT_EQ(Run({"adaptive", "--from-csv", csv, "--boots", "2..4", "--iterations", "10", "--stop",
                 "verdict"}),
            kExitOk)
      << err_.str();
  EXPECT_THAT(out_.str(), HasSubstr("look 1: 2 boots, 10 iterations in the latest, 40 samples"));
  EXPECT_THAT(out_.str(), HasSubstr("sequential verdicts (stop: verdict)"));
  EXPECT_THAT(out_.str(), HasSubstr("ops threads=1, arm new"));
  EXPECT_THAT(out_.str(), HasSubstr("better"));
  EXPECT_THAT(out_.str(), HasSubstr("of 80 samples"));
  ASSERT_EQ(Run({"adaptive", "--from-csv", csv, "--boots", "2..4", "--iterations", "10",
                 "--target-ci", "1%", "--format", "json"}),
            kExitOk)
      << err_.str();
  EXPECT_THAT(out_.str(), HasSubstr("\"stop\":\"precision\""));
  EXPECT_THAT(out_.str(), HasSubstr("\"samples_available\":80"));
}

TEST_F(AdaptiveCliTest, BadOptionsAndFilesExit2NamingTheFlagOrLine) {
  const std::string csv = WriteCsv(ClearChangeCsv());
  EXPECT_EQ(Run({"adaptive", "--from-csv", csv, "--stop", "verdict", "--iterations", "10"}),
            kExitUsage);
  EXPECT_THAT(err_.str(), HasSubstr("tlbfleet: --spending: alpha spending needs a maximum"));
  EXPECT_THAT(out_.str(), IsEmpty());
  EXPECT_EQ(Run({"adaptive", "--from-csv", csv, "--stop", "verdict", "--boots", "2..4", "--level",
                 "1.5"}),
            kExitUsage);
  EXPECT_THAT(err_.str(), HasSubstr("tlbfleet: --level: must be above 0 and below 1"));
  EXPECT_EQ(Run({"adaptive", "--from-csv", csv, "--boots", "4..3"}), kExitUsage);
  EXPECT_THAT(err_.str(), HasSubstr("tlbfleet: --boots: the maximum 3 is below the minimum 4"));
  EXPECT_EQ(Run({"adaptive", "--from-csv", csv, "--boots", "2..4", "--level", "0.9", "--target-ci",
                 "1%"}),
            kExitUsage);
  EXPECT_THAT(err_.str(), HasSubstr("tlbfleet: --level: only for stop: verdict"));
  // A target no replay reaches grows the run past the file's 4 boots per arm.
  EXPECT_EQ(Run({"adaptive", "--from-csv", csv, "--boots", "2..6", "--target-ci", "0.001%"}),
            kExitUsage);
  EXPECT_THAT(err_.str(),
              HasSubstr("--boots 2..6: look 4 asks for 5 boots of every arm; arm \"base\" has 4"));
  const std::string bad = WriteCsv(
      "arm,boot,param,iteration,metric,value\nbase,b0,,0,ops,1\nnew,b0,,0,ops,1\nnew,b0,,0,ops,"
      "2\n");
  EXPECT_EQ(Run({"adaptive", "--from-csv", bad, "--boots", "1..2", "--stop", "verdict"}),
            kExitUsage);
  EXPECT_THAT(err_.str(), HasSubstr(absl::StrCat(bad,
                                                 ": line 4: iteration 0 of boot \"b0\" of "
                                                 "arm \"new\" (ops) is repeated")));
  EXPECT_EQ(Run({"adaptive", "--from-csv", "/nonexistent.csv", "--boots", "1..2"}), kExitUsage);
}

}  // namespace
}  // namespace tlbfleet::cli
