#include "agent/workloads/pft.h"

#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "agent/workloads/workload.h"
#include "agent/workloads/workload_util.h"
#include "catalogue/workloads/pft.h"
#include "common/files.h"

namespace tlbfleet::workloads {
namespace pft {
namespace {

constexpr size_t kPage = 4096;

double Seconds(const timeval& tv) { return static_cast<double>(tv.tv_sec) + tv.tv_usec * 1e-6; }

struct ThreadTimes {
  double user = 0;
  double system = 0;
};

void Fault(char* base, size_t bytes, StartGate& gate, ThreadTimes& times) {
  gate.Arrive();
  rusage before;
  rusage after;
  ::getrusage(RUSAGE_THREAD, &before);
  for (size_t offset = 0; offset < bytes; offset += kPage) {
    *static_cast<volatile char*>(base + offset) = 1;
  }
  ::getrusage(RUSAGE_THREAD, &after);
  times.user = Seconds(after.ru_utime) - Seconds(before.ru_utime);
  times.system = Seconds(after.ru_stime) - Seconds(before.ru_stime);
}

}  // namespace

absl::StatusOr<Result> RunOnce(const Options& options) {
  const int n = options.threads;
  // Whole pages per thread; the remainder goes to the last thread.
  const size_t pages = (options.size_mb << 20) / kPage;
  const size_t bytes = pages * kPage;
  if (absl::Status s = CheckMemory(bytes, "pft"); !s.ok()) return s;
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    return ErrnoStatus(errno, absl::StrCat("pft: mapping ", options.size_mb, " MiB"));
  }
  char* base = static_cast<char*>(p);
  // Every 4 KiB page must be its own fault; with THP one fault would fill 512 of them.
  ::madvise(base, bytes, MADV_NOHUGEPAGE);

  StartGate gate(n);
  std::vector<ThreadTimes> times(n);
  std::vector<std::thread> threads;
  threads.reserve(n);
  absl::Status status;
  const size_t per_thread = pages / n;
  for (int i = 0; i < n && status.ok(); ++i) {
    const size_t first = per_thread * i;
    const size_t count = i + 1 == n ? pages - first : per_thread;
    try {
      threads.emplace_back(Fault, base + first * kPage, count * kPage, std::ref(gate),
                           std::ref(times[i]));
    } catch (const std::system_error& e) {
      status = absl::ResourceExhaustedError(
          absl::StrCat("pft: cannot start thread ", i, " of ", n, ": ", e.what()));
    }
  }
  if (status.ok()) gate.WaitAllArrived();
  const auto start = std::chrono::steady_clock::now();
  gate.Open();
  for (std::thread& t : threads) t.join();
  Result result;
  result.wall_seconds = SecondsSince(start);
  ::munmap(base, bytes);
  if (!status.ok()) return status;
  result.faults = pages;
  for (const ThreadTimes& t : times) {
    result.user_seconds += t.user;
    result.system_seconds += t.system;
  }
  return result;
}

}  // namespace pft

// --- The registered workload -------------------------------------------------------------

namespace {

using catalogue::pft::kFaultsPerCpu;
using catalogue::pft::kFaultsPerSec;
using catalogue::pft::kSystem;
using catalogue::pft::kUser;
using catalogue::pft::kWall;

class Pft : public Workload {
 public:
  Pft() : Workload("pft") {}

  absl::StatusOr<std::vector<Measurement>> Run(const Params& params) const override {
    pft::Options o;
    o.threads = static_cast<int>(params.Int("threads"));
    o.size_mb = static_cast<size_t>(params.Int("size_mb"));
    absl::StatusOr<pft::Result> r = pft::RunOnce(o);
    if (!r.ok()) return r.status();
    const double faults = static_cast<double>(r->faults);
    const double wall = r->wall_seconds > 0 ? r->wall_seconds : 1e-9;
    const double cpu = r->user_seconds + r->system_seconds;
    // CPU time is counted in scheduler ticks or better; a tiny run may show none at all.
    const double cpu_rate = cpu > 0 ? faults / cpu : faults / wall * o.threads;
    return std::vector<Measurement>{
        Measure(kFaultsPerSec, faults / wall), Measure(kFaultsPerCpu, cpu_rate),
        Measure(kWall, wall), Measure(kSystem, r->system_seconds), Measure(kUser, r->user_seconds)};
  }

  std::string ClassicOutput(const Params& params,
                            const std::vector<Measurement>& result) const override {
    // pft's header and one result row.
    char row[256];
    std::snprintf(row, sizeof row, "%4lld %4d %3lld %4d %8.2fs %8.2fs %8.2fs %13.3f %13.3f\n",
                  static_cast<long long>(params.Int("size_mb") >> 10), 1,
                  static_cast<long long>(params.Int("threads")), 1, FindValue(result, kUser.name),
                  FindValue(result, kSystem.name), FindValue(result, kWall.name),
                  FindValue(result, kFaultsPerCpu.name), FindValue(result, kFaultsPerSec.name));
    return absl::StrCat(
        "  Gb  Rep Thr CLine     User     System      Wall     flt/cpu/s    "
        "fault/wsec\n",
        row);
  }
};

}  // namespace

REGISTER_WORKLOAD(Pft);

}  // namespace tlbfleet::workloads
