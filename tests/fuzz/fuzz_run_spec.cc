// Fuzzes the run spec's YAML parse and validation (controller/scheduler/run_spec.h): any bytes
// must give a spec or an INVALID_ARGUMENT, never a crash, a hang or another code; a spec it
// accepts must pass ValidateRunSpec again (parse and validate agree).

#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "controller/scheduler/run_spec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view yaml(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<tlbfleet::v1::RunSpec> spec = tlbfleet::scheduler::ParseRunSpec(yaml, "fuzz.yaml");
  if (!spec.ok()) {
    if (!absl::IsInvalidArgument(spec.status())) std::abort();
    return 0;
  }
  if (!tlbfleet::scheduler::ValidateRunSpec(*spec).ok()) std::abort();
  return 0;
}
