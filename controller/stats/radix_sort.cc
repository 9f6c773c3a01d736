#include "controller/stats/radix_sort.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>

namespace tlbfleet::stats {
namespace {

constexpr size_t kRadixFrom = 4096;

// Maps a double to an unsigned key with the same order: flip every bit of a negative number,
// only the sign bit of a positive one.
uint64_t Key(double x) {
  const uint64_t bits = std::bit_cast<uint64_t>(x);
  return (bits >> 63) != 0 ? ~bits : bits | (uint64_t{1} << 63);
}

double FromKey(uint64_t key) {
  return std::bit_cast<double>((key >> 63) != 0 ? key & ~(uint64_t{1} << 63) : ~key);
}

}  // namespace

void SortWithoutNaN(std::vector<double>* values) {
  const size_t n = values->size();
  if (n < kRadixFrom) {
    std::sort(values->begin(), values->end());
    return;
  }
  std::vector<uint64_t> keys(n), scratch(n);
  std::array<std::array<size_t, 256>, 8> counts{};
  for (size_t i = 0; i < n; ++i) {
    const uint64_t k = Key((*values)[i]);
    keys[i] = k;
    for (int d = 0; d < 8; ++d) ++counts[d][(k >> (8 * d)) & 0xff];
  }
  for (int d = 0; d < 8; ++d) {
    std::array<size_t, 256>& count = counts[d];
    // A digit every key shares (the exponent bytes of similar values) orders nothing.
    if (std::find(count.begin(), count.end(), n) != count.end()) continue;
    size_t offset = 0;
    for (size_t& c : count) {
      const size_t here = c;
      c = offset;
      offset += here;
    }
    for (uint64_t k : keys) scratch[count[(k >> (8 * d)) & 0xff]++] = k;
    keys.swap(scratch);
  }
  for (size_t i = 0; i < n; ++i) (*values)[i] = FromKey(keys[i]);
}

}  // namespace tlbfleet::stats
