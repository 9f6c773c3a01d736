#include "common/files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <random>

#include "absl/strings/str_cat.h"
#include "common/scoped_fd.h"

namespace tlbfleet {

absl::Status ErrnoStatus(int err, std::string_view what) {
  std::string message = absl::StrCat(std::string(what), ": ", std::strerror(err));
  switch (err) {
    case ENOENT:
      return absl::NotFoundError(message);
    case EACCES:
    case EPERM:
      return absl::PermissionDeniedError(message);
    case EEXIST:
      return absl::AlreadyExistsError(message);
    case EINVAL:
    case ERANGE:
      return absl::InvalidArgumentError(message);
    case ENOSPC:
    case ENOMEM:
      return absl::ResourceExhaustedError(message);
    default:
      return absl::InternalError(message);
  }
}

absl::StatusOr<std::string> ReadFd(int fd, std::string_view what, int* err) {
  std::string out;
  char buf[8192];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (err != nullptr) *err = errno;
      return ErrnoStatus(errno, what);
    }
    if (n == 0) return out;
    out.append(buf, static_cast<size_t>(n));
  }
}

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  ScopedFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return ErrnoStatus(errno, path);
  return ReadFd(fd.get(), path);
}

absl::StatusOr<std::string> ReadPemFile(const std::string& path, std::string_view flag) {
  absl::StatusOr<std::string> text = ReadFile(path);
  if (!text.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(std::string(flag), " ", path, ": cannot read it"));
  }
  if (text->find("-----BEGIN ") == std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat(std::string(flag), " ", path, ": not a PEM file"));
  }
  return text;
}

absl::Status FsyncPath(const std::string& path, int flags) {
  ScopedFd fd(::open(path.c_str(), flags | O_CLOEXEC));
  if (!fd) return ErrnoStatus(errno, absl::StrCat("open ", path));
  if (::fsync(fd.get()) != 0) return ErrnoStatus(errno, absl::StrCat("fsync ", path));
  return absl::OkStatus();
}

absl::Status FsyncDirectory(const std::string& dir) {
  return FsyncPath(dir, O_RDONLY | O_DIRECTORY);
}

std::string DirName(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

absl::Status WriteFileAtomic(const std::string& path, std::string_view contents) {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  std::string tmp = absl::StrCat(path, ".tmp.", ::getpid(), ".", rng() % 1000000);
  ScopedFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (!fd) return ErrnoStatus(errno, tmp);
  auto fail = [&tmp](int err, std::string_view what) {
    ::unlink(tmp.c_str());
    return ErrnoStatus(err, what);
  };
  size_t done = 0;
  while (done < contents.size()) {
    ssize_t n = ::write(fd.get(), contents.data() + done, contents.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return fail(errno, tmp);
    }
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd.get()) != 0) return fail(errno, absl::StrCat("fsync ", tmp));
  int close_err = 0;
  if (!fd.Close(&close_err)) return fail(close_err, absl::StrCat("close ", tmp));
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    return fail(errno, absl::StrCat("rename ", tmp, " -> ", path));
  }
  return FsyncDirectory(DirName(path));
}

absl::Status MakeDirs(const std::string& path, int mode) {
  if (path.empty()) return absl::InvalidArgumentError("empty directory path");
  std::string partial;
  size_t pos = 0;
  while (pos != std::string::npos) {
    pos = path.find('/', pos + 1);
    partial = path.substr(0, pos);
    if (partial.empty()) continue;
    if (::mkdir(partial.c_str(), static_cast<mode_t>(mode)) != 0 && errno != EEXIST) {
      return ErrnoStatus(errno, absl::StrCat("mkdir ", partial));
    }
  }
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return ErrnoStatus(errno, path);
  if (!S_ISDIR(st.st_mode)) return absl::FailedPreconditionError(path + ": not a directory");
  return absl::OkStatus();
}

std::string Trim(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && (s[b] == ' ' || s[b] == '\t' || s[b] == '\n' || s[b] == '\r')) ++b;
  while (e > b && (s[e - 1] == ' ' || s[e - 1] == '\t' || s[e - 1] == '\n' || s[e - 1] == '\r'))
    --e;
  return std::string(s.substr(b, e - b));
}

}  // namespace tlbfleet
