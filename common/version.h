#pragma once

namespace tlbfleet {

inline constexpr const char kVersion[] = "0.1.0";

}  // namespace tlbfleet
