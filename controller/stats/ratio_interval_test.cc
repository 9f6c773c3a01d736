#include "controller/stats/ratio_interval.h"

#include <cmath>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "controller/stats/bootstrap.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tlbfleet::stats {
namespace {

using ::testing::HasSubstr;

// `boots` boots named prefix0, prefix1, ... of `iterations` values: value = mean * exp(boot
// effect + noise), effects from `rng`.
ArmSamples Arm(Rng* rng, const std::string& prefix, int boots, int iterations, double mean,
               double boot_sd, double iteration_sd) {
  ArmSamples arm;
  for (int b = 0; b < boots; ++b) {
    arm.boot_ids.push_back(prefix + std::to_string(b));
    const double effect = boot_sd * rng->Normal();
    arm.boots.emplace_back();
    arm.iterations.emplace_back();
    for (int i = 0; i < iterations; ++i) {
      arm.boots.back().push_back(mean * std::exp(effect + iteration_sd * rng->Normal()));
      arm.iterations.back().push_back(static_cast<uint32_t>(i + 1));
    }
  }
  return arm;
}

ArmSamples Scaled(ArmSamples arm, double factor) {
  for (auto& boot : arm.boots) {
    for (double& x : boot) x *= factor;
  }
  return arm;
}

RatioTest Tested(const ArmSamples& base, const ArmSamples& other,
                 const RatioTestOptions& options = {}) {
  absl::StatusOr<RatioTest> t = TestRatio(base, other, options);
  EXPECT_TRUE(t.ok()) << t.status();
  return t.ok() ? *t : RatioTest{};
}

TEST(RatioTestTest, TheDesignFollowsWhichBootsTheArmsShare) {
  Rng rng(1);
  const ArmSamples a = Arm(&rng, "s", 4, 3, 100, 0.02, 0.01);
  const ArmSamples b = Arm(&rng, "s", 4, 3, 100, 0.02, 0.01);  // the same boot ids
  const ArmSamples k = Arm(&rng, "k", 4, 3, 100, 0.02, 0.01);  // another kernel's boots
  RatioTest t = Tested(a, b);
  EXPECT_EQ(t.design, Design::kPairedBoots);
  EXPECT_EQ(t.scope, Scope::kAcrossBoots);
  EXPECT_EQ(t.other_units, 4u);
  EXPECT_EQ(*t.df, 3);
  t = Tested(a, k);
  EXPECT_EQ(t.design, Design::kUnpairedBoots);
  EXPECT_EQ(t.scope, Scope::kAcrossBoots);
  EXPECT_EQ(t.shared_boots, 0u);
  // One boot each (shared or not): the iterations are the units, scope within-boot.
  const ArmSamples one_a = Arm(&rng, "s", 1, 6, 100, 0.02, 0.01);
  const ArmSamples one_b = Arm(&rng, "s", 1, 6, 100, 0.02, 0.01);
  t = Tested(one_a, one_b);
  EXPECT_EQ(t.design, Design::kUnpairedIterations);
  EXPECT_EQ(t.scope, Scope::kWithinBoot);
  EXPECT_EQ(t.shared_boots, 1u);
  EXPECT_EQ(t.base_units, 6u);
  // Partly shared: paired on the shared boots, saying which were left out.
  ArmSamples partly = b;
  partly.boot_ids[3] = "x3";
  t = Tested(a, partly);
  EXPECT_EQ(t.design, Design::kPairedBoots);
  EXPECT_EQ(t.other_units, 3u);
  EXPECT_THAT(t.note, HasSubstr("paired on the 3 boots both arms share; left out: s3, x3"));
  // Asked not to pair.
  RatioTestOptions none;
  none.pairing = Pairing::kNone;
  EXPECT_EQ(Tested(a, b, none).design, Design::kUnpairedBoots);
}

TEST(RatioTestTest, PairingTheBootsDoNotAllowIsRefusedNamingTheOption) {
  Rng rng(2);
  const ArmSamples a = Arm(&rng, "a", 3, 3, 100, 0.02, 0.01);
  const ArmSamples k = Arm(&rng, "k", 3, 3, 100, 0.02, 0.01);
  RatioTestOptions boots;
  boots.pairing = Pairing::kBoots;
  absl::StatusOr<RatioTest> t = TestRatio(a, k, boots);
  EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(t.status().message()), testing::StartsWith("pairing: "));
  EXPECT_THAT(std::string(t.status().message()), HasSubstr("share 0 (3 and 3 boots)"));
  RatioTestOptions iterations;
  iterations.pairing = Pairing::kIterations;
  EXPECT_EQ(TestRatio(a, k, iterations).status().code(), absl::StatusCode::kInvalidArgument);
  // One shared boot: pairing by boot is impossible, by iteration index it works.
  const ArmSamples one_a = Arm(&rng, "s", 1, 6, 100, 0, 0.01);
  ArmSamples one_b = Arm(&rng, "s", 1, 5, 100, 0, 0.01);
  EXPECT_EQ(TestRatio(one_a, one_b, boots).status().code(), absl::StatusCode::kInvalidArgument);
  const RatioTest paired = Tested(one_a, one_b, iterations);
  EXPECT_EQ(paired.design, Design::kPairedIterations);
  EXPECT_EQ(paired.other_units, 5u);
  EXPECT_EQ(*paired.df, 4);
  EXPECT_THAT(paired.note, HasSubstr("1 iteration without a partner"));
  // Without iteration numbers there is nothing to pair by.
  one_b.iterations.clear();
  EXPECT_EQ(TestRatio(one_a, one_b, iterations).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParsePairing("boot").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(*ParsePairing("iterations"), Pairing::kIterations);
}

// Independent tools can only check fixed data (fixtures_test.cc); these are the properties a
// ratio test must have on any data.
TEST(RatioTestTest, SwappingTheArmsInvertsTheRatioAndItsInterval) {
  Rng rng(3);
  for (const auto& [prefix_b, boots] : {std::pair{"s", 5}, std::pair{"k", 4}, std::pair{"s", 1}}) {
    const ArmSamples a = Arm(&rng, "s", 5, 4, 100, 0.03, 0.01);
    const ArmSamples b = Arm(&rng, prefix_b, boots, 4, 103, 0.03, 0.01);
    const RatioTest ab = Tested(a, b);
    const RatioTest ba = Tested(b, a);
    EXPECT_NEAR(*ab.ratio * *ba.ratio, 1, 1e-12);
    EXPECT_NEAR(*ab.ci_low * *ba.ci_high, 1, 1e-12);
    EXPECT_NEAR(*ab.ci_high * *ba.ci_low, 1, 1e-12);
    EXPECT_NEAR(*ab.p, *ba.p, 1e-12);
    EXPECT_NEAR(*ab.same_p, *ba.same_p, 1e-9);
  }
}

TEST(RatioTestTest, ScalingBothArmsChangesNothingScalingOneScalesTheRatio) {
  Rng rng(4);
  const ArmSamples a = Arm(&rng, "s", 4, 5, 100, 0.03, 0.01);
  const ArmSamples b = Arm(&rng, "s", 4, 5, 102, 0.03, 0.01);
  const RatioTest t = Tested(a, b);
  const RatioTest both = Tested(Scaled(a, 1000), Scaled(b, 1000));
  EXPECT_NEAR(*both.ratio, *t.ratio, 1e-12);
  EXPECT_NEAR(*both.p, *t.p, 1e-9);
  const RatioTest one = Tested(a, Scaled(b, 2));
  EXPECT_NEAR(*one.ratio, 2 * *t.ratio, 1e-12);
  EXPECT_NEAR(*one.ci_low, 2 * *t.ci_low, 1e-12);
  EXPECT_NEAR(*one.ci_high, 2 * *t.ci_high, 1e-12);
}

TEST(RatioTestTest, IntervalAndPValueAreMonotone) {
  Rng rng(6);
  const ArmSamples a = Arm(&rng, "s", 5, 5, 100, 0.03, 0.01);
  const ArmSamples b = Arm(&rng, "s", 5, 5, 101, 0.03, 0.01);
  const RatioTest t = Tested(a, b);
  double previous = 0;
  for (double level : {0.5, 0.8, 0.9, 0.95, 0.99}) {
    const auto ci = IntervalAt(t, level);
    ASSERT_TRUE(ci.has_value());
    EXPECT_GT(ci->second - ci->first, previous) << level;
    previous = ci->second - ci->first;
  }
  EXPECT_NEAR(IntervalAt(t, 0.95)->first, *t.ci_low, 1e-12);
  // A larger true change gives a smaller p.
  double last_p = 1;
  for (double factor : {1.01, 1.02, 1.04, 1.08}) {
    const double p = *Tested(a, Scaled(b, factor)).p;
    EXPECT_LT(p, last_p) << factor;
    last_p = p;
  }
}

// The interval, p and TOST must never disagree: the (1 - alpha) interval excludes 1 exactly
// when p < alpha; the (1 - 2 alpha) interval lies within the margin exactly when TOST's
// p < alpha.
TEST(RatioTestTest, IntervalPValueAndTostAgree) {
  Rng rng(7);
  int excluded = 0, within = 0;
  for (int k = 0; k < 300; ++k) {
    const bool shared = k % 2 == 0;
    const ArmSamples a = Arm(&rng, "s", 1 + k % 6, 6, 100, 0.003, 0.003);
    const ArmSamples b =
        Arm(&rng, shared ? "s" : "k", 1 + k % 6, 6, 100 * (1 + 0.0002 * (k % 40)), 0.003, 0.003);
    const RatioTest t = Tested(a, b);
    ASSERT_TRUE(t.p.has_value()) << t.why_undefined;
    const bool excludes = *t.ci_low > 1 || *t.ci_high < 1;
    EXPECT_EQ(excludes, *t.p < 0.05) << k;
    const auto ci90 = IntervalAt(t, 0.90);
    const bool inside = ci90->first > 1 / 1.01 && ci90->second < 1.01;
    EXPECT_EQ(inside, *t.same_p < 0.05) << k << " " << ci90->first << " " << ci90->second;
    excluded += excludes;
    within += inside;
  }
  EXPECT_GT(excluded, 10);  // both outcomes occurred, so the equalities were tested
  EXPECT_GT(within, 10);
}

TEST(RatioTestTest, DegenerateData) {
  ArmSamples empty;
  ArmSamples one;
  one.boot_ids = {"s"};
  one.boots = {{5}};
  EXPECT_EQ(Tested(empty, one).why_undefined, "an arm has no samples");
  // One value per arm: the ratio, but no spread to test against.
  const RatioTest single = Tested(one, one);
  EXPECT_DOUBLE_EQ(*single.ratio, 1);
  EXPECT_FALSE(single.p.has_value());
  EXPECT_FALSE(single.why_undefined.empty());
  // Logarithms need positive values.
  ArmSamples zero = one;
  zero.boots = {{0, 1, 2}};
  EXPECT_THAT(Tested(zero, zero).why_undefined, HasSubstr("<= 0"));
  // Identical arms: no spread in the differences, nothing changed, and that is "same".
  ArmSamples flat;
  flat.boot_ids = {"a", "b"};
  flat.boots = {{7, 7}, {7, 7}};
  const RatioTest same = Tested(flat, flat);
  EXPECT_EQ(*same.p, 1);
  EXPECT_EQ(*same.same_p, 0);
  EXPECT_EQ(*same.ci_low, 1);
  EXPECT_THAT(same.note, HasSubstr("no spread"));
}

}  // namespace
}  // namespace tlbfleet::stats
