#include "agent/workloads/usemem.h"

#include <fcntl.h>
#include <linux/magic.h>
#include <sys/mman.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "agent/workloads/workload.h"
#include "agent/workloads/workload_util.h"
#include "catalogue/workloads/usemem.h"
#include "common/files.h"
#include "common/scoped_fd.h"

namespace tlbfleet::workloads {
namespace usemem {
namespace {

constexpr size_t kPage = 4096;

std::string ParentDir(const Options& options) {
  if (!options.parent_dir.empty()) return options.parent_dir;
  if (const char* tmp = std::getenv("TMPDIR"); tmp != nullptr && tmp[0] != '\0') return tmp;
  if (::access("/var/tmp", W_OK) == 0) return "/var/tmp";
  return "/tmp";
}

// Removes the directory and everything in it when it goes out of scope.
class TempDir {
 public:
  ~TempDir() {
    if (path_.empty()) return;
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  absl::Status Create(const std::string& parent) {
    std::string pattern = parent + "/tlbfleet-usemem-XXXXXX";
    if (::mkdtemp(pattern.data()) == nullptr) {
      return ErrnoStatus(errno, absl::StrCat("usemem: creating a directory in ", parent));
    }
    path_ = pattern;
    return absl::OkStatus();
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// The child's work: map the file, read every word, check it is all zeros.
int ReadSparse(const std::string& path, size_t bytes) {
  ScopedFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return 2;
  void* p = ::mmap(nullptr, bytes, PROT_READ, MAP_SHARED, fd.get(), 0);
  fd.reset();  // the mapping keeps the file
  if (p == MAP_FAILED) return 3;
  const auto* words = static_cast<const uint64_t*>(p);
  uint64_t sum = 0;
  for (size_t i = 0; i < bytes / sizeof(uint64_t); ++i) sum |= words[i];
  ::munmap(p, bytes);
  return sum == 0 ? 0 : 4;
}

// A /proc/meminfo field in bytes ("MemTotal:  16384 kB"), 0 if absent.
uint64_t MeminfoBytes(const std::string& text, absl::string_view key) {
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (!absl::ConsumePrefix(&line, key) || !absl::ConsumePrefix(&line, ":")) continue;
    uint64_t kb = 0;
    std::vector<absl::string_view> f = absl::StrSplit(line, ' ', absl::SkipEmpty());
    if (!f.empty() && absl::SimpleAtoi(f[0], &kb)) return kb << 10;
  }
  return 0;
}

std::string Mib(uint64_t bytes) { return absl::StrCat(bytes >> 20, " MiB"); }

}  // namespace

MemoryFacts ReadMemoryFacts(const std::string& dir) {
  MemoryFacts f;
  f.dir = dir;
  if (absl::StatusOr<std::string> meminfo = ReadFile("/proc/meminfo"); meminfo.ok()) {
    f.ram_bytes = MeminfoBytes(*meminfo, "MemTotal");
    f.swap_free_bytes = MeminfoBytes(*meminfo, "SwapFree");
  }
  struct statfs fs;
  f.tmpfs = ::statfs(dir.c_str(), &fs) == 0 && fs.f_type == TMPFS_MAGIC;
  return f;
}

uint64_t TotalBytes(const Options& options, uint64_t ram_bytes) {
  const uint64_t bytes =
      options.ram_factor > 0
          ? static_cast<uint64_t>(options.ram_factor * static_cast<double>(ram_bytes))
          : static_cast<uint64_t>(options.size_mb) << 20;
  return bytes / kPage * kPage;
}

absl::Status CheckFits(uint64_t total_bytes, const MemoryFacts& facts, std::string_view spelled) {
  if (!facts.tmpfs || facts.ram_bytes == 0) return absl::OkStatus();
  if (total_bytes <= facts.ram_bytes + facts.swap_free_bytes) return absl::OkStatus();
  return absl::ResourceExhaustedError(absl::StrCat(
      "usemem: size ", std::string(spelled), " = ", Mib(total_bytes), " of sparse files on tmpfs (",
      facts.dir, ") is more than RAM (", Mib(facts.ram_bytes), ") plus free swap (",
      Mib(facts.swap_free_bytes),
      "): tmpfs pages leave RAM only through swap, so this would end in the OOM killer; put "
      "the files on a disk file system (TMPDIR=/var/tmp) or choose a smaller size"));
}

absl::StatusOr<Result> RunOnce(const Options& options) {
  const int n = options.processes;
  const std::string parent = ParentDir(options);
  const MemoryFacts facts = ReadMemoryFacts(parent);
  const uint64_t total = TotalBytes(options, facts.ram_bytes);
  const std::string spelled = options.ram_factor > 0
                                  ? absl::StrFormat("%gx_ram", options.ram_factor)
                                  : absl::StrCat("size_mb=", options.size_mb);
  if (absl::Status s = CheckFits(total, facts, spelled); !s.ok()) return s;
  const size_t total_pages = total / kPage;
  const size_t pages_each = total_pages / n;
  if (pages_each == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("usemem: size ", spelled, " = ", total_pages, " pages leaves processes=", n,
                     " with nothing to read; use fewer processes or a larger size"));
  }
  TempDir dir;
  if (absl::Status s = dir.Create(parent); !s.ok()) return s;

  std::vector<std::pair<std::string, size_t>> files;  // path, bytes
  for (int i = 0; i < n; ++i) {
    const size_t pages = i + 1 == n ? total_pages - pages_each * i : pages_each;
    if (pages == 0) continue;
    std::string path = absl::StrCat(dir.path(), "/file", i);
    ScopedFd fd(::open(path.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0600));
    if (!fd) return ErrnoStatus(errno, absl::StrCat("usemem: creating ", path));
    if (::ftruncate(fd.get(), static_cast<off_t>(pages * kPage)) != 0) {
      return ErrnoStatus(errno, absl::StrCat("usemem: sizing ", path));
    }
    files.emplace_back(std::move(path), pages * kPage);
  }

  ChildGroup children;
  Result result;
  for (const auto& [path, bytes] : files) {
    // Named captures: clang before 16 cannot capture structured bindings (the fuzz preset).
    if (absl::Status s =
            children.Spawn([&path = path, bytes = bytes] { return ReadSparse(path, bytes); });
        !s.ok()) {
      return s;
    }
    result.bytes += bytes;
  }
  if (absl::Status s = children.WaitReady(); !s.ok()) return s;
  const auto start = std::chrono::steady_clock::now();
  children.Go();
  absl::Status s = children.Wait();
  result.seconds = SecondsSince(start);
  if (!s.ok()) {
    return absl::InternalError(absl::StrCat(
        "usemem: ", s.message(), " (2: open, 3: mmap, 4: read non-zero data from a sparse file)"));
  }
  return result;
}

}  // namespace usemem

// --- The registered workload -------------------------------------------------------------

namespace {

using catalogue::usemem::kElapsed;
using catalogue::usemem::kMbPerSec;

class Usemem : public Workload {
 public:
  Usemem() : Workload("usemem") {}

  absl::StatusOr<std::vector<Measurement>> Run(const Params& params) const override {
    usemem::Options o;
    o.processes = static_cast<int>(params.Int("processes"));
    o.size_mb = static_cast<size_t>(params.Int("size_mb"));
    o.ram_factor = usemem::ParseRamFactor(params.Str("size")).value_or(0);
    absl::StatusOr<usemem::Result> r = usemem::RunOnce(o);
    if (!r.ok()) return r.status();
    const double seconds = r->seconds > 0 ? r->seconds : 1e-9;
    return std::vector<Measurement>{
        Measure(kMbPerSec, static_cast<double>(r->bytes) / (1 << 20) / seconds),
        Measure(kElapsed, r->seconds)};
  }

  std::string ClassicOutput(const Params& params,
                            const std::vector<Measurement>& result) const override {
    // usemem's per-task line, for all processes together, then the throughput.
    const double seconds = FindValue(result, kElapsed.name);
    const double mb_per_sec = FindValue(result, kMbPerSec.name);
    const double mib = FindValue(result, kMbPerSec.name) * FindValue(result, kElapsed.name);
    const auto bytes = static_cast<uint64_t>(mib * (1 << 20) + 0.5) / 4096 * 4096;
    char out[256];
    std::snprintf(out, sizeof out, "%llu bytes / %llu usecs = %llu KB/s\n%.1f MB/s\n",
                  static_cast<unsigned long long>(bytes),
                  static_cast<unsigned long long>(seconds * 1e6),
                  static_cast<unsigned long long>(mb_per_sec * 1024), mb_per_sec);
    return out;
  }
};

}  // namespace

REGISTER_WORKLOAD(Usemem);

}  // namespace tlbfleet::workloads
