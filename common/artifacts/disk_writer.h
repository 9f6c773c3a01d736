#pragma once
// Every write the artifact store and fetcher make to disk goes through a DiskWriter: the seam
// where tests inject a full disk (ENOSPC) or a failing fsync at any step, as LevelDB's Env
// does, since a tmpfs small enough to fill cannot be mounted without root.
//
// The default methods do the real thing. A test overrides the ones it wants to fail and calls
// the base class for the rest. Errors are absl statuses built by ErrnoStatus (ENOSPC ->
// RESOURCE_EXHAUSTED) that name the path.

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/status.h"

namespace tlbfleet::artifacts {

class DiskWriter {
 public:
  virtual ~DiskWriter() = default;

  // Writes all of `bytes` at `offset` of `fd` (`path` is for messages). Short writes and EINTR
  // are retried. On an error, a prefix of `bytes` may have been written: the caller truncates.
  virtual absl::Status WriteAt(int fd, uint64_t offset, std::string_view bytes,
                               std::string_view path);
  // fsync(2) of a file being written through `fd`.
  virtual absl::Status Sync(int fd, std::string_view path);
  // fsync of a directory: what makes a rename or a new entry in it durable.
  virtual absl::Status SyncDirectory(const std::string& dir);
  // rename(2).
  virtual absl::Status Rename(const std::string& from, const std::string& to);
  // tlbfleet::WriteFileAtomic (temp file, fsync, rename, fsync the directory).
  virtual absl::Status WriteFileAtomic(const std::string& path, std::string_view contents);

  // The real disk. Thread-safe; never destroyed.
  static DiskWriter& Real();
};

}  // namespace tlbfleet::artifacts
