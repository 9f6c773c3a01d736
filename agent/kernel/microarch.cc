#include "agent/kernel/microarch.h"

namespace tlbfleet::agent {
namespace {

// Intel family 6. Sources: Intel SDM vol. 4 table 2-1 and arch/x86/include/asm/intel-family.h.
std::string IntelFamily6(uint32_t model, uint32_t stepping) {
  switch (model) {
    case 0x1A:
    case 0x1E:
    case 0x1F:
    case 0x2E:
      return "Nehalem";
    case 0x25:
    case 0x2C:
    case 0x2F:
      return "Westmere";
    case 0x2A:
    case 0x2D:
      return "SandyBridge";
    case 0x3A:
    case 0x3E:
      return "IvyBridge";
    case 0x3C:
    case 0x3F:
    case 0x45:
    case 0x46:
      return "Haswell";
    case 0x3D:
    case 0x47:
    case 0x4F:
    case 0x56:
      return "Broadwell";
    case 0x4E:
    case 0x5E:
      return "Skylake";
    case 0x55:
      // One model number for three server generations, told apart by stepping.
      if (stepping >= 10) return "CooperLake";
      if (stepping >= 5) return "CascadeLake";
      return "Skylake";
    case 0x8E:
    case 0x9E:
      // Stepping 9 and below are Kaby Lake; later steppings Coffee/Whiskey/Amber Lake, which
      // share the Skylake core and are reported as CoffeeLake.
      return stepping <= 9 ? "KabyLake" : "CoffeeLake";
    case 0xA5:
    case 0xA6:
      return "CometLake";
    case 0x66:
      return "CannonLake";
    case 0x7D:
    case 0x7E:
    case 0x6A:
    case 0x6C:
      return "IceLake";
    case 0xA7:
      return "RocketLake";
    case 0x8C:
    case 0x8D:
      return "TigerLake";
    case 0x97:
    case 0x9A:
    case 0xBE:  // Alder Lake-N (Gracemont cores only)
      return "AlderLake";
    case 0xB7:
    case 0xBA:
    case 0xBF:
      return "RaptorLake";
    case 0xAA:
    case 0xAC:
      return "MeteorLake";
    case 0xB5:
    case 0xC5:
    case 0xC6:
      return "ArrowLake";
    case 0xBD:
      return "LunarLake";
    case 0x8F:
      return "SapphireRapids";
    case 0xCF:
      return "EmeraldRapids";
    case 0xAD:
    case 0xAE:
      return "GraniteRapids";
    case 0xAF:
      return "SierraForest";
    default:
      return kUnknownMicroarch;
  }
}

// AMD model ranges as in arch/x86/kernel/cpu/amd.c (X86_FEATURE_ZEN1..ZEN5).
std::string Amd(uint32_t family, uint32_t model) {
  switch (family) {
    case 0x17:
      if (model == 0x08 || model == 0x18) return "Zen+";  // Pinnacle Ridge, Picasso
      if (model <= 0x2F || (model >= 0x50 && model <= 0x5F)) return "Zen";
      if ((model >= 0x30 && model <= 0x4F) || (model >= 0x60 && model <= 0x7F) ||
          (model >= 0x84 && model <= 0x87) || (model >= 0x90 && model <= 0xAF)) {
        return "Zen 2";
      }
      return kUnknownMicroarch;
    case 0x19:
      if (model <= 0x0F || (model >= 0x20 && model <= 0x5F)) return "Zen 3";
      if ((model >= 0x10 && model <= 0x1F) || (model >= 0x60 && model <= 0xAF)) return "Zen 4";
      return kUnknownMicroarch;
    case 0x1A:
      return "Zen 5";
    default:
      return kUnknownMicroarch;
  }
}

}  // namespace

std::string MicroarchName(std::string_view vendor, uint32_t family, uint32_t model,
                          uint32_t stepping) {
  if (vendor == "GenuineIntel" && family == 6) return IntelFamily6(model, stepping);
  if (vendor == "AuthenticAMD") return Amd(family, model);
  if (vendor == "HygonGenuine" && family == 0x18) return "Dhyana";  // a licensed Zen core
  return kUnknownMicroarch;
}

}  // namespace tlbfleet::agent
