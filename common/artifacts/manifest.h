#pragma once
// An artifact's manifest: what a kernel build produced (a set of named files) and where it
// came from. Its canonical text is what travels and what is stored; the artifact's id is the
// sha256 of that text, so the same build uploaded twice is one artifact, and a fetcher that
// asked for an id can check the manifest it received before trusting the file checksums in it.
//
// Canonical text (UTF-8 free: printable ASCII only, one field per line, '\n' line ends):
//
//   tlbfleet-artifact-manifest 1
//   source linux
//   config lab
//   commit 0123...40 or 64 hex digits
//   arch x86_64
//   compiler gcc (Debian 12.2.0-14) 12.2.0
//   kernel_release 6.1.0-lab+
//   build_id 9f2c...
//   file <sha256> <size> <name>          one line per file, sorted by name
//
// Files are flat names ([A-Za-z0-9._+-], no leading '.'): a kernel's modules travel as one
// archive file (the builder's choice of format), so no name is ever a path.
//
// Every artifact, on either side, is laid out the same way (ArtifactManifestFile/DataFile):
//
//   <artifact-dir>/
//     manifest                  the canonical text
//     files/
//       <name>                  each file of the manifest

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace tlbfleet::artifacts {

struct ArtifactFile {
  std::string name;
  uint64_t size = 0;
  std::string sha256;  // 64 lowercase hex digits
};

struct ArtifactManifest {
  std::string source;          // the agent config's source name, e.g. "linux"
  std::string config;          // the agent config's build config name, e.g. "lab"
  std::string commit;          // the full hash the build checked out
  std::string arch;            // what `uname -m` says on a host that can boot it
  std::string compiler;        // the compiler's version line
  std::string kernel_release;  // `make kernelrelease`
  std::string build_id;        // the builder's id for this build (unique per build)
  std::vector<ArtifactFile> files;

  uint64_t TotalBytes() const;
  // The file named `name`, or nullptr.
  const ArtifactFile* Find(std::string_view name) const;
};

// OK, or INVALID_ARGUMENT naming the first bad field ("manifest commit: ...", "manifest file
// 3 name: ..."). Files may come in any order; EncodeManifest sorts them.
absl::Status ValidateManifest(const ArtifactManifest& manifest);

// The canonical text of a valid manifest (files sorted by name).
std::string EncodeManifest(const ArtifactManifest& manifest);

// Parses canonical text; anything else (another order, extra spaces, unknown lines) is
// INVALID_ARGUMENT, so that one manifest has one text and one id.
absl::StatusOr<ArtifactManifest> ParseManifest(std::string_view text);

// sha256 hex of EncodeManifest(manifest).
std::string ArtifactIdOf(const ArtifactManifest& manifest);

// True for a well-formed id (64 lowercase hex digits): safe as a directory name.
bool ValidArtifactId(std::string_view id);
// True for a well-formed file name: 1..128 chars of [A-Za-z0-9._+-], not starting with '.'.
bool ValidArtifactFileName(std::string_view name);

// The per-artifact layout drawn above.
std::string ArtifactManifestFile(std::string_view artifact_dir);
std::string ArtifactDataDir(std::string_view artifact_dir);
std::string ArtifactDataFile(std::string_view artifact_dir, std::string_view name);

// Checks the file `name` of the artifact in `artifact_dir` against the manifest: OK, or
// DATA_LOSS "file <name>: <size> bytes, sha256 <got>; the manifest says <size>, <want>" (or
// "file <name>: missing"); another error if it cannot be read. Reads the whole file.
absl::Status VerifyArtifactFile(std::string_view artifact_dir, const ArtifactFile& file);

}  // namespace tlbfleet::artifacts
