#pragma once
// A file descriptor that is closed when it goes out of scope, so that no early return leaks
// one. Where a close can lose data (a file written and not yet fsynced), call Close() and
// check it; elsewhere the destructor's close is enough (its error is only EINTR/EIO on a
// descriptor that was read or already synced).

#include <unistd.h>

#include <cerrno>
#include <utility>

namespace tlbfleet {

class ScopedFd {
 public:
  ScopedFd() = default;
  explicit ScopedFd(int fd) : fd_(fd) {}
  ScopedFd(ScopedFd&& other) noexcept : fd_(other.release()) {}
  ScopedFd& operator=(ScopedFd&& other) noexcept {
    if (this != &other) reset(other.release());
    return *this;
  }
  ScopedFd(const ScopedFd&) = delete;
  ScopedFd& operator=(const ScopedFd&) = delete;
  ~ScopedFd() { reset(); }

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  explicit operator bool() const { return valid(); }

  // Gives up ownership: the caller closes the descriptor.
  int release() { return std::exchange(fd_, -1); }

  // Closes the descriptor held (if any) and takes `fd`.
  void reset(int fd = -1) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }

  // Closes now and says whether the close succeeded (errno's value in `*err` if not).
  // Afterwards the object holds nothing.
  bool Close(int* err = nullptr) {
    if (fd_ < 0) return true;
    const int rc = ::close(std::exchange(fd_, -1));
    if (rc != 0 && err != nullptr) *err = errno;
    return rc == 0;
  }

 private:
  int fd_ = -1;
};

}  // namespace tlbfleet
