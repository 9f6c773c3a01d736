#include "common/yaml_fields.h"

#include <gtest/gtest.h>

namespace tlbfleet::yaml_fields {
namespace {

TEST(YamlFieldsTest, BooleansAcceptEverySpellingOfAWorkloadBoolean) {
  for (const char* yes : {"true", "yes", "on", "1"}) {
    absl::StatusOr<bool> b = ScalarBool(YAML::Load(yes), "x");
    ASSERT_TRUE(b.ok()) << yes;
    EXPECT_TRUE(*b) << yes;
  }
  for (const char* no : {"false", "no", "off", "0"}) {
    absl::StatusOr<bool> b = ScalarBool(YAML::Load(no), "x");
    ASSERT_TRUE(b.ok()) << no;
    EXPECT_FALSE(*b) << no;
  }
  absl::StatusOr<bool> bad = ScalarBool(YAML::Load("maybe"), "schedule.enabled");
  EXPECT_EQ(bad.status().message(), "schedule.enabled: expected true or false, got \"maybe\"");
}

TEST(YamlFieldsTest, IntegersAreRangeCheckedBeforeNarrowingAndNameTheField) {
  EXPECT_EQ(*ScalarInt(YAML::Load("42"), "n", 1, 100), 42);
  EXPECT_EQ(ScalarInt(YAML::Load("4294967297"), "n", 1, 100).status().message(),
            "n: must be an integer in [1, 100], got \"4294967297\"");
  EXPECT_EQ(ScalarInt(YAML::Load("ten"), "n", 1, 100).status().message(),
            "n: expected an integer, got \"ten\"");
}

TEST(YamlFieldsTest, ShapesAreNamed) {
  YAML::Node doc = YAML::Load("{a: [1, 2], m: {k: v}, s: x, n: ~}");
  EXPECT_EQ(ScalarText(doc["m"], "m").status().message(), "m: expected a scalar value, got a map");
  EXPECT_EQ(ScalarText(doc["a"], "a").status().message(), "a: expected a scalar value, got a list");
  EXPECT_EQ(ScalarText(doc["n"], "n").status().message(), "n: value is missing");
  EXPECT_EQ(ScalarText(doc["absent"], "absent").status().message(), "absent: value is missing");
  EXPECT_EQ(ScalarList(doc["s"], "s").status().message(), "s: expected a list");
  EXPECT_EQ(ScalarList(YAML::Load("[1, [2]]"), "l").status().message(),
            "l[1]: expected a scalar value, got a list");
  EXPECT_EQ(UnknownField("colour", {"name", "arms"}).message(),
            "colour: unknown field (expected one of: name, arms)");
}

}  // namespace
}  // namespace tlbfleet::yaml_fields
