#include "agent/kernel/sysroot.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "absl/strings/str_cat.h"
#include "common/files.h"

namespace tlbfleet::agent {

std::string Sysroot::Path(std::string_view abs_path) const {
  return absl::StrCat(root_, std::string(abs_path));
}

int Sysroot::OpenFd(std::string_view abs_path, int flags) const {
  int fd = ::open(Path(abs_path).c_str(), flags | O_CLOEXEC);
  return fd >= 0 ? fd : -errno;
}

int Sysroot::WriteText(std::string_view abs_path, std::string_view text) const {
  int fd = OpenFd(abs_path, O_WRONLY | O_TRUNC);
  if (fd < 0) return -fd;
  ssize_t n;
  do {
    n = ::write(fd, text.data(), text.size());
  } while (n < 0 && errno == EINTR);
  int err = n < 0 ? errno : (static_cast<size_t>(n) != text.size() ? EIO : 0);
  ::close(fd);
  return err;
}

absl::StatusOr<std::string> Sysroot::Read(std::string_view abs_path, int* err) const {
  if (err != nullptr) *err = 0;
  int fd = OpenFd(abs_path, O_RDONLY);
  if (fd < 0) {
    if (err != nullptr) *err = -fd;
    return ErrnoStatus(-fd, Path(abs_path));
  }
  std::string out;
  char buf[8192];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      int e = errno;
      ::close(fd);
      if (err != nullptr) *err = e;
      return ErrnoStatus(e, Path(abs_path));
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return out;
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
