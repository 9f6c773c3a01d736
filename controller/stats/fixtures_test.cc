// Compares every statistic with the values scipy, statsmodels and R computed for the data
// sets in tests/fixtures/stats/cases.txt (written by tests/fixtures/stats/generate.py).
// Closed forms must agree to 1e-9 relative; bootstrap interval ends (Monte Carlo, another
// generator) to kPercentileTolerance / kBcaTolerance of the reference interval's width.

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "controller/stats/boots.h"
#include "controller/stats/bootstrap.h"
#include "controller/stats/multiplicity.h"
#include "controller/stats/ratio_interval.h"
#include "controller/stats/summary.h"
#include "controller/stats/two_sample.h"
#include "gtest/gtest.h"

namespace tlbfleet::stats {
namespace {

constexpr double kRelative = 1e-9;
constexpr double kPercentileTolerance = 0.05;  // of the reference interval's width
constexpr double kBcaTolerance = 0.08;

struct Case {
  std::string name;
  Direction direction = Direction::kHigherIsBetter;
  bool shared = false;  // both arms measured in boots 0..B-1 (else distinct boots)
  std::vector<double> base, other;
  std::vector<int> base_boots, other_boots;
  std::vector<double> pvalues;
  std::string advice_design;  // "paired" or "unpaired"
  std::vector<double> advice_components;
  std::map<std::string, double> expect;
  std::map<std::string, std::vector<double>> expect_list;
  std::map<std::string, std::string> source;
};

std::filesystem::path FixturePath() {
  // This file is controller/stats/fixtures_test.cc; the fixtures live under tests/.
  return std::filesystem::path(__FILE__).parent_path().parent_path().parent_path() / "tests" /
         "fixtures" / "stats" / "cases.txt";
}

std::vector<Case> LoadCases() {
  std::ifstream in(FixturePath());
  std::vector<Case> cases;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream words(line);
    std::string key;
    words >> key;
    if (key == "case") {
      cases.emplace_back();
      words >> cases.back().name;
      continue;
    }
    Case& c = cases.back();
    if (key == "direction") {
      std::string d;
      words >> d;
      c.direction = d == "lower" ? Direction::kLowerIsBetter : Direction::kHigherIsBetter;
    } else if (key == "base" || key == "other") {
      std::vector<double>& v = key == "base" ? c.base : c.other;
      for (double x; words >> x;) v.push_back(x);
    } else if (key == "base_boots" || key == "other_boots") {
      std::vector<int>& v = key == "base_boots" ? c.base_boots : c.other_boots;
      for (int x; words >> x;) v.push_back(x);
    } else if (key == "expect") {
      std::string name;
      double value;
      words >> name >> value;
      c.expect[name] = value;
    } else if (key == "shared") {
      c.shared = true;
    } else if (key == "pvalues") {
      for (double x; words >> x;) c.pvalues.push_back(x);
    } else if (key == "advice") {
      words >> c.advice_design;
      for (double x; words >> x;) c.advice_components.push_back(x);
    } else if (key == "expect_list") {
      std::string name;
      words >> name;
      for (double x; words >> x;) c.expect_list[name].push_back(x);
    } else if (key == "source") {
      std::string name, value;
      words >> name >> value;
      c.source[name] = value;
    }
  }
  return cases;
}

BootGroups Group(const std::vector<double>& values, const std::vector<int>& boots) {
  BootGroups groups;
  for (size_t i = 0; i < values.size(); ++i) {
    if (static_cast<size_t>(boots[i]) >= groups.size()) groups.resize(boots[i] + 1);
    groups[boots[i]].push_back(values[i]);
  }
  return groups;
}

// The arm's samples with boot ids: "s<i>" when the arms share boots, else "<arm><i>".
ArmSamples Samples(const std::vector<double>& values, const std::vector<int>& boots,
                   const std::string& arm, bool shared) {
  ArmSamples samples;
  samples.boots = Group(values, boots);
  for (size_t b = 0; b < samples.boots.size(); ++b) {
    samples.boot_ids.push_back((shared ? "s" : arm) + std::to_string(b));
  }
  return samples;
}

// The data-set cases (not the p-value lists or advice cases).
bool HasData(const Case& c) { return !c.base.empty() && !c.other.empty(); }

void ExpectRelative(const Case& c, const std::string& key, const std::optional<double>& got) {
  auto it = c.expect.find(key);
  if (it == c.expect.end()) {
    EXPECT_FALSE(got.has_value()) << c.name << " " << key << ": reference undefined, got "
                                  << got.value_or(0);
    return;
  }
  ASSERT_TRUE(got.has_value()) << c.name << " " << key << " undefined";
  const double want = it->second;
  EXPECT_LE(std::fabs(*got - want), kRelative * std::max(std::fabs(want), 1e-300))
      << c.name << " " << key << ": got " << *got << ", want " << want;
}

void ExpectWithin(const Case& c, const std::string& key, const std::optional<double>& got,
                  double tolerance) {
  ASSERT_TRUE(got.has_value()) << c.name << " " << key;
  EXPECT_NEAR(*got, c.expect.at(key), tolerance) << c.name << " " << key;
}

class FixturesTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { cases_ = new std::vector<Case>(LoadCases()); }
  static void TearDownTestSuite() { delete cases_; }
  static std::vector<Case>* cases_;
};
std::vector<Case>* FixturesTest::cases_ = nullptr;

TEST_F(FixturesTest, FileHasTheDataSetsTheIssueAsksFor) {
  ASSERT_GE(cases_->size(), 8u) << FixturePath();
  std::vector<std::string> names;
  for (const Case& c : *cases_) names.push_back(c.name);
  for (const char* want :
       {"normal_n2", "normal_n5", "lognormal_n30", "heavy_ties_n20", "normal_n1000",
        "boots_normal_10x20", "paired_boots_5x5", "one_boot_against_four"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), want), names.end()) << want;
  }
}

TEST_F(FixturesTest, SummariesMatchNumpyAndScipy) {
  for (const Case& c : *cases_) {
    if (!HasData(c)) continue;
    for (const auto& [prefix, values] :
         {std::pair{std::string("base"), &c.base}, std::pair{std::string("other"), &c.other}}) {
      const Summary s = Summarize(*values, c.direction);
      ExpectRelative(c, prefix + "_min", s.min);
      ExpectRelative(c, prefix + "_max", s.max);
      ExpectRelative(c, prefix + "_amean", s.amean);
      ExpectRelative(c, prefix + "_hmean", s.hmean);
      ExpectRelative(c, prefix + "_gmean", s.gmean);
      ExpectRelative(c, prefix + "_stddev", s.stddev);
      ExpectRelative(c, prefix + "_coeffvar", s.coeffvar);
      ExpectRelative(c, prefix + "_bamean95", s.bamean95);
      ExpectRelative(c, prefix + "_bamean99", s.bamean99);
    }
  }
}

TEST_F(FixturesTest, WelchMatchesScipyAndR) {
  for (const Case& c : *cases_) {
    if (!HasData(c)) continue;
    const WelchResult w = WelchTest(c.base, c.other);
    ExpectRelative(c, "welch_t", w.t);
    ExpectRelative(c, "welch_df", w.df);
    ExpectRelative(c, "welch_p", w.p);
  }
}

TEST_F(FixturesTest, MannWhitneyMatchesScipy) {
  for (const Case& c : *cases_) {
    if (!HasData(c)) continue;
    const MannWhitneyResult m = MannWhitneyU(c.base, c.other);
    ExpectRelative(c, "mwu_u", m.u);
    ExpectRelative(c, "mwu_p", m.p);
  }
}

TEST_F(FixturesTest, HodgesLehmannMatchesR) {
  for (const Case& c : *cases_) {
    if (!HasData(c)) continue;
    const HodgesLehmannResult h = HodgesLehmann(c.base, c.other);
    ExpectRelative(c, "hl_shift", h.shift);
    ExpectRelative(c, "hl_ci_low", h.ci_low);
    ExpectRelative(c, "hl_ci_high", h.ci_high);
  }
}

TEST_F(FixturesTest, VarianceComponentsMatchNumpy) {
  for (const Case& c : *cases_) {
    if (!HasData(c)) continue;
    for (const auto& [prefix, values, boots] :
         {std::tuple{std::string("base"), &c.base, &c.base_boots},
          std::tuple{std::string("other"), &c.other, &c.other_boots}}) {
      const BootGroups groups = Group(*values, *boots);
      const VarianceComponents vc = EstimateVarianceComponents(groups);
      ExpectRelative(c, prefix + "_mean_of_boot_means", MeanOfBootMeans(groups));
      ExpectRelative(c, prefix + "_var_within", vc.within);
      ExpectRelative(c, prefix + "_var_between", vc.between);
    }
  }
}

TEST_F(FixturesTest, RatioTestMatchesScipyStatsmodelsAndR) {
  size_t checked = 0;
  for (const Case& c : *cases_) {
    if (!HasData(c)) continue;
    absl::StatusOr<RatioTest> t =
        TestRatio(Samples(c.base, c.base_boots, "b", c.shared),
                  Samples(c.other, c.other_boots, "o", c.shared), RatioTestOptions{});
    ASSERT_TRUE(t.ok()) << c.name << ": " << t.status();
    EXPECT_EQ(DesignName(t->design), c.source.at("lr_design")) << c.name;
    ExpectRelative(c, "lr_ratio", t->ratio);
    ExpectRelative(c, "lr_df", t->df);
    ExpectRelative(c, "lr_p", t->p);
    ExpectRelative(c, "lr_ci_low", t->ci_low);
    ExpectRelative(c, "lr_ci_high", t->ci_high);
    // statsmodels' TOST goes through its own variance arithmetic: 1e-7.
    ASSERT_TRUE(t->same_p.has_value()) << c.name;
    EXPECT_NEAR(*t->same_p, c.expect.at("lr_same_p"), 1e-7 * c.expect.at("lr_same_p")) << c.name;
    ++checked;
  }
  EXPECT_GE(checked, 10u);
}

TEST_F(FixturesTest, BootstrapIntervalsAgreeWithinMonteCarloTolerance) {
  for (const Case& c : *cases_) {
    if (!HasData(c) || !c.expect.contains("boot_pct_low")) continue;
    absl::StatusOr<RatioTest> t =
        TestRatio(Samples(c.base, c.base_boots, "b", c.shared),
                  Samples(c.other, c.other_boots, "o", c.shared), RatioTestOptions{});
    ASSERT_TRUE(t.ok()) << c.name;
    const BootstrapInterval r =
        BootstrapLogRatio(t->base_values, t->other_values, t->design == Design::kPairedBoots, 0.95);
    const double width = c.expect.at("boot_pct_high") - c.expect.at("boot_pct_low");
    ExpectWithin(c, "boot_pct_low", r.percentile_low, kPercentileTolerance * width);
    ExpectWithin(c, "boot_pct_high", r.percentile_high, kPercentileTolerance * width);
    // With two values per arm the bootstrap distribution has a handful of atoms: BCa's z0
    // and quantiles jump between them, nothing to compare.
    if (t->base_units >= 5 && t->other_units >= 5) {
      const double bca_width = c.expect.at("boot_bca_high") - c.expect.at("boot_bca_low");
      ExpectWithin(c, "boot_bca_low", r.bca_low, kBcaTolerance * bca_width);
      ExpectWithin(c, "boot_bca_high", r.bca_high, kBcaTolerance * bca_width);
    }
  }
}

TEST_F(FixturesTest, BenjaminiHochbergMatchesStatsmodelsAndR) {
  size_t checked = 0;
  for (const Case& c : *cases_) {
    if (c.pvalues.empty()) continue;
    std::vector<std::optional<double>> p(c.pvalues.begin(), c.pvalues.end());
    const std::vector<std::optional<double>> q = BenjaminiHochberg(p);
    const std::vector<double>& want = c.expect_list.at("bh_q");
    ASSERT_EQ(q.size(), want.size()) << c.name;
    for (size_t i = 0; i < q.size(); ++i) {
      ASSERT_TRUE(q[i].has_value());
      EXPECT_NEAR(*q[i], want[i], 1e-12) << c.name << " " << i;
    }
    ++checked;
  }
  EXPECT_EQ(checked, 2u);
}

TEST_F(FixturesTest, AdviceMatchesTheFormulaEvaluatedWithScipy) {
  size_t checked = 0;
  for (const Case& c : *cases_) {
    if (c.advice_design.empty()) continue;
    const std::vector<double>& v = c.advice_components;
    RepetitionAdvice a;
    if (c.advice_design == "paired") {
      LogRatioComponents lr;
      lr.within_base = v[0];
      lr.within_other = v[1];
      lr.interaction = v[2];
      a = AdvisePaired(lr, AdviceOptions{});
    } else {
      VarianceComponents base, other;
      base.within = v[0];
      other.within = v[1];
      base.between = other.between = v[2];
      a = AdviseUnpaired(base, other, AdviceOptions{});
    }
    ASSERT_TRUE(a.boots && a.iterations_per_boot) << c.name << ": " << a.why_undefined;
    EXPECT_EQ(*a.iterations_per_boot, c.expect.at("advice_r1")) << c.name;
    EXPECT_EQ(*a.boots, c.expect.at("advice_boots")) << c.name;
    ExpectRelative(c, "advice_half_width_pct", a.expected_half_width_pct);
    ++checked;
  }
  EXPECT_EQ(checked, 2u);
}

}  // namespace
}  // namespace tlbfleet::stats
