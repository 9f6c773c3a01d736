#include "controller/scheduler/boot_plan.h"

#include <algorithm>

namespace tlbfleet::scheduler {

bool RunUsesBootEntries(const v1::RunSpec& spec) {
  return std::any_of(spec.arms().begin(), spec.arms().end(), [](const v1::ArmSpec& arm) {
    return !arm.boot_entry().empty() || arm.has_kernel();
  });
}

std::vector<std::string> BootEntryGroups(const v1::RunSpec& spec) {
  std::vector<std::string> groups;
  if (!RunUsesBootEntries(spec)) return groups;
  for (const v1::ArmSpec& arm : spec.arms()) {
    if (std::find(groups.begin(), groups.end(), arm.boot_entry()) == groups.end()) {
      groups.push_back(arm.boot_entry());
    }
  }
  return groups;
}

std::vector<std::string> BootIndexEntries(const v1::RunSpec& spec, uint32_t boots) {
  std::vector<std::string> groups = BootEntryGroups(spec);
  if (groups.empty()) return std::vector<std::string>(boots, "");
  std::vector<std::string> out;
  out.reserve(static_cast<size_t>(boots) * groups.size());
  for (uint32_t block = 0; block < boots; ++block) {
    if (block % 2 == 0) {
      out.insert(out.end(), groups.begin(), groups.end());
    } else {
      out.insert(out.end(), groups.rbegin(), groups.rend());
    }
  }
  return out;
}

std::vector<size_t> BalancedOrder(size_t n, uint32_t iteration) {
  std::vector<size_t> order;
  if (n == 0) return order;
  // The first row of a Williams design: 0, 1, n-1, 2, n-2, 3, ...; row r adds r (mod n) to
  // each. For odd n the mirror images of the n rows follow.
  std::vector<size_t> first;
  first.reserve(n);
  size_t low = 1;
  size_t high = n - 1;
  first.push_back(0);
  for (size_t i = 1; i < n; ++i) first.push_back(i % 2 == 1 ? low++ : high--);
  const size_t rows = n % 2 == 0 ? n : 2 * n;
  const size_t row = (iteration == 0 ? 0 : iteration - 1) % rows;
  order.reserve(n);
  for (size_t i = 0; i < n; ++i) order.push_back((first[i] + row) % n);
  if (row >= n) std::reverse(order.begin(), order.end());
  return order;
}

}  // namespace tlbfleet::scheduler
