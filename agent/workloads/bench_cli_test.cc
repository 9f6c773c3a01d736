#include "agent/workloads/bench_cli.h"

#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tlbfleet::workloads {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::MatchesRegex;
using ::testing::StartsWith;

struct BenchRun {
  int exit_code = 0;
  std::string out;
  std::string err;
};

BenchRun RunBench(std::vector<std::string> args) {
  LinkAllWorkloads();
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);
  BenchRun run;
  ::testing::internal::CaptureStdout();
  ::testing::internal::CaptureStderr();
  run.exit_code = BenchMain(static_cast<int>(args.size()), argv.data());
  run.out = ::testing::internal::GetCapturedStdout();
  run.err = ::testing::internal::GetCapturedStderr();
  return run;
}

std::vector<std::string> Lines(const std::string& s) {
  return absl::StrSplit(s, '\n', absl::SkipEmpty());
}

TEST(MeasurementJsonLineTest, PerThreadFormat) {
  Measurement m{"records_per_sec", "thread0", 1234.5, "records/s", Better::kHigher};
  Params params({{"threads", "2"}, {"mmap", "always"}});
  EXPECT_EQ(MeasurementJsonLine(m, 1, params),
            R"({"metric":"records_per_sec","value":1234.5,"unit":"records/s","better":"higher",)"
            R"("series":"thread0","iteration":1,"param":{"mmap":"always","threads":"2"}})");
}

TEST(MeasurementJsonLineTest, AggregateOmitsSeries) {
  Measurement m{"latency", "", 0.25, "s", Better::kLower};
  EXPECT_EQ(MeasurementJsonLine(m, 3, Params()),
            R"({"metric":"latency","value":0.25,"unit":"s","better":"lower","iteration":3,)"
            R"("param":{}})");
}

TEST(MeasurementJsonLineTest, EscapesStringsAndRejectsNonFiniteNumbers) {
  Measurement m{"m", "a\"b\\c\nd\x01", 1.0 / 0.0, "u", Better::kHigher};
  EXPECT_EQ(
      MeasurementJsonLine(m, 1, Params(std::map<std::string, std::string>{{"k", "tab\there"}})),
      R"({"metric":"m","value":null,"unit":"u","better":"higher",)"
      R"("series":"a\"b\\c\nd\u0001","iteration":1,"param":{"k":"tab\there"}})");
}

TEST(MeasurementJsonLineTest, ValuesRoundTrip) {
  Measurement m{"m", "", 0.1 + 0.2, "u", Better::kHigher};
  EXPECT_THAT(MeasurementJsonLine(m, 1, Params()), HasSubstr(R"("value":0.30000000000000004,)"));
}

// The agent's runner calls BenchMain with its own subcommand name in argv[0].
TEST(BenchMainTest, AgentStyleJsonRun) {
  BenchRun run = RunBench({"run-workload", "ebizzy", "--json", "--set", "threads=2", "--set",
                           "seconds=1", "--set", "chunk_size=4096", "--iterations", "2"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  std::vector<std::string> lines = Lines(run.out);
  ASSERT_EQ(lines.size(), 6u) << run.out;
  const std::string params =
      R"("param":{"chunk_size":"4096","chunks":"10","linear_search":"false","mmap":"always",)"
      R"("own_memcpy":"false","prevent_coalescing":"none","random_size":"false","seconds":"1",)"
      R"("threads":"2","touch_pages":"false"}})";
  EXPECT_THAT(lines[0], AllOf(MatchesRegex(R"(\{"metric":"records_per_sec","value":[0-9.e+]+,)"
                                           R"("unit":"records/s","better":"higher",)"
                                           R"("iteration":1,.*)"),
                              HasSubstr(params)));
  EXPECT_THAT(lines[1], HasSubstr(R"("series":"thread0","iteration":1,)"));
  EXPECT_THAT(lines[2], HasSubstr(R"("series":"thread1","iteration":1,)"));
  EXPECT_THAT(lines[3], HasSubstr(R"("better":"higher","iteration":2,)"));
}

TEST(BenchMainTest, ClassicFlagsAndClassicOutput) {
  BenchRun run = RunBench({"tlbfleet-bench", "ebizzy", "-t", "2", "-S", "1", "-s", "8192", "-mRz"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_THAT(run.out, MatchesRegex("[0-9]+ records/s [0-9]+ [0-9]+\n"));
}

TEST(BenchMainTest, BadParametersExitTwoNamingTheParameter) {
  BenchRun run = RunBench({"tlbfleet-bench", "ebizzy", "-t", "0"});
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_THAT(run.err, HasSubstr("threads: must be an integer in [1, 4096], got \"0\""));
  EXPECT_EQ(run.out, "");

  run = RunBench({"tlbfleet-bench", "ebizzy", "--set", "mmap=sometimes"});
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_THAT(run.err, HasSubstr("mmap: must be one of always|never|auto"));

  run = RunBench({"tlbfleet-bench", "ebizzy", "--set", "foo=1"});
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_THAT(run.err, HasSubstr("foo: unknown parameter for ebizzy"));

  run = RunBench({"tlbfleet-bench", "ebizzy", "--set", "random_size=maybe"});
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_THAT(run.err, HasSubstr("random_size: must be a boolean"));

  run = RunBench({"tlbfleet-bench", "ebizzy", "-m", "-M"});
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_THAT(run.err, HasSubstr("mmap: set twice"));

  run = RunBench({"tlbfleet-bench", "ebizzy", "--set", "threads"});
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_THAT(run.err, HasSubstr("--set: expected name=value"));
}

TEST(BenchMainTest, BadArgumentsExitTwo) {
  BenchRun run = RunBench({"tlbfleet-bench", "nosuch"});
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_THAT(run.err, HasSubstr("unknown workload \"nosuch\" (known: ebizzy"));

  run = RunBench({"tlbfleet-bench", "ebizzy", "--bogus"});
  EXPECT_EQ(run.exit_code, 2);

  run = RunBench({"tlbfleet-bench", "ebizzy", "--iterations", "0"});
  EXPECT_EQ(run.exit_code, 2);

  run = RunBench({"tlbfleet-bench"});
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_THAT(run.err, HasSubstr("--list"));
}

TEST(BenchMainTest, ListAndHelp) {
  BenchRun run = RunBench({"tlbfleet-bench", "--list"});
  EXPECT_EQ(run.exit_code, 0);
  EXPECT_THAT(Lines(run.out), ::testing::Contains("ebizzy"));

  run = RunBench({"tlbfleet-bench", "ebizzy", "--help"});
  EXPECT_EQ(run.exit_code, 0);
  EXPECT_THAT(run.out, AllOf(HasSubstr("-t"), HasSubstr("threads"), HasSubstr("--set")));
}

TEST(BenchMainTest, WorkloadFailureExitsOne) {
  // 1 TiB of chunks: a valid combination, more than this host's RAM.
  BenchRun run =
      RunBench({"tlbfleet-bench", "ebizzy", "-S", "1", "-n", "1048576", "-s", "1048576"});
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_THAT(run.err, StartsWith("tlbfleet-bench: ebizzy failed: RESOURCE_EXHAUSTED"));
  // 1 PiB no host can map: refused before running, as a bad argument.
  run = RunBench({"tlbfleet-bench", "ebizzy", "-S", "1", "-n", "1048576", "-s", "1073741824"});
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_THAT(run.err, HasSubstr("chunks: (chunks=1048576 + threads=1) x chunk_size=1073741824"));
}

}  // namespace
}  // namespace tlbfleet::workloads
