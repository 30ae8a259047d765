#include "mounts.h"

#include <cstdio>
#include <functional>

namespace vkube::nodesim {

std::optional<MissingVolume> missing_volume(Client& client, const json& pod) {
  const json spec = pod.value("spec", json::object());
  const json volumes = spec.value("volumes", json::array());
  if (!volumes.is_array()) return std::nullopt;
  const std::string ns = text_at(pod, {"metadata", "namespace"});
  for (const json& v : volumes) {
    if (!v.is_object()) continue;
    const bool secret = v.contains("secret") && v["secret"].is_object();
    const bool config = v.contains("configMap") && v["configMap"].is_object();
    if (!secret && !config) continue;
    const json& src = v[secret ? "secret" : "configMap"];
    if (src.value("optional", false) == true) continue;
    const std::string name = text_at(src, {secret ? "secretName" : "name"});
    if (name.empty()) continue;
    const std::string plural = secret ? "secrets" : "configmaps";
    ApiResult r = client.call("GET", "/api/v1/namespaces/" + ns + "/" + plural + "/" + name);
    if (r.code != 404) continue;  // there (or unknown: not held for a read error)
    const std::string vname = text_at(v, {"name"});
    return MissingVolume{vname, "MountVolume.SetUp failed for volume \"" + vname +
                                    "\" : " + (secret ? "secret" : "configmap") + " \"" + name +
                                    "\" not found"};
  }
  return std::nullopt;
}

Status record_failed_mount(Client& client, const json& pod, const MissingVolume& missing,
                           const std::string& node, const std::string& now) {
  const std::string ns = text_at(pod, {"metadata", "namespace"});
  const std::string name = text_at(pod, {"metadata", "name"});
  const std::string uid = text_at(pod, {"metadata", "uid"});
  char suffix[17];
  std::snprintf(suffix, sizeof suffix, "%016zx",
                std::hash<std::string>{}(uid + "/" + missing.volume));
  json event = {
      {"apiVersion", "v1"},
      {"kind", "Event"},
      {"metadata", {{"name", name + "." + suffix}, {"namespace", ns}}},
      {"involvedObject",
       {{"apiVersion", "v1"}, {"kind", "Pod"}, {"name", name}, {"namespace", ns}, {"uid", uid}}},
      {"reason", "FailedMount"},
      {"message", missing.message},
      {"type", "Warning"},
      {"source", {{"component", "kubelet"}, {"host", node}}},
      {"reportingComponent", "kubelet"},
      {"reportingInstance", node},
      {"firstTimestamp", now},
      {"lastTimestamp", now},
      {"count", 1}};
  ApiResult r = client.call("POST", "/api/v1/namespaces/" + ns + "/events", event);
  if (r.ok() || r.code == 409 || r.code == 404) return Status::ok();
  return Status::internal("recording FailedMount for " + ns + "/" + name + ": " + r.body.dump());
}

}  // namespace vkube::nodesim
