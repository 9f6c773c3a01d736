#include "common/artifacts/disk_writer.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>

#include "absl/strings/str_cat.h"
#include "common/files.h"

namespace tlbfleet::artifacts {

absl::Status DiskWriter::WriteAt(int fd, uint64_t offset, std::string_view bytes,
                                 std::string_view path) {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n =
        ::pwrite(fd, bytes.data() + done, bytes.size() - done, static_cast<off_t>(offset + done));
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus(errno, absl::StrCat("write ", std::string(path)));
    }
    done += static_cast<size_t>(n);
  }
  return absl::OkStatus();
}

absl::Status DiskWriter::Sync(int fd, std::string_view path) {
  if (::fsync(fd) != 0) return ErrnoStatus(errno, absl::StrCat("fsync ", std::string(path)));
  return absl::OkStatus();
}

absl::Status DiskWriter::SyncDirectory(const std::string& dir) { return FsyncDirectory(dir); }

absl::Status DiskWriter::Rename(const std::string& from, const std::string& to) {
  if (::rename(from.c_str(), to.c_str()) != 0) {
    return ErrnoStatus(errno, absl::StrCat("rename ", from, " -> ", to));
  }
  return absl::OkStatus();
}

absl::Status DiskWriter::WriteFileAtomic(const std::string& path, std::string_view contents) {
  return tlbfleet::WriteFileAtomic(path, contents);
}

DiskWriter& DiskWriter::Real() {
  static DiskWriter* const kReal = new DiskWriter();
  return *kReal;
}

}  // namespace tlbfleet::artifacts
