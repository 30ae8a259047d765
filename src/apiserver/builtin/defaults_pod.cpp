// Pod defaulting: pkg/apis/core/v1 SetDefaults_PodSpec, _Pod, _Container,
// _Probe, _Volume and the volume sources, plus the admission plugins that
// every real cluster runs on pod create.
#include <string>

#include "kind_util.h"
#include "pod_spec.h"
#include "vkube/api/quantity.h"

namespace vkube::apiserver::builtin {

namespace {

using namespace util;

// The pull policy kube picks from the image reference: Always for ":latest"
// or no tag at all, IfNotPresent for any other tag or a digest.
std::string pull_policy_for(const std::string& image) {
  if (image.empty()) return "IfNotPresent";
  std::string name = image;
  bool digest = false;
  if (size_t at = name.find('@'); at != std::string::npos) {
    name.resize(at);
    digest = true;
  }
  size_t slash = name.rfind('/');
  size_t colon = name.rfind(':');
  bool tagged = colon != std::string::npos && (slash == std::string::npos || colon > slash);
  if (!tagged) return digest ? "IfNotPresent" : "Always";
  return name.substr(colon + 1) == "latest" ? "Always" : "IfNotPresent";
}

void default_http_get(json& handler) {
  if (json* http = get_object(handler, "httpGet")) {
    set_default(*http, "path", "/");
    set_default(*http, "scheme", "HTTP");
  }
}

void default_probe(json& container, const char* name) {
  json* probe = get_object(container, name);
  if (probe == nullptr) return;
  set_default_nonzero(*probe, "timeoutSeconds", 1);
  set_default_nonzero(*probe, "periodSeconds", 10);
  set_default_nonzero(*probe, "successThreshold", 1);
  set_default_nonzero(*probe, "failureThreshold", 3);
  default_http_get(*probe);
}

void default_field_ref(json& holder) {
  if (json* ref = get_object(holder, "fieldRef")) set_default(*ref, "apiVersion", "v1");
}

void default_container(json& c) {
  if (!c.is_object()) return;
  if (absent(c, "imagePullPolicy")) {
    c["imagePullPolicy"] = pull_policy_for(get_string(c, "image"));
  }
  set_default(c, "terminationMessagePath", "/dev/termination-log");
  set_default(c, "terminationMessagePolicy", "File");
  set_default(c, "resources", json::object());
  if (json* ports = get_array(c, "ports")) {
    for (json& p : *ports) set_default(p, "protocol", "TCP");
  }
  if (json* env = get_array(c, "env")) {
    for (json& e : *env) {
      if (json* from = get_object(e, "valueFrom")) default_field_ref(*from);
    }
  }
  default_probe(c, "livenessProbe");
  default_probe(c, "readinessProbe");
  default_probe(c, "startupProbe");
  if (json* lifecycle = get_object(c, "lifecycle")) {
    if (json* h = get_object(*lifecycle, "postStart")) default_http_get(*h);
    if (json* h = get_object(*lifecycle, "preStop")) default_http_get(*h);
  }
}

void default_containers(json& spec, const char* k) {
  if (json* list = get_array(spec, k)) {
    for (json& c : *list) default_container(c);
  }
}

void default_downward_items(json& source) {
  if (json* items = get_array(source, "items")) {
    for (json& item : *items) default_field_ref(item);
  }
}

void default_volume(json& v) {
  if (!v.is_object()) return;
  bool has_source = false;
  for (const auto& [k, val] : v.items()) {
    if (k != "name" && !val.is_null()) has_source = true;
  }
  if (!has_source) v["emptyDir"] = json::object();
  default_volume_source(v);
  for (const char* k : {"configMap", "secret", "downwardAPI", "projected"}) {
    if (json* s = get_object(v, k)) set_default(*s, "defaultMode", 420);
  }
  if (json* s = get_object(v, "downwardAPI")) default_downward_items(*s);
  if (json* projected = get_object(v, "projected")) {
    if (json* sources = get_array(*projected, "sources")) {
      for (json& s : *sources) {
        if (json* d = get_object(s, "downwardAPI")) default_downward_items(*d);
        if (json* t = get_object(s, "serviceAccountToken")) {
          set_default(*t, "expirationSeconds", 3600);
        }
      }
    }
  }
  if (json* eph = get_object(v, "ephemeral")) {
    if (json* tmpl = get_object(*eph, "volumeClaimTemplate")) {
      if (json* spec = get_object(*tmpl, "spec")) default_pvc_spec(*spec);
    }
  }
}

// DefaultTolerationSeconds: pods tolerate not-ready and unreachable nodes for
// 300s unless they already say how long.
void default_tolerations(json& spec) {
  if (!absent(spec, "tolerations") && !spec["tolerations"].is_array()) return;
  bool not_ready = false;
  bool unreachable = false;
  if (const json* list = get_array(spec, "tolerations")) {
    for (const json& t : *list) {
      std::string k = get_string(t, "key");
      std::string effect = get_string(t, "effect");
      bool no_execute = effect.empty() || effect == "NoExecute";
      if (no_execute && (k.empty() || k == "node.kubernetes.io/not-ready")) not_ready = true;
      if (no_execute && (k.empty() || k == "node.kubernetes.io/unreachable")) unreachable = true;
    }
  }
  auto add = [&spec](const char* taint) {
    if (absent(spec, "tolerations")) spec["tolerations"] = json::array();
    spec["tolerations"].push_back({{"key", taint},
                                   {"operator", "Exists"},
                                   {"effect", "NoExecute"},
                                   {"tolerationSeconds", 300}});
  };
  if (!not_ready) add("node.kubernetes.io/not-ready");
  if (!unreachable) add("node.kubernetes.io/unreachable");
}

// A quantity sent as a JSON number is stored as kube serializes it: a
// string ("2", "500m").
void quantities_as_strings(json* list) {
  if (list == nullptr || !list->is_object()) return;
  for (auto it = list->begin(); it != list->end(); ++it) {
    if (!it->is_number()) continue;
    if (it->is_number_integer()) {
      *it = it->dump();
    } else if (auto milli = api::quantity_milli(*it)) {
      *it = *milli % 1000 == 0 ? std::to_string(*milli / 1000) : std::to_string(*milli) + "m";
    }
  }
}

// Requests default to limits for resources that only have a limit.
void default_requests(json& spec, const char* k) {
  json* list = get_array(spec, k);
  if (list == nullptr) return;
  for (json& c : *list) {
    json* res = get_object(c, "resources");
    if (res == nullptr) continue;
    quantities_as_strings(get_object(*res, "limits"));
    quantities_as_strings(get_object(*res, "requests"));
    const json* limits = get_object(*res, "limits");
    if (limits == nullptr) continue;
    json* requests = ensure_object(*res, "requests");
    if (requests == nullptr) continue;
    for (const auto& [name, q] : limits->items()) {
      if (!requests->contains(name)) (*requests)[name] = q;
    }
  }
}

void default_host_ports(json& spec, const char* k) {
  json* list = get_array(spec, k);
  if (list == nullptr) return;
  for (json& c : *list) {
    json* ports = get_array(c, "ports");
    if (ports == nullptr) continue;
    for (json& p : *ports) {
      std::optional<int64_t> container_port = get_int(p, "containerPort");
      if (container_port && p.is_object()) set_default_nonzero(p, "hostPort", *container_port);
    }
  }
}

}  // namespace

void default_volume_source(json& v) {
  if (json* s = get_object(v, "hostPath")) set_default(*s, "type", "");
  if (json* s = get_object(v, "iscsi")) set_default(*s, "iscsiInterface", "default");
  if (json* s = get_object(v, "rbd")) {
    set_default(*s, "pool", "rbd");
    set_default(*s, "user", "admin");
    set_default(*s, "keyring", "/etc/ceph/keyring");
  }
  if (json* s = get_object(v, "azureDisk")) {
    set_default(*s, "cachingMode", "ReadWrite");
    set_default(*s, "fsType", "ext4");
    set_default(*s, "readOnly", false);
    set_default(*s, "kind", "Shared");
  }
}

void default_pvc_spec(json& spec) {
  set_default(spec, "volumeMode", "Filesystem");
}

void default_pod_spec(json& spec) {
  if (!spec.is_object()) return;
  set_default(spec, "dnsPolicy", "ClusterFirst");
  set_default(spec, "restartPolicy", "Always");
  set_default(spec, "securityContext", json::object());
  set_default(spec, "terminationGracePeriodSeconds", 30);
  set_default(spec, "schedulerName", "default-scheduler");
  default_containers(spec, "initContainers");
  default_containers(spec, "containers");
  default_containers(spec, "ephemeralContainers");
  if (json* volumes = get_array(spec, "volumes")) {
    for (json& v : *volumes) default_volume(v);
  }
}

void default_pod_template(json& obj, const char* k, bool create) {
  json* tmpl = create ? ensure_object(obj, k) : get_object(obj, k);
  if (tmpl == nullptr) return;
  if (json* spec = ensure_object(*tmpl, "spec")) default_pod_spec(*spec);
}

void default_pod(json& pod) {
  json* spec = ensure_object(pod, "spec");
  if (spec == nullptr) return;
  default_pod_spec(*spec);
  default_requests(*spec, "containers");
  default_requests(*spec, "initContainers");
  set_default(*spec, "enableServiceLinks", true);
  if (get_bool(*spec, "hostNetwork")) {
    default_host_ports(*spec, "containers");
    default_host_ports(*spec, "initContainers");
  }

  // ServiceAccount admission; `serviceAccount` is the deprecated alias that
  // the v1 conversion keeps equal to serviceAccountName.
  const json* name = get(*spec, "serviceAccountName");
  if (name == nullptr || (name->is_string() && name->get<std::string>().empty())) {
    std::string alias = get_string(*spec, "serviceAccount");
    (*spec)["serviceAccountName"] = alias.empty() ? "default" : alias;
  }
  const json* alias = get(*spec, "serviceAccount");
  if ((*spec)["serviceAccountName"].is_string() && (alias == nullptr || alias->is_string())) {
    (*spec)["serviceAccount"] = (*spec)["serviceAccountName"];
  }

  // Priority admission for pods without a class or with a built-in one;
  // classes defined by users are resolved where PriorityClasses are read.
  std::string pc = get_string(*spec, "priorityClassName");
  int64_t priority = -1;
  if (pc.empty()) priority = 0;
  if (pc == "system-cluster-critical") priority = 2000000000;
  if (pc == "system-node-critical") priority = 2000001000;
  if (priority >= 0) {
    set_default(*spec, "priority", priority);
    set_default(*spec, "preemptionPolicy", "PreemptLowerPriority");
  }
  default_tolerations(*spec);
}

}  // namespace vkube::apiserver::builtin
