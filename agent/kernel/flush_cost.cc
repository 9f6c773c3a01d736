#include "agent/kernel/flush_cost.h"

#include <signal.h>
#include <sys/stat.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "agent/kernel/flush_profile.h"
#include "agent/kernel/monitor.h"
#include "agent/kernel/tracefs_api.h"
#include "common/files.h"

namespace tlbfleet::agent {
namespace {

constexpr int64_t kLocalMmShootdown = 3;
constexpr char kEnter[] = "flush_enter";
constexpr char kExit[] = "flush_exit";
constexpr char kFunction[] = "flush_tlb_mm_range";

std::string TracingFile(const char* name) {
  const char* dir = tracefs_tracing_dir();
  return dir == nullptr ? "" : absl::StrCat(dir, "/", name);
}

bool Exists(const std::string& path) {
  struct stat st;
  return !path.empty() && ::stat(path.c_str(), &st) == 0;
}

// The last line of tracefs' error_log, where the kernel says why a probe was refused.
std::string LastKernelError() {
  char* text = tracefs_instance_file_read(nullptr, "error_log", nullptr);
  if (text == nullptr) return "";
  std::string all(text);
  std::free(text);
  std::vector<std::string> lines = absl::StrSplit(all, '\n', absl::SkipWhitespace());
  return lines.empty() ? "" : Trim(lines.back());
}

int Msb(uint64_t v) { return 63 - __builtin_clzll(v); }

}  // namespace

int64_t RequestedPages(uint64_t start, uint64_t end, uint32_t stride_shift) {
  if (end == ~uint64_t{0}) return -1;
  if (end <= start || stride_shift >= 64) return 0;
  return static_cast<int64_t>((end - start) >> stride_shift);
}

// --- CostDistribution ------------------------------------------------------------------------

void CostDistribution::Add(uint64_t value) {
  ++count_;
  sum_ += static_cast<double>(value);
  size_t bin = 0;
  if (value >= kSteps) {
    // Bits below the top three select the step within the power of two.
    const int msb = Msb(value);
    const uint64_t step = (value >> (msb - 3)) & (kSteps - 1);
    bin = static_cast<size_t>(msb - 2) * kSteps + step;
  } else {
    bin = value;
  }
  bins_[std::min(bin, bins_.size() - 1)]++;
}

double CostDistribution::Quantile(double q) const {
  if (count_ == 0) return 0;
  const double want = std::ceil(q * static_cast<double>(count_));
  uint64_t seen = 0;
  for (size_t bin = 0; bin < bins_.size(); ++bin) {
    seen += bins_[bin];
    if (static_cast<double>(seen) < want) continue;
    if (bin < kSteps) return static_cast<double>(bin);
    const int msb = static_cast<int>(bin / kSteps) + 2;
    const uint64_t step = bin % kSteps;
    // Upper edge of [ (8 + step) << (msb-3), (9 + step) << (msb-3) ).
    return std::ldexp(static_cast<double>(kSteps + step + 1), msb - 3) - 1;
  }
  return 0;
}

// --- FlushCallTimer --------------------------------------------------------------------------

void FlushCallTimer::Enter(int tid, uint64_t ts, int64_t requested_pages) {
  auto [it, fresh] = in_flight_.try_emplace(tid);
  if (!fresh) ++unpaired_;  // the previous call's return was lost
  it->second = InFlight{ts, requested_pages, false};
}

void FlushCallTimer::TlbFlush(int tid, int64_t pages, int64_t reason) {
  if (reason != kLocalMmShootdown) return;
  auto it = in_flight_.find(tid);
  if (it == in_flight_.end() || it->second.flushed_locally) return;
  it->second.pages = pages;
  it->second.flushed_locally = true;
}

void FlushCallTimer::Exit(int tid, uint64_t ts) {
  auto it = in_flight_.find(tid);
  if (it == in_flight_.end() || ts < it->second.ts) {
    ++unpaired_;
    return;
  }
  by_bucket_[PagesBucket(it->second.pages)].Add(ts - it->second.ts);
  in_flight_.erase(it);
}

std::vector<v1::Sample> FlushCallTimer::ToSamples(const std::string& unit) const {
  std::vector<v1::Sample> out;
  const std::string metric = absl::StrCat("tlb_flush_cost_", unit);
  for (const std::string& bucket : PagesBuckets()) {
    auto it = by_bucket_.find(bucket);
    if (it == by_bucket_.end() || it->second.count() == 0) continue;
    const CostDistribution& d = it->second;
    const std::string pages = absl::StrCat("pages=", bucket);
    out.push_back(MonitorSample(metric, pages + ",stat=mean", d.mean(), unit));
    out.push_back(MonitorSample(metric, pages + ",stat=p50", d.Quantile(0.50), unit));
    out.push_back(MonitorSample(metric, pages + ",stat=p90", d.Quantile(0.90), unit));
    out.push_back(MonitorSample(metric, pages + ",stat=p99", d.Quantile(0.99), unit));
    out.push_back(MonitorSample("tlb_flush_cost_calls", pages, static_cast<double>(d.count()),
                                "calls", v1::BETTER_HIGHER));
  }
  return out;
}

// --- FlushCostProbes -------------------------------------------------------------------------

std::unique_ptr<FlushCostProbes> FlushCostProbes::Create(tracefs_instance* instance,
                                                         const std::string& group) {
  std::unique_ptr<FlushCostProbes> p(new FlushCostProbes(instance, group));
  const std::string kprobe_events = TracingFile("kprobe_events");
  if (!Exists(kprobe_events)) {
    p->why_ = "no kprobe_events in tracefs: kernel built without CONFIG_KPROBE_EVENTS";
    return p;
  }
  // Cycles, like the 2014 table, where the TSC clock exists (x86); nanoseconds elsewhere.
  if (tracefs_instance_file_write(instance, "trace_clock", "x86-tsc") > 0) {
    p->unit_ = "cycles";
  } else if (tracefs_instance_file_write(instance, "trace_clock", "mono") > 0) {
    p->unit_ = "ns";
  } else {
    p->why_ = absl::StrCat("cannot set the instance's trace_clock: ", std::strerror(errno));
    return p;
  }
  // x86-64 calling convention: flush_tlb_mm_range(mm, start, end, stride_shift, freed_tables).
  const std::string enter = absl::StrCat("p:", group, "/", kEnter, " ", kFunction,
                                         " start=%si:x64 end=%dx:x64 shift=%cx:u32\n");
  const std::string exit = absl::StrCat("r:", group, "/", kExit, " ", kFunction, "\n");
  if (tracefs_instance_file_append(nullptr, "kprobe_events", enter.c_str()) < 0) {
    const int err = errno;
    const std::string kernel = LastKernelError();
    p->why_ = absl::StrCat("the kernel refused a kprobe on ", kFunction, ": ", std::strerror(err),
                           kernel.empty() ? "" : " (", kernel, kernel.empty() ? "" : ")",
                           err == EPERM ? "; kernel lockdown forbids kprobes?" : "");
    return p;
  }
  p->created_ = true;
  if (tracefs_instance_file_append(nullptr, "kprobe_events", exit.c_str()) < 0) {
    p->why_ =
        absl::StrCat("the kernel refused a kretprobe on ", kFunction, ": ", std::strerror(errno));
    return p;
  }
  p->available_ = true;
  return p;
}

absl::Status FlushCostProbes::Enable() {
  if (!available_) return absl::FailedPreconditionError(why_);
  if (tracefs_event_enable(instance_, group_.c_str(), kEnter) != 0 ||
      tracefs_event_enable(instance_, group_.c_str(), kExit) != 0) {
    available_ = false;
    why_ = absl::StrCat("cannot enable the probes on ", kFunction, ": ", std::strerror(errno));
    return absl::UnavailableError(why_);
  }
  return absl::OkStatus();
}

void FlushCostProbes::Disable() {
  if (!created_) return;
  tracefs_event_disable(instance_, group_.c_str(), nullptr);
}

void FlushCostProbes::Remove() {
  if (!created_) return;
  Disable();
  for (const char* event : {kExit, kEnter}) {
    const std::string line = absl::StrCat("-:", group_, "/", event, "\n");
    tracefs_instance_file_append(nullptr, "kprobe_events", line.c_str());
  }
  created_ = false;
}

FlushCostProbes::~FlushCostProbes() { Remove(); }

int CleanStaleFlushProbes() {
  char* text = tracefs_instance_file_read(nullptr, "kprobe_events", nullptr);
  if (text == nullptr) return 0;
  std::string all(text);
  std::free(text);
  int removed = 0;
  for (absl::string_view line : absl::StrSplit(all, '\n', absl::SkipWhitespace())) {
    // "p:tlbfleet_123_0/flush_enter flush_tlb_mm_range+0 start=..."
    size_t colon = line.find(':');
    size_t space = line.find(' ');
    if (colon == absl::string_view::npos || space == absl::string_view::npos) continue;
    const std::string name(line.substr(colon + 1, space - colon - 1));
    if (name.rfind("tlbfleet_", 0) != 0) continue;
    std::vector<std::string> parts = absl::StrSplit(name.substr(0, name.find('/')), '_');
    int pid = 0;
    if (parts.size() < 2 || !absl::SimpleAtoi(parts[1], &pid) || pid <= 0) continue;
    if (::kill(pid, 0) == 0 || errno != ESRCH) continue;
    const std::string remove = absl::StrCat("-:", name, "\n");
    if (tracefs_instance_file_append(nullptr, "kprobe_events", remove.c_str()) >= 0) ++removed;
  }
  return removed;
}

}  // namespace tlbfleet::agent
