#include "controller/artifacts/artifact_store.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <system_error>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/synchronization/mutex.h"
#include "common/artifacts/sha256.h"
#include "common/files.h"
#include "common/scoped_fd.h"
#include "common/status_macros.h"
#include "controller/artifacts/artifact_index.h"
#include "controller/artifacts/paths.h"
#include "spdlog/spdlog.h"

namespace tlbfleet::artifacts {

namespace {

using SizeMap = std::map<std::string, uint64_t, std::less<>>;

// An upload in incoming/. Lock order: an Upload's mu before the store's mu_. Its entry in the
// store's map is removed only by a holder of both, which also sets `gone`: a caller that holds
// `mu` and sees !gone owns incoming/<id> until it lets go.
struct Upload {
  Upload(std::string id_in, ArtifactManifest manifest_in, SizeMap received_in, int64_t now)
      : id(std::move(id_in)),
        manifest(std::move(manifest_in)),
        last_activity_millis(now),
        received(std::move(received_in)) {}

  const std::string id;
  const ArtifactManifest manifest;
  std::atomic<int64_t> last_activity_millis;

  absl::Mutex mu;
  bool gone ABSL_GUARDED_BY(mu) = false;  // published or discarded
  SizeMap received ABSL_GUARDED_BY(mu);
};

struct StoredObject {
  ArtifactManifest manifest;
  uint64_t bytes = 0;
  int64_t last_use_millis = 0;
  int64_t saved_last_use_millis = 0;  // what the index file holds
  std::set<std::string> pins;
  // File name -> when a read reaching its end last checked its sha256 (not persisted: a
  // restart checks each file once more).
  std::map<std::string, int64_t, std::less<>> served_check_millis;
};

void DeleteTree(const std::string& path) {
  std::error_code ec;
  std::filesystem::remove_all(path, ec);
  // trash/ is emptied again on the next Open: a leftover costs disk, not correctness.
  if (ec) spdlog::warn("artifacts: cannot delete {}: {}", path, ec.message());
}

// Directories renamed into trash/ while the store's mutex is held, deleted when this goes out
// of scope: declared before the MutexLock, it runs after the unlock.
class DeferredDelete {
 public:
  DeferredDelete() = default;
  DeferredDelete(const DeferredDelete&) = delete;
  DeferredDelete& operator=(const DeferredDelete&) = delete;
  ~DeferredDelete() {
    for (const std::string& path : paths_) DeleteTree(path);
  }
  void Add(std::string path) { paths_.push_back(std::move(path)); }

 private:
  std::vector<std::string> paths_;
};

// The manifest in `dir`, checked against `id` (its text must hash to it).
absl::StatusOr<ArtifactManifest> ReadStoredManifest(const std::string& dir, std::string_view id) {
  TLB_ASSIGN_OR_RETURN(std::string text, ReadFile(ArtifactManifestFile(dir)));
  if (Sha256Hex(text) != id) {
    return absl::DataLossError(absl::StrCat("manifest has sha256 ", Sha256Hex(text)));
  }
  return ParseManifest(text);
}

// Each file's size in `dir`; an error for a missing one or one longer than the manifest says.
absl::StatusOr<SizeMap> StoredSizes(const std::string& dir, const ArtifactManifest& manifest) {
  SizeMap sizes;
  for (const ArtifactFile& f : manifest.files) {
    std::error_code ec;
    const uint64_t size = std::filesystem::file_size(ArtifactDataFile(dir, f.name), ec);
    if (ec) return absl::DataLossError(absl::StrCat("file ", f.name, ": ", ec.message()));
    if (size > f.size) {
      return absl::DataLossError(
          absl::StrCat("file ", f.name, ": ", size, " bytes, the manifest says ", f.size));
    }
    sizes[f.name] = size;
  }
  return sizes;
}

// The names in `dir`; an error rather than a short list, which Open would take for lost objects.
absl::StatusOr<std::vector<std::string>> ListDirectory(const std::string& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    names.push_back(it->path().filename());
  }
  if (ec) return absl::InternalError(absl::StrCat("list ", dir, ": ", ec.message()));
  std::sort(names.begin(), names.end());
  return names;
}

absl::StatusOr<ScopedFd> LockStoreDirectory(const std::string& dir) {
  const std::string path = paths::LockFile(dir);
  ScopedFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644));
  if (!fd) return ErrnoStatus(errno, path);
  if (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) {
    if (errno != EWOULDBLOCK) return ErrnoStatus(errno, absl::StrCat("flock ", path));
    char pid[32] = {};
    const ssize_t n = ::pread(fd.get(), pid, sizeof pid - 1, 0);
    return absl::FailedPreconditionError(
        absl::StrCat("artifact directory ", dir, " is in use by another process",
                     n > 0 ? absl::StrCat(" (pid ", absl::StripAsciiWhitespace(pid), ")") : ""));
  }
  const std::string pid = absl::StrCat(::getpid(), "\n");
  if (::ftruncate(fd.get(), 0) != 0 || ::pwrite(fd.get(), pid.data(), pid.size(), 0) < 0) {
    return ErrnoStatus(errno, path);
  }
  return fd;
}

absl::Status WithContext(const absl::Status& s, std::string_view context) {
  return absl::Status(s.code(), absl::StrCat(std::string(context), ": ", s.message()));
}

class ArtifactStoreImpl final : public ArtifactStore {
 public:
  ArtifactStoreImpl(std::string root, Options options, ScopedFd lock)
      : root_(std::move(root)),
        options_(options),
        clock_(options.clock != nullptr ? *options.clock : Clock::Real()),
        disk_(options.disk != nullptr ? *options.disk : DiskWriter::Real()),
        lock_(std::move(lock)) {}

  absl::Status Recover() ABSL_LOCKS_EXCLUDED(mu_);

  absl::StatusOr<UploadState> BeginUpload(const ArtifactManifest& manifest) override;
  absl::StatusOr<uint64_t> AppendChunk(std::string_view upload_id, std::string_view file,
                                       uint64_t offset, std::string_view bytes) override;
  absl::StatusOr<std::string> FinishUpload(std::string_view upload_id) override;
  absl::Status AbortUpload(std::string_view upload_id) override;
  absl::StatusOr<ArtifactManifest> Manifest(std::string_view id) override;
  absl::StatusOr<std::string> ReadChunk(std::string_view id, std::string_view file, uint64_t offset,
                                        uint64_t max_bytes) override;
  absl::Status Verify(std::string_view id) override;
  absl::Status Pin(std::string_view id, std::string_view owner) override;
  absl::Status Unpin(std::string_view id, std::string_view owner) override;
  absl::Status UnpinOwner(std::string_view owner) override;
  std::vector<ArtifactInfo> List() const override;
  uint64_t UsedBytes() const override;
  const std::string& dir() const override { return root_; }

 private:
  absl::StatusOr<std::shared_ptr<Upload>> FindUpload(std::string_view upload_id)
      ABSL_LOCKS_EXCLUDED(mu_);
  // incoming/<id> with empty files, then its manifest (what makes it an upload on Open).
  absl::StatusOr<std::shared_ptr<Upload>> CreateUploadLocked(const std::string& id,
                                                             const ArtifactManifest& manifest)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void DiscardUploadLocked(Upload& upload, DeferredDelete& trash)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(upload.mu, mu_);
  void DiscardUpload(Upload& upload) ABSL_EXCLUSIVE_LOCKS_REQUIRED(upload.mu)
      ABSL_LOCKS_EXCLUDED(mu_);
  void DiscardAbandonedUploads() ABSL_LOCKS_EXCLUDED(mu_);
  // Verifies and fsyncs a complete upload's files (no store lock: it reads them all).
  absl::Status CheckAndSync(const Upload& upload) ABSL_EXCLUSIVE_LOCKS_REQUIRED(upload.mu);
  absl::StatusOr<std::string> PublishLocked(Upload& upload, DeferredDelete& trash)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(upload.mu, mu_);

  // Renames `path` to trash/<name>.<n> and hands it to `trash`.
  absl::Status MoveToTrashLocked(const std::string& path, std::string_view name,
                                 DeferredDelete& trash) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Evicts unpinned objects, least recently used first, until `bytes` more fit in the quota.
  absl::Status MakeRoomLocked(std::string_view for_what, uint64_t bytes, DeferredDelete& trash)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Moves objects/<name> to quarantine/ (if published, forgets it).
  void QuarantineLocked(const std::string& name, const std::string& reason)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void TouchLocked(StoredObject& object) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status SaveIndexLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void SaveIndexOrWarnLocked(std::string_view after) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<StoredObject*> FindObjectLocked(std::string_view id)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::string root_;
  const Options options_;
  Clock& clock_;
  DiskWriter& disk_;
  const ScopedFd lock_;  // held for the store's life

  mutable absl::Mutex mu_;
  std::map<std::string, StoredObject, std::less<>> objects_ ABSL_GUARDED_BY(mu_);
  uint64_t used_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<std::string, std::shared_ptr<Upload>, std::less<>> uploads_ ABSL_GUARDED_BY(mu_);
  uint64_t trash_serial_ ABSL_GUARDED_BY(mu_) = 0;
};

// --- open and recovery ---------------------------------------------------------------------

absl::Status ArtifactStoreImpl::Recover() {
  for (const std::string& d : {paths::ObjectsDir(root_), paths::IncomingDir(root_),
                               paths::TrashDir(root_), paths::QuarantineDir(root_)}) {
    TLB_RETURN_IF_ERROR(MakeDirs(d, 0750));
  }
  TLB_ASSIGN_OR_RETURN(std::vector<std::string> trashed, ListDirectory(paths::TrashDir(root_)));
  for (const std::string& name : trashed) DeleteTree(paths::TrashDir(root_) + "/" + name);
  TLB_ASSIGN_OR_RETURN(std::vector<std::string> top, ListDirectory(root_));
  for (const std::string& name : top) {
    // WriteFileAtomic's temp file, left by a crash before its rename.
    if (name.starts_with("index.tmp.")) DeleteTree(root_ + "/" + name);
  }
  ArtifactIndex index;
  if (absl::StatusOr<std::string> text = ReadFile(paths::IndexFile(root_)); text.ok()) {
    absl::StatusOr<ArtifactIndex> parsed = ParseIndex(*text);
    if (parsed.ok()) {
      index = *std::move(parsed);
    } else {
      // Only recency and pins are lost: every object is still found below.
      spdlog::warn("artifacts: {}; starting a new index", parsed.status().ToString());
    }
  } else if (!absl::IsNotFound(text.status())) {
    return text.status();
  }
  // Listed before anything is renamed out of them.
  TLB_ASSIGN_OR_RETURN(std::vector<std::string> objects, ListDirectory(paths::ObjectsDir(root_)));
  TLB_ASSIGN_OR_RETURN(std::vector<std::string> incoming, ListDirectory(paths::IncomingDir(root_)));

  const int64_t now = clock_.NowMillis();
  DeferredDelete trash;
  absl::MutexLock lock(&mu_);
  for (const std::string& name : objects) {
    const std::string path = paths::ObjectDir(root_, name);
    if (!ValidArtifactId(name)) {
      QuarantineLocked(name, "not an artifact id");
      continue;
    }
    absl::StatusOr<ArtifactManifest> manifest = ReadStoredManifest(path, name);
    absl::StatusOr<SizeMap> sizes =
        manifest.ok() ? StoredSizes(path, *manifest) : manifest.status();
    if (sizes.ok()) {
      for (const ArtifactFile& f : manifest->files) {
        // A prefix is an upload's state; a published file is whole. (Checksums are Verify's:
        // reading every object on each start would slow it by the store's size.)
        if ((*sizes)[f.name] != f.size) {
          sizes = absl::DataLossError(absl::StrCat("file ", f.name, ": short"));
          break;
        }
      }
    }
    if (!sizes.ok()) {
      QuarantineLocked(name, std::string(sizes.status().message()));
      continue;
    }
    StoredObject object;
    object.bytes = manifest->TotalBytes();
    object.manifest = *std::move(manifest);
    object.last_use_millis = now;
    if (auto it = index.find(name); it != index.end()) {
      object.last_use_millis = it->second.last_use_millis;
      object.pins = it->second.pins;
    }
    object.saved_last_use_millis = object.last_use_millis;
    used_bytes_ += object.bytes;
    objects_.emplace(name, std::move(object));
  }

  for (const std::string& name : incoming) {
    const std::string path = paths::IncomingUploadDir(root_, name);
    absl::StatusOr<ArtifactManifest> manifest =
        ValidArtifactId(name) ? ReadStoredManifest(path, name)
                              : absl::InvalidArgumentError("not an artifact id");
    absl::StatusOr<SizeMap> sizes =
        manifest.ok() ? StoredSizes(path, *manifest) : manifest.status();
    if (!sizes.ok() || objects_.contains(name)) {
      // A crash while creating it, or after publishing a copy of it: nothing to resume.
      spdlog::info("artifacts: discarding upload {}: {}", name,
                   sizes.ok() ? "published already" : std::string(sizes.status().message()));
      TLB_RETURN_IF_ERROR(MoveToTrashLocked(path, name, trash));
      continue;
    }
    uploads_.emplace(name,
                     std::make_shared<Upload>(name, *std::move(manifest), *std::move(sizes), now));
  }

  if (used_bytes_ > options_.quota_bytes) {
    // The quota was lowered: evict what we can; pinned objects stay even over it.
    absl::Status s = MakeRoomLocked("a lowered quota", 0, trash);
    if (!s.ok()) spdlog::warn("artifacts: over the quota after Open: {}", std::string(s.message()));
  }
  spdlog::info("artifacts: {} objects ({} bytes of {}), {} uploads to resume in {}",
               objects_.size(), used_bytes_, options_.quota_bytes, uploads_.size(), root_);
  return SaveIndexLocked();
}

// --- upload --------------------------------------------------------------------------------

absl::StatusOr<UploadState> ArtifactStoreImpl::BeginUpload(const ArtifactManifest& manifest) {
  TLB_RETURN_IF_ERROR(ValidateManifest(manifest));
  const uint64_t bytes = manifest.TotalBytes();
  if (bytes > options_.quota_bytes) {
    return absl::ResourceExhaustedError(absl::StrCat("artifact of ", bytes,
                                                     " bytes is over the artifact quota of ",
                                                     options_.quota_bytes, " bytes"));
  }
  DiscardAbandonedUploads();
  const std::string id = ArtifactIdOf(manifest);
  // An upload found here may be discarded (abandoned, aborted) before we lock it: then a
  // second pass creates a fresh one.
  for (int pass = 0; pass < 2; ++pass) {
    std::shared_ptr<Upload> upload;
    UploadState state;
    state.upload_id = id;
    state.artifact_id = id;
    {
      absl::MutexLock lock(&mu_);
      if (auto it = objects_.find(id); it != objects_.end()) {
        TouchLocked(it->second);
        state.published = true;
        for (const ArtifactFile& f : manifest.files) state.received[f.name] = f.size;
        return state;
      }
      if (auto it = uploads_.find(id); it != uploads_.end()) {
        upload = it->second;
      } else {
        TLB_ASSIGN_OR_RETURN(upload, CreateUploadLocked(id, manifest));
      }
    }
    absl::MutexLock upload_lock(&upload->mu);
    if (upload->gone) continue;
    upload->last_activity_millis = clock_.NowMillis();
    state.received.insert(upload->received.begin(), upload->received.end());
    return state;
  }
  return absl::AbortedError(
      absl::StrCat("upload ", std::string(id), " was discarded while resuming; retry"));
}

absl::StatusOr<std::shared_ptr<Upload>> ArtifactStoreImpl::CreateUploadLocked(
    const std::string& id, const ArtifactManifest& manifest) {
  const std::string dir = paths::IncomingUploadDir(root_, id);
  DeleteTree(dir);  // a creation that failed half-way
  absl::Status s = MakeDirs(ArtifactDataDir(dir), 0750);
  SizeMap received;
  for (const ArtifactFile& f : manifest.files) {
    if (!s.ok()) break;
    const std::string path = ArtifactDataFile(dir, f.name);
    ScopedFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
    if (!fd) s = ErrnoStatus(errno, path);
    received[f.name] = 0;
  }
  if (s.ok()) s = disk_.WriteFileAtomic(ArtifactManifestFile(dir), EncodeManifest(manifest));
  if (!s.ok()) {
    DeleteTree(dir);
    return WithContext(s, absl::StrCat("upload ", std::string(id)));
  }
  auto upload = std::make_shared<Upload>(id, manifest, std::move(received), clock_.NowMillis());
  uploads_.emplace(id, upload);
  spdlog::info("artifacts: upload {} begun: {} {} {} ({} files, {} bytes)", id, manifest.source,
               manifest.config, manifest.commit, manifest.files.size(), manifest.TotalBytes());
  return upload;
}

absl::StatusOr<std::shared_ptr<Upload>> ArtifactStoreImpl::FindUpload(std::string_view upload_id) {
  absl::MutexLock lock(&mu_);
  auto it = uploads_.find(upload_id);
  if (it == uploads_.end()) {
    return absl::NotFoundError(absl::StrCat("no upload ", std::string(upload_id),
                                            " (never begun, finished or discarded)"));
  }
  return it->second;
}

absl::StatusOr<uint64_t> ArtifactStoreImpl::AppendChunk(std::string_view upload_id,
                                                        std::string_view file, uint64_t offset,
                                                        std::string_view bytes) {
  if (bytes.size() > options_.max_chunk_bytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "chunk of ", bytes.size(), " bytes is over the limit of ", options_.max_chunk_bytes));
  }
  TLB_ASSIGN_OR_RETURN(std::shared_ptr<Upload> upload, FindUpload(upload_id));
  absl::MutexLock upload_lock(&upload->mu);
  if (upload->gone) {
    return absl::NotFoundError(absl::StrCat("upload ", std::string(upload_id), " is gone"));
  }
  const ArtifactFile* spec = upload->manifest.Find(file);
  if (spec == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("upload ", std::string(upload_id),
                                                   " has no file \"", std::string(file), "\""));
  }
  uint64_t& held = upload->received.find(file)->second;
  if (offset != held) {
    return absl::FailedPreconditionError(
        absl::StrCat("upload ", std::string(upload_id), " file ", std::string(file),
                     ": chunk at offset ", offset, ", but the store holds ", held, " bytes"));
  }
  if (bytes.size() > spec->size - held) {
    return absl::InvalidArgumentError(
        absl::StrCat("upload ", std::string(upload_id), " file ", std::string(file), ": ",
                     bytes.size(), " bytes at offset ", offset, " go past its size, ", spec->size));
  }
  upload->last_activity_millis = clock_.NowMillis();
  if (bytes.empty()) return held;
  const std::string path = ArtifactDataFile(paths::IncomingUploadDir(root_, upload->id), file);
  ScopedFd fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC));
  if (!fd) return ErrnoStatus(errno, path);
  if (absl::Status s = disk_.WriteAt(fd.get(), offset, bytes, path); !s.ok()) {
    // Back to what was held, so that the uploader resumes from a known offset.
    if (::ftruncate(fd.get(), static_cast<off_t>(held)) != 0) {
      spdlog::warn("artifacts: cannot truncate {} after a failed write: {}", path,
                   std::strerror(errno));
    }
    return WithContext(s, absl::StrCat("upload ", std::string(upload_id)));
  }
  held += bytes.size();
  return held;
}

absl::Status ArtifactStoreImpl::CheckAndSync(const Upload& upload) {
  const std::string dir = paths::IncomingUploadDir(root_, upload.id);
  for (const ArtifactFile& f : upload.manifest.files) {
    TLB_RETURN_IF_ERROR(VerifyArtifactFile(dir, f));
  }
  for (const ArtifactFile& f : upload.manifest.files) {
    const std::string path = ArtifactDataFile(dir, f.name);
    ScopedFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd) return ErrnoStatus(errno, path);
    TLB_RETURN_IF_ERROR(disk_.Sync(fd.get(), path));
  }
  TLB_RETURN_IF_ERROR(disk_.SyncDirectory(ArtifactDataDir(dir)));
  return disk_.SyncDirectory(dir);
}

absl::StatusOr<std::string> ArtifactStoreImpl::FinishUpload(std::string_view upload_id) {
  TLB_ASSIGN_OR_RETURN(std::shared_ptr<Upload> upload, FindUpload(upload_id));
  absl::MutexLock upload_lock(&upload->mu);
  if (upload->gone) {
    return absl::NotFoundError(absl::StrCat("upload ", std::string(upload_id), " is gone"));
  }
  upload->last_activity_millis = clock_.NowMillis();
  for (const ArtifactFile& f : upload->manifest.files) {
    if (const uint64_t held = upload->received[f.name]; held != f.size) {
      return absl::FailedPreconditionError(absl::StrCat("upload ", std::string(upload_id), " file ",
                                                        f.name, ": ", held, " of ", f.size,
                                                        " bytes received"));
    }
  }
  if (absl::Status s = CheckAndSync(*upload); !s.ok()) {
    spdlog::warn("artifacts: upload {} refused: {}", upload_id, std::string(s.message()));
    DiscardUpload(*upload);
    return WithContext(s, absl::StrCat("upload ", std::string(upload_id), " refused"));
  }
  DeferredDelete trash;
  absl::MutexLock lock(&mu_);
  return PublishLocked(*upload, trash);
}

absl::StatusOr<std::string> ArtifactStoreImpl::PublishLocked(Upload& upload,
                                                             DeferredDelete& trash) {
  const uint64_t bytes = upload.manifest.TotalBytes();
  if (absl::Status s = MakeRoomLocked(absl::StrCat("artifact ", upload.id), bytes, trash);
      !s.ok()) {
    DiscardUploadLocked(upload, trash);
    SaveIndexOrWarnLocked("a refused upload");
    return s;
  }
  const std::string from = paths::IncomingUploadDir(root_, upload.id);
  const std::string to = paths::ObjectDir(root_, upload.id);
  if (absl::Status s = disk_.Rename(from, to); !s.ok()) {
    DiscardUploadLocked(upload, trash);
    SaveIndexOrWarnLocked("a failed publish");
    return WithContext(s, absl::StrCat("upload ", upload.id, " not published"));
  }
  // The files were fsynced; if the rename is lost in a crash, the upload reappears complete in
  // incoming/ and the uploader's next Begin and Finish publish it. Nothing wrong is served.
  for (const std::string& d : {paths::ObjectsDir(root_), paths::IncomingDir(root_)}) {
    if (absl::Status s = disk_.SyncDirectory(d); !s.ok()) {
      spdlog::warn("artifacts: published {} but {}", upload.id, std::string(s.message()));
    }
  }
  StoredObject object;
  object.manifest = upload.manifest;
  object.bytes = bytes;
  object.last_use_millis = clock_.NowMillis();
  objects_.emplace(upload.id, std::move(object));
  used_bytes_ += bytes;
  upload.gone = true;
  uploads_.erase(upload.id);
  SaveIndexOrWarnLocked("a publish");
  spdlog::info("artifacts: published {} ({} {} {}, {} bytes; {} of {} bytes used)", upload.id,
               upload.manifest.source, upload.manifest.config, upload.manifest.commit, bytes,
               used_bytes_, options_.quota_bytes);
  return upload.id;
}

absl::Status ArtifactStoreImpl::AbortUpload(std::string_view upload_id) {
  TLB_ASSIGN_OR_RETURN(std::shared_ptr<Upload> upload, FindUpload(upload_id));
  absl::MutexLock upload_lock(&upload->mu);
  if (upload->gone) {
    return absl::NotFoundError(absl::StrCat("upload ", std::string(upload_id), " is gone"));
  }
  DiscardUpload(*upload);
  return absl::OkStatus();
}

void ArtifactStoreImpl::DiscardUploadLocked(Upload& upload, DeferredDelete& trash) {
  upload.gone = true;
  uploads_.erase(upload.id);
  if (absl::Status s =
          MoveToTrashLocked(paths::IncomingUploadDir(root_, upload.id), upload.id, trash);
      !s.ok()) {
    // Deleted in place then: incoming/ is never served, and what a crash in the middle leaves
    // (no manifest, a missing file) is discarded by Open.
    spdlog::warn("artifacts: discarding upload {} in place: {}", upload.id,
                 std::string(s.message()));
    DeleteTree(paths::IncomingUploadDir(root_, upload.id));
  }
}

void ArtifactStoreImpl::DiscardUpload(Upload& upload) {
  DeferredDelete trash;
  absl::MutexLock lock(&mu_);
  DiscardUploadLocked(upload, trash);
}

void ArtifactStoreImpl::DiscardAbandonedUploads() {
  const int64_t cutoff =
      clock_.NowMillis() - absl::ToInt64Milliseconds(options_.abandoned_upload_after);
  std::vector<std::shared_ptr<Upload>> stale;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [id, upload] : uploads_) {
      if (upload->last_activity_millis < cutoff) stale.push_back(upload);
    }
  }
  for (const std::shared_ptr<Upload>& upload : stale) {
    absl::MutexLock upload_lock(&upload->mu);
    // Someone may have appended (or finished) since we looked.
    if (upload->gone || upload->last_activity_millis >= cutoff) continue;
    spdlog::info("artifacts: discarding upload {}: nothing appended for {}", upload->id,
                 absl::FormatDuration(options_.abandoned_upload_after));
    DiscardUpload(*upload);
  }
}

// --- fetch ---------------------------------------------------------------------------------

absl::StatusOr<StoredObject*> ArtifactStoreImpl::FindObjectLocked(std::string_view id) {
  auto it = objects_.find(id);
  if (it == objects_.end()) {
    return absl::NotFoundError(absl::StrCat("artifact ", std::string(id), " is not in the store"));
  }
  return &it->second;
}

absl::StatusOr<ArtifactManifest> ArtifactStoreImpl::Manifest(std::string_view id) {
  absl::MutexLock lock(&mu_);
  TLB_ASSIGN_OR_RETURN(StoredObject * object, FindObjectLocked(id));
  TouchLocked(*object);
  return object->manifest;
}

absl::StatusOr<std::string> ArtifactStoreImpl::ReadChunk(std::string_view id, std::string_view file,
                                                         uint64_t offset, uint64_t max_bytes) {
  uint64_t want = 0;
  std::optional<ArtifactFile> check_at_end;  // the file, when this read must check it
  {
    absl::MutexLock lock(&mu_);
    TLB_ASSIGN_OR_RETURN(StoredObject * object, FindObjectLocked(id));
    const ArtifactFile* spec = object->manifest.Find(file);
    if (spec == nullptr) {
      return absl::NotFoundError(
          absl::StrCat("artifact ", std::string(id), " has no file \"", std::string(file), "\""));
    }
    if (offset > spec->size) {
      return absl::OutOfRangeError(absl::StrCat("artifact ", std::string(id), " file ",
                                                std::string(file), ": offset ", offset,
                                                " is past its size, ", spec->size));
    }
    want = std::min({max_bytes, options_.max_chunk_bytes, spec->size - offset});
    TouchLocked(*object);
    if (offset + want == spec->size) {
      const int64_t now = clock_.NowMillis();
      auto [checked, first] = object->served_check_millis.try_emplace(std::string(file), now);
      if (first ||
          now - checked->second >= absl::ToInt64Milliseconds(options_.verify_served_every)) {
        checked->second = now;
        check_at_end = *spec;
      }
    }
  }
  if (check_at_end.has_value()) {
    // Outside the lock (hashing a large file takes a while). Only corruption quarantines; a
    // read error says nothing of the bytes and is returned as it is.
    absl::Status s = VerifyArtifactFile(paths::ObjectDir(root_, id), *check_at_end);
    if (absl::IsDataLoss(s) || absl::IsNotFound(s)) {
      absl::MutexLock lock(&mu_);
      if (!objects_.contains(id)) return FindObjectLocked(id).status();  // evicted meanwhile
      spdlog::error("artifacts: {} rotted on disk ({}); quarantined", std::string(id),
                    std::string(s.message()));
      QuarantineLocked(std::string(id), std::string(s.message()));
      return absl::DataLossError(
          absl::StrCat("artifact ", std::string(id), " quarantined: ", s.message()));
    }
    if (!s.ok()) return s;
  }
  // Outside the lock: an eviction may remove the file now. An open descriptor still reads the
  // whole (unlinked) file; a failed open is NOT_FOUND, as if asked a moment later.
  const std::string path = ArtifactDataFile(paths::ObjectDir(root_, id), file);
  ScopedFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) {
    return ErrnoStatus(errno,
                       absl::StrCat("artifact ", std::string(id), " file ", std::string(file)));
  }
  std::string out(want, '\0');
  size_t done = 0;
  while (done < want) {
    const ssize_t n =
        ::pread(fd.get(), out.data() + done, want - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrnoStatus(errno, absl::StrCat("read ", path));
    if (n == 0) break;  // shorter than its manifest: Verify will tell; the fetcher refuses it
    done += static_cast<size_t>(n);
  }
  out.resize(done);
  return out;
}

absl::Status ArtifactStoreImpl::Verify(std::string_view id) {
  ArtifactManifest manifest;
  {
    absl::MutexLock lock(&mu_);
    TLB_ASSIGN_OR_RETURN(StoredObject * object, FindObjectLocked(id));
    manifest = object->manifest;
  }
  const std::string dir = paths::ObjectDir(root_, id);
  absl::Status s = ReadStoredManifest(dir, id).status();
  for (size_t i = 0; s.ok() && i < manifest.files.size(); ++i) {
    s = VerifyArtifactFile(dir, manifest.files[i]);
  }
  // A read error (EIO, EACCES) says nothing of the bytes: only a wrong, missing or unparsable
  // file is corruption.
  if (s.ok() || !(absl::IsDataLoss(s) || absl::IsInvalidArgument(s) || absl::IsNotFound(s))) {
    return s;
  }
  absl::MutexLock lock(&mu_);
  // Evicted while we read it: its files went away, not bad.
  if (!objects_.contains(id)) return FindObjectLocked(id).status();
  QuarantineLocked(std::string(id), std::string(s.message()));
  return absl::DataLossError(
      absl::StrCat("artifact ", std::string(id), " quarantined: ", s.message()));
}

// --- pins, eviction, index -----------------------------------------------------------------

absl::Status ArtifactStoreImpl::Pin(std::string_view id, std::string_view owner) {
  if (!ValidPinOwner(owner)) {
    return absl::InvalidArgumentError(absl::StrCat("pin owner \"", std::string(owner),
                                                   "\": not 1..200 chars of [A-Za-z0-9._:-]"));
  }
  absl::MutexLock lock(&mu_);
  TLB_ASSIGN_OR_RETURN(StoredObject * object, FindObjectLocked(id));
  object->pins.emplace(owner);
  object->last_use_millis = clock_.NowMillis();
  return SaveIndexLocked();
}

absl::Status ArtifactStoreImpl::Unpin(std::string_view id, std::string_view owner) {
  absl::MutexLock lock(&mu_);
  auto it = objects_.find(id);
  if (it == objects_.end() || it->second.pins.erase(std::string(owner)) == 0) {
    return absl::OkStatus();
  }
  return SaveIndexLocked();
}

absl::Status ArtifactStoreImpl::UnpinOwner(std::string_view owner) {
  absl::MutexLock lock(&mu_);
  bool changed = false;
  for (auto& [id, object] : objects_) changed |= object.pins.erase(std::string(owner)) > 0;
  return changed ? SaveIndexLocked() : absl::OkStatus();
}

absl::Status ArtifactStoreImpl::MakeRoomLocked(std::string_view for_what, uint64_t bytes,
                                               DeferredDelete& trash) {
  const uint64_t quota = options_.quota_bytes;
  const uint64_t need = used_bytes_ + bytes > quota ? used_bytes_ + bytes - quota : 0;
  std::vector<EvictionCandidate> candidates;
  uint64_t pinned_bytes = 0;
  for (const auto& [id, object] : objects_) {
    candidates.push_back({id, object.bytes, object.last_use_millis, !object.pins.empty()});
    if (!object.pins.empty()) pinned_bytes += object.bytes;
  }
  std::optional<std::vector<std::string>> victims = ChooseEvictions(std::move(candidates), need);
  if (!victims) {
    return absl::ResourceExhaustedError(absl::StrCat(
        std::string(for_what), " of ", bytes, " bytes does not fit in the artifact quota of ",
        quota, " bytes: ", pinned_bytes, " bytes are pinned by runs, ", used_bytes_ - pinned_bytes,
        " unpinned"));
  }
  for (const std::string& id : *victims) {
    TLB_RETURN_IF_ERROR(MoveToTrashLocked(paths::ObjectDir(root_, id), id, trash));
    spdlog::info("artifacts: evicted {} ({} bytes, last used {}) for {}", id, objects_[id].bytes,
                 absl::FormatTime(absl::FromUnixMillis(objects_[id].last_use_millis)), for_what);
    used_bytes_ -= objects_[id].bytes;
    objects_.erase(id);
  }
  return absl::OkStatus();
}

absl::Status ArtifactStoreImpl::MoveToTrashLocked(const std::string& path, std::string_view name,
                                                  DeferredDelete& trash) {
  std::string to;
  do {
    to = absl::StrCat(paths::TrashDir(root_), "/", std::string(name), ".", ++trash_serial_);
  } while (std::filesystem::exists(to));
  TLB_RETURN_IF_ERROR(disk_.Rename(path, to));
  trash.Add(std::move(to));
  return absl::OkStatus();
}

void ArtifactStoreImpl::QuarantineLocked(const std::string& name, const std::string& reason) {
  const std::string to =
      absl::StrCat(paths::QuarantineDir(root_), "/", std::string(name), ".", clock_.NowMillis());
  absl::Status s = disk_.Rename(paths::ObjectDir(root_, name), to);
  if (auto it = objects_.find(name); it != objects_.end()) {
    used_bytes_ -= it->second.bytes;
    objects_.erase(it);
    SaveIndexOrWarnLocked("a quarantine");
  }
  // Forgotten either way: if the rename failed it stays in objects/ unserved until the next
  // Open checks it again.
  spdlog::error("artifacts: quarantined {}: {}{}", name, reason,
                s.ok() ? "" : absl::StrCat(" (left in place: ", std::string(s.message()), ")"));
}

void ArtifactStoreImpl::TouchLocked(StoredObject& object) {
  const int64_t now = clock_.NowMillis();
  object.last_use_millis = std::max(object.last_use_millis, now);
  if (now - object.saved_last_use_millis >=
      absl::ToInt64Milliseconds(options_.last_use_resolution)) {
    SaveIndexOrWarnLocked("a use");
  }
}

absl::Status ArtifactStoreImpl::SaveIndexLocked() {
  ArtifactIndex index;
  for (const auto& [id, object] : objects_) {
    index[id] = IndexEntry{object.last_use_millis, object.pins};
  }
  TLB_RETURN_IF_ERROR(disk_.WriteFileAtomic(paths::IndexFile(root_), EncodeIndex(index)));
  for (auto& [id, object] : objects_) object.saved_last_use_millis = object.last_use_millis;
  return absl::OkStatus();
}

void ArtifactStoreImpl::SaveIndexOrWarnLocked(std::string_view after) {
  // Only recency and pins can be lost, and only by a crash before the next successful save.
  if (absl::Status s = SaveIndexLocked(); !s.ok()) {
    spdlog::warn("artifacts: index not saved after {}: {}", after, std::string(s.message()));
  }
}

std::vector<ArtifactInfo> ArtifactStoreImpl::List() const {
  absl::MutexLock lock(&mu_);
  std::vector<ArtifactInfo> out;
  for (const auto& [id, object] : objects_) {
    out.push_back({id, object.manifest, object.bytes, absl::FromUnixMillis(object.last_use_millis),
                   std::vector<std::string>(object.pins.begin(), object.pins.end())});
  }
  return out;
}

uint64_t ArtifactStoreImpl::UsedBytes() const {
  absl::MutexLock lock(&mu_);
  return used_bytes_;
}

}  // namespace

absl::StatusOr<std::unique_ptr<ArtifactStore>> ArtifactStore::Open(const std::string& dir,
                                                                   Options options) {
  if (options.quota_bytes == 0 || options.max_chunk_bytes == 0) {
    return absl::InvalidArgumentError(
        "artifact store: quota_bytes and max_chunk_bytes must be > 0");
  }
  TLB_RETURN_IF_ERROR(MakeDirs(dir, 0750));
  TLB_ASSIGN_OR_RETURN(ScopedFd lock, LockStoreDirectory(dir));
  auto store = std::make_unique<ArtifactStoreImpl>(dir, options, std::move(lock));
  TLB_RETURN_IF_ERROR(store->Recover());
  return store;
}

}  // namespace tlbfleet::artifacts
