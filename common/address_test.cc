#include "common/address.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace tlbfleet {
namespace {

using ::testing::HasSubstr;

TEST(AddressTest, CanonicalLoopbackAndWildcard) {
  EXPECT_EQ(CanonicalAddress("127.000.0.1").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(CanonicalAddress("0:0:0:0:0:0:0:1").value(), "::1");
  EXPECT_EQ(CanonicalAddress("10.0.0.1").value(), "10.0.0.1");
  EXPECT_THAT(std::string(CanonicalAddress("localhost").status().message()),
              HasSubstr("host names are not resolved"));
  EXPECT_TRUE(IsLoopbackAddress("127.255.0.9"));
  EXPECT_TRUE(IsLoopbackAddress("::1"));
  EXPECT_FALSE(IsLoopbackAddress("128.0.0.1"));
  EXPECT_TRUE(IsWildcardAddress("::"));
  EXPECT_FALSE(IsWildcardAddress("127.0.0.1"));
}

TEST(AddressTest, EndpointsRoundTripAndRefuseAmbiguity) {
  absl::StatusOr<Endpoint> e = ParseEndpoint("[0::1]:12865");
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->address, "::1");
  EXPECT_EQ(e->port, 12865);
  EXPECT_EQ(FormatEndpoint(*e), "[::1]:12865");
  EXPECT_EQ(FormatEndpoint(*ParseEndpoint("10.0.2.2:0")), "10.0.2.2:0");
  for (const char* bad : {"", "127.0.0.1", "127.0.0.1:65536", "host:80", "::1:80", ":80"}) {
    EXPECT_EQ(ParseEndpoint(bad).status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
}

}  // namespace
}  // namespace tlbfleet
