#include "agent/builder/artifact.h"

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <system_error>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/artifacts/sha256.h"
#include "common/files.h"
#include "common/scoped_fd.h"

namespace tlbfleet::agent::builder {
namespace {

namespace fs = std::filesystem;

std::string PartialPrefix(const fs::path& final_dir) {
  return absl::StrCat(".", final_dir.filename().string(), ".partial-");
}

}  // namespace

absl::StatusOr<PartialArtifact> PartialArtifact::Create(const std::string& final_dir,
                                                        artifacts::DiskWriter& disk) {
  const fs::path final_path = fs::path(final_dir).lexically_normal();
  if (!final_path.is_absolute() || final_path.filename().empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("artifact_dir: \"", final_dir, "\" is not an absolute path"));
  }
  std::error_code ec;
  if (fs::exists(final_path, ec)) {
    return absl::AlreadyExistsError(absl::StrCat("artifact_dir: ", final_dir, " already exists"));
  }
  const std::string parent = final_path.parent_path().string();
  if (absl::Status s = MakeDirs(parent); !s.ok()) return s;
  // Only an earlier attempt at this same artifact writes under this prefix.
  const std::string prefix = PartialPrefix(final_path);
  for (const fs::directory_entry& entry : fs::directory_iterator(parent, ec)) {
    if (absl::StartsWith(entry.path().filename().string(), prefix)) {
      fs::remove_all(entry.path(), ec);
    }
  }
  std::string tmpl = absl::StrCat(parent, "/", prefix, "XXXXXX");
  if (::mkdtemp(tmpl.data()) == nullptr) return ErrnoStatus(errno, "mkdtemp " + tmpl);
  PartialArtifact artifact(std::move(tmpl), final_path.string(), disk);
  if (absl::Status s = MakeDirs(artifacts::ArtifactDataDir(artifact.dir_)); !s.ok()) return s;
  return artifact;
}

PartialArtifact::PartialArtifact(PartialArtifact&& other) noexcept
    : dir_(std::exchange(other.dir_, "")),
      final_dir_(std::move(other.final_dir_)),
      disk_(other.disk_) {}

PartialArtifact::~PartialArtifact() {
  if (dir_.empty()) return;
  std::error_code ignored;  // at worst the next Create() of this name removes it
  fs::remove_all(dir_, ignored);
}

std::string PartialArtifact::FilePath(const std::string& name) const {
  return artifacts::ArtifactDataFile(dir_, name);
}

absl::Status PartialArtifact::CopyIn(const std::string& from, const std::string& name) {
  ScopedFd in(::open(from.c_str(), O_RDONLY | O_CLOEXEC));
  if (!in) return ErrnoStatus(errno, "open " + from);
  const std::string to = FilePath(name);
  ScopedFd out(::open(to.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (!out) return ErrnoStatus(errno, "create " + to);
  std::vector<char> buf(1 << 20);
  uint64_t offset = 0;
  for (;;) {
    const ssize_t n = ::read(in.get(), buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrnoStatus(errno, "read " + from);
    if (n == 0) break;
    const std::string_view chunk(buf.data(), static_cast<size_t>(n));
    if (absl::Status s = disk_->WriteAt(out.get(), offset, chunk, to); !s.ok()) return s;
    offset += static_cast<uint64_t>(n);
  }
  if (absl::Status s = disk_->Sync(out.get(), to); !s.ok()) return s;
  int err = 0;
  if (!out.Close(&err)) return ErrnoStatus(err, "close " + to);
  return absl::OkStatus();
}

absl::Status PartialArtifact::Commit(artifacts::ArtifactManifest& manifest,
                                     const std::string& image) {
  if (dir_.empty()) return absl::FailedPreconditionError("artifact already committed");
  manifest.files.clear();
  const std::string files_dir = artifacts::ArtifactDataDir(dir_);
  std::error_code ec;
  for (const fs::directory_entry& entry : fs::directory_iterator(files_dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (!entry.is_regular_file()) {
      return absl::InternalError(absl::StrCat("artifact file ", name, " is not a regular file"));
    }
    absl::StatusOr<artifacts::FileDigest> digest = artifacts::DigestFile(entry.path().string());
    if (!digest.ok()) return digest.status();
    manifest.files.push_back({name, digest->size, digest->sha256});
  }
  if (ec) return ErrnoStatus(ec.value(), "list " + files_dir);
  const artifacts::ArtifactFile* image_file = manifest.Find(image);
  if (image_file == nullptr) {
    return absl::InternalError(absl::StrCat("artifact has no image file ", image));
  }
  manifest.build_id = image_file->sha256;
  if (absl::Status s = artifacts::ValidateManifest(manifest); !s.ok()) return s;
  if (absl::Status s = disk_->SyncDirectory(files_dir); !s.ok()) return s;
  const std::string text = artifacts::EncodeManifest(manifest);
  if (absl::Status s = disk_->WriteFileAtomic(artifacts::ArtifactManifestFile(dir_), text);
      !s.ok()) {
    return s;
  }
  if (absl::Status s = disk_->Rename(dir_, final_dir_); !s.ok()) return s;
  dir_.clear();
  return disk_->SyncDirectory(DirName(final_dir_));
}

}  // namespace tlbfleet::agent::builder
