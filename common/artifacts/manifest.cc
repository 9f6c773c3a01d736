#include "common/artifacts/manifest.h"

#include <algorithm>
#include <set>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/artifacts/sha256.h"

namespace tlbfleet::artifacts {

namespace {

constexpr absl::string_view kManifestHeader = "tlbfleet-artifact-manifest 1";
constexpr size_t kMaxFieldChars = 256;
constexpr size_t kMaxFiles = 64;

// The header fields in their canonical order, with where each lives in the struct.
struct HeaderField {
  const char* key;
  std::string ArtifactManifest::*member;
};
constexpr HeaderField kHeaderFields[] = {
    {"source", &ArtifactManifest::source},
    {"config", &ArtifactManifest::config},
    {"commit", &ArtifactManifest::commit},
    {"arch", &ArtifactManifest::arch},
    {"compiler", &ArtifactManifest::compiler},
    {"kernel_release", &ArtifactManifest::kernel_release},
    {"build_id", &ArtifactManifest::build_id},
};

bool IsLowerHex(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
  });
}

absl::Status CheckHeaderValue(absl::string_view key, absl::string_view value) {
  auto bad = [key](absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat("manifest ", key, ": ", why));
  };
  if (value.empty()) return bad("missing");
  if (value.size() > kMaxFieldChars) return bad(absl::StrCat("longer than ", kMaxFieldChars));
  // One line per field, and no leading or trailing space a parser would have to keep.
  for (char c : value) {
    if (c < 0x20 || c > 0x7e) return bad("not printable ASCII");
  }
  if (value.front() == ' ' || value.back() == ' ') return bad("leading or trailing space");
  if (key == "commit" && !(IsLowerHex(std::string_view(value.data(), value.size())) &&
                           (value.size() == 40 || value.size() == 64))) {
    return bad(absl::StrCat("\"", value, "\" is not a full commit hash (40 or 64 hex digits)"));
  }
  return absl::OkStatus();
}

std::vector<ArtifactFile> SortedFiles(const ArtifactManifest& manifest) {
  std::vector<ArtifactFile> files = manifest.files;
  std::sort(files.begin(), files.end(),
            [](const ArtifactFile& a, const ArtifactFile& b) { return a.name < b.name; });
  return files;
}

}  // namespace

uint64_t ArtifactManifest::TotalBytes() const {
  uint64_t total = 0;
  for (const ArtifactFile& f : files) total += f.size;
  return total;
}

const ArtifactFile* ArtifactManifest::Find(std::string_view name) const {
  for (const ArtifactFile& f : files) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

absl::Status ValidateManifest(const ArtifactManifest& manifest) {
  for (const HeaderField& field : kHeaderFields) {
    if (absl::Status s = CheckHeaderValue(field.key, manifest.*field.member); !s.ok()) return s;
  }
  if (manifest.files.empty()) return absl::InvalidArgumentError("manifest files: none");
  if (manifest.files.size() > kMaxFiles) {
    return absl::InvalidArgumentError(
        absl::StrCat("manifest files: ", manifest.files.size(), ", at most ", kMaxFiles));
  }
  std::set<std::string_view> names;
  for (size_t i = 0; i < manifest.files.size(); ++i) {
    const ArtifactFile& f = manifest.files[i];
    if (!ValidArtifactFileName(f.name)) {
      return absl::InvalidArgumentError(
          absl::StrCat("manifest file ", i, " name: \"", f.name,
                       "\" is not 1..128 chars of [A-Za-z0-9._+-] without a leading '.'"));
    }
    if (!names.insert(f.name).second) {
      return absl::InvalidArgumentError(absl::StrCat("manifest file ", f.name, ": named twice"));
    }
    if (!IsSha256Hex(f.sha256)) {
      return absl::InvalidArgumentError(
          absl::StrCat("manifest file ", f.name, " sha256: not 64 lowercase hex digits"));
    }
  }
  return absl::OkStatus();
}

std::string EncodeManifest(const ArtifactManifest& manifest) {
  std::string out = absl::StrCat(kManifestHeader, "\n");
  for (const HeaderField& field : kHeaderFields) {
    absl::StrAppend(&out, field.key, " ", manifest.*field.member, "\n");
  }
  for (const ArtifactFile& f : SortedFiles(manifest)) {
    absl::StrAppend(&out, "file ", f.sha256, " ", f.size, " ", f.name, "\n");
  }
  return out;
}

absl::StatusOr<ArtifactManifest> ParseManifest(std::string_view std_text) {
  const absl::string_view text(std_text.data(), std_text.size());
  auto bad = [](absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat("manifest: ", why));
  };
  if (text.empty() || text.back() != '\n') return bad("does not end with a newline");
  std::vector<absl::string_view> lines = absl::StrSplit(text.substr(0, text.size() - 1), '\n');
  if (lines.front() != kManifestHeader) {
    return bad(absl::StrCat("first line is not \"", kManifestHeader, "\""));
  }
  ArtifactManifest manifest;
  size_t line = 1;
  for (const HeaderField& field : kHeaderFields) {
    const std::string prefix = absl::StrCat(field.key, " ");
    if (line >= lines.size() || !absl::StartsWith(lines[line], prefix)) {
      return bad(absl::StrCat("line ", line + 1, " is not the \"", field.key, "\" line"));
    }
    manifest.*field.member = std::string(lines[line].substr(prefix.size()));
    ++line;
  }
  for (; line < lines.size(); ++line) {
    std::vector<absl::string_view> parts = absl::StrSplit(lines[line], absl::MaxSplits(' ', 3));
    ArtifactFile f;
    if (parts.size() != 4 || parts[0] != "file" || !absl::SimpleAtoi(parts[2], &f.size)) {
      return bad(absl::StrCat("line ", line + 1, " is not \"file <sha256> <size> <name>\""));
    }
    f.sha256 = std::string(parts[1]);
    f.name = std::string(parts[3]);
    manifest.files.push_back(std::move(f));
  }
  if (absl::Status s = ValidateManifest(manifest); !s.ok()) return s;
  // Sizes written "007" or "+7", files out of order: the same manifest in another text would
  // be another id.
  if (EncodeManifest(manifest) != std_text) return bad("not in canonical form");
  return manifest;
}

std::string ArtifactIdOf(const ArtifactManifest& manifest) {
  return Sha256Hex(EncodeManifest(manifest));
}

bool ValidArtifactId(std::string_view id) { return IsSha256Hex(id); }

bool ValidArtifactFileName(std::string_view name) {
  if (name.empty() || name.size() > 128 || name[0] == '.') return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '_' || c == '+' || c == '-';
  });
}

std::string ArtifactManifestFile(std::string_view artifact_dir) {
  return absl::StrCat(std::string(artifact_dir), "/manifest");
}

std::string ArtifactDataDir(std::string_view artifact_dir) {
  return absl::StrCat(std::string(artifact_dir), "/files");
}

std::string ArtifactDataFile(std::string_view artifact_dir, std::string_view name) {
  return absl::StrCat(std::string(artifact_dir), "/files/", std::string(name));
}

absl::Status VerifyArtifactFile(std::string_view artifact_dir, const ArtifactFile& file) {
  absl::StatusOr<FileDigest> got = DigestFile(ArtifactDataFile(artifact_dir, file.name));
  if (absl::IsNotFound(got.status())) {
    return absl::DataLossError(absl::StrCat("file ", file.name, ": missing"));
  }
  if (!got.ok()) return got.status();
  if (got->size != file.size || got->sha256 != file.sha256) {
    return absl::DataLossError(absl::StrCat("file ", file.name, ": ", got->size, " bytes, sha256 ",
                                            got->sha256, "; the manifest says ", file.size, ", ",
                                            file.sha256));
  }
  return absl::OkStatus();
}

}  // namespace tlbfleet::artifacts
