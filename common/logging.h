#pragma once
// Process-wide logging set-up. Logs go to stderr, one line per event:
//   2026-11-29T22:50:01.123Z I agent: connected to 127.0.0.1:7070 agent=ab12...
#include <string_view>

namespace tlbfleet {

// `level` is one of trace, debug, info, warn, error. Unknown levels fall back to info.
void InitLogging(std::string_view program, std::string_view level);

}  // namespace tlbfleet
