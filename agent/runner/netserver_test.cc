#include "agent/runner/netserver.h"

#include <string>

#include "agent/workloads/netperf_client.h"
#include "common/address.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tlbfleet::agent {
namespace {

namespace netperf = workloads::netperf;
using ::testing::HasSubstr;
using ::testing::StartsWith;

TEST(AdvertisedNetserverTest, DefaultsToTheListenAddressAndTheBoundPort) {
  EXPECT_EQ(AdvertisedNetserver("127.0.0.2:0", "", 4242).value(), "127.0.0.2:4242");
  EXPECT_EQ(AdvertisedNetserver("127.0.0.2:12865", "", 12865).value(), "127.0.0.2:12865");
  EXPECT_EQ(AdvertisedNetserver("[0::1]:0", "", 7).value(), "[::1]:7");
}

TEST(AdvertisedNetserverTest, AdvertiseOverridesAndPortZeroMeansTheBoundOne) {
  EXPECT_EQ(AdvertisedNetserver("0.0.0.0:0", "192.0.2.7:0", 4242).value(), "192.0.2.7:4242");
  EXPECT_EQ(AdvertisedNetserver("[::]:12865", "192.0.2.7:2000", 12865).value(), "192.0.2.7:2000");
}

TEST(AdvertisedNetserverTest, WildcardListenNeedsAdvertise) {
  for (const char* wildcard : {"0.0.0.0:0", "[::]:12865"}) {
    absl::StatusOr<std::string> a = AdvertisedNetserver(wildcard, "", 1);
    EXPECT_EQ(a.status().code(), absl::StatusCode::kInvalidArgument) << wildcard;
    EXPECT_THAT(std::string(a.status().message()), StartsWith("--netserver-listen: "));
    EXPECT_THAT(std::string(a.status().message()), HasSubstr("--netserver-advertise"));
  }
  absl::StatusOr<std::string> a = AdvertisedNetserver("127.0.0.1:0", "0.0.0.0:5", 1);
  EXPECT_THAT(std::string(a.status().message()), StartsWith("--netserver-advertise: "));
}

TEST(AdvertisedNetserverTest, BadValuesNameTheFlag) {
  for (const char* bad : {"", "localhost:12865", "127.0.0.1", "127.0.0.1:99999", "::1:5"}) {
    absl::StatusOr<std::string> a = AdvertisedNetserver(bad, "", 1);
    EXPECT_EQ(a.status().code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_THAT(std::string(a.status().message()), StartsWith("--netserver-listen: ")) << bad;
    a = AdvertisedNetserver("127.0.0.1:0", bad[0] ? bad : "x", 1);
    EXPECT_THAT(std::string(a.status().message()), StartsWith("--netserver-advertise: ")) << bad;
  }
}

TEST(StartNetserverTest, ServesClientsAtTheAdvertisedAddress) {
  absl::StatusOr<Netserver> started = StartNetserver("127.0.0.1:0", "");
  ASSERT_TRUE(started.ok()) << started.status();
  ASSERT_NE(started->server, nullptr);
  absl::StatusOr<Endpoint> advertised = ParseEndpoint(started->advertise);
  ASSERT_TRUE(advertised.ok()) << started->advertise;
  EXPECT_EQ(advertised->address, "127.0.0.1");
  EXPECT_EQ(advertised->port, started->server->port());
  netperf::Options o;
  o.test = netperf::TestKind::kTcpRr;
  o.message_size = 1;
  o.seconds = 0.2;
  o.server = advertised->address;
  o.port = advertised->port;
  absl::StatusOr<netperf::Result> r = netperf::RunOnce(o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_GT(r->transactions, 0u);
}

TEST(StartNetserverTest, FlagErrorsComeBeforeBindingAndBindErrorsNameTheListenFlag) {
  EXPECT_THAT(std::string(StartNetserver("0.0.0.0:0", "").status().message()),
              StartsWith("--netserver-listen: "));
  absl::StatusOr<Netserver> first = StartNetserver("127.0.0.1:0", "");
  ASSERT_TRUE(first.ok()) << first.status();
  // The same port again: taken.
  const std::string taken = "127.0.0.1:" + std::to_string(first->server->port());
  absl::StatusOr<Netserver> second = StartNetserver(taken, "");
  EXPECT_FALSE(second.ok());
  EXPECT_THAT(std::string(second.status().message()), StartsWith("--netserver-listen " + taken));
}

}  // namespace
}  // namespace tlbfleet::agent
