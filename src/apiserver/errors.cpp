#include "errors.h"

namespace vkube::apiserver {

int http_code(Code code) {
  switch (code) {
    case Code::kOk: return 200;
    case Code::kNotFound: return 404;
    case Code::kAlreadyExists: return 409;
    case Code::kConflict: return 409;
    case Code::kInvalid: return 422;
    case Code::kBadRequest: return 400;
    case Code::kMethodNotAllowed: return 405;
    case Code::kNotAcceptable: return 406;
    case Code::kUnsupportedMediaType: return 415;
    case Code::kUnauthorized: return 401;
    case Code::kForbidden: return 403;
    case Code::kExpired: return 410;
    case Code::kTooLarge: return 413;
    case Code::kTooManyRequests: return 429;
    case Code::kFutureRevision: return 504;
    case Code::kTimeout: return 504;
    case Code::kUnavailable: return 503;
    case Code::kCancelled: return 500;
    case Code::kCorruption: return 500;
    case Code::kInternal: return 500;
  }
  return 500;
}

std::string_view reason(Code code) {
  switch (code) {
    case Code::kFutureRevision: return "Timeout";
    case Code::kCancelled:
    case Code::kCorruption: return "InternalError";
    default: return code_name(code);
  }
}

json status_object(const ApiError& e) {
  if (e.raw.is_object()) return e.raw;
  json s = {{"kind", "Status"},
            {"apiVersion", "v1"},
            {"metadata", json::object()},
            {"status", "Failure"},
            {"message", e.status.message()},
            {"reason", reason(e.status.code())},
            {"code", http_code(e.status.code())}};
  if (e.status.code() == Code::kInternal || e.status.code() == Code::kCorruption ||
      e.status.code() == Code::kCancelled)
    s["reason"] = "InternalError";
  if (!e.details.empty()) s["details"] = e.details;
  // A 422 that names no field (a JSON patch that cannot apply) carries its
  // text as a cause, as kube's generic server response does: kubectl prints
  // an Invalid error's causes, and nothing else after "is invalid".
  if (e.status.code() == Code::kInvalid && s.contains("details") && s["details"].is_object() &&
      (!s["details"].contains("causes") || s["details"]["causes"].empty())) {
    constexpr std::string_view kGeneric =
        "the server rejected our request due to an error in our request: ";
    std::string_view m = e.status.message();
    if (m.starts_with(kGeneric)) m.remove_prefix(kGeneric.size());
    s["details"]["causes"] =
        json::array({{{"reason", "UnexpectedServerResponse"}, {"message", std::string(m)}}});
  }
  if (e.status.code() == Code::kFutureRevision) {
    s["details"]["causes"] = json::array(
        {{{"reason", "ResourceVersionTooLarge"}, {"message", "Too large resource version"}}});
    s["details"]["retryAfterSeconds"] = 1;
  }
  return s;
}

json success_status(const json& details) {
  return {{"kind", "Status"}, {"apiVersion", "v1"},  {"metadata", json::object()},
          {"status", "Success"}, {"details", details}};
}

http::Response json_response(int code, const json& body) {
  http::Response r;
  r.status = code;
  r.set_header("Content-Type", "application/json");
  r.body = body.dump(-1, ' ', false, json::error_handler_t::replace);
  return r;
}

http::Response error_response(const ApiError& e) {
  if (e.raw.is_object() && e.raw.contains("code") && e.raw["code"].is_number_integer())
    return json_response(e.raw["code"].get<int>(), e.raw);
  return json_response(http_code(e.status.code()), status_object(e));
}

http::Response status_response(const Status& s) { return error_response(ApiError(s)); }

namespace {

json details_for(const api::Resource& r, const std::string& name) {
  json d = {{"kind", r.plural}};
  if (!name.empty()) d["name"] = name;
  if (!r.gv.group.empty()) d["group"] = r.gv.group;
  return d;
}

std::string quoted_resource(const api::Resource& r, const std::string& name) {
  return r.group_resource() + " \"" + name + "\"";
}

std::string_view cause_reason(FieldError::Type t) {
  switch (t) {
    case FieldError::Type::kRequired: return "FieldValueRequired";
    case FieldError::Type::kInvalid: return "FieldValueInvalid";
    case FieldError::Type::kNotSupported: return "FieldValueNotSupported";
    case FieldError::Type::kDuplicate: return "FieldValueDuplicate";
    case FieldError::Type::kForbidden: return "FieldValueForbidden";
    case FieldError::Type::kTooLong: return "FieldValueTooLong";
    case FieldError::Type::kTooMany: return "FieldValueTooMany";
  }
  return "FieldValueInvalid";
}

}  // namespace

ApiError not_found(const api::Resource& r, const std::string& name) {
  return {Status::not_found(quoted_resource(r, name) + " not found"), details_for(r, name)};
}

ApiError already_exists(const api::Resource& r, const std::string& name) {
  return {Status::already_exists(quoted_resource(r, name) + " already exists"), details_for(r, name)};
}

ApiError conflict(const api::Resource& r, const std::string& name, const std::string& why) {
  return {Status::conflict("Operation cannot be fulfilled on " + quoted_resource(r, name) + ": " + why),
          details_for(r, name)};
}

ApiError invalid(const api::Resource& r, const std::string& name, const FieldErrors& errors) {
  std::string msg = r.kind + " \"" + name + "\" is invalid: ";
  json causes = json::array();
  if (errors.size() == 1) {
    msg += errors[0].to_string();
  } else {
    msg += "[";
    for (size_t i = 0; i < errors.size(); ++i) msg += (i ? ", " : "") + errors[i].to_string();
    msg += "]";
  }
  for (const auto& e : errors) {
    std::string m = e.to_string();
    m = m.substr(std::min(m.size(), e.field.size() + 2));
    causes.push_back({{"reason", cause_reason(e.type)}, {"message", m}, {"field", e.field}});
  }
  json d = {{"kind", r.kind}, {"name", name}, {"causes", causes}};
  if (!r.gv.group.empty()) d["group"] = r.gv.group;
  return {Status::invalid(msg), d};
}

ApiError bad_request(std::string message) { return Status::bad_request(std::move(message)); }

ApiError method_not_supported(const api::Resource& r, const std::string& verb) {
  return {Status(Code::kMethodNotAllowed, verb + " is not supported on resources of kind \"" +
                                              r.group_resource() + "\""),
          details_for(r, "")};
}

}  // namespace vkube::apiserver
