#pragma once
// Host facts from the CPUID instruction: the signature (for the microarchitecture name),
// data-TLB sizes for 4 KiB pages, PCID/INVPCID. Decoding works on any CpuidSource, so tests
// feed it register dumps recorded on real CPUs (cpuid_test.cc says where each came from).
//
// TLB sources: Intel leaf 2 descriptor bytes (SDM vol. 2A, table 3-12), leaf 0x18 on CPUs
// whose leaf 2 says so (descriptor 0xFE) or has no TLB descriptor; AMD/Hygon leaves
// 0x80000005 (L1) and 0x80000006 (L2).

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "absl/status/statusor.h"
#include "tlbfleet/v1/common.pb.h"

namespace tlbfleet::agent {

struct CpuidRegs {
  uint32_t eax = 0, ebx = 0, ecx = 0, edx = 0;
};

class CpuidSource {
 public:
  virtual ~CpuidSource() = default;
  // The registers for (leaf, subleaf), or nullopt if the leaf is beyond the CPU's maximum.
  virtual std::optional<CpuidRegs> Query(uint32_t leaf, uint32_t subleaf) const = 0;
};

// The CPUID instruction of the CPU this runs on. On non-x86 builds every query is nullopt.
class HardwareCpuid : public CpuidSource {
 public:
  std::optional<CpuidRegs> Query(uint32_t leaf, uint32_t subleaf) const override;
};

// A recorded dump, one leaf per line: "<leaf> <subleaf> <eax> <ebx> <ecx> <edx>" in hex
// (with or without 0x); '#' starts a comment.
class RecordedCpuid : public CpuidSource {
 public:
  static absl::StatusOr<RecordedCpuid> Parse(std::string_view text);
  std::optional<CpuidRegs> Query(uint32_t leaf, uint32_t subleaf) const override;

 private:
  std::map<std::pair<uint32_t, uint32_t>, CpuidRegs> leaves_;
};

// Which TLB an Intel leaf-2 descriptor describes (only those this project reports).
struct TlbDescriptor {
  enum class Kind { kNone, kData4k, kShared4k, kUseLeaf18 };
  Kind kind = Kind::kNone;
  uint32_t entries = 0;
};
TlbDescriptor DecodeLeaf2Descriptor(uint8_t descriptor);

// Fills vendor, family, model, stepping, microarch, dtlb/stlb 4 KiB entries, pcid, invpcid,
// hypervisor and from_cpuid. model_name is the brand string (leaves 0x80000002..4).
// nullopt if the source answers no leaf 0 (not x86).
std::optional<v1::CpuInfo> DecodeCpuid(const CpuidSource& cpuid);

}  // namespace tlbfleet::agent
