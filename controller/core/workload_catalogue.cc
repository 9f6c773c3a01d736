#include "controller/core/workload_catalogue.h"

#include <yaml-cpp/yaml.h>

#include <map>

#include "catalogue/catalogue.h"
#include "controller/scheduler/presets.h"
#include "spdlog/spdlog.h"

namespace tlbfleet::core {

namespace {

v1::ParameterSchema::Type TypeOf(catalogue::ParamType type) {
  switch (type) {
    case catalogue::ParamType::kInt:
      return v1::ParameterSchema::TYPE_INT;
    case catalogue::ParamType::kBool:
      return v1::ParameterSchema::TYPE_BOOL;
    case catalogue::ParamType::kEnum:
      return v1::ParameterSchema::TYPE_ENUM;
    case catalogue::ParamType::kString:
      return v1::ParameterSchema::TYPE_STRING;
  }
  return v1::ParameterSchema::TYPE_UNSPECIFIED;
}

// Presets by benchmark. The embedded files are checked at build time (presets_test); a
// malformed one is skipped here rather than taking the catalogue down.
std::map<std::string, std::vector<v1::PresetSpec>> PresetsByBenchmark() {
  std::map<std::string, std::vector<v1::PresetSpec>> out;
  for (const std::string& ref : scheduler::PresetReferences()) {
    try {
      absl::StatusOr<YAML::Node> doc = scheduler::LoadPresetDocument(ref);
      if (!doc.ok()) continue;
      v1::PresetSpec preset;
      preset.set_ref(ref);
      if ((*doc)["name"]) preset.set_name((*doc)["name"].as<std::string>());
      preset.set_spec_yaml(YAML::Dump(*doc) + "\n");
      std::string benchmark = (*doc)["benchmark"] ? (*doc)["benchmark"].as<std::string>() : "";
      out[benchmark].push_back(std::move(preset));
    } catch (const YAML::Exception& e) {
      spdlog::error("preset {}: {}", ref, e.what());
    }
  }
  return out;
}

v1::ListWorkloadsResponse Build() {
  std::map<std::string, std::vector<v1::PresetSpec>> presets = PresetsByBenchmark();
  v1::ListWorkloadsResponse response;
  for (const catalogue::WorkloadSchema* w : catalogue::AllWorkloads()) {
    const std::string name(w->Name());
    v1::WorkloadSchema* schema = response.add_workloads();
    schema->set_name(name);
    schema->set_description(std::string(w->Description()));
    schema->set_primary_metric(std::string(w->PrimaryMetric()));
    for (const catalogue::ParamSpec& p : w->Schema()) {
      v1::ParameterSchema* param = schema->add_parameters();
      param->set_name(p.name);
      param->set_type(TypeOf(p.type));
      param->set_default_value(p.default_value);
      if (p.type == catalogue::ParamType::kInt) {
        param->set_min(p.min);
        param->set_max(p.max);
      }
      for (const std::string& choice : p.choices) param->add_choices(choice);
      param->set_help(p.help);
    }
    for (const catalogue::MetricSpec& m : w->Metrics()) {
      v1::MetricSchema* metric = schema->add_metrics();
      metric->set_name(m.name);
      metric->set_unit(m.unit);
      metric->set_better(m.better == catalogue::Better::kHigher ? v1::BETTER_HIGHER
                                                                : v1::BETTER_LOWER);
      metric->set_help(m.help);
    }
    for (v1::PresetSpec& preset : presets[name]) *schema->add_presets() = std::move(preset);
  }
  for (const catalogue::MonitorInfo& m : catalogue::Monitors()) {
    v1::MonitorSchema* monitor = response.add_monitors();
    monitor->set_name(m.name);
    monitor->set_help(m.help);
  }
  return response;
}

}  // namespace

const v1::ListWorkloadsResponse& WorkloadCatalogue() {
  static const auto* kCatalogue = new v1::ListWorkloadsResponse(Build());
  return *kCatalogue;
}

}  // namespace tlbfleet::core
