#pragma once
// The agent's seam for the host's kernel interfaces. Every /sys, /proc and /etc path the agent
// touches goes through a Sysroot, so unit tests point it at a fake tree in a temp dir (and
// inject faults such as EPERM) instead of needing a real kernel.
//
// Thread-safe: a Sysroot is immutable after construction.

#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace tlbfleet::agent {

class Sysroot {
 public:
  // `root` is prefixed to every absolute path; "" (the default) is the real root.
  explicit Sysroot(std::string root = "") : root_(std::move(root)) {}
  virtual ~Sysroot() = default;

  // The real path of `abs_path` (which starts with '/'), e.g. "/tmp/x" + "/proc/cpuinfo".
  std::string Path(std::string_view abs_path) const;
  const std::string& root() const { return root_; }

  // open(2) of Path(abs_path) with O_CLOEXEC added. Returns the fd, or -errno on failure.
  // Virtual so tests can inject errors a root-run test cannot produce with permissions.
  virtual int OpenFd(std::string_view abs_path, int flags) const;

  // One write(2) of `text` to Path(abs_path) opened O_WRONLY|O_TRUNC: how sysfs/debugfs
  // files are set. Returns 0, or the errno of the open or the write (the kernel's verdict on
  // the value, e.g. EINVAL); a short write is EIO. Virtual so tests can inject rejections.
  virtual int WriteText(std::string_view abs_path, std::string_view text) const;

  // Reads the whole file. On failure the status message carries the path and strerror;
  // `err` (if not null) receives the errno (0 on success).
  absl::StatusOr<std::string> Read(std::string_view abs_path, int* err = nullptr) const;

  // Read() with surrounding whitespace removed.
  absl::StatusOr<std::string> ReadTrimmed(std::string_view abs_path) const;

  // True if Path(abs_path) exists and is a directory.
  bool IsDirectory(std::string_view abs_path) const;

 private:
  std::string root_;
};

}  // namespace tlbfleet::agent
