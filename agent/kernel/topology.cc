#include "agent/kernel/topology.h"

#include <hwloc.h>

#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace tlbfleet::agent {
namespace {

// Owns an hwloc topology.
class Topology {
 public:
  Topology() { ok_ = hwloc_topology_init(&topology_) == 0; }
  ~Topology() {
    if (ok_) hwloc_topology_destroy(topology_);
  }
  Topology(const Topology&) = delete;
  Topology& operator=(const Topology&) = delete;

  bool ok() const { return ok_; }
  hwloc_topology_t get() const { return topology_; }

 private:
  hwloc_topology_t topology_ = nullptr;
  bool ok_ = false;
};

uint32_t Count(hwloc_topology_t t, hwloc_obj_type_t type) {
  const int n = hwloc_get_nbobjs_by_type(t, type);
  return n > 0 ? static_cast<uint32_t>(n) : 0;
}

// Logical CPUs under the first object of `type`; 0 when there is none.
uint32_t CpusPerObject(hwloc_topology_t t, hwloc_obj_type_t type) {
  hwloc_obj_t obj = hwloc_get_obj_by_type(t, type, 0);
  if (obj == nullptr || obj->cpuset == nullptr) return 0;
  const int weight = hwloc_bitmap_weight(obj->cpuset);
  return weight > 0 ? static_cast<uint32_t>(weight) : 0;
}

v1::CpuTopology Summarize(hwloc_topology_t t) {
  v1::CpuTopology out;
  out.set_cpus(Count(t, HWLOC_OBJ_PU));
  out.set_packages(Count(t, HWLOC_OBJ_PACKAGE));
  out.set_cores(Count(t, HWLOC_OBJ_CORE));
  out.set_cpus_per_core(CpusPerObject(t, HWLOC_OBJ_CORE));
  // The last-level cache is the highest cache level the machine has.
  for (hwloc_obj_type_t cache : {HWLOC_OBJ_L5CACHE, HWLOC_OBJ_L4CACHE, HWLOC_OBJ_L3CACHE,
                                 HWLOC_OBJ_L2CACHE, HWLOC_OBJ_L1CACHE}) {
    if (Count(t, cache) > 0) {
      out.set_cpus_per_llc(CpusPerObject(t, cache));
      break;
    }
  }
  out.set_numa_nodes(Count(t, HWLOC_OBJ_NUMANODE));
  out.set_cpus_per_numa_node(CpusPerObject(t, HWLOC_OBJ_NUMANODE));
  return out;
}

}  // namespace

absl::StatusOr<v1::CpuTopology> ReadCpuTopology() {
  Topology topology;
  if (!topology.ok() || hwloc_topology_load(topology.get()) != 0) {
    return absl::InternalError("hwloc: cannot load the CPU topology");
  }
  return Summarize(topology.get());
}

absl::StatusOr<v1::CpuTopology> CpuTopologyFromSynthetic(std::string_view description) {
  Topology topology;
  const std::string text(description);
  if (!topology.ok()) return absl::InternalError("hwloc: cannot initialise a topology");
  if (hwloc_topology_set_synthetic(topology.get(), text.c_str()) != 0) {
    return absl::InvalidArgumentError(absl::StrCat("hwloc: bad synthetic topology \"", text, "\""));
  }
  if (hwloc_topology_load(topology.get()) != 0) {
    return absl::InternalError("hwloc: cannot load the synthetic topology");
  }
  return Summarize(topology.get());
}

void FillCpuTopology(const Sysroot& sysroot, v1::HostInfo* host) {
  if (!sysroot.root().empty() && sysroot.root() != "/") return;
  absl::StatusOr<v1::CpuTopology> topology = ReadCpuTopology();
  if (topology.ok()) *host->mutable_topology() = *std::move(topology);
}

}  // namespace tlbfleet::agent
