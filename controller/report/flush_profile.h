#pragma once
// The flush profile of a run: how many `tlb:tlb_flush` events each arm caused, by size
// (pages) and by reason, as Dave Hansen's 2014 table shows it. Built from the samples the
// agent's flush_profile monitor sends (docs/agent.md#monitors): metric "tlb_flush_events"
// with series "pages=<bucket>" ("-1" = full flush, "0", "1".."64", "65-128", "129-256",
// "257-512", ">512"), "reason=<code>", "reason=<code>,pages=<bucket>" (the cross table) and
// "total"; "tlb_flush_lost" for events the buffer dropped; "tlb_flush_cost_<unit>" /
// "tlb_flush_cost_calls" (the cost per flush_tlb_mm_range call by size) or
// "tlb_flush_cost_unavailable" (why not); "tlb_flush_invlpgb" (broadcast flushes bypass the
// tracepoint).
//
// The 2014 table counted flush_tlb_mm_range() calls: that is reason 3 ("local mm
// shootdown"), one event per call of the workload on its own CPU. Profiles from agents that
// send the cross table print that table from reason 3 alone and the other reasons
// separately; older, system-wide profiles (no cross table) print every event together and
// say so.

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "tlbfleet/v1/common.pb.h"

namespace tlbfleet::report {

// The cost per call of one size bucket, over every iteration of an arm.
struct FlushCost {
  double calls = 0;
  double mean = 0;  // call-weighted mean of the iterations' means
  // The median over iterations of each iteration's quantile (quantiles do not add up).
  double p50 = 0;
  double p90 = 0;
  double p99 = 0;
};

struct ArmFlushProfile {
  std::string arm;
  std::map<std::string, double> pages;                 // bucket -> events, summed over iterations
  std::map<int, double> reasons;                       // reason code -> events
  std::map<int, std::map<std::string, double>> cross;  // reason -> bucket -> events
  double lost = 0;
  uint32_t iterations = 0;  // iterations that reported a profile
  uint32_t lossy_iterations = 0;
  std::map<std::string, FlushCost> cost;   // bucket -> cost per call
  std::string cost_unit;                   // "cycles" or "ns"
  std::set<std::string> cost_unavailable;  // the agents' reasons
  bool invlpgb = false;                    // some iteration ran where INVLPGB may be used
  double PagesTotal() const;
  // Reason 3 of the cross table: the 2014 table. Empty for profiles without a cross table.
  const std::map<std::string, double>& Local() const;
  bool HasCross() const { return !cross.empty(); }
};

// One profile per arm, in `arm_order` (arms absent there follow in first-appearance order).
// Only samples of `param_value` count when it is set.
std::vector<ArmFlushProfile> BuildFlushProfiles(const std::vector<v1::Sample>& samples,
                                                const std::vector<std::string>& arm_order,
                                                const std::optional<std::string>& param_value);

// Buckets in table order: GLOBAL (-1) first, then 0, 1..64, 65-128, 129-256, 257-512, >512.
const std::vector<std::string>& PageBucketOrder();
// "local mm shootdown" for 3, etc.; "reason N" for codes the kernel added later.
std::string FlushReasonName(int code);

// The 2014 table per arm side by side: "size  percent  percent<=" (and "avg <unit>" where
// the calls were timed) with GLOBAL first, rows only for buckets some arm saw, from the
// local mm shootdowns; then every reason's events; totals, lost events, iterations; then
// notes (lost events, INVLPGB, why no cost). Without a cross table, the old system-wide
// table of all events.
std::string RenderFlushProfileText(const std::vector<ArmFlushProfile>& profiles);
// The profile as the proto Report carries it (Report.flush_profiles): the raw counts, each
// table's shares and running shares, the cost per call. FlushProfileFromProto gives back the
// profile the text renderers take (the derived figures are not read back).
v1::FlushProfile FlushProfileToProto(const ArmFlushProfile& profile);
ArmFlushProfile FlushProfileFromProto(const v1::FlushProfile& profile);

// A `flush_sizes` value for the tlbflush workload (docs/workloads/tlbflush.md) from one
// arm's local mm shootdowns: "size:events,..." over its non-empty buckets. Full flushes
// (-1) and empty ones (0) are left out, and ">512" becomes "513-1024"; each is a line in
// `warnings`. FAILED_PRECONDITION when the profile has no cross table (an older agent) or
// no local flush of a size.
absl::StatusOr<std::string> FlushSizesFromProfile(const ArmFlushProfile& profile,
                                                  std::vector<std::string>* warnings);

}  // namespace tlbfleet::report
