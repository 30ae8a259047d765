#include "custom_conversion.h"

#include "definition.h"
#include "object.h"
#include "server_impl.h"
#include "tables_util.h"
#include "webhook_dial.h"

namespace vkube::apiserver {

namespace {

// The converter's own limit: kube's webhook REST client waits 30 s.
constexpr int kTimeoutSeconds = 30;

// Tolerant readers (tables_util.h): answers and stored objects may have any shape.
const json& member(const json& obj, std::string_view key) {
  static const json kNull;
  const json* v = builtin::tables::find(obj, {key});
  return v != nullptr ? *v : kNull;
}
std::string text(const json& obj, std::string_view key) {
  return builtin::tables::str(obj, {key});
}

// The first ConversionReview version the webhook accepts that vkube speaks, as kube picks.
std::string review_version(const json& webhook) {
  const json& versions = member(webhook, "conversionReviewVersions");
  if (versions.is_array())
    for (const json& v : versions)
      if (v == "v1" || v == "v1beta1") return v.get<std::string>();
  return "";
}

// Checks one converted object against what was sent and puts back the metadata a webhook may
// not change (kube's validateConvertedObject and restoreObjectMeta); "" when it is fine.
std::string accept_converted(const json& original, json& converted,
                             const std::string& api_version) {
  if (!converted.is_object()) return "invalid type, expected=Unstructured";
  if (text(converted, "apiVersion") != api_version)
    return "invalid groupVersion (expected " + api_version + ", received " +
           text(converted, "apiVersion") + ")";
  if (text(converted, "kind") != text(original, "kind"))
    return "invalid kind (expected " + text(original, "kind") + ", received " +
           text(converted, "kind") + ")";
  const json& was = member(original, "metadata");
  const json& now = member(converted, "metadata");
  for (const char* key : {"name", "namespace", "uid"})
    if (text(was, key) != text(now, key))
      return std::string("must have the same ") + key + ": " + text(was, key) +
             " != " + text(now, key);
  json meta = was.is_object() ? was : json::object();
  for (const char* key : {"labels", "annotations"}) {
    const json& v = member(now, key);
    if (v.is_null()) {
      meta.erase(key);
      continue;
    }
    if (!v.is_object()) return std::string("invalid metadata.") + key;
    for (const auto& [k, value] : v.items())
      if (!value.is_string()) return std::string("invalid metadata.") + key + "[" + k + "]";
    meta[key] = v;
  }
  converted["metadata"] = std::move(meta);
  return "";
}

// Sends `objs` to the webhook; their converted forms, or why not (without kube's prefix).
Result<std::vector<json>> call_webhook(Server& s, const json& webhook,
                                       const std::vector<json*>& objs,
                                       const std::string& api_version) {
  const std::string version = review_version(webhook);
  if (version.empty()) return Status::internal("no supported conversion review versions");
  const std::string uid = new_uid();
  json sent = json::array();
  for (const json* o : objs) sent.push_back(*o);
  const std::string review_api = "apiextensions.k8s.io/" + version;
  json review = {
      {"apiVersion", review_api},
      {"kind", "ConversionReview"},
      {"request",
       {{"uid", uid}, {"desiredAPIVersion", api_version}, {"objects", std::move(sent)}}}};
  ClientConfig cfg = parse_client_config(member(webhook, "clientConfig"));
  const std::string query = "timeout=" + std::to_string(kTimeoutSeconds) + "s";
  auto dest = resolve_destination(s, cfg, "", query);
  if (!dest.is_ok()) {
    const std::string url =
        cfg.url.empty() ? "https://" + cfg.service_name + "." + cfg.service_namespace +
                              ".svc:" + std::to_string(cfg.service_port) +
                              (cfg.service_path.empty() ? "/" : cfg.service_path) + "?" + query
                        : cfg.url;
    return Status::internal("Post \"" + url + "\": " + dest.status().message());
  }
  auto client = dial_client(*dest, cfg, kTimeoutSeconds, "kube-apiserver-conversion");
  if (!client.is_ok()) return Status::internal(client.status().message());
  hostclient::Response resp = (*client)->call("POST", dest->target, review);
  if (resp.code == 0)
    return Status::internal("Post \"" + dest->url + "\": " + transport_error(resp));
  if (resp.code < 200 || resp.code >= 300)
    return Status::internal("the server responded with status code " + std::to_string(resp.code) +
                            ": " + resp.message());
  const json& body = resp.body;
  // As kube: v1 answers must say what they are and whose request they answer.
  if (version == "v1" &&
      (text(body, "apiVersion") != review_api || text(body, "kind") != "ConversionReview"))
    return Status::internal(
        "expected webhook response of apiextensions.k8s.io/v1, "
        "Kind=ConversionReview, got " +
        text(body, "apiVersion") + ", Kind=" + text(body, "kind"));
  const json& response = member(body, "response");
  if (!response.is_object()) return Status::internal("no response provided");
  if (version == "v1" && text(response, "uid") != uid)
    return Status::internal("expected response.uid=\"" + uid + "\", got \"" +
                            text(response, "uid") + "\"");
  const json& result = member(response, "result");
  if (text(result, "status") != "Success") {
    if (!text(result, "message").empty()) return Status::internal(text(result, "message"));
    return Status::internal("response.result.status was '" + text(result, "status") +
                            "', not 'Success'");
  }
  const json& converted = member(response, "convertedObjects");
  std::vector<json> out;
  if (converted.is_array()) out.assign(converted.begin(), converted.end());
  return out;
}

}  // namespace

bool converts_by_webhook(const Kind& k) {
  return k.custom != nullptr && k.custom->conversion_webhook.is_object();
}

Status convert_custom(Server& s, const Kind& k, const std::vector<json*>& objs,
                      const std::string& api_version) {
  if (!k.custom) return Status::ok();
  if (!converts_by_webhook(k)) {
    for (json* o : objs) (*o)["apiVersion"] = api_version;
    return Status::ok();
  }
  std::vector<json*> pending;
  for (json* o : objs)
    if (o->is_object() && text(*o, "apiVersion") != api_version) pending.push_back(o);
  if (pending.empty()) return Status::ok();
  const std::string what =
      "conversion webhook for " + text(*pending[0], "apiVersion") + ", Kind=" + k.resource.kind;
  auto answered = call_webhook(s, k.custom->conversion_webhook, pending, api_version);
  if (!answered.is_ok()) return Status::internal(what + " failed: " + answered.status().message());
  std::vector<json>& converted = *answered;
  if (converted.size() != pending.size())
    return Status::internal(what + " returned " + std::to_string(converted.size()) +
                            " objects, expected " + std::to_string(pending.size()));
  for (size_t i = 0; i < pending.size(); ++i) {
    std::string why = accept_converted(*pending[i], converted[i], api_version);
    if (!why.empty())
      return Status::internal(what + " returned invalid " +
                              (pending.size() == 1
                                   ? std::string("object")
                                   : "converted object at index " + std::to_string(i)) +
                              ": " + why);
  }
  for (size_t i = 0; i < pending.size(); ++i) *pending[i] = std::move(converted[i]);
  return Status::ok();
}

Status convert_custom(Server& s, const Kind& k, json& obj, const std::string& api_version) {
  return convert_custom(s, k, std::vector<json*>{&obj}, api_version);
}

ApiError conversion_error(const Status& s) {
  ApiError e(s);
  if (s.code() != Code::kInternal) return e;
  e.raw = {{"kind", "Status"},    {"apiVersion", "v1"},     {"metadata", json::object()},
           {"status", "Failure"}, {"message", s.message()}, {"code", 500}};
  return e;
}

}  // namespace vkube::apiserver
