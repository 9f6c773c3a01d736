#pragma once
// A build's artifact directory, in the per-artifact layout every artifact has on either side
// (common/artifacts/manifest.h: `manifest` + `files/<name>`), so the upload to the
// controller's store reads it as it is. It is written under a hidden temporary name beside its
// final one and renamed when every file and the manifest are in and synced: a reader never
// sees half an artifact, and a build that fails, is cancelled or meets a full disk leaves none.
//
//   <parent>/
//     <name>/                  a finished artifact
//       manifest               the canonical manifest (source, config, commit, arch,
//                              compiler, kernel_release, build_id, each file's size + sha256)
//       files/
//         bzImage              the kernel image; build_id is its sha256
//         config               the .config it was built with
//         System.map
//         modules.tar.gz       `make modules_install` (stripped), only when the config has =m
//     .<name>.partial-XXXXXX/  while being written; removed on failure, and by the next
//                              PartialArtifact of the same name (an agent killed mid-build)
//
// Every write goes through an artifacts::DiskWriter, the seam where a test fills the disk.

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/artifacts/disk_writer.h"
#include "common/artifacts/manifest.h"

namespace tlbfleet::agent::builder {

// An artifact directory being written. Not thread-safe.
class PartialArtifact {
 public:
  // Makes `.<name>.partial-XXXXXX/files/` beside `final_dir` (creating the parent), after
  // removing what earlier attempts at the same name left. INVALID_ARGUMENT for a relative
  // path, ALREADY_EXISTS when `final_dir` exists. `disk` must outlive the object.
  static absl::StatusOr<PartialArtifact> Create(const std::string& final_dir,
                                                artifacts::DiskWriter& disk);

  PartialArtifact(PartialArtifact&& other) noexcept;
  PartialArtifact& operator=(PartialArtifact&&) = delete;
  PartialArtifact(const PartialArtifact&) = delete;
  ~PartialArtifact();  // removes the partial directory unless Commit() succeeded

  // Where a file of the artifact is written (files/<name>), and where a step may keep scratch
  // work that is not part of it (beside files/, removed with the directory).
  std::string FilePath(const std::string& name) const;
  std::string ScratchPath(const std::string& name) const { return dir_ + "/" + name; }

  // Copies `from` in as file `name` and syncs it. RESOURCE_EXHAUSTED on a full disk.
  absl::Status CopyIn(const std::string& from, const std::string& name);

  // Digests every file into `manifest.files`, sets `manifest.build_id` to the sha256 of file
  // `image`, validates the manifest (INVALID_ARGUMENT naming the field: a build must not
  // publish what a store would refuse), writes it and renames the directory to its final name.
  absl::Status Commit(artifacts::ArtifactManifest& manifest, const std::string& image);

 private:
  PartialArtifact(std::string dir, std::string final_dir, artifacts::DiskWriter& disk)
      : dir_(std::move(dir)), final_dir_(std::move(final_dir)), disk_(&disk) {}

  std::string dir_;  // "" once committed or moved from
  std::string final_dir_;
  artifacts::DiskWriter* disk_;
};

}  // namespace tlbfleet::agent::builder
