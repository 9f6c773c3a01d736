#pragma once
// How a run's boots are laid out when its arms name boot entries, and the balanced order of a
// ceiling sweep within a boot (pure functions).
//
// Boot entries: a boot runs one entry, so arms on different entries never share a boot (arms
// on the same entry do, e.g. two ceilings on one kernel). `boots: N` gives every entry N boot
// indexes, in blocks that alternate direction: with entries A and B, A B B A A B B A...; with
// A, B, C: A B C C B A A B C... Slow drift of the host then hits every entry alike instead of
// masquerading as a kernel difference. Every boot index of such a run is a fresh boot into
// its entry that the controller asked for (the host reboots even for the first one), so what
// an entry boots today is what is measured.
//
// Ceiling sweeps (`sweep: {ceiling: [...]}`): the ceiling is written by the agent before each
// job, so all values run in every boot, each iteration in another order of a balanced Latin
// square (Williams): every value takes every position, and follows every other value, equally
// often over a full cycle of iterations, so warm-up or drift within a boot does not favour a
// value.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tlbfleet/v1/common.pb.h"

namespace tlbfleet::scheduler {

// The sweep parameter that sweeps the flush ceiling rather than a workload parameter.
inline constexpr char kCeilingSweepParam[] = "ceiling";

inline bool IsCeilingSweep(const v1::SweepSpec& sweep) {
  return sweep.param() == kCeilingSweepParam;
}

// Whether some arm names a boot entry, or a kernel built from source (which the controller
// turns into a boot entry of its own when it accepts the run).
bool RunUsesBootEntries(const v1::RunSpec& spec);

// The boot entries of kernels built from source are named by the controller: this prefix and
// a random id ("kernel-3f9a0c1d2e4b"), unique to the run's arm. Agents never configure one.
inline constexpr char kKernelEntryPrefix[] = "kernel-";
inline bool IsKernelEntry(std::string_view entry) {
  return entry.substr(0, sizeof(kKernelEntryPrefix) - 1) == kKernelEntryPrefix;
}

// The distinct boot entries of the arms, in order of first appearance ("" for arms that name
// none, when others do). Empty when no arm names one.
std::vector<std::string> BootEntryGroups(const v1::RunSpec& spec);

// The entry of each boot index of a slot: `boots` per entry, in alternating blocks (see the
// header comment). With no boot entries: `boots` times "".
std::vector<std::string> BootIndexEntries(const v1::RunSpec& spec, uint32_t boots);

// The order (a permutation of 0..n-1) in which iteration `iteration` (1-based) visits n sweep
// values: row (iteration - 1) mod R of a Williams design, R = n for even n, 2n for odd n.
std::vector<size_t> BalancedOrder(size_t n, uint32_t iteration);

}  // namespace tlbfleet::scheduler
