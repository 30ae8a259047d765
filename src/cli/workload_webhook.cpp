// `vkube workload --webhook-listen`: an admission webhook server (HTTPS, AdmissionReview v1) for
// trying and testing MutatingWebhookConfigurations and ValidatingWebhookConfigurations with a
// local pod, without a container image of one's own. What it does is chosen by the path the
// configuration's clientConfig names:
//
//   /label/<key>/<value>   mutating: sets the label (a JSONPatch)
//   /count                 mutating: adds one to the annotation webhook.vkube.io/calls
//   /deny-label/<key>      validating: denies objects carrying the label, with code 403
//   /deny/<message>        denies everything, with code 403 and the message
//   /slow/<ms>             waits that long, then allows
//   /warn                  allows with a warning
//   anything else          allows
//
// and it logs one line per review on stdout (operation, resource, namespace/name, dry run).
#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "vkube/common/base64.h"
#include "vkube/http/server.h"
#include "workload_webhook.h"

namespace vkube::cli {

namespace {

using json = nlohmann::json;

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// RFC 6901: "~" and "/" in a key.
std::string pointer_token(const std::string& key) {
  std::string out;
  for (char ch : key) {
    if (ch == '~') out += "~0";
    else if (ch == '/') out += "~1";
    else out += ch;
  }
  return out;
}

// The path's segments after the first: "/label/a/b" -> {"label", "a", "b"}.
std::vector<std::string> segments(const std::string& path) {
  std::vector<std::string> out;
  std::string cur;
  for (char ch : path) {
    if (ch == '/') {
      if (!cur.empty()) out.push_back(cur);
      cur.clear();
    } else {
      cur += ch;
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

json review_answer(const std::string& path, const json& review) {
  const json& req = review.value("request", json::object());
  const json object = req.value("object", json());
  const json& meta = object.is_object() ? object.value("metadata", json::object()) : json::object();
  json response = {{"uid", req.value("uid", "")}, {"allowed", true}};
  std::vector<std::string> seg = segments(path);
  const std::string what = seg.empty() ? "" : seg[0];
  json patch = json::array();
  if (what == "label" && seg.size() >= 3 && object.is_object()) {
    if (!meta.contains("labels") || !meta["labels"].is_object())
      patch.push_back({{"op", "add"}, {"path", "/metadata/labels"}, {"value", json::object()}});
    patch.push_back({{"op", "add"},
                     {"path", "/metadata/labels/" + pointer_token(seg[1])},
                     {"value", seg[2]}});
  } else if (what == "count" && object.is_object()) {
    const json& ann = meta.value("annotations", json::object());
    int calls = 0;
    if (ann.is_object() && ann.contains("webhook.vkube.io/calls") &&
        ann["webhook.vkube.io/calls"].is_string())
      calls = std::atoi(ann["webhook.vkube.io/calls"].get<std::string>().c_str());
    if (!ann.is_object() || !meta.contains("annotations"))
      patch.push_back({{"op", "add"}, {"path", "/metadata/annotations"}, {"value", json::object()}});
    patch.push_back({{"op", "add"},
                     {"path", "/metadata/annotations/" + pointer_token("webhook.vkube.io/calls")},
                     {"value", std::to_string(calls + 1)}});
  } else if (what == "deny-label" && seg.size() >= 2) {
    const json& checked = object.is_object() ? object : req.value("oldObject", json());
    const json labels = checked.is_object()
                            ? checked.value("metadata", json::object()).value("labels", json::object())
                            : json::object();
    if (labels.is_object() && labels.contains(seg[1])) {
      response["allowed"] = false;
      response["status"] = {{"code", 403},
                            {"reason", "Forbidden"},
                            {"message", "the label " + seg[1] + " is not allowed here"}};
    }
  } else if (what == "deny") {
    response["allowed"] = false;
    response["status"] = {{"code", 403},
                          {"reason", "Forbidden"},
                          {"message", seg.size() >= 2 ? seg[1] : std::string("denied")}};
  } else if (what == "slow" && seg.size() >= 2) {
    std::this_thread::sleep_for(std::chrono::milliseconds(std::atoi(seg[1].c_str())));
  } else if (what == "warn") {
    response["warnings"] = json::array({"webhook.vkube.io: this object was looked at"});
  }
  if (!patch.empty()) {
    response["patchType"] = "JSONPatch";
    response["patch"] = base64_encode(patch.dump());
  }
  return {{"apiVersion", review.value("apiVersion", "admission.k8s.io/v1")},
          {"kind", "AdmissionReview"},
          {"response", std::move(response)}};
}

}  // namespace

bool start_webhook_server(const std::string& address, const std::string& cert_dir) {
  auto colon = address.rfind(':');
  http::ServerOptions o;
  o.host = colon == std::string::npos ? "" : address.substr(0, colon);
  if (o.host.empty()) o.host = "0.0.0.0";
  o.port = static_cast<uint16_t>(colon == std::string::npos
                                     ? 0
                                     : std::atoi(address.c_str() + colon + 1));
  http::TlsConfig tls;
  tls.cert_pem = read_file(cert_dir + "/tls.crt");
  tls.key_pem = read_file(cert_dir + "/tls.key");
  if (tls.cert_pem.empty() || tls.key_pem.empty()) {
    std::fprintf(stderr, "workload: --webhook-cert-dir %s: tls.crt and tls.key are needed\n",
                 cert_dir.c_str());
    return false;
  }
  o.tls = std::move(tls);
  o.worker_threads = 8;
  auto server = http::Server::start(std::move(o), [](http::Request& req) {
    http::Response resp;
    resp.headers.push_back({"Content-Type", "application/json"});
    json review = json::parse(req.body, nullptr, false);
    if (req.method != "POST" || !review.is_object()) {
      resp.status = 400;
      resp.body = R"({"error":"POST an AdmissionReview"})";
      return resp;
    }
    const json& r = review.value("request", json::object());
    std::fprintf(stdout, "admission: %s %s %s/%s dryRun=%s path=%s\n",
                 r.value("operation", "").c_str(),
                 r.value("resource", json::object()).value("resource", "").c_str(),
                 r.value("namespace", "").c_str(), r.value("name", "").c_str(),
                 r.value("dryRun", false) ? "true" : "false", req.path.c_str());
    std::fflush(stdout);
    resp.body = review_answer(req.path, review).dump();
    return resp;
  });
  if (!server.is_ok()) {
    std::fprintf(stderr, "workload: cannot serve webhooks on %s: %s\n", address.c_str(),
                 server.status().message().c_str());
    return false;
  }
  std::fprintf(stdout, "--webhook-listen: listening on %s\n", address.c_str());
  std::fflush(stdout);
  // Serves until the process ends.
  static std::unique_ptr<http::Server> keep;
  keep = std::move(server).value();
  return true;
}

}  // namespace vkube::cli
