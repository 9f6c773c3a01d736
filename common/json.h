#pragma once
// Minimal JSON text helpers for hand-written JSON lines (bench output, report rows), where
// going through a protobuf message would not give the documented shape.

#include <string>
#include <string_view>

namespace tlbfleet {

// Appends `s` as a JSON string literal: quotes, backslashes and control characters escaped;
// UTF-8 passes through unchanged, as JSON allows.
void AppendJsonString(std::string& out, std::string_view s);

inline std::string JsonQuote(std::string_view s) {
  std::string out;
  AppendJsonString(out, s);
  return out;
}

}  // namespace tlbfleet
