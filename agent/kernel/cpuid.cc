#include "agent/kernel/cpuid.h"

#include <algorithm>
#include <cstring>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "agent/kernel/microarch.h"
#include "common/files.h"

namespace tlbfleet::agent {
namespace {

bool ParseHex(absl::string_view s, uint32_t* out) {
  if (absl::StartsWith(s, "0x") || absl::StartsWith(s, "0X")) s.remove_prefix(2);
  if (s.empty() || s.size() > 8) return false;
  uint32_t v = 0;
  for (char c : s) {
    int digit = c >= '0' && c <= '9'   ? c - '0'
                : c >= 'a' && c <= 'f' ? c - 'a' + 10
                : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                       : -1;
    if (digit < 0) return false;
    v = (v << 4) | static_cast<uint32_t>(digit);
  }
  *out = v;
  return true;
}

uint32_t Bits(uint32_t v, int hi, int lo) { return (v >> lo) & ((1u << (hi - lo + 1)) - 1); }

std::string VendorOf(const CpuidRegs& leaf0) {
  char v[13];
  std::memcpy(v, &leaf0.ebx, 4);
  std::memcpy(v + 4, &leaf0.edx, 4);
  std::memcpy(v + 8, &leaf0.ecx, 4);
  v[12] = '\0';
  return v;
}

// Leaf 0x18: deterministic address translation parameters (Intel, Skylake server and later
// clients). Each subleaf is one TLB: type in EDX[4:0], level EDX[7:5], 4K support EBX[0],
// entries = ways EBX[31:16] * sets ECX.
void DecodeLeaf18(const CpuidSource& cpuid, uint32_t* dtlb, uint32_t* stlb) {
  std::optional<CpuidRegs> first = cpuid.Query(0x18, 0);
  if (!first.has_value()) return;
  const uint32_t max_sub = first->eax;
  uint32_t load_only = 0;
  for (uint32_t sub = 0; sub <= max_sub && sub < 64; ++sub) {
    std::optional<CpuidRegs> r = sub == 0 ? first : cpuid.Query(0x18, sub);
    if (!r.has_value()) break;
    const uint32_t type = Bits(r->edx, 4, 0), level = Bits(r->edx, 7, 5);
    if (type == 0 || (r->ebx & 1u) == 0) continue;  // invalid subleaf, or no 4 KiB pages
    const uint32_t entries = Bits(r->ebx, 31, 16) * r->ecx;
    if (level == 1 && type == 1) *dtlb = std::max(*dtlb, entries);          // data TLB
    if (level == 1 && type == 4) load_only = std::max(load_only, entries);  // load-only
    if (level >= 2 && (type == 3 || type == 1)) *stlb = std::max(*stlb, entries);
  }
  if (*dtlb == 0) *dtlb = load_only;
}

void DecodeIntelTlbs(const CpuidSource& cpuid, uint32_t max_leaf, v1::CpuInfo& info) {
  uint32_t dtlb = 0, stlb = 0;
  bool use_leaf18 = false;
  if (max_leaf >= 2) {
    if (std::optional<CpuidRegs> r = cpuid.Query(2, 0)) {
      const uint32_t regs[4] = {r->eax, r->ebx, r->ecx, r->edx};
      for (int i = 0; i < 4; ++i) {
        if (regs[i] & 0x80000000u) continue;  // register holds no descriptors
        for (int b = 0; b < 4; ++b) {
          if (i == 0 && b == 0) continue;  // AL: the iteration count, always 1
          TlbDescriptor d = DecodeLeaf2Descriptor(static_cast<uint8_t>(regs[i] >> (8 * b)));
          if (d.kind == TlbDescriptor::Kind::kData4k) dtlb = std::max(dtlb, d.entries);
          if (d.kind == TlbDescriptor::Kind::kShared4k) stlb = std::max(stlb, d.entries);
          if (d.kind == TlbDescriptor::Kind::kUseLeaf18) use_leaf18 = true;
        }
      }
    }
  }
  if ((use_leaf18 || (dtlb == 0 && stlb == 0)) && max_leaf >= 0x18) {
    uint32_t d18 = 0, s18 = 0;
    DecodeLeaf18(cpuid, &d18, &s18);
    if (d18 != 0) dtlb = d18;
    if (s18 != 0) stlb = s18;
  }
  info.set_dtlb_4k_entries(dtlb);
  info.set_stlb_4k_entries(stlb);
}

void DecodeAmdTlbs(const CpuidSource& cpuid, uint32_t max_ext, v1::CpuInfo& info) {
  // 0x80000005 EBX[23:16]: L1 data TLB entries for 4 KiB pages.
  if (max_ext >= 0x80000005) {
    if (std::optional<CpuidRegs> r = cpuid.Query(0x80000005, 0)) {
      info.set_dtlb_4k_entries(Bits(r->ebx, 23, 16));
    }
  }
  // 0x80000006 EBX[27:16]: L2 data TLB entries for 4 KiB pages (0 assoc = no L2 TLB).
  if (max_ext >= 0x80000006) {
    if (std::optional<CpuidRegs> r = cpuid.Query(0x80000006, 0)) {
      if (Bits(r->ebx, 31, 28) != 0) info.set_stlb_4k_entries(Bits(r->ebx, 27, 16));
    }
  }
}

}  // namespace

std::optional<CpuidRegs> HardwareCpuid::Query(uint32_t leaf, uint32_t subleaf) const {
#if defined(__x86_64__) || defined(__i386__)
  // __get_cpuid_count checks the leaf against the maximum of its range (basic or extended).
  CpuidRegs r;
  if (__get_cpuid_count(leaf, subleaf, &r.eax, &r.ebx, &r.ecx, &r.edx) == 0) return std::nullopt;
  return r;
#else
  return std::nullopt;
#endif
}

absl::StatusOr<RecordedCpuid> RecordedCpuid::Parse(std::string_view text) {
  RecordedCpuid out;
  int line_no = 0;
  for (absl::string_view line : absl::StrSplit(absl::string_view(text.data(), text.size()), '\n')) {
    ++line_no;
    if (size_t hash = line.find('#'); hash != absl::string_view::npos) line = line.substr(0, hash);
    std::vector<absl::string_view> f =
        absl::StrSplit(line, absl::ByAnyChar(" \t:="), absl::SkipEmpty());
    if (f.empty()) continue;
    uint32_t v[6];
    bool ok = f.size() == 6;
    for (size_t i = 0; ok && i < 6; ++i) ok = ParseHex(f[i], &v[i]);
    if (!ok) {
      return absl::InvalidArgumentError(
          absl::StrCat("cpuid dump line ", line_no, ": want leaf subleaf eax ebx ecx edx"));
    }
    out.leaves_[{v[0], v[1]}] = CpuidRegs{v[2], v[3], v[4], v[5]};
  }
  return out;
}

std::optional<CpuidRegs> RecordedCpuid::Query(uint32_t leaf, uint32_t subleaf) const {
  auto it = leaves_.find({leaf, subleaf});
  if (it == leaves_.end()) it = leaves_.find({leaf, 0});  // leaves without subleaves
  if (it == leaves_.end()) return std::nullopt;
  return it->second;
}

// Intel SDM vol. 2A table 3-12 ("Encoding of CPUID Leaf 2 Descriptors"), the entries for
// data TLBs and shared second-level TLBs that hold 4 KiB pages. Instruction TLBs, large-page
// only TLBs and caches are kNone.
TlbDescriptor DecodeLeaf2Descriptor(uint8_t d) {
  using K = TlbDescriptor::Kind;
  struct Entry {
    uint8_t descriptor;
    TlbDescriptor tlb;
  };
  static constexpr Entry kTable[] = {
      {0x03, {K::kData4k, 64}},      // DTLB 4K, 4-way
      {0x57, {K::kData4k, 16}},      // DTLB0 4K, 4-way (Core 2's L0)
      {0x59, {K::kData4k, 16}},      // DTLB0 4K, fully associative
      {0x5B, {K::kData4k, 64}},      // DTLB 4K and 4M
      {0x5C, {K::kData4k, 128}},     // DTLB 4K and 4M
      {0x5D, {K::kData4k, 256}},     // DTLB 4K and 4M
      {0x64, {K::kData4k, 512}},     // DTLB 4K, 4-way
      {0x6A, {K::kData4k, 64}},      // uTLB 4K, 8-way
      {0x6B, {K::kData4k, 256}},     // DTLB 4K, 8-way
      {0xB3, {K::kData4k, 128}},     // DTLB 4K, 4-way
      {0xB4, {K::kData4k, 256}},     // DTLB1 4K, 4-way
      {0xBA, {K::kData4k, 64}},      // DTLB1 4K, 4-way
      {0xC0, {K::kData4k, 8}},       // DTLB 4K and 4M, 4-way
      {0xC1, {K::kShared4k, 1024}},  // STLB 4K/2M, 8-way
      {0xC3, {K::kShared4k, 1536}},  // STLB 4K/2M, 6-way
      {0xCA, {K::kShared4k, 512}},   // STLB 4K, 4-way
      {0xFE, {K::kUseLeaf18, 0}},    // "see CPUID leaf 18H"
  };
  for (const Entry& e : kTable) {
    if (e.descriptor == d) return e.tlb;
  }
  return {};
}

std::optional<v1::CpuInfo> DecodeCpuid(const CpuidSource& cpuid) {
  std::optional<CpuidRegs> leaf0 = cpuid.Query(0, 0);
  if (!leaf0.has_value()) return std::nullopt;
  v1::CpuInfo info;
  info.set_from_cpuid(true);
  info.set_vendor(VendorOf(*leaf0));
  const uint32_t max_leaf = leaf0->eax;
  if (max_leaf >= 1) {
    if (std::optional<CpuidRegs> r = cpuid.Query(1, 0)) {
      const uint32_t base_family = Bits(r->eax, 11, 8), base_model = Bits(r->eax, 7, 4);
      uint32_t family = base_family, model = base_model;
      if (base_family == 0xF) family += Bits(r->eax, 27, 20);
      if (base_family == 0x6 || base_family == 0xF) model += Bits(r->eax, 19, 16) << 4;
      info.set_family(family);
      info.set_model(model);
      info.set_stepping(Bits(r->eax, 3, 0));
      info.set_pcid((r->ecx >> 17) & 1u);
      info.set_hypervisor((r->ecx >> 31) & 1u);
    }
  }
  if (max_leaf >= 7) {
    if (std::optional<CpuidRegs> r = cpuid.Query(7, 0)) info.set_invpcid((r->ebx >> 10) & 1u);
  }
  uint32_t max_ext = 0;
  if (std::optional<CpuidRegs> r = cpuid.Query(0x80000000, 0)) max_ext = r->eax;
  if (max_ext >= 0x80000004) {
    std::string brand;
    for (uint32_t leaf = 0x80000002; leaf <= 0x80000004; ++leaf) {
      std::optional<CpuidRegs> r = cpuid.Query(leaf, 0);
      if (!r.has_value()) break;
      const uint32_t regs[4] = {r->eax, r->ebx, r->ecx, r->edx};
      brand.append(reinterpret_cast<const char*>(regs), sizeof regs);
    }
    brand = std::string(brand.c_str());  // up to the NUL
    info.set_model_name(Trim(brand));
  }
  if (info.vendor() == "GenuineIntel") {
    DecodeIntelTlbs(cpuid, max_leaf, info);
  } else if (info.vendor() == "AuthenticAMD" || info.vendor() == "HygonGenuine") {
    DecodeAmdTlbs(cpuid, max_ext, info);
    // AMD APM vol. 3, CPUID Fn8000_0008_EBX[3]: INVLPGB and TLBSYNC (Zen 3 and later).
    if (max_ext >= 0x80000008) {
      if (std::optional<CpuidRegs> r = cpuid.Query(0x80000008, 0)) {
        info.set_invlpgb((r->ebx >> 3) & 1u);
      }
    }
  }
  info.set_microarch(MicroarchName(info.vendor(), info.family(), info.model(), info.stepping()));
  return info;
}

}  // namespace tlbfleet::agent
