#include "controller/cli/import_results_command.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tlbfleet::cli {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(CheckImportRequestSizeTest, UpToTheLimitPassesAboveItNamesSizeLimitAndEachArmsShare) {
  const report::ImportFiles files = {
      {"6.1/iter-0/ebizzy/logs/monitor.txt", std::string(3 << 20, 'x')},
      {"6.6/iter-0/ebizzy/logs/monitor.txt", std::string(1 << 19, 'x')},
  };
  EXPECT_TRUE(CheckImportRequestSize("log", files, kImportRequestLimitBytes).ok());
  const absl::Status above = CheckImportRequestSize("log", files, kImportRequestLimitBytes + 1);
  EXPECT_EQ(above.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(above.message(), HasSubstr("DIR: log: the import is 4194305 bytes (4.0 MiB) as one "
                                         "request; the controller receives at most 4194304 bytes"));
  EXPECT_THAT(above.message(), HasSubstr("nothing was sent or stored"));
  EXPECT_THAT(above.message(), HasSubstr("--arm (6.1: 3.0 MiB, 6.6: 0.5 MiB)"));
  // One arm: --arm would not help, so it is not offered.
  const report::ImportFiles one = {{"6.1/iter-0/ebizzy/logs/monitor.txt", "x"}};
  EXPECT_THAT(CheckImportRequestSize("log", one, size_t{5} << 20).message(),
              Not(HasSubstr("--arm")));
}

}  // namespace
}  // namespace tlbfleet::cli
