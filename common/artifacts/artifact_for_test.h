#pragma once
// Test helpers (header-only, tests only) for artifacts: an artifact made of given bytes, a
// chunk source that serves it from memory, and a disk that fills up or fails on demand.

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/artifacts/artifact_fetcher.h"
#include "common/artifacts/disk_writer.h"
#include "common/artifacts/manifest.h"
#include "common/artifacts/sha256.h"
#include "common/files.h"

namespace tlbfleet::artifacts {

struct TestArtifact {
  ArtifactManifest manifest;
  std::map<std::string, std::string> contents;  // file name -> bytes
  std::string id() const { return ArtifactIdOf(manifest); }
};

// `n` bytes that differ with `seed` and along the file (so that an offset error shows).
inline std::string TestBytes(size_t n, int seed) {
  std::string out(n, '\0');
  for (size_t i = 0; i < n; ++i) out[i] = static_cast<char>((i * 31 + seed * 7 + i / 251) & 0xff);
  return out;
}

// An artifact of build `build_id` whose files hold `contents`.
inline TestArtifact MakeTestArtifact(std::string_view build_id,
                                     std::map<std::string, std::string> contents) {
  TestArtifact a;
  a.manifest.source = "linux";
  a.manifest.config = "lab";
  a.manifest.commit = Sha256Hex(build_id).substr(0, 40);
  a.manifest.arch = "x86_64";
  a.manifest.compiler = "gcc (Debian 12.2.0-14) 12.2.0";
  a.manifest.kernel_release = "6.1.0-lab+";
  a.manifest.build_id = std::string(build_id);
  for (const auto& [name, bytes] : contents) {
    a.manifest.files.push_back({name, bytes.size(), Sha256Hex(bytes)});
  }
  a.contents = std::move(contents);
  return a;
}

// A kernel-like artifact of `bytes` bytes in total over three files.
inline TestArtifact MakeSizedArtifact(std::string_view build_id, size_t bytes, int seed = 1) {
  const size_t image = bytes / 2, map = bytes / 4;
  return MakeTestArtifact(build_id, {{"bzImage", TestBytes(image, seed)},
                                     {"System.map", TestBytes(map, seed + 1)},
                                     {"config", TestBytes(bytes - image - map, seed + 2)}});
}

// Serves artifacts from memory, corrupting or failing answers on demand.
class MemoryChunkSource : public ArtifactChunkSource {
 public:
  void Add(const TestArtifact& a) {
    absl::MutexLock lock(&mu_);
    artifacts_[a.id()] = a;
  }
  // Flips one byte of each of the next `n` non-empty chunks: "corrupted in transit".
  void CorruptNextChunks(int n) {
    absl::MutexLock lock(&mu_);
    corrupt_chunks_ = n;
  }
  void CorruptNextManifests(int n) {
    absl::MutexLock lock(&mu_);
    corrupt_manifests_ = n;
  }
  // ReadChunk answers UNAVAILABLE after `n` more reads (-1: never): a lost connection.
  void FailReadsAfter(int n) {
    absl::MutexLock lock(&mu_);
    reads_before_failing_ = n;
  }
  int reads() const {
    absl::MutexLock lock(&mu_);
    return reads_;
  }

  absl::StatusOr<std::string> ManifestText(std::string_view id) override {
    absl::MutexLock lock(&mu_);
    auto it = artifacts_.find(std::string(id));
    if (it == artifacts_.end())
      return absl::NotFoundError(absl::StrCat("no artifact ", std::string(id)));
    std::string text = EncodeManifest(it->second.manifest);
    if (corrupt_manifests_ > 0) {
      --corrupt_manifests_;
      text[text.size() / 2] ^= 0x20;
    }
    return text;
  }
  absl::StatusOr<std::string> ReadChunk(std::string_view id, std::string_view name, uint64_t offset,
                                        uint64_t max_bytes) override {
    absl::MutexLock lock(&mu_);
    if (reads_before_failing_ == 0) return absl::UnavailableError("connection lost");
    if (reads_before_failing_ > 0) --reads_before_failing_;
    ++reads_;
    auto it = artifacts_.find(std::string(id));
    if (it == artifacts_.end())
      return absl::NotFoundError(absl::StrCat("no artifact ", std::string(id)));
    auto file = it->second.contents.find(std::string(name));
    if (file == it->second.contents.end()) return absl::NotFoundError("no such file");
    if (offset > file->second.size()) return absl::OutOfRangeError("past the end");
    std::string chunk = file->second.substr(offset, max_bytes);
    if (corrupt_chunks_ > 0 && !chunk.empty()) {
      --corrupt_chunks_;
      chunk[chunk.size() / 2] ^= 0x01;
    }
    return chunk;
  }

 private:
  mutable absl::Mutex mu_;
  std::map<std::string, TestArtifact> artifacts_ ABSL_GUARDED_BY(mu_);
  int corrupt_chunks_ ABSL_GUARDED_BY(mu_) = 0;
  int corrupt_manifests_ ABSL_GUARDED_BY(mu_) = 0;
  int reads_before_failing_ ABSL_GUARDED_BY(mu_) = -1;
  int reads_ ABSL_GUARDED_BY(mu_) = 0;
};

// A disk that fills up: WriteAt accepts `write_budget` more bytes (-1: no limit), writes what
// fits of the write that crosses it and fails that write with ENOSPC, as a real full disk does.
// The fail_* flags fail every later call of that kind with ENOSPC.
class FullDisk : public DiskWriter {
 public:
  std::atomic<int64_t> write_budget{-1};
  std::atomic<bool> fail_sync{false};
  std::atomic<bool> fail_rename{false};
  std::atomic<bool> fail_write_file{false};

  absl::Status WriteAt(int fd, uint64_t offset, std::string_view bytes,
                       std::string_view path) override {
    int64_t budget = write_budget.load();
    if (budget >= 0 && static_cast<int64_t>(bytes.size()) > budget) {
      write_budget = 0;
      (void)DiskWriter::WriteAt(fd, offset, bytes.substr(0, budget), path);  // the part that fit
      return ErrnoStatus(ENOSPC, absl::StrCat("write ", std::string(path)));
    }
    if (budget >= 0) write_budget -= static_cast<int64_t>(bytes.size());
    return DiskWriter::WriteAt(fd, offset, bytes, path);
  }
  absl::Status Sync(int fd, std::string_view path) override {
    if (fail_sync) return ErrnoStatus(ENOSPC, absl::StrCat("fsync ", std::string(path)));
    return DiskWriter::Sync(fd, path);
  }
  absl::Status Rename(const std::string& from, const std::string& to) override {
    if (fail_rename) return ErrnoStatus(ENOSPC, absl::StrCat("rename ", from));
    return DiskWriter::Rename(from, to);
  }
  absl::Status WriteFileAtomic(const std::string& path, std::string_view contents) override {
    if (fail_write_file) return ErrnoStatus(ENOSPC, path);
    return DiskWriter::WriteFileAtomic(path, contents);
  }
};

}  // namespace tlbfleet::artifacts
