// Kubernetes Status errors: the one place where vkube Status codes become
// HTTP status codes and `kind: Status` bodies (apimachinery's api/errors).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "builtin/field_errors.h"
#include "vkube/api/resource.h"
#include "vkube/common/status.h"
#include "vkube/http/server.h"

namespace vkube::apiserver {

using json = nlohmann::json;

// An error with the details clients read (name, group, kind, causes).
struct ApiError {
  Status status;
  json details = json::object();

  // A whole Status object given by someone else (an admission webhook's
  // answer, whose code and reason need not be one of Code's): sent as it is
  // when set.
  json raw;

  ApiError(Status s) : status(std::move(s)) {}  // NOLINT(google-explicit-constructor)
  ApiError(Status s, json d) : status(std::move(s)), details(std::move(d)) {}
};

int http_code(Code code);
std::string_view reason(Code code);
json status_object(const ApiError& e);
json success_status(const json& details);
http::Response error_response(const ApiError& e);
// A JSON response of `body` as encode_json writes it.
http::Response json_response(int code, const json& body);
// `body` as kube's JSON encoder writes it: the fields of a Status, Table or
// discovery document (legacy and aggregated) in the order of kube's Go types
// (other objects keep nlohmann's sorted order), invalid UTF-8 replaced, and a
// trailing newline.
std::string encode_json(const json& body);
// Appends `body` to `out` as encode_json writes it, without the newline (a
// watch event's object).
void append_json(std::string& out, const json& body);

// The standard errors, worded as kube-apiserver words them.
ApiError not_found(const api::Resource& r, const std::string& name);
ApiError already_exists(const api::Resource& r, const std::string& name);
ApiError conflict(const api::Resource& r, const std::string& name, const std::string& why);
ApiError invalid(const api::Resource& r, const std::string& name, const FieldErrors& errors);
ApiError bad_request(std::string message);
ApiError method_not_supported(const api::Resource& r, const std::string& verb);

}  // namespace vkube::apiserver
