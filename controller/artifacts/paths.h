#pragma once
// The controller's artifact directory, beside its database, one helper per path:
//
//   <db>.artifacts/              ArtifactDirForDatabase("<db>")
//     lock                       flock(2)ed by the one controller using the directory; its pid
//     index                      last use and pins of each published artifact
//                                (artifact_index.h), replaced atomically
//     objects/
//       <id>/                    a published artifact: never written again, only renamed away
//         manifest               its canonical manifest; sha256(manifest) == <id>
//         files/<name>           each file of the manifest
//     incoming/
//       <id>/                    an upload in progress (its upload id is the artifact id), the
//         manifest               same layout; each file's size is what was received, so an
//         files/<name>           upload resumes after a restart. Valid once `manifest` exists.
//     trash/
//       <id>.<n>/                an evicted or discarded artifact on its way out: renamed here
//                                first (atomic), then deleted; emptied on Open
//     quarantine/
//       <id>.<unix-millis>/      an object that failed Verify (or its check on Open), kept for a
//                                human to look at; never served, never counted in the quota
//
// Ids are checked by ValidArtifactId (64 hex digits) before they become paths.

#include <string>
#include <string_view>

namespace tlbfleet::artifacts::paths {

// "<db>.artifacts": where the controller keeps the artifacts of the database `db_path`.
std::string ArtifactDirForDatabase(std::string_view db_path);

std::string LockFile(std::string_view root);
std::string IndexFile(std::string_view root);
std::string ObjectsDir(std::string_view root);
std::string ObjectDir(std::string_view root, std::string_view id);
std::string IncomingDir(std::string_view root);
std::string IncomingUploadDir(std::string_view root, std::string_view upload_id);
std::string TrashDir(std::string_view root);
std::string QuarantineDir(std::string_view root);

}  // namespace tlbfleet::artifacts::paths
