#pragma once
// willitscale's schema: will-it-scale's TLB flush tests (tlb_flush1, tlb_flush2, tlb_flush3),
// the ones the LKP robot reports TLB regressions with, in will-it-scale's process and thread
// modes. Each task touches a page and drops it with MADV_DONTNEED, one page after another,
// and counts one operation per page; the harness samples every task's count once a second.
// See docs/workloads/willitscale.md.

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "catalogue/schema.h"

namespace tlbfleet::catalogue::willitscale {

inline constexpr std::string_view kName = "willitscale";

// will-it-scale's MAX_TASKS.
inline constexpr int64_t kMaxTasks = 2048;

inline const MetricSpec kOpsPerSec = {
    "ops_per_sec", "ops/s", Better::kHigher,
    "operations per second of all tasks, averaged over the measured seconds (will-it-scale's "
    "'average:', LKP's will-it-scale.workload); series taskN: one task's"};
inline const MetricSpec kOpsPerSecPerTask = {
    "ops_per_sec_per_task", "ops/s", Better::kHigher,
    "ops_per_sec / tasks (LKP's will-it-scale.per_process_ops or per_thread_ops)"};

// The tests, in will-it-scale's names.
const std::vector<std::string>& TestNames();
// will-it-scale's testcase_description of `test` (one of TestNames()).
std::string_view TestDescription(std::string_view test);

std::unique_ptr<WorkloadSchema> NewSchema();

}  // namespace tlbfleet::catalogue::willitscale
