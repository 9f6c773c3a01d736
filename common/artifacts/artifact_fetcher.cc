#include "common/artifacts/artifact_fetcher.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <system_error>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "common/artifacts/sha256.h"
#include "common/files.h"
#include "common/scoped_fd.h"
#include "common/status_macros.h"

namespace tlbfleet::artifacts {

namespace {

// The manifest a staged directory holds, if it holds a readable, canonical one for `id`.
absl::StatusOr<ArtifactManifest> StagedManifest(const std::string& dir, const std::string& id) {
  TLB_ASSIGN_OR_RETURN(std::string text, ReadFile(ArtifactManifestFile(dir)));
  if (Sha256Hex(text) != id) return absl::DataLossError("staged manifest does not match its id");
  return ParseManifest(text);
}

void RemoveTree(const std::string& path) {
  std::error_code ignored;  // what cannot be removed now is removed by the next fetch's reset
  std::filesystem::remove_all(path, ignored);
}

}  // namespace

ArtifactFetcher::ArtifactFetcher(std::string staging_dir, ArtifactChunkSource& source,
                                 Options options)
    : staging_dir_(std::move(staging_dir)),
      source_(source),
      options_(options),
      disk_(options.disk != nullptr ? *options.disk : DiskWriter::Real()) {}

std::string ArtifactFetcher::ArtifactDir(std::string_view id) const {
  return absl::StrCat(staging_dir_, "/", std::string(id));
}

std::string ArtifactFetcher::PartialDir(std::string_view id) const {
  return absl::StrCat(staging_dir_, "/partial/", std::string(id));
}

absl::StatusOr<FetchedArtifact> ArtifactFetcher::Fetch(std::string_view id_view) {
  const std::string id(id_view);
  if (!ValidArtifactId(id)) {
    return absl::InvalidArgumentError(absl::StrCat("artifact id \"", id, "\": not an id"));
  }
  {
    absl::MutexLock lock(&mu_);
    if (!in_flight_.emplace(id).second) {
      return absl::AbortedError(absl::StrCat("artifact ", id, " is being fetched already"));
    }
  }
  absl::Cleanup done = [this, id] {
    absl::MutexLock lock(&mu_);
    in_flight_.erase(in_flight_.find(id));
  };

  FetchedArtifact out;
  out.id = std::string(id);
  out.dir = ArtifactDir(id);
  // A staged directory exists only once verified (it is renamed into place): trust it.
  if (absl::StatusOr<ArtifactManifest> staged = StagedManifest(out.dir, id); staged.ok()) {
    out.manifest = *std::move(staged);
    out.already_present = true;
    return out;
  }
  TLB_ASSIGN_OR_RETURN(out.manifest, FetchManifest(id));
  TLB_RETURN_IF_ERROR(FetchInto(id, out.manifest, &out));
  return out;
}

absl::StatusOr<ArtifactManifest> ArtifactFetcher::FetchManifest(const std::string& id) {
  const int attempts = std::max(1, options_.max_attempts);
  std::string last_sha;
  for (int attempt = 0; attempt < attempts; ++attempt) {
    TLB_ASSIGN_OR_RETURN(std::string text, source_.ManifestText(id));
    last_sha = Sha256Hex(text);
    if (last_sha == id) return ParseManifest(text);
  }
  return absl::DataLossError(absl::StrCat("artifact ", id, ": the manifest arrived with sha256 ",
                                          last_sha, " ", attempts, " times; refused"));
}

absl::Status ArtifactFetcher::FetchInto(const std::string& id, const ArtifactManifest& manifest,
                                        FetchedArtifact* out) {
  const std::string partial = PartialDir(id);
  TLB_RETURN_IF_ERROR(MakeDirs(ArtifactDataDir(partial)));
  const std::string manifest_text = EncodeManifest(manifest);
  if (absl::StatusOr<std::string> held = ReadFile(ArtifactManifestFile(partial));
      !held.ok() || *held != manifest_text) {
    TLB_RETURN_IF_ERROR(disk_.WriteFileAtomic(ArtifactManifestFile(partial), manifest_text));
  }
  for (const ArtifactFile& file : manifest.files) {
    for (int attempt = 1;; ++attempt) {
      TLB_RETURN_IF_ERROR(FetchFile(id, file, &out->bytes_fetched));
      absl::Status verified = VerifyArtifactFile(partial, file);
      if (verified.ok()) break;
      if (!absl::IsDataLoss(verified)) return verified;
      if (attempt >= options_.max_attempts) {
        RemoveTree(partial);
        return absl::DataLossError(absl::StrCat("artifact ", id, ": refused after ", attempt,
                                                " fetches: ", verified.message()));
      }
      // Corrupted in transit (or on the way to our disk): the whole file again.
      if (::unlink(ArtifactDataFile(partial, file.name).c_str()) != 0 && errno != ENOENT) {
        return ErrnoStatus(errno, ArtifactDataFile(partial, file.name));
      }
      ++out->refetched_files;
    }
  }
  return SyncAndPublish(id, manifest);
}

absl::Status ArtifactFetcher::FetchFile(const std::string& id, const ArtifactFile& file,
                                        uint64_t* bytes_fetched) {
  const std::string path = ArtifactDataFile(PartialDir(id), file.name);
  ScopedFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
  if (!fd) return ErrnoStatus(errno, path);
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) return ErrnoStatus(errno, path);
  uint64_t have = static_cast<uint64_t>(st.st_size);
  if (have > file.size) {  // not a prefix of this file: start again
    if (::ftruncate(fd.get(), 0) != 0) return ErrnoStatus(errno, absl::StrCat("truncate ", path));
    have = 0;
  }
  while (have < file.size) {
    const uint64_t want =
        std::min<uint64_t>(std::max<uint64_t>(options_.chunk_bytes, 1), file.size - have);
    absl::StatusOr<std::string> chunk = source_.ReadChunk(id, file.name, have, want);
    if (!chunk.ok()) {
      return absl::Status(chunk.status().code(),
                          absl::StrCat("artifact ", id, " file ", file.name, " at offset ", have,
                                       ": ", chunk.status().message()));
    }
    if (chunk->empty() || chunk->size() > want) {
      return absl::DataLossError(
          absl::StrCat("artifact ", id, " file ", file.name, ": the source sent ", chunk->size(),
                       " bytes at offset ", have, " of ", file.size, " when asked for ", want));
    }
    if (absl::Status s = disk_.WriteAt(fd.get(), have, *chunk, path); !s.ok()) {
      // Keep only whole chunks, so that the next call resumes at a chunk the source sent.
      (void)::ftruncate(fd.get(), static_cast<off_t>(have));  // best effort: verified anyway
      return s;
    }
    have += chunk->size();
    *bytes_fetched += chunk->size();
  }
  return absl::OkStatus();
}

absl::Status ArtifactFetcher::SyncAndPublish(const std::string& id,
                                             const ArtifactManifest& manifest) {
  const std::string partial = PartialDir(id);
  for (const ArtifactFile& file : manifest.files) {
    const std::string path = ArtifactDataFile(partial, file.name);
    ScopedFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd) return ErrnoStatus(errno, path);
    TLB_RETURN_IF_ERROR(disk_.Sync(fd.get(), path));
  }
  TLB_RETURN_IF_ERROR(disk_.SyncDirectory(ArtifactDataDir(partial)));
  TLB_RETURN_IF_ERROR(disk_.SyncDirectory(partial));
  const std::string final_dir = ArtifactDir(id);
  RemoveTree(final_dir);  // an unreadable leftover of an earlier staging, never a verified one
  TLB_RETURN_IF_ERROR(disk_.Rename(partial, final_dir));
  TLB_RETURN_IF_ERROR(disk_.SyncDirectory(staging_dir_));
  return disk_.SyncDirectory(absl::StrCat(staging_dir_, "/partial"));
}

}  // namespace tlbfleet::artifacts
