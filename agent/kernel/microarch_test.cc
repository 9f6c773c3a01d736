#include "agent/kernel/microarch.h"

#include "gtest/gtest.h"

namespace tlbfleet::agent {
namespace {

struct Case {
  const char* vendor;
  uint32_t family, model, stepping;
  const char* want;
};

TEST(MicroarchTest, KnownSignatures) {
  const Case cases[] = {
      {"GenuineIntel", 6, 0x1A, 5, "Nehalem"},
      {"GenuineIntel", 6, 0x2E, 6, "Nehalem"},
      {"GenuineIntel", 6, 0x2C, 2, "Westmere"},
      {"GenuineIntel", 6, 0x2A, 7, "SandyBridge"},
      {"GenuineIntel", 6, 0x2D, 7, "SandyBridge"},
      {"GenuineIntel", 6, 0x3A, 9, "IvyBridge"},  // i7-3770
      {"GenuineIntel", 6, 0x3E, 4, "IvyBridge"},
      {"GenuineIntel", 6, 0x3C, 3, "Haswell"},
      {"GenuineIntel", 6, 0x3F, 2, "Haswell"},
      {"GenuineIntel", 6, 0x4F, 1, "Broadwell"},
      {"GenuineIntel", 6, 0x56, 3, "Broadwell"},
      {"GenuineIntel", 6, 0x5E, 3, "Skylake"},
      {"GenuineIntel", 6, 0x55, 4, "Skylake"},  // Skylake-SP
      {"GenuineIntel", 6, 0x55, 7, "CascadeLake"},
      {"GenuineIntel", 6, 0x55, 11, "CooperLake"},
      {"GenuineIntel", 6, 0x8E, 9, "KabyLake"},
      {"GenuineIntel", 6, 0x9E, 10, "CoffeeLake"},
      {"GenuineIntel", 6, 0x6A, 6, "IceLake"},
      {"GenuineIntel", 6, 0x7E, 5, "IceLake"},
      {"GenuineIntel", 6, 0x8C, 1, "TigerLake"},
      {"GenuineIntel", 6, 0x97, 2, "AlderLake"},
      {"GenuineIntel", 6, 0xB7, 1, "RaptorLake"},
      {"GenuineIntel", 6, 0xBE, 0, "AlderLake"},
      {"GenuineIntel", 6, 0xAA, 4, "MeteorLake"},
      {"GenuineIntel", 6, 0xC6, 2, "ArrowLake"},
      {"GenuineIntel", 6, 0xBD, 1, "LunarLake"},
      {"GenuineIntel", 6, 0x8F, 8, "SapphireRapids"},
      {"GenuineIntel", 6, 0xCF, 2, "EmeraldRapids"},
      {"GenuineIntel", 6, 0xAD, 1, "GraniteRapids"},
      {"AuthenticAMD", 0x17, 0x01, 1, "Zen"},
      {"AuthenticAMD", 0x17, 0x08, 2, "Zen+"},
      {"AuthenticAMD", 0x17, 0x18, 1, "Zen+"},
      {"AuthenticAMD", 0x17, 0x31, 0, "Zen 2"},  // EPYC Rome
      {"AuthenticAMD", 0x17, 0x71, 0, "Zen 2"},
      {"AuthenticAMD", 0x19, 0x01, 1, "Zen 3"},  // EPYC Milan
      {"AuthenticAMD", 0x19, 0x21, 0, "Zen 3"},
      {"AuthenticAMD", 0x19, 0x11, 1, "Zen 4"},  // EPYC Genoa
      {"AuthenticAMD", 0x19, 0x61, 2, "Zen 4"},
      {"AuthenticAMD", 0x1A, 0x02, 0, "Zen 5"},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(MicroarchName(c.vendor, c.family, c.model, c.stepping), c.want)
        << c.vendor << " family " << c.family << " model 0x" << std::hex << c.model;
  }
}

TEST(MicroarchTest, UnknownSignatures) {
  EXPECT_EQ(MicroarchName("GenuineIntel", 6, 0x01, 0), "unknown");
  EXPECT_EQ(MicroarchName("GenuineIntel", 15, 0x06, 0), "unknown");  // Pentium 4
  EXPECT_EQ(MicroarchName("GenuineIntel", 0x13, 0x01, 0), "unknown");
  EXPECT_EQ(MicroarchName("AuthenticAMD", 0x10, 0x04, 0), "unknown");  // K10
  EXPECT_EQ(MicroarchName("AuthenticAMD", 0x17, 0xF0, 0), "unknown");
  EXPECT_EQ(MicroarchName("", 6, 0x3A, 9), "unknown");
  EXPECT_EQ(MicroarchName("AuthenticAMD", 6, 0x3A, 9), "unknown");  // Intel model, AMD vendor
}

}  // namespace
}  // namespace tlbfleet::agent
