#include "agent/workloads/netperf_sockets.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/time.h>

#include <cerrno>

#include "absl/strings/str_cat.h"
#include "common/files.h"

namespace tlbfleet::workloads::netperf {

absl::StatusOr<Address> ParseAddress(const std::string& text) {
  Address a;
  auto* v4 = reinterpret_cast<sockaddr_in*>(&a.storage);
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&a.storage);
  if (::inet_pton(AF_INET, text.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    a.length = sizeof(sockaddr_in);
  } else if (::inet_pton(AF_INET6, text.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    a.length = sizeof(sockaddr_in6);
  } else {
    return absl::InvalidArgumentError(absl::StrCat("server: not an IP address: \"", text, "\""));
  }
  return a;
}

std::string FormatAddress(const Address& address) {
  char text[INET6_ADDRSTRLEN] = "?";
  const void* raw = address.family() == AF_INET
                        ? static_cast<const void*>(
                              &reinterpret_cast<const sockaddr_in*>(&address.storage)->sin_addr)
                        : static_cast<const void*>(
                              &reinterpret_cast<const sockaddr_in6*>(&address.storage)->sin6_addr);
  ::inet_ntop(address.family(), raw, text, sizeof text);
  return text;
}

uint16_t GetPort(const Address& address) {
  return ntohs(address.family() == AF_INET
                   ? reinterpret_cast<const sockaddr_in*>(&address.storage)->sin_port
                   : reinterpret_cast<const sockaddr_in6*>(&address.storage)->sin6_port);
}

void SetPort(Address& address, uint16_t port) {
  if (address.family() == AF_INET) {
    reinterpret_cast<sockaddr_in*>(&address.storage)->sin_port = htons(port);
  } else {
    reinterpret_cast<sockaddr_in6*>(&address.storage)->sin6_port = htons(port);
  }
}

void SetTimeout(int fd, int option, double seconds) {
  timeval tv;
  tv.tv_sec = static_cast<time_t>(seconds);
  tv.tv_usec = static_cast<suseconds_t>((seconds - static_cast<double>(tv.tv_sec)) * 1e6);
  ::setsockopt(fd, SOL_SOCKET, option, &tv, sizeof tv);
}

void SetKeepalive(int fd) {
  const int on = 1, idle = 10, interval = 5, count = 3;
  ::setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof on);
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval, sizeof interval);
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &count, sizeof count);
}

absl::StatusOr<ScopedFd> BindServer(Address& address, int type) {
  ScopedFd fd(::socket(address.family(), type | SOCK_CLOEXEC, 0));
  if (fd.get() < 0) return ErrnoStatus(errno, "netperf: server socket");
  const int one = 1;
  ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (::bind(fd.get(), address.get(), address.length) != 0) {
    return ErrnoStatus(errno, "netperf: bind");
  }
  if (::getsockname(fd.get(), address.get(), &address.length) != 0) {
    return ErrnoStatus(errno, "netperf: getsockname");
  }
  if (type == SOCK_STREAM && ::listen(fd.get(), 1) != 0) {
    return ErrnoStatus(errno, "netperf: listen");
  }
  return fd;
}

absl::StatusOr<ScopedFd> Connect(Address& address, int type) {
  ScopedFd fd(::socket(address.family(), type | SOCK_CLOEXEC, 0));
  if (fd.get() < 0) return ErrnoStatus(errno, "netperf: client socket");
  if (::connect(fd.get(), address.get(), address.length) != 0) {
    return ErrnoStatus(errno, "netperf: connect");
  }
  if (type == SOCK_STREAM) {
    // Request/response: one message in flight, so Nagle could only add delay.
    const int one = 1;
    ::setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  }
  return fd;
}

bool ReadFull(int fd, char* buf, size_t size) {
  for (size_t done = 0; done < size;) {
    const ssize_t n = ::recv(fd, buf + done, size - done, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

bool WriteFull(int fd, const char* buf, size_t size) {
  for (size_t done = 0; done < size;) {
    const ssize_t n = ::send(fd, buf + done, size - done, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

}  // namespace tlbfleet::workloads::netperf
