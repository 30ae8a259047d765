#include "vkube/cli/manifests.h"

#include "../apiserver/apply/yaml_json.h"

extern "C" const char vkube_tenant_manifest[];
extern "C" const char vkube_tenant_manifest_end[];

namespace vkube::cli {

namespace {

bool is_alnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

// Every string carrying the rendered release carries the tenant's name: the
// word "example" wherever it stands alone or between separators
// ("vkube-example", "vkube-gpu-quota-example", "--name=example"). The
// namespace is vkube-<name>, so it follows.
void retarget(json& v, const TenantSpec& spec) {
  if (v.is_object() || v.is_array()) {
    for (auto& child : v) retarget(child, spec);
    return;
  }
  if (!v.is_string()) return;
  std::string s = v.get<std::string>();
  const std::string_view word = kManifestRelease;
  bool changed = false;
  for (size_t at = s.find(word); at != std::string::npos; at = s.find(word, at)) {
    size_t end = at + word.size();
    if ((at > 0 && is_alnum(s[at - 1])) || (end < s.size() && is_alnum(s[end]))) {
      at = end;
      continue;
    }
    s.replace(at, word.size(), spec.name);
    at += spec.name.size();
    changed = true;
  }
  if (changed) v = s;
}

bool is_label_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
}

}  // namespace

std::string_view tenant_manifest() {
  return std::string_view(vkube_tenant_manifest,
                          static_cast<size_t>(vkube_tenant_manifest_end - vkube_tenant_manifest));
}

Status validate_tenant_name(const std::string& name) {
  if (name.empty()) return Status::invalid("a tenant name is required");
  const size_t max = 63 - tenant_host_namespace("").size();
  if (name.size() > max)
    return Status::invalid("tenant name \"" + name + "\" is longer than " + std::to_string(max) +
                           " characters (its host namespace is vkube-<name>)");
  bool ok = name.front() != '-' && name.back() != '-';
  for (char c : name) ok = ok && is_label_char(c);
  if (!ok)
    return Status::invalid("tenant name \"" + name +
                           "\" must consist of lower case alphanumeric characters or '-', and "
                           "must start and end with an alphanumeric character");
  return Status::ok();
}

void set_flag(json& args, std::string_view flag, const std::string& value) {
  if (!args.is_array()) args = json::array();
  const std::string prefix = "--" + std::string(flag) + "=";
  json out = json::array();
  bool done = false;
  for (const json& a : args) {
    if (a.is_string() && a.get<std::string>().rfind(prefix, 0) == 0) {
      if (!done && !value.empty()) out.push_back(prefix + value);
      done = true;
      continue;
    }
    out.push_back(a);
  }
  if (!done && !value.empty()) out.push_back(prefix + value);
  args = std::move(out);
}

Result<std::vector<json>> tenant_objects(std::string_view yaml, const TenantSpec& spec) {
  std::vector<json> out;
  size_t i = 0;
  while (i <= yaml.size()) {
    // A document ends at a line that is exactly "---".
    size_t end = i;
    for (;;) {
      size_t nl = yaml.find('\n', end);
      size_t line_end = nl == std::string_view::npos ? yaml.size() : nl;
      std::string_view line = yaml.substr(end, line_end - end);
      if (line == "---" || nl == std::string_view::npos) {
        if (line != "---") end = yaml.size();
        break;
      }
      end = nl + 1;
    }
    std::string_view doc = yaml.substr(i, end - i);
    if (doc.find_first_not_of(" \t\r\n") != std::string_view::npos) {
      auto parsed = apiserver::apply::yaml_to_json(doc);
      if (!parsed.is_ok()) return Status::invalid("manifest: " + parsed.status().message());
      if (parsed->is_object()) out.push_back(std::move(parsed).value());
    }
    size_t next = yaml.find('\n', end);
    if (next == std::string_view::npos) break;
    i = next + 1;
  }
  for (json& obj : out) {
    retarget(obj, spec);
    if (obj.value("kind", "") != "StatefulSet") continue;
    json& containers = obj["spec"]["template"]["spec"]["containers"];
    if (!containers.is_array()) continue;
    for (json& c : containers) {
      if (c.value("name", "") != "vkube") continue;
      if (!spec.image.empty()) c["image"] = spec.image;
      json& args = c["args"];
      set_flag(args, "pod-security", spec.pod_security);
      set_flag(args, "host-gpu-sharing", spec.gpu_sharing);
      set_flag(args, "gpu-quota", spec.gpu_quota);
      set_flag(args, "gpu-share", spec.gpu_share);
      set_flag(args, "allowed-tolerations", spec.allowed_tolerations);
      set_flag(args, "allowed-node-selector-keys", spec.allowed_node_selector_keys);
      set_flag(args, "allowed-runtime-classes", spec.allowed_runtime_classes);
      set_flag(args, "allowed-service-types", spec.allowed_service_types);
      set_flag(args, "host-node-selector", spec.host_node_selector);
      set_flag(args, "service-cluster-ip-range", spec.service_cidr);
      set_flag(args, "host-scheduler-name", spec.host_scheduler_name);
      set_flag(args, "host-pod-labels", spec.host_pod_labels);
    }
  }
  return out;
}

json tenant_namespace(const TenantSpec& spec) {
  json ns = {{"apiVersion", "v1"},
             {"kind", "Namespace"},
             {"metadata",
              {{"name", spec.ns},
               {"labels",
                {{"vkube.io/tenant", spec.name},
                 {"app.kubernetes.io/managed-by", "vkube"},
                 {"pod-security.kubernetes.io/enforce", spec.pod_security}}}}}};
  if (spec.unsandboxed_local_pods)
    ns["metadata"]["labels"]["vkube.io/unsandboxed-local-pods"] = "true";
  // Where the host's scheduler reads the share; the operator edits it there.
  if (!spec.gpu_share.empty()) ns["metadata"]["annotations"]["vkube.io/gpu-share"] = spec.gpu_share;
  return ns;
}

}  // namespace vkube::cli
