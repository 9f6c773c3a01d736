#pragma once
// usemem: N processes each map a sparse file and read all of it, filling the page cache
// (and, once it is larger than free memory, forcing page-cache reclaim, which unmaps pages
// and flushes TLBs). After the `usemem` of Fengguang Wu's vm-scalability, the load behind
// the 2011 x86 TLB-invalidate-vector patch. See docs/workloads/usemem.md.

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/statusor.h"

namespace tlbfleet::workloads::usemem {

struct Options {
  int processes = 1;
  size_t size_mb = 256;  // in total, split evenly between the processes
  // Where the sparse files go (a fresh temporary directory is made inside and removed
  // afterwards). Empty: $TMPDIR, else /var/tmp, else /tmp.
  std::string parent_dir;
};

struct Result {
  uint64_t bytes = 0;  // read by all processes
  double seconds = 0;  // from the release of the processes until the last was reaped
};

// RESOURCE_EXHAUSTED if the files or processes cannot be created, or if the files are on
// tmpfs (unreclaimable without swap) and larger than RAM; INTERNAL if a process fails or
// reads anything but zeros from its sparse file.
absl::StatusOr<Result> RunOnce(const Options& options);

}  // namespace tlbfleet::workloads::usemem
