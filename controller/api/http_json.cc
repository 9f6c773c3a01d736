#include "controller/api/http_json.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/util/json_util.h>

#include <regex>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "controller/api/router.h"
#include "tlbfleet/v1/auth.pb.h"

namespace tlbfleet::api {

namespace pb = google::protobuf;

unsigned HttpStatusFor(absl::StatusCode code) {
  switch (code) {
    case absl::StatusCode::kOk:
      return 200;
    case absl::StatusCode::kCancelled:
      return 499;
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kFailedPrecondition:
    case absl::StatusCode::kOutOfRange:
      return 400;
    case absl::StatusCode::kDeadlineExceeded:
      return 504;
    case absl::StatusCode::kNotFound:
      return 404;
    case absl::StatusCode::kAlreadyExists:
    case absl::StatusCode::kAborted:
      return 409;
    case absl::StatusCode::kPermissionDenied:
      return 403;
    case absl::StatusCode::kUnauthenticated:
      return 401;
    case absl::StatusCode::kResourceExhausted:
      return 429;
    case absl::StatusCode::kUnimplemented:
      return 501;
    case absl::StatusCode::kUnavailable:
      return 503;
    default:
      return 500;
  }
}

namespace {

// Invalid UTF-8 cannot go into a JSON string; such bytes become U+FFFD.
std::string SanitizeUtf8(absl::string_view text) {
  if (IsValidUtf8(text)) return std::string(text);
  std::string out;
  for (char c : text) {
    if (static_cast<unsigned char>(c) < 0x80) {
      out.push_back(c);
    } else {
      out += "\xEF\xBF\xBD";
    }
  }
  return out;
}

const pb::FieldDescriptor* FindField(const pb::Descriptor* d, absl::string_view name) {
  for (int i = 0; i < d->field_count(); ++i) {
    const pb::FieldDescriptor* f = d->field(i);
    if (f->name() == name || f->json_name() == name) return f;
  }
  return nullptr;
}

std::string KnownFields(const pb::Descriptor* d) {
  std::string out;
  for (int i = 0; i < d->field_count(); ++i) {
    if (d->field(i)->message_type() != nullptr) continue;
    absl::StrAppend(&out, out.empty() ? "" : ", ", d->field(i)->name());
  }
  return out.empty() ? "none" : out;
}

absl::Status SetScalar(pb::Message* m, const pb::FieldDescriptor* f, const std::string& text) {
  const pb::Reflection* r = m->GetReflection();
  const bool rep = f->is_repeated();
  auto bad = [&](absl::string_view expected) {
    return absl::InvalidArgumentError(
        absl::StrCat(f->name(), ": invalid value \"", text, "\" (expected ", expected, ")"));
  };
  switch (f->cpp_type()) {
    case pb::FieldDescriptor::CPPTYPE_STRING:
      rep ? r->AddString(m, f, text) : r->SetString(m, f, text);
      return absl::OkStatus();
    case pb::FieldDescriptor::CPPTYPE_INT32: {
      int32_t v;
      if (!absl::SimpleAtoi(text, &v)) return bad("an integer");
      rep ? r->AddInt32(m, f, v) : r->SetInt32(m, f, v);
      return absl::OkStatus();
    }
    case pb::FieldDescriptor::CPPTYPE_INT64: {
      int64_t v;
      if (!absl::SimpleAtoi(text, &v)) return bad("an integer");
      rep ? r->AddInt64(m, f, v) : r->SetInt64(m, f, v);
      return absl::OkStatus();
    }
    case pb::FieldDescriptor::CPPTYPE_UINT32: {
      uint32_t v;
      if (text.empty() || text[0] == '-' || !absl::SimpleAtoi(text, &v)) {
        return bad("a non-negative integer");
      }
      rep ? r->AddUInt32(m, f, v) : r->SetUInt32(m, f, v);
      return absl::OkStatus();
    }
    case pb::FieldDescriptor::CPPTYPE_UINT64: {
      uint64_t v;
      if (text.empty() || text[0] == '-' || !absl::SimpleAtoi(text, &v)) {
        return bad("a non-negative integer");
      }
      rep ? r->AddUInt64(m, f, v) : r->SetUInt64(m, f, v);
      return absl::OkStatus();
    }
    case pb::FieldDescriptor::CPPTYPE_DOUBLE:
    case pb::FieldDescriptor::CPPTYPE_FLOAT: {
      double v;
      if (!absl::SimpleAtod(text, &v)) return bad("a number");
      if (f->cpp_type() == pb::FieldDescriptor::CPPTYPE_DOUBLE) {
        rep ? r->AddDouble(m, f, v) : r->SetDouble(m, f, v);
      } else {
        rep ? r->AddFloat(m, f, static_cast<float>(v)) : r->SetFloat(m, f, static_cast<float>(v));
      }
      return absl::OkStatus();
    }
    case pb::FieldDescriptor::CPPTYPE_BOOL: {
      bool v;
      if (!absl::SimpleAtob(text, &v)) return bad("true or false");
      rep ? r->AddBool(m, f, v) : r->SetBool(m, f, v);
      return absl::OkStatus();
    }
    case pb::FieldDescriptor::CPPTYPE_ENUM: {
      const pb::EnumDescriptor* e = f->enum_type();
      const pb::EnumValueDescriptor* value = e->FindValueByName(text);
      std::string names;
      for (int i = 0; i < e->value_count() && value == nullptr; ++i) {
        const std::string& name = e->value(i)->name();
        if (e->value(i)->number() == 0) continue;  // UNSPECIFIED is never a filter
        if (absl::EndsWithIgnoreCase(name, absl::StrCat("_", text))) value = e->value(i);
      }
      if (value == nullptr || value->number() == 0) {
        for (int i = 0; i < e->value_count(); ++i) {
          if (e->value(i)->number() != 0) {
            absl::StrAppend(&names, names.empty() ? "" : ", ", e->value(i)->name());
          }
        }
        return bad(absl::StrCat("one of ", names));
      }
      rep ? r->AddEnum(m, f, value) : r->SetEnum(m, f, value);
      return absl::OkStatus();
    }
    default:
      return absl::InvalidArgumentError(
          absl::StrCat(f->name(), ": cannot be set from a URL; send it in a JSON body"));
  }
}

// protobuf's JSON errors say "(limit): invalid value ..." or "limt: Cannot find field.";
// ours say "limit: ...".
std::string TidyJsonError(absl::string_view message) {
  std::string text(message);
  static const std::regex kParenField(R"(^\(([A-Za-z0-9_.\[\]]+)\):\s*)");
  std::smatch m;
  if (std::regex_search(text, m, kParenField)) {
    text = absl::StrCat(m[1].str(), ": ", m.suffix().str());
  }
  absl::StrReplaceAll({{"Cannot find field.", "unknown field"}}, &text);
  // Parse errors quote the remaining input on following lines; the first line says it.
  size_t newline = text.find('\n');
  if (newline != std::string::npos) text.resize(newline);
  return text;
}

}  // namespace

bool ContentTypeIs(absl::string_view header, absl::string_view type) {
  absl::string_view main = header.substr(0, header.find(';'));
  return absl::EqualsIgnoreCase(absl::StripAsciiWhitespace(main), type);
}

std::string FieldOf(absl::string_view message, absl::string_view source) {
  static const std::regex kFieldPath(
      R"(^[A-Za-z_][A-Za-z0-9_]*(\[[0-9]+\])*(\.[A-Za-z0-9_]+(\[[0-9]+\])*)*$)");
  std::vector<absl::string_view> parts = absl::StrSplit(message, absl::MaxSplits(": ", 2));
  size_t i = 0;
  if (!source.empty() && !parts.empty() && parts[0] == source) ++i;
  if (i + 1 >= parts.size()) return "";  // a field is followed by what is wrong with it
  std::string candidate(parts[i]);
  return std::regex_match(candidate, kFieldPath) ? candidate : "";
}

HttpResponse JsonResponse(const pb::Message& message, unsigned status) {
  HttpResponse response;
  response.status = status;
  pb::util::JsonPrintOptions options;
  options.always_print_primitive_fields = true;
  if (!pb::util::MessageToJsonString(message, &response.body, options).ok()) {
    // Only invalid UTF-8 in a string field can get here; say so rather than send half.
    response.status = 500;
    response.body = R"({"code":"INTERNAL","message":"response is not valid UTF-8","field":""})";
  }
  response.body.push_back('\n');
  return response;
}

HttpResponse ErrorResponse(const absl::Status& status, absl::string_view source) {
  v1::ApiError error;
  error.set_code(absl::StatusCodeToString(status.code()));
  error.set_message(SanitizeUtf8(status.message()));
  error.set_field(FieldOf(error.message(), source));
  HttpResponse response = JsonResponse(error, HttpStatusFor(status.code()));
  if (status.code() == absl::StatusCode::kUnauthenticated) {
    response.headers.emplace_back("WWW-Authenticate", "Bearer realm=\"tlbfleet\"");
  }
  return response;
}

absl::Status ParseJsonBody(const HttpRequest& request, pb::Message* message) {
  const std::string& body = request.body();
  if (absl::StripAsciiWhitespace(body).empty()) return absl::OkStatus();
  std::string type = request.Header(beast_http::field::content_type);
  if (!ContentTypeIs(type, "application/json")) {
    return absl::InvalidArgumentError(
        absl::StrCat("Content-Type: expected application/json, got \"", SanitizeUtf8(type), "\""));
  }
  if (!IsValidUtf8(body)) return absl::InvalidArgumentError("body: not valid UTF-8");
  pb::util::JsonParseOptions options;
  options.ignore_unknown_fields = false;
  auto s = pb::util::JsonStringToMessage(body, message, options);
  if (!s.ok()) {
    return absl::InvalidArgumentError(
        TidyJsonError(absl::string_view(s.message().data(), s.message().size())));
  }
  return absl::OkStatus();
}

absl::Status SetFromQuery(const HttpRequest& request, pb::Message* message) {
  const pb::Descriptor* d = message->GetDescriptor();
  std::set<const pb::FieldDescriptor*> seen;
  for (const auto& [key, value] : request.query) {
    const pb::FieldDescriptor* f = FindField(d, key);
    if (f == nullptr || f->message_type() != nullptr || request.params.count(f->name()) > 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(key, ": unknown query parameter (known: ", KnownFields(d), ")"));
    }
    if (!f->is_repeated() && !seen.insert(f).second) {
      return absl::InvalidArgumentError(absl::StrCat(key, ": given more than once"));
    }
    if (f->is_repeated()) {
      for (absl::string_view part : absl::StrSplit(value, ',', absl::SkipEmpty())) {
        if (absl::Status s = SetScalar(message, f, std::string(part)); !s.ok()) return s;
      }
    } else if (absl::Status s = SetScalar(message, f, value); !s.ok()) {
      return s;
    }
  }
  return absl::OkStatus();
}

absl::Status SetFromPath(const HttpRequest& request, pb::Message* message) {
  const pb::Descriptor* d = message->GetDescriptor();
  const pb::Reflection* r = message->GetReflection();
  for (const auto& [name, value] : request.params) {
    const pb::FieldDescriptor* f = d->FindFieldByName(name);
    if (f == nullptr || f->is_repeated()) continue;
    if (f->cpp_type() == pb::FieldDescriptor::CPPTYPE_INT64) {
      // A numeric id in the path (/api/v1/builds/{task_id}/log).
      int64_t number = 0;
      if (!absl::SimpleAtoi(value, &number)) {
        return absl::InvalidArgumentError(
            absl::StrCat(name, ": expected an integer in the path, got \"", value, "\""));
      }
      const int64_t given = r->GetInt64(*message, f);
      if (given != 0 && given != number) {
        return absl::InvalidArgumentError(
            absl::StrCat(name, ": the body says ", given, " but the path says ", number));
      }
      r->SetInt64(message, f, number);
      continue;
    }
    if (f->cpp_type() != pb::FieldDescriptor::CPPTYPE_STRING) continue;
    std::string given = r->GetString(*message, f);
    if (!given.empty() && given != value) {
      return absl::InvalidArgumentError(
          absl::StrCat(name, ": the body says \"", given, "\" but the path says \"", value, "\""));
    }
    r->SetString(message, f, value);
  }
  return absl::OkStatus();
}

}  // namespace tlbfleet::api
