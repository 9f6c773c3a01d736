// Sweeps that depend on the host: `ncpus` expressions and the `topology` policy, expanded on a
// synthetic host of 2 packages x 4 cores x 2 SMT threads = 16 CPUs, one LLC per package and
// one NUMA node per package.

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "controller/scheduler/expand.h"
#include "controller/scheduler/ncpus_expr.h"
#include "controller/scheduler/run_spec.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tlbfleet::scheduler {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::StartsWith;

HostTopology TwoSocketSmt() {
  HostTopology t;
  t.cpus = 16;
  t.cpus_per_core = 2;
  t.cpus_per_llc = 8;
  t.cpus_per_numa_node = 8;
  return t;
}

HostTopology FlatCpus(int64_t n) {
  HostTopology t;
  t.cpus = n;
  return t;
}

int64_t Eval(const std::string& expr, int64_t ncpus) {
  absl::StatusOr<int64_t> v = EvaluateNcpusExpr(expr, ncpus);
  EXPECT_TRUE(v.ok()) << expr << ": " << v.status();
  return v.value_or(-1);
}

TEST(NcpusExprTest, Evaluates) {
  EXPECT_EQ(Eval("2*ncpus", 16), 32);
  EXPECT_EQ(Eval("ncpus/2", 16), 8);
  EXPECT_EQ(Eval("ncpus+1", 16), 17);
  EXPECT_EQ(Eval(" ( ncpus + 1 ) * 2 ", 16), 34);
  EXPECT_EQ(Eval("ncpus-2*3", 16), 10);  // precedence
  EXPECT_EQ(Eval("20-ncpus-2", 16), 2);  // left associative
  EXPECT_EQ(Eval("-ncpus+20", 16), 4);
  EXPECT_EQ(Eval("7/2", 1), 3);  // truncates, like $(( ))
  EXPECT_EQ(Eval("ncpus", 3), 3);
}

TEST(NcpusExprTest, FoldsConstantsAndNotesNcpus) {
  absl::StatusOr<NcpusExpr> constant = ParseNcpusExpr("4*8");
  ASSERT_TRUE(constant.ok());
  EXPECT_FALSE(constant->uses_ncpus);
  EXPECT_EQ(constant->constant, 32);
  absl::StatusOr<NcpusExpr> host = ParseNcpusExpr("2*ncpus");
  ASSERT_TRUE(host.ok());
  EXPECT_TRUE(host->uses_ncpus);
  EXPECT_FALSE(host->constant.has_value());
}

TEST(NcpusExprTest, RefusesBadSyntaxSayingWhere) {
  struct Case {
    std::string expr;
    std::string error;
  };
  for (const Case& c : std::vector<Case>{
           {"2*ncpu", "unknown identifier \"ncpu\" (only ncpus is allowed) at column 3"},
           {"NUMCPUS*2", "unknown identifier \"NUMCPUS\""},
           {"$((ncpus*2))", "unknown identifier \"$\""},
           {"", "empty expression"},
           {"2**ncpus", "unexpected \"*ncpus\" at column 3"},
           {"(ncpus+1", "missing \")\""},
           {"ncpus 2", "unexpected \"2\""},
           {"1.5*ncpus", "unexpected \".5*ncpus\""},
           {"99999999999999999999", "number too large"},
       }) {
    absl::StatusOr<NcpusExpr> parsed = ParseNcpusExpr(c.expr);
    ASSERT_FALSE(parsed.ok()) << c.expr;
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(parsed.status().message()), HasSubstr(c.error)) << c.expr;
  }
}

TEST(NcpusExprTest, ArithmeticErrorsOnTheHost) {
  EXPECT_THAT(std::string(EvaluateNcpusExpr("ncpus/(ncpus-16)", 16).status().message()),
              HasSubstr("division by zero"));
  EXPECT_THAT(std::string(EvaluateNcpusExpr("9223372036854775807+ncpus", 1).status().message()),
              HasSubstr("integer overflow"));
  // A constant that cannot be computed is refused at submit.
  EXPECT_THAT(std::string(ParseNcpusExpr("1/0").status().message()), HasSubstr("division by zero"));
}

TEST(TopologySequenceTest, OneStepPerLevelWithMinAndMax) {
  const HostTopology t = TwoSocketSmt();
  // SMT siblings 2, LLC = NUMA node = 8 (one step), machine 16, 2x 32, 4x 64.
  EXPECT_THAT(TopologySequence(1, 64, t), ElementsAre(1, 2, 8, 16, 32, 64));
  EXPECT_THAT(TopologySequence(1, 16, t), ElementsAre(1, 2, 8, 16));
  EXPECT_THAT(TopologySequence(3, 40, t), ElementsAre(3, 8, 16, 32, 40));
  EXPECT_THAT(TopologySequence(1, 100, t), ElementsAre(1, 2, 8, 16, 32, 64, 100));
  EXPECT_THAT(TopologySequence(8, 8, t), ElementsAre(8));
  EXPECT_THAT(TopologySequence(9, 8, t), ElementsAre());
}

TEST(TopologySequenceTest, LevelsThatDifferAreEachAStep) {
  HostTopology t;  // 4 NUMA nodes of 16 CPUs, LLC of 8, SMT 2: 64 CPUs
  t.cpus = 64;
  t.cpus_per_core = 2;
  t.cpus_per_llc = 8;
  t.cpus_per_numa_node = 16;
  EXPECT_THAT(TopologySequence(1, 256, t), ElementsAre(1, 2, 8, 16, 64, 128, 256));
}

TEST(TopologySequenceTest, UnknownLevelsAreLeftOut) {
  EXPECT_THAT(TopologySequence(1, 32, FlatCpus(8)), ElementsAre(1, 8, 16, 32));
}

v1::RunSpec Parse(const std::string& sweep_line, const std::string& benchmark = "ebizzy") {
  const std::string yaml = "name: t\nbenchmark: " + benchmark + "\nsweep: " + sweep_line +
                           "\narms: [{name: a}, {name: b}]\niterations: 2\n";
  absl::StatusOr<v1::RunSpec> spec = ParseRunSpec(yaml, "t.yaml");
  EXPECT_TRUE(spec.ok()) << spec.status();
  return spec.value_or(v1::RunSpec());
}

std::vector<std::string> ValuesOn(const v1::RunSpec& spec, const HostTopology& t) {
  absl::StatusOr<v1::SweepSpec> sweep = ResolveSweepForHost(spec.sweep(), t);
  EXPECT_TRUE(sweep.ok()) << sweep.status();
  if (!sweep.ok()) return {};
  return SweepValues(*sweep);
}

TEST(HostSweepTest, ExpressionsMakeTheSweepHostDependent) {
  EXPECT_FALSE(SweepDependsOnHost(Parse("{threads: {policy: fib, max: 4*8}}").sweep()));
  EXPECT_TRUE(SweepDependsOnHost(Parse("{threads: {policy: fib, max: 2*ncpus}}").sweep()));
  EXPECT_TRUE(
      SweepDependsOnHost(Parse("{threads: {policy: linear, min: ncpus, max: 64}}").sweep()));
  EXPECT_TRUE(SweepDependsOnHost(Parse("{threads: {policy: topology, max: 64}}").sweep()));
  EXPECT_TRUE(SweepDependsOnHost(Parse("{threads: {values: [1, 4, 64], max: ncpus}}").sweep()));
  EXPECT_FALSE(SweepDependsOnHost(Parse("{threads: [1, 2]}").sweep()));
}

TEST(HostSweepTest, ConstantExpressionsAreFoldedAtSubmit) {
  const v1::RunSpec spec = Parse("{threads: {policy: pow2, min: 2-1, max: 4*8}}");
  EXPECT_EQ(spec.sweep().min(), 1);
  EXPECT_EQ(spec.sweep().max(), 32);
  EXPECT_THAT(SweepValues(spec.sweep()), ElementsAre("1", "2", "4", "8", "16", "32"));
}

TEST(HostSweepTest, FibToTwiceTheCpus) {
  const v1::RunSpec spec = Parse("{threads: {policy: fib, max: 2*ncpus}}");
  EXPECT_EQ(spec.sweep().max_expr(), "2*ncpus");
  EXPECT_THAT(ValuesOn(spec, TwoSocketSmt()),
              ElementsAre("1", "2", "3", "5", "8", "13", "21", "32"));
  EXPECT_THAT(ValuesOn(spec, FlatCpus(4)), ElementsAre("1", "2", "3", "5", "8"));
}

TEST(HostSweepTest, Pow2WithExpressionBounds) {
  const v1::RunSpec spec = Parse("{threads: {policy: pow2, min: ncpus/8, max: ncpus+4}}");
  EXPECT_THAT(ValuesOn(spec, TwoSocketSmt()), ElementsAre("2", "4", "8", "16", "20"));
}

TEST(HostSweepTest, LinearWithExpressionBounds) {
  const v1::RunSpec spec = Parse("{threads: {policy: linear, min: ncpus-2, max: ncpus}}");
  EXPECT_THAT(ValuesOn(spec, TwoSocketSmt()), ElementsAre("14", "15", "16"));
}

TEST(HostSweepTest, TopologyDefaultsToOneToFourTimesTheMachine) {
  const v1::RunSpec spec = Parse("{threads: {policy: topology}}");
  EXPECT_THAT(ValuesOn(spec, TwoSocketSmt()), ElementsAre("1", "2", "8", "16", "32", "64"));
  const v1::RunSpec to_twice = Parse("{threads: {policy: topology, max: 2*ncpus}}");
  EXPECT_THAT(ValuesOn(to_twice, TwoSocketSmt()), ElementsAre("1", "2", "8", "16", "32"));
}

TEST(HostSweepTest, ListCappedByCpus) {
  const v1::RunSpec spec =
      Parse("{groups: {values: [1, 3, 8, 13, 27, 62, 168, 360], max: ncpus}}", "hackbench");
  EXPECT_THAT(ValuesOn(spec, TwoSocketSmt()), ElementsAre("1", "3", "8", "13"));
  EXPECT_THAT(ValuesOn(spec, FlatCpus(1)), ElementsAre("1"));
  EXPECT_THAT(ValuesOn(spec, FlatCpus(400)),
              ElementsAre("1", "3", "8", "13", "27", "62", "168", "360"));
}

TEST(HostSweepTest, ConstantCapFiltersAtSubmit) {
  const v1::RunSpec spec = Parse("{groups: {values: [1, 3, 8, 13], max: 8}}", "hackbench");
  EXPECT_FALSE(SweepDependsOnHost(spec.sweep()));
  EXPECT_THAT(SweepValues(spec.sweep()), ElementsAre("1", "3", "8"));
}

TEST(HostSweepTest, ExpandSlotGivesJobsAndBasis) {
  const v1::RunSpec spec = Parse("{threads: {policy: topology, max: 2*ncpus}}");
  absl::StatusOr<SlotExpansion> slot = ExpandSlotForHost(spec, TwoSocketSmt());
  ASSERT_TRUE(slot.ok()) << slot.status();
  EXPECT_EQ(slot->basis, "threads=1,2,8,16,32");
  ASSERT_EQ(slot->jobs.size(), 2u * 5u * 2u);  // iterations x values x arms
  EXPECT_EQ(slot->jobs[0].param_value, "1");
  EXPECT_EQ(slot->jobs[2].param_value, "2");
  EXPECT_EQ(slot->jobs[0].params.at("threads"), "1");
  EXPECT_EQ(slot->jobs[19].iteration, 2u);
  for (const JobPlan& job : slot->jobs) EXPECT_EQ(job.slot, 0u);
}

TEST(HostSweepTest, HostDependentErrorsNameTheFieldAndTheHost) {
  // ebizzy threads stop at 4096.
  const v1::RunSpec spec = Parse("{threads: {policy: fib, max: 2*ncpus}}");
  absl::StatusOr<SlotExpansion> big = ExpandSlotForHost(spec, FlatCpus(4096));
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(big.status().message()),
              StartsWith("sweep.threads.max: must be an integer in"));
  EXPECT_THAT(std::string(big.status().message()), HasSubstr("\"8192\""));
  EXPECT_THAT(std::string(big.status().message()), HasSubstr("ncpus=4096"));

  const v1::RunSpec inverted = Parse("{threads: {policy: linear, min: ncpus, max: 8}}");
  EXPECT_EQ(ExpandSlotForHost(inverted, TwoSocketSmt()).status().message(),
            "sweep.threads.max: 8 is below min ncpus = 16 on this host (ncpus=16)");

  const v1::RunSpec zero = Parse("{threads: {policy: linear, min: ncpus-16, max: 8}}");
  EXPECT_THAT(std::string(ExpandSlotForHost(zero, TwoSocketSmt()).status().message()),
              StartsWith("sweep.threads.min: ncpus-16 = 0 on this host (ncpus=16); must be in"));

  EXPECT_THAT(std::string(ExpandSlotForHost(spec, HostTopology()).status().message()),
              StartsWith("sweep.threads: depends on the host's CPUs, but the host did not"));
}

TEST(HostSweepTest, TheJobLimitHoldsOnTheHost) {
  const v1::RunSpec spec = Parse("{chunks: {policy: linear, max: ncpus*1000}}");
  ASSERT_TRUE(ExpandSlotForHost(spec, FlatCpus(8)).ok());
  EXPECT_THAT(std::string(ExpandSlotForHost(spec, FlatCpus(1000)).status().message()),
              StartsWith("sweep.chunks: the run would have more than 1000000 jobs (1 hosts x 2 "
                         "iterations x 1 boots x 1000000 sweep values x 2 arms)"));
}

struct BadSweep {
  std::string line;
  std::string error;
};

TEST(HostSweepTest, SubmitRefusesBadExpressionsNamingTheField) {
  for (const BadSweep& c : std::vector<BadSweep>{
           {"{threads: {policy: fib, max: 2*ncpu}}",
            "sweep.threads.max: expected an integer or an expression of ncpus: unknown "
            "identifier \"ncpu\""},
           {"{threads: {policy: fib, min: (ncpus, max: 8}}",
            "sweep.threads.min: expected an integer or an expression of ncpus"},
           {"{threads: {policy: fib, max: 5000}}",
            "sweep.threads.max: must be an integer in [1, 4096], got \"5000\""},
           {"{threads: {policy: topology, min: 0}}",
            "sweep.threads.min: must be an integer in [1, 1000000], got \"0\""},
           {"{threads: {policy: stride, max: 8}}",
            "sweep.threads.policy: unknown policy \"stride\" (known: linear, pow2, fib, topology)"},
           {"{threads: {policy: fib}}", "sweep.threads.max: required"},
           {"{threads: {values: [1, 2], policy: fib}}",
            "sweep.threads.policy: give either values or a policy, not both"},
           {"{threads: {values: [1, 2], min: 1}}", "sweep.threads.min: a list takes no min"},
           {"{threads: {values: [4, 8], max: 2}}", "sweep.threads.max: caps every value"},
           {"{threads: {values: 4, max: ncpus}}", "sweep.threads.values: expected a list"},
           {"{mmap: {policy: topology}}", "sweep.mmap: a topology sweep needs an integer"},
       }) {
    const std::string yaml =
        "name: t\nbenchmark: ebizzy\nsweep: " + c.line + "\narms: [{name: a}]\n";
    absl::StatusOr<v1::RunSpec> spec = ParseRunSpec(yaml, "t.yaml");
    ASSERT_FALSE(spec.ok()) << c.line;
    EXPECT_EQ(spec.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(spec.status().message()), StartsWith(c.error)) << c.line;
  }
}

TEST(HostSweepTest, ValidateChecksExpressionsOfSpecsBuiltElsewhere) {
  v1::RunSpec spec = Parse("{threads: {policy: fib, max: 2*ncpus}}");
  ASSERT_TRUE(ValidateRunSpec(spec).ok());
  spec.mutable_sweep()->set_max_expr("2*cpus");
  EXPECT_THAT(std::string(ValidateRunSpec(spec).message()),
              StartsWith("sweep.threads.max: unknown identifier \"cpus\""));
}

}  // namespace
}  // namespace tlbfleet::scheduler
