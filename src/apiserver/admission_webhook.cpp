// Calling an admission webhook: where it is (a URL, or a Service of this cluster reached at its
// endpoints: in a tenant those are the addresses of the synced host pods behind the Service's
// host copy), the AdmissionReview exchange over HTTPS with the configuration's caBundle, and
// kube's wording of what went wrong.
#include <chrono>

#include "admission_internal.h"
#include "object.h"
#include "server_impl.h"
#include "vkube/common/base64.h"
#include "webhook_dial.h"

namespace vkube::apiserver::admission {

namespace {

// Where the webhook is called (webhook_dial.h: a URL, or the Service's endpoints).
Result<Destination> resolve(Context& c, const Webhook& w, ClientConfig* cfg) {
  cfg->url = w.url;
  cfg->service_namespace = w.service_namespace;
  cfg->service_name = w.service_name;
  cfg->service_path = w.service_path;
  cfg->service_port = w.service_port;
  cfg->ca_pem = w.ca_pem;
  return resolve_destination(c.server, *cfg, "",
                             "timeout=" + std::to_string(w.timeout_seconds) + "s");
}

// The first of the webhook's admissionReviewVersions vkube speaks, as kube chooses.
std::string review_version(const Webhook& w) {
  for (const std::string& v : w.review_versions)
    if (v == "v1" || v == "v1beta1") return v;
  return "";
}

}  // namespace

json admission_review(Context& c, const Webhook& w, const AdmissionRequest& r,
                      const std::string& uid) {
  const api::Resource& res = c.resource();
  json kind = request_kind(c, r);
  json resource = {
      {"group", res.gv.group}, {"version", resource_version(c, r)}, {"resource", res.plural}};
  // What the client asked for, where a matchPolicy Equivalent rule matched another version.
  const std::string asked = c.info.version.empty() ? res.gv.version : c.info.version;
  json request_kind_value = kind;
  if (r.kind_group_version.empty()) request_kind_value["version"] = asked;
  json request_resource = resource;
  request_resource["version"] = asked;
  json user = {{"username", c.user.name}, {"groups", c.user.groups}};
  if (!c.user.uid.empty()) user["uid"] = c.user.uid;
  json req = {{"uid", uid},
              {"kind", kind},
              {"resource", resource},
              {"requestKind", std::move(request_kind_value)},
              {"requestResource", std::move(request_resource)},
              {"name", r.name},
              {"operation", r.operation},
              {"userInfo", std::move(user)},
              {"object", r.object},
              {"oldObject", r.old_object},
              {"dryRun", c.dry_run()},
              {"options", r.options}};
  if (!r.ns.empty()) req["namespace"] = r.ns;
  if (!r.subresource.empty()) {
    req["subResource"] = r.subresource;
    req["requestSubResource"] = r.subresource;
  }
  std::string v = review_version(w);
  return {{"apiVersion", "admission.k8s.io/" + (v.empty() ? std::string("v1") : v)},
          {"kind", "AdmissionReview"},
          {"request", std::move(req)}};
}

namespace {

WebhookAnswer exchange(Context& c, const Webhook& w, const json& review, int* code) {
  WebhookAnswer a;
  if (review_version(w).empty()) {
    a.error = "webhook does not accept v1 or v1beta1 AdmissionReview";
    return a;
  }
  ClientConfig cfg;
  auto dest = resolve(c, w, &cfg);
  if (!dest.is_ok()) {
    a.error = "failed to call webhook: Post \"https://" + w.service_name + "." +
              w.service_namespace + ".svc:" + std::to_string(w.service_port) +
              (w.service_path.empty() ? "/" : w.service_path) + "?timeout=" +
              std::to_string(w.timeout_seconds) + "s\": " + dest.status().message();
    return a;
  }
  auto client = dial_client(*dest, cfg, w.timeout_seconds, "kube-apiserver-admission");
  if (!client.is_ok()) {
    a.error = "failed to call webhook: " + client.status().message();
    return a;
  }
  hostclient::Response resp = (*client)->call("POST", dest->target, review);
  *code = resp.code;
  if (resp.code == 0) {
    a.error = "failed to call webhook: Post \"" + dest->url + "\": " + transport_error(resp);
    return a;
  }
  if (resp.code != 200) {
    a.error = "failed to call webhook: the server responded with status code " +
              std::to_string(resp.code) + ": " + resp.message();
    return a;
  }
  const json& body = resp.body;
  const std::string want_api = text(review, "apiVersion");
  // kube checks the answer's kind and response.uid only for v1: v1beta1 webhooks predate both.
  const bool strict = want_api == "admission.k8s.io/v1";
  if (strict && (text(body, "apiVersion") != want_api || text(body, "kind") != "AdmissionReview")) {
    a.error = "received invalid webhook response: expected webhook response of " + want_api +
              ", Kind=AdmissionReview, got " + text(body, "apiVersion") +
              ", Kind=" + text(body, "kind");
    return a;
  }
  const json& response = at(body, "response");
  const std::string want_uid = text(at(review, "request"), "uid");
  if (!response.is_object()) {
    a.error = "received invalid webhook response: webhook response was absent";
    return a;
  }
  if (strict && text(response, "uid") != want_uid) {
    a.error = "received invalid webhook response: expected response.uid=\"" + want_uid +
              "\", got \"" + text(response, "uid") + "\"";
    return a;
  }
  a.called = true;
  a.allowed = at(response, "allowed").is_boolean() && at(response, "allowed").get<bool>();
  a.status = at(response, "status");
  for (const json& warning : list_at(response, "warnings"))
    if (warning.is_string()) a.warnings.push_back(warning.get<std::string>());
  const std::string patch = text(response, "patch");
  if (w.mutating && !patch.empty() && a.allowed) {
    if (text(response, "patchType") != "JSONPatch") {
      a.called = false;
      a.error = "received invalid webhook response: patchType \"" + text(response, "patchType") +
                "\" is not supported (JSONPatch)";
      return a;
    }
    auto decoded = base64_decode(patch);
    json parsed = decoded ? json::parse(*decoded, nullptr, false) : json();
    if (!parsed.is_array()) {
      a.called = false;
      a.error = "received invalid webhook response: the patch is not a base64-encoded JSON patch";
      return a;
    }
    a.patch = std::move(parsed);
  }
  return a;
}

}  // namespace

WebhookAnswer call_webhook(Context& c, const Webhook& w, const json& review) {
  const auto start = std::chrono::steady_clock::now();
  int code = 0;
  WebhookAnswer a = exchange(c, w, review, &code);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  c.server.admission().record_webhook(w.name, w.mutating,
                                      text(at(review, "request"), "operation"), code,
                                      a.called && !a.allowed, seconds);
  return a;
}

}  // namespace vkube::apiserver::admission
