#include "agent/workloads/workload.h"

#include <cstdio>
#include <cstdlib>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace tlbfleet::workloads {

namespace {

const catalogue::WorkloadSchema& SchemaOrAbort(std::string_view name) {
  const catalogue::WorkloadSchema* schema = catalogue::FindWorkload(name);
  if (schema == nullptr) {
    std::fprintf(stderr, "tlbfleet: workload \"%.*s\" has a run loop but no catalogue entry\n",
                 static_cast<int>(name.size()), name.data());
    std::abort();
  }
  return *schema;
}

}  // namespace

Workload::Workload(std::string_view name) : schema_(SchemaOrAbort(name)) {}

const MetricSpec& Workload::Metric(std::string_view name) const {
  const MetricSpec* spec = schema_.FindMetric(name);
  if (spec == nullptr) {
    std::fprintf(stderr, "tlbfleet: workload %s measures \"%.*s\", which its schema lacks\n",
                 std::string(Name()).c_str(), static_cast<int>(name.size()), name.data());
    std::abort();
  }
  return *spec;
}

Registry& Registry::Get() {
  // Keeps every workload's object file (and its registration) in a static link.
  LinkAllWorkloads();
  // Never destroyed: workloads may be looked up from static destructors of other objects.
  static Registry* registry = new Registry();
  return *registry;
}

void Registry::Add(std::unique_ptr<Workload> workload) {
  std::string name(workload->Name());
  if (workloads_.contains(name)) {
    // Two workloads under one name would make run specs ambiguous; fail before serving.
    std::fprintf(stderr, "tlbfleet: workload \"%s\" registered twice\n", name.c_str());
    std::abort();
  }
  workloads_.emplace(std::move(name), std::move(workload));
}

const Workload* Registry::Find(std::string_view name) const {
  auto it = workloads_.find(name);
  return it == workloads_.end() ? nullptr : it->second.get();
}

absl::Status Registry::CheckCoversCatalogue() const {
  std::vector<std::string> missing;
  for (const std::string& name : catalogue::WorkloadNames()) {
    if (Find(name) == nullptr) missing.push_back(name);
  }
  if (missing.empty()) return absl::OkStatus();
  return absl::InternalError(absl::StrCat("the catalogue's workloads ",
                                          absl::StrJoin(missing, ", "),
                                          " have no run loop in this agent"));
}

std::vector<std::string> Registry::Names() const {
  std::vector<std::string> names;
  for (const auto& [name, workload] : workloads_) names.push_back(name);
  return names;
}
}  // namespace tlbfleet::workloads
