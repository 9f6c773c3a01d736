#pragma once
// GET /api/v1/runs/{run_id}/export/{format}: a finished run as other tools read it
// (docs/formats.md), one download for the dashboard's links — mmtests and lkp as a tar of the
// files `tlbfleet export` writes, bmf as its JSON. Answers 400 naming `format` for an unknown
// one, 404 for an unknown run, the status of FAILED_PRECONDITION for a run still going.

#include "controller/api/auth.h"
#include "controller/api/fleet_api.h"
#include "controller/api/http_types.h"

namespace tlbfleet::api {

HttpResponse ExportRunOverHttp(FleetApi& fleet, const Caller& caller, const HttpRequest& request);

}  // namespace tlbfleet::api
