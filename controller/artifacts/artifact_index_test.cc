#include "controller/artifacts/artifact_index.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"

namespace tlbfleet::artifacts {
namespace {

using ::testing::ElementsAre;
using ::testing::Optional;

const std::string kA(64, 'a'), kB(64, 'b'), kC(64, 'c'), kD(64, 'd');

TEST(ArtifactIndexTest, EncodeParseRoundTrip) {
  ArtifactIndex index;
  index[kA] = {1'800'000'000'000, {}};
  index[kB] = {1'800'000'060'000, {"run-1", "nightly:42"}};
  const std::string text = EncodeIndex(index);
  EXPECT_EQ(text, absl::StrCat("tlbfleet-artifact-index 1\n", kA, " 1800000000000\n", kB,
                               " 1800000060000 nightly:42 run-1\n"));
  absl::StatusOr<ArtifactIndex> parsed = ParseIndex(text);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(EncodeIndex(*parsed), text);
  EXPECT_THAT(parsed->at(kB).pins, ElementsAre("nightly:42", "run-1"));
}

TEST(ArtifactIndexTest, ParseRefusesWhatEncodeDoesNotWrite) {
  for (const std::string& bad : {
           std::string(""),
           std::string("tlbfleet-artifact-index 2\n"),
           absl::StrCat("tlbfleet-artifact-index 1\n", "abc 1\n"),
           absl::StrCat("tlbfleet-artifact-index 1\n", kA, " soon\n"),
           absl::StrCat("tlbfleet-artifact-index 1\n", kA, " 1 run/1\n"),
           absl::StrCat("tlbfleet-artifact-index 1\n", kA, " 1\n", kA, " 2\n"),
       }) {
    EXPECT_TRUE(absl::IsInvalidArgument(ParseIndex(bad).status())) << bad;
  }
  EXPECT_TRUE(ValidPinOwner("run-0123abcd"));
  EXPECT_FALSE(ValidPinOwner(""));
  EXPECT_FALSE(ValidPinOwner("run 1"));
}

TEST(ArtifactIndexTest, EvictsLeastRecentlyUsedFirstSkippingPinned) {
  std::vector<EvictionCandidate> c = {
      {kA, 100, 10, /*pinned=*/true},  // oldest, but pinned
      {kB, 100, 30, false},
      {kC, 100, 20, false},
      {kD, 100, 40, false},
  };
  EXPECT_THAT(ChooseEvictions(c, 0), Optional(ElementsAre()));
  EXPECT_THAT(ChooseEvictions(c, 1), Optional(ElementsAre(kC)));
  EXPECT_THAT(ChooseEvictions(c, 150), Optional(ElementsAre(kC, kB)));
  EXPECT_THAT(ChooseEvictions(c, 300), Optional(ElementsAre(kC, kB, kD)));
  EXPECT_EQ(ChooseEvictions(c, 301), std::nullopt);  // only the pinned one could free more
}

TEST(ArtifactIndexTest, TiesGoByIdForARepeatableOrder) {
  std::vector<EvictionCandidate> c = {{kC, 1, 5, false}, {kA, 1, 5, false}, {kB, 1, 5, false}};
  EXPECT_THAT(ChooseEvictions(c, 2), Optional(ElementsAre(kA, kB)));
}

}  // namespace
}  // namespace tlbfleet::artifacts
