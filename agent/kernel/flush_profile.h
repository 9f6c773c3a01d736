#pragma once
// The flush profile: a histogram of the kernel's tlb:tlb_flush tracepoint while a workload
// runs, by reason code and by number of pages, recorded in a private tracefs instance
// ("tlbfleet-<pid>-<n>") so the global trace buffer other tools use is never touched. Events
// are read raw (trace_pipe_raw via libtracefs) and parsed with libtraceevent: the numbers,
// never the text of `trace`.
//
// Samples (metric tlb_flush_events, unit "events", lower is better):
//   series "total"               every event
//   series "reason=<n>"          per reason code with events (0 task switch, 1 remote
//                                shootdown, 2 local shootdown, 3 local mm shootdown,
//                                4 remote IPI send, 5 remote wrong CPU)
//   series "pages=<bucket>"      "-1" (full flush, always sent), "0", "1".."64", "65-128",
//                                "129-256", "257-512", ">512" (only non-empty buckets)
// and metric tlb_flush_lost (unit "events", series ""): events the ring buffer dropped.

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "agent/kernel/monitor.h"

struct tep_event;
struct tep_record;

namespace tlbfleet::agent {

inline constexpr char kFlushProfileMonitor[] = "flush_profile";
inline constexpr char kTraceInstancePrefix[] = "tlbfleet-";

// The histogram bucket of a flush of `pages` pages: "-1" for a full flush (TLB_FLUSH_ALL,
// any negative value), "0", "1".."64", then "65-128", "129-256", "257-512", ">512". Bounds
// are inclusive: 128 is in "65-128".
std::string PagesBucket(int64_t pages);

// Every bucket name in display order.
const std::vector<std::string>& PagesBuckets();

struct FlushHistogram {
  std::map<int64_t, uint64_t> by_reason;
  std::map<std::string, uint64_t> by_pages;  // keyed by PagesBucket()
  uint64_t total = 0;
  uint64_t lost = 0;

  void Add(int64_t pages, int64_t reason);
  // The samples described at the top of this file, in display order.
  std::vector<v1::Sample> ToSamples() const;
};

struct FlushEvent {
  int64_t pages = 0;  // -1 = full flush (the kernel's TLB_FLUSH_ALL, an unsigned long -1)
  int64_t reason = 0;
};

// Reads the `pages` and `reason` fields of one tlb:tlb_flush record. INVALID_ARGUMENT if the
// event lacks them.
absl::StatusOr<FlushEvent> ParseFlushRecord(tep_event* event, tep_record* record);

// Adds up "overrun", "commit overrun" and "dropped events" of per-CPU stats files.
uint64_t LostEventsFromStats(const std::string& stats_text);

// Removes tlbfleet-<pid>-* instances whose process is gone (a crashed agent's). Returns how
// many were removed. Instances of live processes (another agent, a parallel test) stay.
int CleanStaleTraceInstances();

// Records tlb:tlb_flush between Start() and Stop(). Needs root and tracefs (mounted at
// /sys/kernel/tracing by mounts.h, or found by libtracefs).
class FlushProfileRecorder {
 public:
  static absl::StatusOr<std::unique_ptr<FlushProfileRecorder>> Start();
  ~FlushProfileRecorder();  // stops (if needed) and removes the instance
  absl::StatusOr<FlushHistogram> Stop();
  const std::string& instance_name() const;

  class Impl;

 private:
  explicit FlushProfileRecorder(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

std::unique_ptr<Monitor> NewFlushProfileMonitor(const Sysroot& sysroot);

}  // namespace tlbfleet::agent
