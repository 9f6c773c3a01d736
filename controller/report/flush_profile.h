#pragma once
// The flush profile of a run: how many `tlb:tlb_flush` events each arm caused, by size
// (pages) and by reason, as Dave Hansen's 2014 table shows it. Built from the samples the
// agent's flush_profile monitor sends: metric "tlb_flush_events" with series "pages=<bucket>"
// ("-1" = full flush, "0", "1".."64", "65-128", "129-256", "257-512", ">512"),
// "reason=<code>" and "total"; metric "tlb_flush_lost" for events the buffer dropped.

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "tlbfleet/v1/common.pb.h"

namespace tlbfleet::report {

struct ArmFlushProfile {
  std::string arm;
  std::map<std::string, double> pages;  // bucket -> events, summed over iterations
  std::map<int, double> reasons;        // reason code -> events
  double lost = 0;
  uint32_t iterations = 0;  // iterations that reported a profile
  double PagesTotal() const;
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

// The 2014 table per arm side by side: "size  percent  percent<=" with GLOBAL first, rows
// only for buckets some arm saw; then events per reason; then totals and lost events.
std::string RenderFlushProfileText(const std::vector<ArmFlushProfile>& profiles);
// [{"arm":..., "iterations":N, "total":N, "lost":N, "pages":[{"bucket":"-1","events":N,
//   "percent":P,"cumulative_percent":C},...], "reasons":[{"code":3,"name":...,"events":N}]}]
std::string RenderFlushProfileJson(const std::vector<ArmFlushProfile>& profiles);

}  // namespace tlbfleet::report
