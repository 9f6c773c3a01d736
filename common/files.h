#pragma once
// Small file helpers shared by agent and controller. Errors carry the path and errno text.

#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace tlbfleet {

// Reads the whole file. NOT_FOUND if it does not exist; PERMISSION_DENIED on EACCES/EPERM.
absl::StatusOr<std::string> ReadFile(const std::string& path);

// A PEM file named by a command-line flag (a certificate, key or CA): INVALID_ARGUMENT
// "<flag> <path>: cannot read it" or "...: not a PEM file". The one reader the agent's, the
// CLI's and the controller's TLS flags share.
absl::StatusOr<std::string> ReadPemFile(const std::string& path, std::string_view flag);

// Reads `fd` from where it is to the end (EINTR retried); errors name `what`, and put errno in
// `*err` when it is given.
absl::StatusOr<std::string> ReadFd(int fd, std::string_view what, int* err = nullptr);

// Opens `path` with `flags` and fsyncs it: what makes a rename or a link in a directory, or
// a file written through another descriptor, durable.
absl::Status FsyncPath(const std::string& path, int flags);
absl::Status FsyncDirectory(const std::string& dir);  // FsyncPath(dir, O_RDONLY|O_DIRECTORY)

// The directory part of `path`: "." without a slash, "/" for a file at the root.
std::string DirName(const std::string& path);

// Crash-safe replace: writes `contents` to a temp file in the same directory, fsyncs it,
// renames it over `path`, then fsyncs the directory. After a crash `path` holds either the
// old or the new contents, never a mix.
absl::Status WriteFileAtomic(const std::string& path, std::string_view contents);

// mkdir -p with the given mode for created directories.
absl::Status MakeDirs(const std::string& path, int mode = 0755);

// Maps an errno value onto the closest absl status code, with "<what>: <strerror>" message.
absl::Status ErrnoStatus(int err, std::string_view what);

// Strips leading and trailing ASCII whitespace.
std::string Trim(std::string_view s);

}  // namespace tlbfleet
