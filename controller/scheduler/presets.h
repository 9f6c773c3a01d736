#pragma once
// Presets: the run specs shipped in deploy/presets/*.yaml, compiled into the binary (the
// build generates presets_embedded.cc from them). A preset file is a multi-document YAML
// file, one run spec per document; a run spec names one document with
// `preset: <file>/<document name>` (e.g. `tlbflush-performance/ebizzy`), or `preset: <file>`
// when the file holds a single document, and overrides any of its fields.

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace YAML {
class Node;
}

namespace tlbfleet::scheduler {

struct PresetFile {
  std::string name;  // the file name without .yaml, e.g. "tlbflush-performance"
  std::string yaml;  // the file's text
};

// Generated at build time from deploy/presets/*.yaml, sorted by name.
const std::vector<PresetFile>& EmbeddedPresets();

// Every document reference, "file/name", in file then document order.
std::vector<std::string> PresetReferences();

// The document `ref` names, as parsed YAML. INVALID_ARGUMENT naming the field `preset`
// for an unknown file or document. May throw YAML::Exception only if an embedded file is
// malformed (a build-time test keeps them valid); callers are inside their try block.
absl::StatusOr<YAML::Node> LoadPresetDocument(std::string_view ref);

// Overlays `spec` (a run spec map with a `preset` key) on the preset it names: each field of
// `spec` replaces the preset's, except `params` (and `hosts.labels`), whose keys are merged,
// the spec's winning. A null value (`sweep: ~`) removes the preset's field.
absl::StatusOr<YAML::Node> ApplyPreset(const YAML::Node& spec);

}  // namespace tlbfleet::scheduler
