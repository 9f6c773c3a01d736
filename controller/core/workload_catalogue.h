#pragma once
// The workload catalogue as the user API shows it (RunService::ListWorkloads: FleetService's
// ListWorkloads, GET /api/v1/workloads): every workload's parameters and metrics
// (catalogue/), with the presets (deploy/presets) that run it. Built once; it cannot change
// while the controller runs.

#include "tlbfleet/v1/fleet.pb.h"

namespace tlbfleet::core {

const v1::ListWorkloadsResponse& WorkloadCatalogue();

}  // namespace tlbfleet::core
