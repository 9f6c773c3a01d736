#pragma once
// The socket calls netperf's client and server share (netperf_client.h, netperf_server.h): IP
// literals as sockaddrs, binding and connecting, timeouts and keepalive, and full-buffer I/O
// on stream sockets. Errors are statuses from errno ("netperf: bind: ..."). Stateless: each
// call works only on what it is given.

#include <sys/socket.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "common/scoped_fd.h"

namespace tlbfleet::workloads::netperf {

// An IPv4 or IPv6 socket address.
struct Address {
  sockaddr_storage storage{};
  socklen_t length = 0;
  int family() const { return storage.ss_family; }
  sockaddr* get() { return reinterpret_cast<sockaddr*>(&storage); }
};

// `text` (an IP literal, never a host name) with port 0; INVALID_ARGUMENT naming the
// workload's `server` parameter otherwise.
absl::StatusOr<Address> ParseAddress(const std::string& text);
std::string FormatAddress(const Address& address);  // the IP literal, as inet_ntop writes it
uint16_t GetPort(const Address& address);
void SetPort(Address& address, uint16_t port);

// SO_RCVTIMEO or SO_SNDTIMEO (`option`) of `seconds`.
void SetTimeout(int fd, int option, double seconds);
// A long-lived server (an agent's netserver) must not wait for ever on a client whose host
// vanished without closing its connections: TCP keepalive notices within about 25 s.
void SetKeepalive(int fd);

// A socket of `type` (SOCK_STREAM: listening, backlog 1; SOCK_DGRAM) bound to `address`;
// fills in the port the kernel chose when it was 0.
absl::StatusOr<ScopedFd> BindServer(Address& address, int type);
// A socket of `type` connected to `address`; a TCP one without Nagle's delay (one message in
// flight at a time).
absl::StatusOr<ScopedFd> Connect(Address& address, int type);

// All `size` bytes, or false on an error or EOF first.
bool ReadFull(int fd, char* buf, size_t size);
bool WriteFull(int fd, const char* buf, size_t size);

}  // namespace tlbfleet::workloads::netperf
