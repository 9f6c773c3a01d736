// netperf's server, spoken to by hand: what it reports about a request it cannot serve.
#include "agent/workloads/netperf_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace tlbfleet::workloads::netperf {
namespace {

TEST(NetperfServerTest, ReportsARequestItCannotServe) {
  std::vector<ServedTest> served;
  absl::StatusOr<std::unique_ptr<Server>> server =
      Server::Start("127.0.0.1", 0, [&](const ServedTest& t) { served.push_back(t); });
  ASSERT_TRUE(server.ok()) << server.status();
  // A client that asks for a test the server does not know: the server hangs up.
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons((*server)->port());
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
  const std::string request = "sctp_stream 1\n";
  ASSERT_EQ(::send(fd, request.data(), request.size(), MSG_NOSIGNAL),
            static_cast<ssize_t>(request.size()));
  char c;
  EXPECT_EQ(::recv(fd, &c, 1, 0), 0);  // EOF, no data port
  ::close(fd);
  server->reset();
  ASSERT_EQ(served.size(), 1u);
  EXPECT_EQ(served[0].test, "sctp_stream");
  EXPECT_FALSE(served[0].completed);
}

}  // namespace
}  // namespace tlbfleet::workloads::netperf
