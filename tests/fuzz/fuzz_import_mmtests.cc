// Fuzzes `tlbfleet import-mmtests` (controller/cli/import_mmtests.h): the config file is read,
// never executed, so any bytes must give run specs or INVALID_ARGUMENT; every run spec it
// writes must pass ParseRunSpec (the header's promise).

#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "controller/cli/import_mmtests.h"
#include "controller/scheduler/run_spec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<tlbfleet::cli::MmtestsImport> imported =
      tlbfleet::cli::ImportMmtestsConfig(text, "config-fuzz");
  if (!imported.ok()) {
    if (!absl::IsInvalidArgument(imported.status())) std::abort();
    return 0;
  }
  // Documents are separated by lines "---".
  const std::string& yaml = imported->yaml;
  size_t start = 0;
  while (start <= yaml.size()) {
    size_t end = yaml.find("\n---\n", start);
    const std::string_view doc(yaml.data() + start,
                               (end == std::string::npos ? yaml.size() : end + 1) - start);
    if (doc.find_first_not_of(" \n") != std::string_view::npos &&
        !tlbfleet::scheduler::ParseRunSpec(doc, "imported.yaml").ok()) {
      std::abort();
    }
    if (end == std::string::npos) break;
    start = end + 5;
  }
  return 0;
}
