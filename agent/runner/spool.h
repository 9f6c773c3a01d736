#pragma once
// The on-disk spool of finished jobs: <state-dir>/spool/<lease_id>.pb, one v1::SpooledJob
// each. A job's record is written (atomically, fsync'd) when its workload ends and before
// anything is sent; it is removed when the controller acks or rejects the completion. So
// after any crash or disconnect, every result not yet acked is on disk to be resent.
//
// Thread-safe: methods only touch the file system, and each file is written atomically.

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "tlbfleet/v1/agent.pb.h"

namespace tlbfleet::agent {

class Spool {
 public:
  // Creates <state-dir>/spool if needed.
  static absl::StatusOr<Spool> Open(std::string state_dir);

  // Writes (or replaces) the record of job.assignment().lease_id(). INVALID_ARGUMENT if the
  // lease id is not a safe file name (see paths::ValidLeaseId).
  absl::Status Write(const v1::SpooledJob& job) const;

  // Reads one record. NOT_FOUND if absent; DATA_LOSS if it does not parse.
  absl::StatusOr<v1::SpooledJob> Read(const std::string& lease_id) const;

  // Deletes a record; OK if it was already gone.
  absl::Status Remove(const std::string& lease_id) const;

  // Every readable record, ordered by lease id. A file that does not parse (or whose lease id
  // does not match its name) is moved to spool/corrupt/ and reported in `corrupt` (if not
  // null) with the reason; it never makes the whole load fail.
  std::vector<v1::SpooledJob> LoadAll(std::vector<std::string>* corrupt = nullptr) const;

  // How many records the spool holds and their size on disk, without reading them (the
  // agent's metrics). Records moved to corrupt/ are not counted.
  struct Usage {
    uint64_t records = 0;
    uint64_t bytes = 0;
  };
  Usage GetUsage() const;

  // The Hello.spooled summary of LoadAll().
  static std::vector<v1::SpooledLease> Summarize(const std::vector<v1::SpooledJob>& jobs);

  const std::string& state_dir() const { return state_dir_; }

 private:
  explicit Spool(std::string state_dir) : state_dir_(std::move(state_dir)) {}
  absl::Status MoveAside(const std::string& file_name) const;

  std::string state_dir_;
};

}  // namespace tlbfleet::agent
