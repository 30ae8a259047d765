#include "request_info.h"

#include <algorithm>

namespace vkube::apiserver {

namespace {

std::vector<std::string> split_path(std::string_view path) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i < path.size()) {
    while (i < path.size() && path[i] == '/') ++i;
    size_t j = path.find('/', i);
    if (j == std::string_view::npos) j = path.size();
    if (j > i) out.emplace_back(path.substr(i, j - i));
    i = j;
  }
  return out;
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

}  // namespace

bool parse_bool(std::string_view s, bool* out) {
  if (s == "1" || s == "t" || s == "T" || s == "true" || s == "TRUE" || s == "True") {
    *out = true;
    return true;
  }
  if (s == "0" || s == "f" || s == "F" || s == "false" || s == "FALSE" || s == "False") {
    *out = false;
    return true;
  }
  return false;
}

RequestInfo parse_request_info(const http::Request& req) {
  RequestInfo info;
  info.path = req.path;
  info.verb = lower(req.method);
  std::vector<std::string> parts = split_path(req.path);
  if (parts.empty() || (parts[0] != "api" && parts[0] != "apis")) return info;
  info.api_prefix = parts[0];
  size_t i = 1;
  if (info.api_prefix == "apis") {
    if (parts.size() < 3) return info;  // /apis, /apis/<group>: discovery
    info.group = parts[1];
    i = 2;
  } else if (parts.size() < 2) {
    return info;  // /api: discovery
  }
  info.version = parts[i++];
  std::vector<std::string> rest(parts.begin() + static_cast<long>(i), parts.end());
  if (rest.empty()) return info;  // /api/v1: discovery
  info.is_resource_request = true;

  bool watch_param = false;
  if (auto w = http::query_param(req.query, "watch")) parse_bool(*w, &watch_param);

  // /watch/... is the deprecated watch path prefix.
  bool watch_path = false;
  if (rest[0] == "watch") {
    watch_path = true;
    rest.erase(rest.begin());
  }
  // namespaces/<ns>/<resource>/... addresses namespaced objects;
  // namespaces/<ns>[/status|/finalize] the namespace object itself.
  if (rest[0] == "namespaces" && rest.size() > 1) {
    info.namespace_ = rest[1];
    if (rest.size() > 2 && rest[2] != "status" && rest[2] != "finalize")
      rest.erase(rest.begin(), rest.begin() + 2);
  }
  info.parts = rest;
  info.resource = rest[0];
  if (rest.size() >= 2) info.name = rest[1];
  if (rest.size() >= 3) info.subresource = rest[2];
  if (info.resource == "namespaces") info.namespace_.clear();

  const std::string& m = req.method;
  if (m == "GET" || m == "HEAD") {
    if (info.name.empty()) info.verb = (watch_param || watch_path) ? "watch" : "list";
    else info.verb = (watch_param || watch_path) ? "watch" : "get";
  } else if (m == "POST") {
    info.verb = "create";
  } else if (m == "PUT") {
    info.verb = "update";
  } else if (m == "PATCH") {
    info.verb = "patch";
  } else if (m == "DELETE") {
    info.verb = info.name.empty() ? "deletecollection" : "delete";
  }
  return info;
}

}  // namespace vkube::apiserver
