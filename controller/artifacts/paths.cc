#include "controller/artifacts/paths.h"

#include "absl/strings/str_cat.h"

namespace tlbfleet::artifacts::paths {

std::string ArtifactDirForDatabase(std::string_view db_path) {
  return absl::StrCat(std::string(db_path), ".artifacts");
}

std::string LockFile(std::string_view root) { return absl::StrCat(std::string(root), "/lock"); }

std::string IndexFile(std::string_view root) { return absl::StrCat(std::string(root), "/index"); }

std::string ObjectsDir(std::string_view root) {
  return absl::StrCat(std::string(root), "/objects");
}

std::string ObjectDir(std::string_view root, std::string_view id) {
  return absl::StrCat(ObjectsDir(root), "/", std::string(id));
}

std::string IncomingDir(std::string_view root) {
  return absl::StrCat(std::string(root), "/incoming");
}

std::string IncomingUploadDir(std::string_view root, std::string_view upload_id) {
  return absl::StrCat(IncomingDir(root), "/", std::string(upload_id));
}

std::string TrashDir(std::string_view root) { return absl::StrCat(std::string(root), "/trash"); }

std::string QuarantineDir(std::string_view root) {
  return absl::StrCat(std::string(root), "/quarantine");
}

}  // namespace tlbfleet::artifacts::paths
