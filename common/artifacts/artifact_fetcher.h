#pragma once
// The fetching side of an artifact (an agent that is to boot a kernel build): copies it chunk
// by chunk from an ArtifactChunkSource into a local staging directory, resumes from what it
// already holds, and hands out only what matches the manifest's checksums.
//
//   <staging-dir>/
//     <id>/                   a fetched, verified artifact (manifest + files/, manifest.h)
//     partial/
//       <id>/                 a fetch in progress: each file resumes from the size it has
//
// Why here, in its own library (tlbfleet_artifact_client) and not in the controller's store:
// the agent links it, and no agent code links or includes the controller. The controller's
// store uses the manifest and the DiskWriter seam from the same library.

#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "common/artifacts/disk_writer.h"
#include "common/artifacts/manifest.h"

namespace tlbfleet::artifacts {

// Where the bytes come from: a transport's client in production (gRPC or HTTP to the
// controller's ArtifactStore), the store itself or a corrupting wrapper in tests. Nothing the
// source says is trusted: the manifest is checked against the id asked for, every file against
// the manifest.
class ArtifactChunkSource {
 public:
  virtual ~ArtifactChunkSource() = default;
  // The canonical manifest text of artifact `id` (EncodeManifest of ArtifactStore::Manifest).
  virtual absl::StatusOr<std::string> ManifestText(std::string_view id) = 0;
  // Up to `max_bytes` of file `name` of artifact `id` from `offset`; fewer only at its end.
  virtual absl::StatusOr<std::string> ReadChunk(std::string_view id, std::string_view name,
                                                uint64_t offset, uint64_t max_bytes) = 0;
};

struct FetchedArtifact {
  std::string id;
  std::string dir;  // <staging-dir>/<id>: the per-artifact layout of manifest.h
  ArtifactManifest manifest;
  uint64_t bytes_fetched = 0;  // bytes received by this call (0 if it was there already)
  int refetched_files = 0;     // files refused for their checksum and fetched again
  bool already_present = false;
};

class ArtifactFetcher {
 public:
  struct Options {
    uint64_t chunk_bytes = 1 << 20;  // asked for per ReadChunk
    // Times a file (or the manifest) is fetched before a checksum mismatch is final. A
    // corruption in transit is fetched again; a source whose own copy is bad fails each time.
    int max_attempts = 3;
    DiskWriter* disk = nullptr;  // DiskWriter::Real() when null
  };

  // `staging_dir` is created on first use. `source` must outlive the fetcher.
  ArtifactFetcher(std::string staging_dir, ArtifactChunkSource& source, Options options);
  ArtifactFetcher(std::string staging_dir, ArtifactChunkSource& source)
      : ArtifactFetcher(std::move(staging_dir), source, Options()) {}

  // Makes artifact `id` present and verified under <staging-dir>/<id>/. Resumes a fetch an
  // earlier call (or process) left in partial/. Errors:
  //   INVALID_ARGUMENT  `id` is not an artifact id;
  //   ABORTED           another call is fetching the same id;
  //   DATA_LOSS         a file (or the manifest) failed its checksum max_attempts times, naming
  //                     it: the partial copy is deleted, nothing is staged; also when the
  //                     source's file ends before the manifest's size (partial kept);
  //   RESOURCE_EXHAUSTED and other disk errors: the partial copy is kept for the next call;
  //   the source's own errors (NOT_FOUND, UNAVAILABLE...) as they come: partial kept.
  // Never leaves anything under <staging-dir>/<id>/ that failed its checksum.
  absl::StatusOr<FetchedArtifact> Fetch(std::string_view id);

  // <staging-dir>/<id> and <staging-dir>/partial/<id>.
  std::string ArtifactDir(std::string_view id) const;
  std::string PartialDir(std::string_view id) const;

  // Thread-safe: concurrent Fetch calls for different ids work in different directories; a
  // second call for an id being fetched is refused (ABORTED).

 private:
  absl::StatusOr<ArtifactManifest> FetchManifest(const std::string& id);
  // Appends to the partial file `file` until it has the manifest's size.
  absl::Status FetchFile(const std::string& id, const ArtifactFile& file, uint64_t* bytes_fetched);
  absl::Status FetchInto(const std::string& id, const ArtifactManifest& manifest,
                         FetchedArtifact* out);
  absl::Status SyncAndPublish(const std::string& id, const ArtifactManifest& manifest);

  const std::string staging_dir_;
  ArtifactChunkSource& source_;
  const Options options_;
  DiskWriter& disk_;

  absl::Mutex mu_;
  std::set<std::string, std::less<>> in_flight_ ABSL_GUARDED_BY(mu_);
};

}  // namespace tlbfleet::artifacts
