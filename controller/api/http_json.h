#pragma once
// Protobuf messages over HTTP: bodies in protobuf's canonical JSON mapping (never
// hand-written JSON), query strings and path parameters set through reflection, and errors
// as an ApiError {code, message, field} with the HTTP status that matches the code.

#include <google/protobuf/message.h>

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "controller/api/http_types.h"

namespace tlbfleet::api {

// The HTTP status for a gRPC/absl code (the mapping grpc-gateway uses).
unsigned HttpStatusFor(absl::StatusCode code);

// 200 (or `status`) with `message` as JSON. Fields at their defaults are printed too, so a
// client sees every field of the schema.
HttpResponse JsonResponse(const google::protobuf::Message& message, unsigned status = 200);

// The error response for `status`. `field` is the request or run spec field named at the
// start of the message ("arms[1].params.threads: must be ..."), skipping a leading
// `source` (a run spec's file name) when given.
HttpResponse ErrorResponse(const absl::Status& status, absl::string_view source = "");
std::string FieldOf(absl::string_view message, absl::string_view source = "");

// Parses a JSON body into `message`: Content-Type must be application/json (an empty body
// leaves the message empty), the text valid UTF-8, every field known and of its type.
// INVALID_ARGUMENT naming the field otherwise.
absl::Status ParseJsonBody(const HttpRequest& request, google::protobuf::Message* message);

// Sets fields of `message` from the query string (by proto or JSON name; repeated fields
// take several occurrences or a comma-separated list; enums take their name, or its last
// part: "running" for RUN_STATE_RUNNING). Unknown parameters are an error.
absl::Status SetFromQuery(const HttpRequest& request, google::protobuf::Message* message);

// Sets fields of `message` from the path parameters (by proto name). A body that set the
// same field to something else is an error.
absl::Status SetFromPath(const HttpRequest& request, google::protobuf::Message* message);

// Whether a Content-Type header value names `type` ("application/json; charset=utf-8"
// names application/json).
bool ContentTypeIs(absl::string_view header, absl::string_view type);

}  // namespace tlbfleet::api
