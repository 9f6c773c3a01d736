#include "controller/api/http_export.h"

#include "absl/strings/str_cat.h"
#include "controller/api/http_json.h"
#include "controller/report/export_download.h"

namespace tlbfleet::api {

namespace v1 = tlbfleet::v1;

HttpResponse ExportRunOverHttp(FleetApi& fleet, const Caller& caller, const HttpRequest& r) {
  v1::GetRunRequest get;
  absl::Status parsed = SetFromPath(r, &get);
  auto format = r.params.find("format");
  if (parsed.ok() && format == r.params.end()) {
    parsed = absl::InvalidArgumentError("format: required");
  }
  if (!parsed.ok()) return ErrorResponse(caller.authenticated() ? parsed : caller.status);
  // Each call checks the caller and records it, as the route of each alone would.
  absl::StatusOr<v1::Run> run = fleet.GetRun(caller, get);
  if (!run.ok()) return ErrorResponse(run.status());
  report::ExportRun data;
  data.run = *std::move(run);
  v1::CompareResponse compared;
  if (format->second == "bmf" &&
      (data.run.state() == v1::RUN_STATE_SUCCEEDED || data.run.state() == v1::RUN_STATE_FAILED ||
       data.run.state() == v1::RUN_STATE_CANCELLED)) {
    v1::CompareRequest request;
    request.set_run_id(get.run_id());
    absl::StatusOr<v1::CompareResponse> c = fleet.Compare(caller, request);
    if (!c.ok()) return ErrorResponse(c.status());
    compared = *std::move(c);
  } else if (format->second == "mmtests" || format->second == "lkp") {
    v1::GetResultsRequest request;
    request.set_run_id(get.run_id());
    absl::StatusOr<v1::GetResultsResponse> results = fleet.GetResults(caller, request);
    if (!results.ok()) return ErrorResponse(results.status());
    data.samples.assign(results->samples().begin(), results->samples().end());
  }
  absl::StatusOr<report::ExportDownload> download =
      report::RunExportDownload(format->second, data, &compared.report());
  if (!download.ok()) return ErrorResponse(download.status());
  HttpResponse out;
  out.content_type = download->content_type;
  out.body = std::move(download->body);
  out.headers.emplace_back("Content-Disposition",
                           absl::StrCat("attachment; filename=\"", download->filename, "\""));
  return out;
}

}  // namespace tlbfleet::api
