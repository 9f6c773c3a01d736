#pragma once
// The cost of each flush_tlb_mm_range() call by size, the "avg cycles" column of Dave
// Hansen's 2014 table (seed mail 001), which no other tool reports.
//
// Where the kernel allows it, a kprobe at the entry of flush_tlb_mm_range (with its start,
// end and stride_shift arguments) and a kretprobe at its return are recorded in the flush
// profile's tracefs instance, with the instance's clock set to x86-tsc (cycles; "mono" ns
// elsewhere). A call is the time from its entry to its return in the same task. Its size is
// the one the table uses: the pages of the local "local mm shootdown" tlb_flush event the
// call fired (-1 when the ceiling turned it into a full flush), or, when it fired none (the
// mm was not loaded on that CPU), the size it was asked for.
//
// Samples (unit "cycles" or "ns", lower is better), per pages bucket B with timed calls:
//   tlb_flush_cost_cycles   series "pages=B,stat=mean" | "pages=B,stat=p50" | "…p90" | "…p99"
//   tlb_flush_cost_calls    series "pages=B" (unit "calls"): the calls timed
// and when the kernel does not allow it:
//   tlb_flush_cost_unavailable  series "<why>", value 1
//
// The probes add their own overhead (an ftrace trampoline per call, well under a
// microsecond); compare costs between arms, not with numbers taken without probes.

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "tlbfleet/v1/common.pb.h"

struct tracefs_instance;
struct tep_handle;

namespace tlbfleet::agent {

// The pages a call was asked to flush: -1 for end == TLB_FLUSH_ALL (-1UL), else
// (end - start) >> stride_shift.
int64_t RequestedPages(uint64_t start, uint64_t end, uint32_t stride_shift);

// A distribution of durations in a fixed-size log-linear histogram (8 steps per power of
// two: a quantile is the upper edge of its step, at most 12.5 % above the true value), plus the
// exact count and sum.
class CostDistribution {
 public:
  void Add(uint64_t value);
  uint64_t count() const { return count_; }
  double mean() const { return count_ == 0 ? 0 : sum_ / static_cast<double>(count_); }
  // The value below which a fraction q of the calls fall (the upper edge of that step).
  double Quantile(double q) const;

 private:
  static constexpr int kSteps = 8;
  std::array<uint64_t, 64 * kSteps> bins_{};
  uint64_t count_ = 0;
  double sum_ = 0;
};

// Pairs entries and returns per task (tid) into durations by size bucket.
class FlushCallTimer {
 public:
  void Enter(int tid, uint64_t ts, int64_t requested_pages);
  // A tlb:tlb_flush event of task `tid`; a "local mm shootdown" (3) inside a call is the size
  // the call really flushed.
  void TlbFlush(int tid, int64_t pages, int64_t reason);
  void Exit(int tid, uint64_t ts);

  const std::map<std::string, CostDistribution>& by_bucket() const { return by_bucket_; }
  uint64_t unpaired() const { return unpaired_; }  // returns without entry, lost entries

  // The samples described at the top of this file, in PagesBuckets() order.
  std::vector<v1::Sample> ToSamples(const std::string& unit) const;

 private:
  struct InFlight {
    uint64_t ts = 0;
    int64_t pages = 0;
    bool flushed_locally = false;
  };
  std::map<int, InFlight> in_flight_;
  std::map<std::string, CostDistribution> by_bucket_;
  uint64_t unpaired_ = 0;
};

// The probes, created for one recording. Create() never fails as a function: when the kernel
// does not allow them, available() is false and why() says why (e.g. "no kprobe_events in
// tracefs: kernel built without CONFIG_KPROBE_EVENTS").
class FlushCostProbes {
 public:
  // `group`: the kprobe group, unique per recording ([A-Za-z0-9_]). Sets `instance`'s clock.
  static std::unique_ptr<FlushCostProbes> Create(tracefs_instance* instance,
                                                 const std::string& group);
  ~FlushCostProbes();  // disables and removes the probes

  bool available() const { return available_; }
  const std::string& why() const { return why_; }
  const std::string& unit() const { return unit_; }  // "cycles" or "ns"
  const std::string& group() const { return group_; }
  // Enables both probes in the instance. An error makes the cost unavailable.
  absl::Status Enable();
  void Disable();

 private:
  FlushCostProbes(tracefs_instance* instance, std::string group)
      : instance_(instance), group_(std::move(group)) {}
  void Remove();

  tracefs_instance* instance_;
  std::string group_;
  bool available_ = false;
  bool created_ = false;
  std::string why_;
  std::string unit_ = "ns";
};

// Removes kprobes of groups "tlbfleet_<pid>_*" whose process is gone. Returns how many.
int CleanStaleFlushProbes();

}  // namespace tlbfleet::agent
