#include "agent/kernel/ceiling_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "agent/kernel/ceiling_control.h"
#include "common/files.h"
#include "common/scoped_fd.h"

namespace tlbfleet::agent {
namespace {

std::string ReadAll(int fd) {
  std::string out;
  char buf[512];
  for (off_t at = 0;;) {
    ssize_t n = ::pread(fd, buf, sizeof buf, at);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
    at += n;
  }
  return out;
}

std::string Holder(const std::string& text) {
  std::string line = Trim(text);
  return line.empty() ? "a job that observes the ceiling (shared)" : line;
}

}  // namespace

std::string FormatCeilingLockHolder(int pid, std::string_view journal_path) {
  return absl::StrCat("pid ", pid, " journal ", std::string(journal_path), "\n");
}

std::string CeilingLockHolderJournal(std::string_view text) {
  std::vector<std::string> f = absl::StrSplit(absl::string_view(text.data(), text.size()),
                                              absl::ByAnyChar(" \n"), absl::SkipEmpty());
  if (f.size() != 4 || f[0] != "pid" || f[2] != "journal") return "";
  return f[3];
}

absl::StatusOr<std::unique_ptr<CeilingLock>> CeilingLock::Acquire(const Sysroot& sysroot, Mode mode,
                                                                  std::string_view journal_path,
                                                                  std::string_view boot_id) {
  const std::string path = sysroot.Path(kCeilingLockPath);
  // /run exists on every systemd and sysvinit host; a bare initramfs may lack it.
  if (absl::Status s = MakeDirs(path.substr(0, path.rfind('/'))); !s.ok()) return s;
  ScopedFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644));
  if (!fd) return ErrnoStatus(errno, absl::StrCat("open the host's ceiling lock ", path));
  const int op = (mode == Mode::kExclusive ? LOCK_EX : LOCK_SH) | LOCK_NB;
  int rc;
  do {
    rc = ::flock(fd.get(), op);
  } while (rc != 0 && errno == EINTR);
  if (rc != 0) {
    int err = errno;
    std::string holder = err == EWOULDBLOCK ? Holder(ReadAll(fd.get())) : "";
    if (err != EWOULDBLOCK) return ErrnoStatus(err, absl::StrCat("flock ", path));
    return absl::UnavailableError(
        absl::StrCat("the host's ceiling lock ", path, " is held by ", holder,
                     ": another agent on this host is measuring or changing the flush ceiling"));
  }
  const int lock_fd = fd.get();
  std::unique_ptr<CeilingLock> lock(new CeilingLock(std::move(fd), mode));
  if (mode == Mode::kShared) return lock;

  // A line left by an exclusive holder that died before its release.
  const std::string left = CeilingLockHolderJournal(ReadAll(lock_fd));
  if (!left.empty() && left != journal_path && !boot_id.empty()) {
    absl::StatusOr<CeilingJournal> journal = ReadCeilingJournal(left);
    if (journal.ok() && journal->boot_id == boot_id) {
      return absl::FailedPreconditionError(absl::StrCat(
          "the flush ceiling was left changed by another agent on this host, which died before "
          "restoring it (its journal ",
          left, " says this boot started with ", journal->original,
          "); restart that agent, or run `tlbfleet-agent ceiling-known-good` with that value"));
    }
  }
  const std::string line = FormatCeilingLockHolder(::getpid(), journal_path);
  if (::ftruncate(lock_fd, 0) != 0 ||
      ::pwrite(lock_fd, line.data(), line.size(), 0) != static_cast<ssize_t>(line.size())) {
    return ErrnoStatus(errno, absl::StrCat("write the holder into ", path));
  }
  return lock;
}

CeilingLock::~CeilingLock() {
  // Emptied first: a line that survives means its writer died while holding the lock.
  if (mode_ == Mode::kExclusive) (void)::ftruncate(fd_.get(), 0);
}

}  // namespace tlbfleet::agent
