// What the streaming protocols share: comma-separated header lists and the
// Status answer of a refused upgrade. Private to src/streaming.
#pragma once

#include <strings.h>

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "vkube/http/server.h"

namespace vkube::streaming {

// The items of every `name` header of `req`, comma-separated, in order.
inline std::vector<std::string> header_list(const http::Request& req, const char* name) {
  std::vector<std::string> out;
  for (const http::Header& h : req.headers) {
    if (strcasecmp(h.name.c_str(), name) != 0) continue;
    std::string_view list = h.value;
    while (!list.empty()) {
      size_t comma = list.find(',');
      std::string_view item = list.substr(0, comma);
      while (!item.empty() && (item.front() == ' ' || item.front() == '\t')) item.remove_prefix(1);
      while (!item.empty() && (item.back() == ' ' || item.back() == '\t')) item.remove_suffix(1);
      if (!item.empty()) out.emplace_back(item);
      if (comma == std::string_view::npos) break;
      list.remove_prefix(comma + 1);
    }
  }
  return out;
}

// kube's Status answer (400 BadRequest or 403 Forbidden) to a request that
// cannot be upgraded.
inline http::Response refuse(int code, const std::string& message) {
  http::Response r;
  r.status = code;
  r.set_header("Content-Type", "application/json");
  r.body = nlohmann::json{{"kind", "Status"},
                          {"apiVersion", "v1"},
                          {"metadata", nlohmann::json::object()},
                          {"status", "Failure"},
                          {"message", message},
                          {"reason", code == 403 ? "Forbidden" : "BadRequest"},
                          {"code", code}}
               .dump();
  return r;
}

}  // namespace vkube::streaming
