#pragma once
// The workload catalogue as the user API shows it (FleetService.ListWorkloads, GET
// /api/v1/workloads): every registered workload's parameters and metrics, with the presets
// (deploy/presets) that run it. Built once; it cannot change while the controller runs.

#include "tlbfleet/v1/fleet.pb.h"

namespace tlbfleet::api {

const v1::ListWorkloadsResponse& WorkloadCatalogue();

}  // namespace tlbfleet::api
