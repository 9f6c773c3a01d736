#include "agent/runner/spool.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "agent/runner/paths.h"
#include "common/files.h"

namespace tlbfleet::agent {

absl::StatusOr<Spool> Spool::Open(std::string state_dir) {
  if (absl::Status s = MakeDirs(paths::SpoolDir(state_dir), 0700); !s.ok()) return s;
  return Spool(std::move(state_dir));
}

absl::Status Spool::Write(const v1::SpooledJob& job) const {
  const std::string& lease = job.assignment().lease_id();
  if (!paths::ValidLeaseId(lease)) {
    return absl::InvalidArgumentError(absl::StrCat("lease id '", lease, "' is not spoolable"));
  }
  std::string bytes;
  if (!job.SerializeToString(&bytes)) {
    return absl::InternalError(absl::StrCat("cannot serialize spool record of lease ", lease));
  }
  return WriteFileAtomic(paths::SpoolFile(state_dir_, lease), bytes);
}

absl::StatusOr<v1::SpooledJob> Spool::Read(const std::string& lease_id) const {
  if (!paths::ValidLeaseId(lease_id)) {
    return absl::InvalidArgumentError(absl::StrCat("lease id '", lease_id, "' is not spoolable"));
  }
  std::string path = paths::SpoolFile(state_dir_, lease_id);
  absl::StatusOr<std::string> bytes = ReadFile(path);
  if (!bytes.ok()) return bytes.status();
  v1::SpooledJob job;
  if (!job.ParseFromString(*bytes)) {
    return absl::DataLossError(absl::StrCat(path, ": not a SpooledJob record"));
  }
  if (job.assignment().lease_id() != lease_id) {
    return absl::DataLossError(absl::StrCat(path, ": holds lease '", job.assignment().lease_id(),
                                            "', not '", lease_id, "'"));
  }
  return job;
}

absl::Status Spool::Remove(const std::string& lease_id) const {
  if (!paths::ValidLeaseId(lease_id)) return absl::OkStatus();  // never spooled
  std::string path = paths::SpoolFile(state_dir_, lease_id);
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) return ErrnoStatus(errno, path);
  return absl::OkStatus();
}

absl::Status Spool::MoveAside(const std::string& file_name) const {
  std::string dir = paths::CorruptSpoolDir(state_dir_);
  if (absl::Status s = MakeDirs(dir, 0700); !s.ok()) return s;
  std::string from = absl::StrCat(paths::SpoolDir(state_dir_), "/", file_name);
  std::string to = absl::StrCat(dir, "/", file_name, ".", ::time(nullptr));
  if (::rename(from.c_str(), to.c_str()) != 0) {
    return ErrnoStatus(errno, absl::StrCat("rename ", from, " -> ", to));
  }
  return absl::OkStatus();
}

Spool::Usage Spool::GetUsage() const {
  Usage usage;
  std::string dir_path = paths::SpoolDir(state_dir_);
  DIR* dir = ::opendir(dir_path.c_str());
  if (dir == nullptr) return usage;
  while (struct dirent* entry = ::readdir(dir)) {
    std::string name = entry->d_name;
    if (!absl::EndsWith(name, paths::kSpoolSuffix) || name[0] == '.') continue;
    struct stat st;
    if (::fstatat(::dirfd(dir), name.c_str(), &st, 0) != 0) continue;  // removed meanwhile
    ++usage.records;
    usage.bytes += static_cast<uint64_t>(st.st_size);
  }
  ::closedir(dir);
  return usage;
}

std::vector<v1::SpooledJob> Spool::LoadAll(std::vector<std::string>* corrupt) const {
  std::vector<std::string> leases;
  std::string dir_path = paths::SpoolDir(state_dir_);
  if (DIR* dir = ::opendir(dir_path.c_str()); dir != nullptr) {
    while (struct dirent* entry = ::readdir(dir)) {
      std::string name = entry->d_name;
      // Skips ".", "..", corrupt/ and WriteFileAtomic's "<name>.tmp.*" leftovers of a crash.
      if (!absl::EndsWith(name, paths::kSpoolSuffix) || name[0] == '.') continue;
      leases.push_back(name.substr(0, name.size() - std::strlen(paths::kSpoolSuffix)));
    }
    ::closedir(dir);
  }
  std::sort(leases.begin(), leases.end());

  std::vector<v1::SpooledJob> jobs;
  for (const std::string& lease : leases) {
    absl::StatusOr<v1::SpooledJob> job = Read(lease);
    if (job.ok()) {
      jobs.push_back(*std::move(job));
      continue;
    }
    if (absl::IsNotFound(job.status())) continue;  // removed meanwhile
    std::string file_name = absl::StrCat(lease, paths::kSpoolSuffix);
    std::string reason = std::string(job.status().message());
    if (absl::Status moved = MoveAside(file_name); !moved.ok()) {
      reason = absl::StrCat(reason, " (and could not move it aside: ", moved.message(), ")");
    } else {
      reason = absl::StrCat(reason, " (moved to ", paths::CorruptSpoolDir(state_dir_), "/)");
    }
    if (corrupt != nullptr) corrupt->push_back(reason);
  }
  return jobs;
}

std::vector<v1::SpooledLease> Spool::Summarize(const std::vector<v1::SpooledJob>& jobs) {
  std::vector<v1::SpooledLease> out;
  for (const v1::SpooledJob& job : jobs) {
    v1::SpooledLease lease;
    lease.set_lease_id(job.assignment().lease_id());
    lease.set_job_id(job.assignment().job_id());
    lease.set_samples(static_cast<uint64_t>(job.samples_size()));
    lease.set_complete(job.has_complete());
    out.push_back(std::move(lease));
  }
  return out;
}

}  // namespace tlbfleet::agent
