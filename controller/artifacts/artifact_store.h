#pragma once
// The controller's store of kernel build artifacts: content-addressed, outside SQLite (a
// directory beside the database, paths.h), with its own quota and LRU eviction. A builder
// agent uploads an artifact in chunks; testing agents fetch it in chunks (ArtifactFetcher,
// common/artifacts/artifact_fetcher.h) and check it against its manifest.
//
// Transport-neutral: every call takes and returns plain values and an absl::Status whose code
// a gRPC handler passes on as it is and an HTTP one through HttpStatusFor
// (controller/api/http_json.h). The handlers are meant to be thin wrappers.
//
// Guarantees:
// - A reader never sees a half-written artifact: uploads live in incoming/ and are published
//   by one rename into objects/ after every file's size and sha256 matched the manifest and
//   was fsynced. A crash (kill -9, power loss) at any point leaves either nothing served or
//   the whole artifact.
// - An upload survives a controller restart: Open finds what incoming/ holds, and the
//   uploader's next BeginUpload (the same manifest) returns each file's received size.
// - The published total never exceeds the quota: publishing first evicts least recently used
//   artifacts that no run pins; an artifact that cannot fit is refused.
//
// Thread-safety: thread-safe. The HTTP workers and gRPC threads call it concurrently. One
// mutex guards the bookkeeping; file I/O (chunks, hashing) happens outside it, so a Finish
// hashing a large upload or a slow reader does not block other calls. Appends to one upload
// are serialised (offsets must follow each other anyway).

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/artifacts/disk_writer.h"
#include "common/artifacts/manifest.h"
#include "common/clock.h"

namespace tlbfleet::artifacts {

// Where an upload stands: what BeginUpload returns, first and on every resume.
struct UploadState {
  std::string upload_id;    // the artifact id: the same build resumes the same upload
  std::string artifact_id;  // ArtifactIdOf(manifest)
  bool published = false;   // already in the store: nothing to send, nothing to Finish
  // Per file of the manifest: the bytes the store holds, i.e. the offset of the next chunk.
  std::map<std::string, uint64_t> received;
};

// One published artifact, for listings (dashboard, admin).
struct ArtifactInfo {
  std::string id;
  ArtifactManifest manifest;
  uint64_t bytes = 0;  // the sum of its files' sizes: what counts against the quota
  absl::Time last_use;
  std::vector<std::string> pins;  // owners, sorted
};

class ArtifactStore {
 public:
  struct Options {
    // The most the published artifacts may hold together (file bytes; manifests not counted).
    uint64_t quota_bytes = uint64_t{10} << 30;
    // The largest chunk AppendChunk accepts and ReadChunk returns.
    uint64_t max_chunk_bytes = uint64_t{4} << 20;
    // An upload nobody appended to for this long is discarded (counted from Open for the
    // uploads found there), so a builder that died does not hold disk forever.
    absl::Duration abandoned_upload_after = absl::Hours(24);
    // Last use is written to the index at most this often per artifact (reads are frequent;
    // an LRU order a minute stale after a crash costs nothing).
    absl::Duration last_use_resolution = absl::Minutes(1);
    // A read that reaches the end of a file checks that file's sha256 again (outside the
    // lock), at most once per file in this interval: bytes that rotted on disk are
    // quarantined the first time they would be served whole, not fetched and refused by
    // every agent. Zero checks at every such read.
    absl::Duration verify_served_every = absl::Minutes(10);
    Clock* clock = nullptr;      // Clock::Real() when null
    DiskWriter* disk = nullptr;  // DiskWriter::Real() when null: tests inject ENOSPC here
  };

  virtual ~ArtifactStore() = default;

  // Opens (creating it if needed) the store in `dir`, usually
  // paths::ArtifactDirForDatabase(--db). Takes the directory's lock (FAILED_PRECONDITION naming
  // the holder's pid if another process has it), empties trash/, quarantines objects whose
  // manifest or file sizes are wrong, finds the uploads in incoming/ with their received sizes,
  // and evicts down to the quota if it was lowered. INVALID_ARGUMENT for a zero quota or chunk.
  static absl::StatusOr<std::unique_ptr<ArtifactStore>> Open(const std::string& dir,
                                                             Options options);

  // --- upload (a builder agent, through a transport) -------------------------------------
  // Starts an upload, or resumes the one for the same manifest. INVALID_ARGUMENT naming the
  // field for a bad manifest; RESOURCE_EXHAUSTED "... N bytes is over the artifact quota of Q
  // bytes" when it could never fit; published=true if the store has it already.
  virtual absl::StatusOr<UploadState> BeginUpload(const ArtifactManifest& manifest) = 0;
  // Writes `bytes` at `offset` of file `file`. `offset` must be what the store holds
  // (FAILED_PRECONDITION "... holds H bytes" otherwise: call BeginUpload to learn it); past the
  // manifest's size, an unknown file or a chunk over max_chunk_bytes is INVALID_ARGUMENT;
  // NOT_FOUND for an unknown (finished, discarded) upload. A failed write (ENOSPC:
  // RESOURCE_EXHAUSTED) keeps what was held before it. Returns the new size held.
  virtual absl::StatusOr<uint64_t> AppendChunk(std::string_view upload_id, std::string_view file,
                                               uint64_t offset, std::string_view bytes) = 0;
  // Checks every file's size and sha256 against the manifest, fsyncs, evicts what must go and
  // publishes; returns the artifact id. A file not complete yet: FAILED_PRECONDITION, the
  // upload is kept. Any other failure discards the upload and publishes nothing: DATA_LOSS
  // naming the file whose checksum differs; RESOURCE_EXHAUSTED when it cannot fit even after
  // evicting every unpinned artifact (naming its size, the quota and the pinned bytes), or
  // when the disk is full; the disk's error otherwise.
  virtual absl::StatusOr<std::string> FinishUpload(std::string_view upload_id) = 0;
  // Discards an upload (a builder that gives up). NOT_FOUND if there is none.
  virtual absl::Status AbortUpload(std::string_view upload_id) = 0;

  // --- fetch (testing agents) -------------------------------------------------------------
  // The manifest of a published artifact; NOT_FOUND if the store does not have it (never
  // uploaded, evicted, quarantined). Counts as a use.
  virtual absl::StatusOr<ArtifactManifest> Manifest(std::string_view id) = 0;
  // Up to min(max_bytes, max_chunk_bytes) bytes of file `file` from `offset`; empty at its
  // end; OUT_OF_RANGE past it; NOT_FOUND for an unknown artifact or file. Counts as a use.
  // A read reaching the file's end first checks the whole file (Options::verify_served_every):
  // a mismatch quarantines the artifact, as Verify does, and returns its DATA_LOSS.
  virtual absl::StatusOr<std::string> ReadChunk(std::string_view id, std::string_view file,
                                                uint64_t offset, uint64_t max_bytes) = 0;
  // Recomputes every checksum of a published artifact. A mismatch moves it to quarantine/
  // (never served again, its pins dropped) and returns DATA_LOSS naming the file.
  virtual absl::Status Verify(std::string_view id) = 0;

  // --- pins (runs that will fetch an artifact) ---------------------------------------------
  // A pinned artifact is never evicted. Pins are durable (the index), so a run's pin survives
  // a restart; the core drops a finished run's pins with UnpinOwner. Pin: NOT_FOUND for an
  // unknown artifact, INVALID_ARGUMENT for an owner that is not ValidPinOwner; the disk's error
  // if the index cannot be written (the pin holds until restart). Unpin is idempotent.
  virtual absl::Status Pin(std::string_view id, std::string_view owner) = 0;
  virtual absl::Status Unpin(std::string_view id, std::string_view owner) = 0;
  virtual absl::Status UnpinOwner(std::string_view owner) = 0;

  // --- state ------------------------------------------------------------------------------
  virtual std::vector<ArtifactInfo> List() const = 0;  // sorted by id
  virtual uint64_t UsedBytes() const = 0;              // published bytes, <= quota
  virtual const std::string& dir() const = 0;
};

}  // namespace tlbfleet::artifacts
