// An in-process API server (api_server.h) that tests call as a cluster admin
// (system:masters over a client certificate), so what they assert is the
// behaviour of admission and validation, not of authorization.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/api_server.h"

namespace vkube::testing {

struct AdminApiServer : ApiServerOverStore {
  using ApiServerOverStore::ApiServerOverStore;

  // Sends `body` (as JSON text; null: no body) with `content_type` to
  // `target` and returns the handler chain's answer.
  http::Response call(const std::string& method, const std::string& target,
                      const nlohmann::json& body = nullptr,
                      const std::string& content_type = "application/json") {
    http::Request req = request(method, target);
    req.peer = http::PeerCertificate{"admin", {"system:masters"}};
    if (!body.is_null()) {
      req.body = body.dump();
      req.headers.push_back({"Content-Type", content_type});
    }
    return api->handle(req);
  }

  // GETs `target`, REQUIREs 200 and returns the object.
  nlohmann::json get(const std::string& target) {
    http::Response r = call("GET", target);
    INFO(r.body);
    REQUIRE(r.status == 200);
    return nlohmann::json::parse(r.body);
  }

  // Creates namespace `name` with `labels` (an object, or null for none);
  // REQUIREs 201.
  void make_namespace(const std::string& name, const nlohmann::json& labels = nullptr) {
    nlohmann::json meta = {{"name", name}};
    if (labels.is_object()) meta["labels"] = labels;
    REQUIRE(call("POST", "/api/v1/namespaces", {{"metadata", meta}}).status == 201);
  }
};

// The message of the Status a refused request answers.
inline std::string message(const http::Response& r) {
  return nlohmann::json::parse(r.body).value("message", "");
}

// Pod `name` with one container "app" running nginx, `spec_extra` merged into
// its spec.
inline nlohmann::json nginx_pod(const std::string& name,
                                const nlohmann::json& spec_extra = nlohmann::json::object()) {
  nlohmann::json p = {{"apiVersion", "v1"},
                      {"kind", "Pod"},
                      {"metadata", {{"name", name}}},
                      {"spec", {{"containers", {{{"name", "app"}, {"image", "nginx"}}}}}}};
  p["spec"].merge_patch(spec_extra);
  return p;
}

// The texts of the response's Warning headers (299 - "text", unquoted).
inline std::vector<std::string> warnings(const http::Response& r) {
  std::vector<std::string> out;
  for (const auto& h : r.headers) {
    if (h.name != "Warning" || h.value.size() < 8) continue;
    std::string text;
    const std::string quoted = h.value.substr(7, h.value.size() - 8);
    for (size_t i = 0; i < quoted.size(); ++i) {
      if (quoted[i] == '\\' && i + 1 < quoted.size()) ++i;
      text.push_back(quoted[i]);
    }
    out.push_back(text);
  }
  return out;
}

}  // namespace vkube::testing
