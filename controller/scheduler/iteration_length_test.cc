// `seconds: auto` (docs/iteration-length.md): the model's choice, the bounds, the refusals,
// and what the parsed spec records.
#include "controller/scheduler/iteration_length.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "absl/status/status.h"
#include "controller/scheduler/expand.h"
#include "controller/scheduler/run_spec.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tlbfleet::scheduler {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

// What `seconds: auto` chooses for ebizzy within the default bounds, as docs/iteration-length.md
// says (its model: controller/scheduler/iteration_length.cc).
constexpr int64_t kEbizzyAutoSecondsForTest = 2;

IterationLengthModel Model(double a, double b, double c0, double c1 = 0, double rho = 0) {
  return {.workload = "test",
          .param = "seconds",
          .noise_per_second = a,
          .noise_floor = b,
          .startup_seconds = c0,
          .startup_per_second = c1,
          .lag1_per_second = rho,
          .measured = "synthetic"};
}

TEST(IterationLengthTest, ChoosesTheMinimumOfTheModel) {
  // CoV^2 = 0.01 / L + 0.0001, 1 s start-up: L* = sqrt(A c0 / B) = 10 s.
  const IterationLengthModel m = Model(0.01, 0.0001, 1.0);
  EXPECT_EQ(ChooseAutoSeconds(m, {1, 30}), 10);
  // Start-up that grows with the length counts as length: L* = sqrt(A c0 / (B (1 + c1))).
  EXPECT_EQ(ChooseAutoSeconds(Model(0.01, 0.0001, 1.0, 3.0), {1, 30}), 5);
  // Four times the start-up, twice the length.
  EXPECT_EQ(ChooseAutoSeconds(Model(0.01, 0.0001, 4.0), {1, 30}), 20);
  // The continuous optimum 2.5 s: the whole second with the smaller objective.
  const IterationLengthModel half = Model(0.0625, 0.01, 1.0);
  const int64_t chosen = ChooseAutoSeconds(half, {1, 10});
  EXPECT_TRUE(chosen == 2 || chosen == 3);
  EXPECT_LE(VariancePerMachineSecond(half, chosen),
            VariancePerMachineSecond(half, chosen == 2 ? 3 : 2));
}

TEST(IterationLengthTest, BoundsClampTheChoice) {
  const IterationLengthModel m = Model(0.01, 0.0001, 1.0);  // L* = 10
  EXPECT_EQ(ChooseAutoSeconds(m, {1, 5}), 5);
  EXPECT_EQ(ChooseAutoSeconds(m, {12, 20}), 12);
  EXPECT_EQ(ChooseAutoSeconds(m, {7, 7}), 7);
  // No floor: longer is always better, so the upper bound. No start-up: the lower bound.
  EXPECT_EQ(ChooseAutoSeconds(Model(0.01, 0, 1.0), {1, 10}), 10);
  EXPECT_EQ(ChooseAutoSeconds(Model(0.01, 0.0001, 0), {2, 10}), 2);
  // All floor: a longer iteration only costs more time.
  EXPECT_EQ(ChooseAutoSeconds(Model(0, 0.0001, 0), {3, 10}), 3);
}

TEST(IterationLengthTest, AutocorrelationBetweenIterationsCostsPrecision) {
  // Consecutive seconds correlated 0.8: iterations of L s are correlated 0.8^L, and a mean of
  // correlated iterations is worth (1 - r) / (1 + r) of as many independent ones.
  const IterationLengthModel drift = Model(0.01, 0.001, 0.05, 0, 0.8);
  const IterationLengthModel none = Model(0.01, 0.001, 0.05);
  const double r1 = 0.8;
  EXPECT_NEAR(VariancePerMachineSecond(drift, 1),
              VariancePerMachineSecond(none, 1) * (1 + r1) / (1 - r1), 1e-12);
  const double r5 = std::pow(0.8, 5);
  EXPECT_NEAR(VariancePerMachineSecond(drift, 5),
              VariancePerMachineSecond(none, 5) * (1 + r5) / (1 - r5), 1e-12);
  // Without the drift the start-up and floor put the optimum below 1 s (L* = 0.71 s); with it
  // short iterations share the drift and a longer length wins.
  EXPECT_EQ(ChooseAutoSeconds(none, {1, 30}), 1);
  const int64_t chosen = ChooseAutoSeconds(drift, {1, 30});
  EXPECT_GE(chosen, 8);
  for (int64_t l = 1; l <= 30; ++l) {
    EXPECT_LE(VariancePerMachineSecond(drift, chosen), VariancePerMachineSecond(drift, l)) << l;
  }
  // A correlation near 1 is capped at 0.95, as the harness caps a measured r1: finite.
  EXPECT_TRUE(std::isfinite(VariancePerMachineSecond(Model(0.01, 0.001, 0.05, 0, 1.0), 1)));
}

TEST(IterationLengthTest, EbizzyChoosesTheDocumentedLength) {
  const IterationLengthModel* ebizzy = FindIterationLengthModel("ebizzy");
  ASSERT_NE(ebizzy, nullptr);
  EXPECT_EQ(ebizzy->param, "seconds");
  // docs/iteration-length.md, "What auto chooses": these figures and these choices.
  EXPECT_EQ(ChooseAutoSeconds(*ebizzy, {1, 10}), kEbizzyAutoSecondsForTest);
  EXPECT_EQ(ChooseAutoSeconds(*ebizzy, {1, 2}), std::min<int64_t>(2, kEbizzyAutoSecondsForTest));
  EXPECT_EQ(ChooseAutoSeconds(*ebizzy, {8, 20}), std::max<int64_t>(8, kEbizzyAutoSecondsForTest));
  // The continuous optimum (a scan in tenths of a second) is next to the whole-second choice.
  double best = 0.1;
  for (double l = 0.1; l <= 10; l += 0.1) {
    if (VariancePerMachineSecond(*ebizzy, l) < VariancePerMachineSecond(*ebizzy, best)) best = l;
  }
  EXPECT_LE(std::abs(best - kEbizzyAutoSecondsForTest), 1.0) << best;
  // The quiet machine's consecutive seconds are correlated (docs/iteration-length.md): without
  // that term the same noise would choose a shorter length.
  EXPECT_GT(ebizzy->lag1_per_second, 0);
  IterationLengthModel independent = *ebizzy;
  independent.lag1_per_second = 0;
  EXPECT_LT(ChooseAutoSeconds(independent, {1, 10}), kEbizzyAutoSecondsForTest);
  // Workloads without a time parameter, or not measured, have no model.
  EXPECT_EQ(FindIterationLengthModel("pipetest"), nullptr);
  EXPECT_EQ(FindIterationLengthModel("netperf"), nullptr);
}

TEST(IterationLengthTest, ParsesAutoAndItsBounds) {
  absl::StatusOr<AutoBounds> b = ParseAutoBounds("auto", "params.seconds", 1, 86400);
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(b->min, 1);
  EXPECT_EQ(b->max, 10);
  b = ParseAutoBounds("auto:2..8", "params.seconds", 1, 86400);
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(b->min, 2);
  EXPECT_EQ(b->max, 8);
  EXPECT_TRUE(IsAutoValue("auto"));
  EXPECT_TRUE(IsAutoValue("auto:x"));
  EXPECT_FALSE(IsAutoValue("automatic"));
  EXPECT_FALSE(IsAutoValue("10"));
}

void ExpectBadBounds(const std::string& value, const std::string& message) {
  absl::StatusOr<AutoBounds> b = ParseAutoBounds(value, "params.seconds", 1, 86400);
  ASSERT_FALSE(b.ok()) << value;
  EXPECT_EQ(b.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(b.status().message()), StartsWith("params.seconds: ")) << value;
  EXPECT_THAT(std::string(b.status().message()), HasSubstr(message)) << value;
}

TEST(IterationLengthTest, RefusesBadBoundsNamingTheField) {
  ExpectBadBounds("auto:8..2", "LO 8 is above HI 2");
  ExpectBadBounds("auto:0..5", "the bounds must lie in [1, 86400] seconds");
  ExpectBadBounds("auto:1..100000", "the bounds must lie in [1, 86400] seconds");
  ExpectBadBounds("auto:1-5", "expected auto or auto:LO..HI");
  ExpectBadBounds("auto:", "expected auto or auto:LO..HI");
  ExpectBadBounds("auto:1..", "expected auto or auto:LO..HI");
  ExpectBadBounds("auto:-1..5", "expected auto or auto:LO..HI");
  ExpectBadBounds("auto:1.5..5", "expected auto or auto:LO..HI");
  ExpectBadBounds("auto:1..5..9", "expected auto or auto:LO..HI");
}

constexpr char kAutoBase[] = R"(name: auto-run
benchmark: ebizzy
iterations: 3
arms:
  - {name: a, params: {mmap: always}}
  - {name: b, params: {mmap: auto}}
)";

TEST(IterationLengthParseTest, SecondsAutoIsResolvedAndRecorded) {
  absl::StatusOr<v1::RunSpec> spec =
      ParseRunSpec(std::string(kAutoBase) + "params: {seconds: auto, threads: 2}\n", "t.yaml");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->params().at("seconds"), std::to_string(kEbizzyAutoSecondsForTest));
  ASSERT_EQ(spec->auto_params().size(), 1u);
  EXPECT_EQ(spec->auto_params().at("seconds"), "auto:1..10");
  // `auto` of another parameter (ebizzy's mmap) is that parameter's own value, untouched.
  EXPECT_EQ(spec->arms(1).params().at("mmap"), "auto");
  // Every job runs the chosen length.
  for (const JobPlan& job : ExpandRun(*spec)) {
    EXPECT_EQ(job.params.at("seconds"), std::to_string(kEbizzyAutoSecondsForTest));
  }
  // A resolved spec stays valid as it is stored and read back (ExpandSlotForHost validates
  // stored specs again).
  EXPECT_TRUE(ValidateRunSpec(*spec).ok());
}

TEST(IterationLengthParseTest, BoundsOfTheSpecAreKept) {
  absl::StatusOr<v1::RunSpec> spec =
      ParseRunSpec(std::string(kAutoBase) + "params: {seconds: \"auto:12..20\"}\n", "t.yaml");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->params().at("seconds"), "12");
  EXPECT_EQ(spec->auto_params().at("seconds"), "auto:12..20");
  // Unquoted in block style, as docs/iteration-length.md writes it.
  spec = ParseRunSpec(std::string(kAutoBase) + "params:\n  seconds: auto:3..5\n", "t.yaml");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->params().at("seconds"), "3");
  EXPECT_EQ(spec->auto_params().at("seconds"), "auto:3..5");
  spec = ParseRunSpec(std::string(kAutoBase) + "params: {seconds: \"auto:1..1\"}\n", "t.yaml");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->params().at("seconds"), "1");
}

TEST(IterationLengthParseTest, AdaptiveRunsResolveAlike) {
  absl::StatusOr<v1::RunSpec> spec = ParseRunSpec(
      "name: adaptive-auto\nbenchmark: ebizzy\nparams: {seconds: auto}\n"
      "iterations: {min: 3, max: 30, target_ci: 1%}\n"
      "arms: [{name: a}, {name: b, params: {mmap: never}}]\n",
      "t.yaml");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->params().at("seconds"), std::to_string(kEbizzyAutoSecondsForTest));
  EXPECT_EQ(spec->auto_params().at("seconds"), "auto:1..10");
}

TEST(IterationLengthParseTest, WithoutAutoNothingIsRecorded) {
  absl::StatusOr<v1::RunSpec> spec =
      ParseRunSpec(std::string(kAutoBase) + "params: {seconds: 7}\n", "t.yaml");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->params().at("seconds"), "7");
  EXPECT_TRUE(spec->auto_params().empty());
}

// The run spec of docs/iteration-length.md parses, and its auto resolves as the page says.
TEST(IterationLengthParseTest, TheDocumentedExampleResolves) {
  const std::filesystem::path path =
      std::filesystem::path(__FILE__).parent_path() / ".." / ".." / "docs" / "iteration-length.md";
  std::ifstream in(path);
  std::stringstream doc;
  doc << in.rdbuf();
  const std::string text = doc.str();
  ASSERT_FALSE(text.empty()) << path;
  const size_t begin = text.find("```yaml\n");
  ASSERT_NE(begin, std::string::npos);
  const size_t end = text.find("```", begin + 8);
  ASSERT_NE(end, std::string::npos);
  absl::StatusOr<v1::RunSpec> spec =
      ParseRunSpec(text.substr(begin + 8, end - begin - 8), "iteration-length.md");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->params().at("seconds"), std::to_string(kEbizzyAutoSecondsForTest));
  EXPECT_EQ(spec->auto_params().at("seconds"), "auto:1..10");
  // The page's JSON excerpt shows the same choice.
  EXPECT_NE(
      text.find("\"params\": {\"seconds\": \"" + std::to_string(kEbizzyAutoSecondsForTest) + "\""),
      std::string::npos);
}

void ExpectRefused(const std::string& yaml, const std::string& prefix) {
  absl::StatusOr<v1::RunSpec> spec = ParseRunSpec(yaml, "t.yaml");
  ASSERT_FALSE(spec.ok()) << yaml;
  EXPECT_EQ(spec.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(spec.status().message()), StartsWith(prefix)) << yaml;
}

TEST(IterationLengthParseTest, BadInputIsRefusedNamingTheField) {
  ExpectRefused("name: p\nbenchmark: pipetest\nparams: {seconds: auto}\narms: [{name: a}]\n",
                "params.seconds: auto chooses the length of a workload that runs for a time; "
                "pipetest has no seconds parameter (known: loops)");
  ExpectRefused("name: t\nbenchmark: tlbflush\nparams: {seconds: auto}\narms: [{name: a}]\n",
                "params.seconds: auto chooses the length of a workload that runs for a time; "
                "tlbflush has no seconds parameter");
  ExpectRefused("name: n\nbenchmark: netperf\nparams: {seconds: auto}\narms: [{name: a}]\n",
                "params.seconds: auto: no iteration-length model has been measured for netperf");
  ExpectRefused(std::string(kAutoBase) + "params: {seconds: \"auto:9..3\"}\n",
                "params.seconds: \"auto:9..3\": LO 9 is above HI 3");
  ExpectRefused(std::string(kAutoBase) + "params: {seconds: autox}\n", "params.seconds: ");
  ExpectRefused(
      "name: e\nbenchmark: ebizzy\narms:\n  - {name: a}\n  - {name: b, params: {seconds: auto}}\n",
      "arms[1].params.seconds: auto belongs in the run's params");
  // A swept length cannot be chosen too.
  ExpectRefused(std::string(kAutoBase) + "params: {seconds: auto}\nsweep: {seconds: [1, 2]}\n",
                "params.seconds: is the swept parameter");
}

TEST(IterationLengthValidateTest, ARecordWithoutItsValueIsRefused) {
  absl::StatusOr<v1::RunSpec> spec =
      ParseRunSpec(std::string(kAutoBase) + "params: {seconds: auto}\n", "t.yaml");
  ASSERT_TRUE(spec.ok()) << spec.status();
  v1::RunSpec no_value = *spec;
  no_value.mutable_params()->erase("seconds");
  absl::Status s = ValidateRunSpec(no_value);
  EXPECT_THAT(std::string(s.message()),
              StartsWith("auto_params.seconds: records a chosen seconds"));
  v1::RunSpec other = *spec;
  (*other.mutable_auto_params())["threads"] = "auto";
  s = ValidateRunSpec(other);
  EXPECT_THAT(std::string(s.message()),
              StartsWith("auto_params.threads: only seconds can be chosen by the controller"));
  v1::RunSpec bad = *spec;
  (*bad.mutable_auto_params())["seconds"] = "auto:5..1";
  s = ValidateRunSpec(bad);
  EXPECT_THAT(std::string(s.message()), StartsWith("auto_params.seconds: \"auto:5..1\""));
}

}  // namespace
}  // namespace tlbfleet::scheduler
