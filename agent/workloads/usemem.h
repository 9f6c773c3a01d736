#pragma once
// usemem: N processes each map a sparse file and read all of it, filling the page cache
// (and, once it is larger than free memory, forcing page-cache reclaim, which unmaps pages
// and flushes TLBs). After the `usemem` of Fengguang Wu's vm-scalability, the load behind
// the 2011 x86 TLB-invalidate-vector patch. See docs/workloads/usemem.md.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "catalogue/workloads/usemem.h"

namespace tlbfleet::workloads::usemem {

struct Options {
  int processes = 1;
  size_t size_mb = 256;  // in total, split evenly between the processes
  // > 0: the total is this multiple of the host's RAM instead (size: 2x_ram), so that Shaohua
  // Li's setup (seed mail 004: 64 processes over twice the RAM) is written as it was.
  double ram_factor = 0;
  // Where the sparse files go (a fresh temporary directory is made inside and removed
  // afterwards). Empty: $TMPDIR, else /var/tmp, else /tmp.
  std::string parent_dir;
};

struct Result {
  uint64_t bytes = 0;  // read by all processes
  double seconds = 0;  // from the release of the processes until the last was reaped
};

// The schema's parsing of `size` ("2x_ram"), from the catalogue.
using catalogue::usemem::kMaxRamFactor;
using catalogue::usemem::ParseRamFactor;

// What decides whether a total fits on this host.
struct MemoryFacts {
  uint64_t ram_bytes = 0;        // MemTotal
  uint64_t swap_free_bytes = 0;  // SwapFree
  bool tmpfs = false;            // the files' directory is on tmpfs
  std::string dir;               // that directory, for the message
};
// /proc/meminfo and statfs(2) of `dir`.
MemoryFacts ReadMemoryFacts(const std::string& dir);

// The total bytes of files `options` asks for on a host with `ram_bytes` of RAM.
uint64_t TotalBytes(const Options& options, uint64_t ram_bytes);

// Page cache read from a disk file system is clean and reclaim simply drops it, whatever
// the size. On tmpfs the pages are shared memory: they leave RAM only through swap, so a
// total above RAM plus free swap would end in the OOM killer. RESOURCE_EXHAUSTED then,
// naming the size as the user wrote it (`spelled`), both limits and what to do.
absl::Status CheckFits(uint64_t total_bytes, const MemoryFacts& facts, std::string_view spelled);

// RESOURCE_EXHAUSTED if the files or processes cannot be created, or if CheckFits refuses;
// INTERNAL if a process fails or reads anything but zeros from its sparse file.
absl::StatusOr<Result> RunOnce(const Options& options);

}  // namespace tlbfleet::workloads::usemem
