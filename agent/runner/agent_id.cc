#include "agent/runner/agent_id.h"

#include <fcntl.h>
#include <sys/random.h>
#include <unistd.h>

#include <cerrno>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "agent/runner/paths.h"
#include "common/files.h"

namespace tlbfleet::agent {
namespace {

bool ValidAgentId(const std::string& id) {
  if (id.size() != 32) return false;
  for (char c : id) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

absl::StatusOr<std::string> NewAgentId() {
  unsigned char bytes[16];
  size_t got = 0;
  while (got < sizeof bytes) {
    ssize_t n = ::getrandom(bytes + got, sizeof bytes - got, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus(errno, "getrandom");
    }
    got += static_cast<size_t>(n);
  }
  return absl::BytesToHexString(
      absl::string_view(reinterpret_cast<const char*>(bytes), sizeof bytes));
}

absl::StatusOr<std::string> ReadExisting(const std::string& path) {
  absl::StatusOr<std::string> text = ReadFile(path);
  if (!text.ok()) return text.status();
  std::string id = Trim(*text);
  if (!ValidAgentId(id)) {
    return absl::DataLossError(absl::StrCat(
        path, " does not hold a 32-hex-digit agent id; restore it, or delete it to register ",
        "this host as a new agent"));
  }
  return id;
}

}  // namespace

absl::StatusOr<std::string> LoadOrCreateAgentId(const std::string& state_dir) {
  std::string path = paths::AgentIdFile(state_dir);
  absl::StatusOr<std::string> existing = ReadExisting(path);
  if (existing.ok() || !absl::IsNotFound(existing.status())) return existing;

  if (absl::Status s = MakeDirs(state_dir, 0700); !s.ok()) return s;
  absl::StatusOr<std::string> id = NewAgentId();
  if (!id.ok()) return id.status();

  // WriteFileAtomic renames over the target; link(2) instead refuses to replace an id that
  // another process created meanwhile, so write the temp file durably and link it in.
  std::string tmp = absl::StrCat(path, ".new.", ::getpid());
  if (absl::Status s = WriteFileAtomic(tmp, absl::StrCat(*id, "\n")); !s.ok()) return s;
  int rc = ::link(tmp.c_str(), path.c_str());
  int err = errno;
  ::unlink(tmp.c_str());
  if (rc != 0 && err != EEXIST) return ErrnoStatus(err, absl::StrCat("link ", tmp, " ", path));
  if (absl::Status s = FsyncDirectory(state_dir); !s.ok()) return s;
  return ReadExisting(path);
}

}  // namespace tlbfleet::agent
