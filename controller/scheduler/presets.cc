#include "controller/scheduler/presets.h"

#include <yaml-cpp/yaml.h>

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "controller/scheduler/run_spec_internal.h"

namespace tlbfleet::scheduler {
namespace {

std::string DocumentName(const YAML::Node& doc) {
  if (doc.IsMap() && doc["name"] && doc["name"].IsScalar()) return doc["name"].Scalar();
  return "";
}

// Copies a map node so that edits never reach the cached preset documents.
YAML::Node CopyMap(const YAML::Node& node) { return YAML::Clone(node); }

}  // namespace

std::vector<std::string> PresetReferences() {
  std::vector<std::string> refs;
  for (const PresetFile& file : EmbeddedPresets()) {
    for (const YAML::Node& doc : YAML::LoadAll(file.yaml)) {
      refs.push_back(absl::StrCat(file.name, "/", DocumentName(doc)));
    }
  }
  return refs;
}

absl::StatusOr<YAML::Node> LoadPresetDocument(std::string_view ref) {
  const std::string text(ref);
  const size_t slash = text.find('/');
  const std::string file_name = text.substr(0, slash);
  const std::string doc_name = slash == std::string::npos ? "" : text.substr(slash + 1);
  auto unknown = [&](const std::string& what) {
    return FieldError(
        "preset", absl::StrCat(what, " (known: ", absl::StrJoin(PresetReferences(), ", "), ")"));
  };
  for (const PresetFile& file : EmbeddedPresets()) {
    if (file.name != file_name) continue;
    std::vector<YAML::Node> docs = YAML::LoadAll(file.yaml);
    if (doc_name.empty()) {
      if (docs.size() == 1) return CopyMap(docs[0]);
      return unknown(absl::StrCat("preset ", Quote(text), " holds ", docs.size(),
                                  " run specs; name one as ", file_name, "/NAME"));
    }
    for (const YAML::Node& doc : docs) {
      if (DocumentName(doc) == doc_name) return CopyMap(doc);
    }
    return unknown(
        absl::StrCat("preset ", Quote(file_name), " has no run spec named ", Quote(doc_name)));
  }
  return unknown(absl::StrCat("unknown preset ", Quote(text)));
}

absl::StatusOr<YAML::Node> ApplyPreset(const YAML::Node& spec) {
  const YAML::Node ref = spec["preset"];
  if (!ref.IsScalar()) return FieldError("preset", "expected the name of a preset");
  absl::StatusOr<YAML::Node> preset = LoadPresetDocument(ref.Scalar());
  if (!preset.ok()) return preset.status();
  if (!preset->IsMap()) return FieldError("preset", "the preset is not a run spec map");
  YAML::Node merged = *preset;
  for (const auto& entry : spec) {
    const std::string key = entry.first.Scalar();
    if (key == "preset") continue;
    const YAML::Node& value = entry.second;
    if (value.IsNull()) {
      merged.remove(key);
      continue;
    }
    const bool merge_params = key == "params" && value.IsMap() && merged[key].IsMap();
    if (merge_params) {
      YAML::Node params = merged[key];
      for (const auto& p : value) params[p.first.Scalar()] = p.second;
      continue;
    }
    if (key == "hosts" && value.IsMap() && merged[key].IsMap()) {
      YAML::Node hosts = merged[key];
      for (const auto& h : value) {
        const std::string field = h.first.Scalar();
        if (field == "labels" && h.second.IsMap() && hosts[field].IsMap()) {
          YAML::Node labels = hosts[field];
          for (const auto& l : h.second) labels[l.first.Scalar()] = l.second;
        } else {
          hosts[field] = h.second;
        }
      }
      continue;
    }
    merged[key] = value;
  }
  return merged;
}

}  // namespace tlbfleet::scheduler
