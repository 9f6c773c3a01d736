#pragma once
// The flush profile: the kernel's tlb:tlb_flush tracepoint while a workload runs, counted by
// reason and size together, recorded in a private tracefs instance ("tlbfleet-<pid>-<n>") so
// the global trace buffer other tools use is never touched. Events are read raw
// (trace_pipe_raw via libtracefs) and parsed with libtraceevent: the numbers, never the text.
//
// Only the workload's processes are recorded: FollowProcess(pid) writes the workload's pid
// into the instance's set_event_pid with the event-fork option (its threads and children
// join the filter as they are created) before tracing starts, between the workload's fork
// and its exec. The kernel applies the filter to the task running when the event fires:
// local flushes and IPI sends are the workload's own; a remote shootdown is counted when the
// CPU receiving it is running one of the workload's tasks (not when it is idle or runs
// something else); task-switch flushes when the workload's task is switched out.
//
// Samples (metric tlb_flush_events, unit "events", lower is better):
//   series "total"                       every event
//   series "reason=<n>"                  per reason code with events (0 task switch, 1 remote
//                                        shootdown, 2 local shootdown, 3 local mm shootdown,
//                                        4 remote IPI send, 5 remote wrong CPU)
//   series "pages=<bucket>"              all reasons together: "-1" (full flush, always
//                                        sent), "0", "1".."64", "65-128", "129-256",
//                                        "257-512", ">512" (only non-empty buckets)
//   series "reason=<n>,pages=<bucket>"   the cross table (only non-empty cells). Reason 3 is
//                                        one event per flush_tlb_mm_range() call of the
//                                        workload on its own CPU: Dave Hansen's 2014 table.
// metric tlb_flush_lost (unit "events", series ""): events the ring buffer dropped. Any
// flags the profile; more than kMaxLostFraction of all events fails it.
// metric tlb_flush_invlpgb (series "", value 1) when the kernel may flush by INVLPGB
// broadcast, which bypasses the tracepoint: the counts are then incomplete.
// The cost per call by size, or why the kernel does not allow timing it: flush_cost.h.

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "agent/kernel/flush_cost.h"
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
  std::map<std::string, uint64_t> by_pages;                             // keyed by PagesBucket()
  std::map<std::pair<int64_t, std::string>, uint64_t> by_reason_pages;  // (reason, bucket)
  uint64_t total = 0;
  uint64_t lost = 0;

  void Add(int64_t pages, int64_t reason);
  // The tlb_flush_events and tlb_flush_lost samples described at the top of this file.
  std::vector<v1::Sample> ToSamples() const;
};

// A profile that lost more than this share of its events (lost / (recorded + lost)) fails
// the job: its percentages would describe whatever the ring buffer kept. Below it, lost
// events only flag the profile (tlb_flush_lost > 0; `tlbfleet profile` marks the arm).
inline constexpr double kMaxLostFraction = 0.01;
// OK, or FAILED_PRECONDITION naming both counts and the limit.
absl::Status CheckLostEvents(const FlushHistogram& h);

// What one recording saw.
struct FlushProfile {
  FlushHistogram histogram;
  FlushCallTimer cost;
  std::string cost_unit;         // "cycles" or "ns" when the calls were timed
  std::string cost_unavailable;  // why they were not, when not
  bool invlpgb_in_use = false;
  // Every sample of the profile: the histogram's, the cost's (or tlb_flush_cost_unavailable),
  // and tlb_flush_invlpgb when in use.
  std::vector<v1::Sample> ToSamples() const;
};

// OK when this process is in the host's initial PID namespace. Inside another one (a
// container, `unshare --pid`) its pids are not the ones tracefs' set_event_pid filters on,
// so FollowProcess refuses with this FAILED_PRECONDITION instead of recording the wrong
// process (or none).
absl::Status CheckInitialPidNamespace();

// True if the "flags" line of the first processor in /proc/cpuinfo lists `flag`.
bool CpuinfoHasFlag(std::string_view cpuinfo, std::string_view flag);

struct FlushEvent {
  int64_t pages = 0;  // -1 = full flush (the kernel's TLB_FLUSH_ALL, an unsigned long -1)
  int64_t reason = 0;
};

// Reads the `pages` and `reason` fields of one tlb:tlb_flush record. INVALID_ARGUMENT if the
// event lacks them.
absl::StatusOr<FlushEvent> ParseFlushRecord(tep_event* event, tep_record* record);

// Adds up "overrun", "commit overrun" and "dropped events" of per-CPU stats files.
uint64_t LostEventsFromStats(const std::string& stats_text);

// Removes tlbfleet-<pid>-* instances whose process is gone (a crashed agent's), and their
// cost probes. Returns how many instances were removed. Instances of live processes (another
// agent, a parallel test) stay.
int CleanStaleTraceInstances();

// Records tlb:tlb_flush (and the cost probes, where allowed) of one process tree. Needs root
// and tracefs (mounted at /sys/kernel/tracing by mounts.h, or found by libtracefs).
class FlushProfileRecorder {
 public:
  struct Options {
    bool time_calls = true;  // try the cost probes (flush_cost.h)
  };
  // Sets everything up with tracing off. Errors (no tracefs, no tlb:tlb_flush, a buffer size
  // or an event the kernel refuses) mean no profile can be recorded on this host.
  static absl::StatusOr<std::unique_ptr<FlushProfileRecorder>> Start(Options options);
  static absl::StatusOr<std::unique_ptr<FlushProfileRecorder>> Start() { return Start({}); }
  ~FlushProfileRecorder();  // stops (if needed), removes the instance and the probes
  // Records `pid` and the threads and processes it creates from now on; starts tracing.
  absl::Status FollowProcess(pid_t pid);
  absl::StatusOr<FlushProfile> Stop();
  const std::string& instance_name() const;

  class Impl;

 private:
  explicit FlushProfileRecorder(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// The monitor: Start() prepares a recorder, OnChildForked() follows the workload, Stop()
// reports the samples; notes for lost events, INVLPGB and an unavailable cost.
std::unique_ptr<Monitor> NewFlushProfileMonitor(const Sysroot& sysroot);

}  // namespace tlbfleet::agent
