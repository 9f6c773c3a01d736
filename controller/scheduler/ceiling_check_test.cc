#include "controller/scheduler/ceiling_check.h"

#include "gtest/gtest.h"

namespace tlbfleet::scheduler {
namespace {

SampleCeiling Set(uint64_t seq, int64_t value) { return {seq, true, true, value}; }
SampleCeiling Untouched(uint64_t seq) { return {seq, false, false, 0}; }

TEST(CeilingCheckTest, PageCountMustMatchEverySample) {
  EXPECT_TRUE(CheckJobCeilings("c512", "512", {Set(0, 512), Set(1, 512)}).ok());
  EXPECT_TRUE(CheckJobCeilings("c512", "0x200", {Set(0, 512)}).ok()) << "base 0, as the kernel";
  absl::Status s = CheckJobCeilings("c512", "512", {Set(0, 512), Set(1, 500)});
  EXPECT_TRUE(absl::IsFailedPrecondition(s)) << s;
  EXPECT_EQ(s.message(), "arm c512 asked for flush ceiling 512 but sample 1 ran under 500");
  s = CheckJobCeilings("c512", "512", {Untouched(4)});
  EXPECT_EQ(s.message(),
            "arm c512 asked for flush ceiling 512 but sample 4 says the agent did not set the "
            "ceiling");
  s = CheckJobCeilings("c512", "512", {{2, true, false, 0}});
  EXPECT_NE(s.message().find("set the ceiling but not to what"), std::string::npos);
}

TEST(CeilingCheckTest, DefaultIsOneValueWhateverItIs) {
  EXPECT_TRUE(CheckJobCeilings("base", "default", {Set(0, 33), Set(1, 33)}).ok());
  absl::Status s = CheckJobCeilings("base", "default", {Set(0, 33), Set(1, 34)});
  EXPECT_EQ(s.message(),
            "arm base asked for the default flush ceiling, but its samples disagree on what "
            "that was: 33 and 34 (sample 1)");
  EXPECT_FALSE(CheckJobCeilings("base", "default", {Untouched(0)}).ok());
}

TEST(CeilingCheckTest, NoCeilingMeansTheAgentSetNone) {
  SampleCeiling observed{0, false, true, 33};  // observed only: fine
  EXPECT_TRUE(CheckJobCeilings("plain", "", {observed, Untouched(1)}).ok());
  absl::Status s = CheckJobCeilings("plain", "", {Set(7, 1)});
  EXPECT_EQ(s.message(), "arm plain sets no flush ceiling but sample 7 says the agent set it to 1");
}

TEST(CeilingCheckTest, CorruptJobRow) {
  EXPECT_TRUE(absl::IsInvalidArgument(CheckJobCeilings("x", "lots", {Set(0, 1)})));
}

}  // namespace
}  // namespace tlbfleet::scheduler
