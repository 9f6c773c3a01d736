#include "agent/kernel/sysroot.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "absl/strings/str_cat.h"
#include "common/files.h"
#include "common/scoped_fd.h"

namespace tlbfleet::agent {

std::string Sysroot::Path(std::string_view abs_path) const {
  return absl::StrCat(root_, std::string(abs_path));
}

int Sysroot::OpenFd(std::string_view abs_path, int flags) const {
  int fd = ::open(Path(abs_path).c_str(), flags | O_CLOEXEC);
  return fd >= 0 ? fd : -errno;
}

int Sysroot::WriteText(std::string_view abs_path, std::string_view text) const {
  ScopedFd fd(OpenFd(abs_path, O_WRONLY | O_TRUNC));
  if (!fd) return -fd.release();
  ssize_t n;
  do {
    n = ::write(fd.get(), text.data(), text.size());
  } while (n < 0 && errno == EINTR);
  int err = n < 0 ? errno : (static_cast<size_t>(n) != text.size() ? EIO : 0);
  // A sysfs or debugfs write reports its error at write(2); close only releases.
  return err;
}

absl::StatusOr<std::string> Sysroot::Read(std::string_view abs_path, int* err) const {
  if (err != nullptr) *err = 0;
  ScopedFd fd(OpenFd(abs_path, O_RDONLY));
  if (!fd) {
    const int open_err = -fd.release();
    if (err != nullptr) *err = open_err;
    return ErrnoStatus(open_err, Path(abs_path));
  }
  return ReadFd(fd.get(), Path(abs_path), err);
}

absl::StatusOr<std::string> Sysroot::ReadTrimmed(std::string_view abs_path) const {
  absl::StatusOr<std::string> text = Read(abs_path);
  if (!text.ok()) return text.status();
  return Trim(*text);
}

bool Sysroot::IsDirectory(std::string_view abs_path) const {
  struct stat st;
  return ::stat(Path(abs_path).c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

}  // namespace tlbfleet::agent
