// apply_defaults: kube-apiserver 1.32's defaulting (pkg/apis/*/v1 SetDefaults_*),
// plus what registries and admission plugins fill in on create, so that a
// created object reads back as it does from a real cluster.
#include <string>

#include "defaults_kinds.h"
#include "kind_util.h"
#include "kinds.h"
#include "pod_spec.h"
#include "vkube/common/base64.h"

namespace vkube::apiserver::builtin {

namespace {

using namespace util;

constexpr const char* kRbacGroup = "rbac.authorization.k8s.io";

void default_service(json& obj) {
  json* spec = ensure_object(obj, "spec");
  if (spec == nullptr) return;
  set_default(*spec, "sessionAffinity", "None");
  std::string affinity = get_string(*spec, "sessionAffinity");
  if (affinity == "None") {
    spec->erase("sessionAffinityConfig");
  } else if (affinity == "ClientIP") {
    json* config = ensure_object(*spec, "sessionAffinityConfig");
    json* client_ip = config ? ensure_object(*config, "clientIP") : nullptr;
    if (client_ip != nullptr) set_default(*client_ip, "timeoutSeconds", 10800);
  }
  set_default(*spec, "type", "ClusterIP");
  std::string type = get_string(*spec, "type");
  if (json* ports = get_array(*spec, "ports")) {
    for (json& p : *ports) {
      if (!p.is_object()) continue;
      set_default(p, "protocol", "TCP");
      const json* target = get(p, "targetPort");
      bool unset = target == nullptr || (target->is_number() && target->get<double>() == 0) ||
                   (target->is_string() && target->get<std::string>().empty());
      if (unset && get_int(p, "port")) p["targetPort"] = *get_int(p, "port");
    }
  }
  const json* external_ips = get_array(*spec, "externalIPs");
  bool external = type == "NodePort" || type == "LoadBalancer" ||
                  (external_ips != nullptr && !external_ips->empty());
  if (external) set_default(*spec, "externalTrafficPolicy", "Cluster");
  if (type == "NodePort" || type == "LoadBalancer" || type == "ClusterIP") {
    set_default(*spec, "internalTrafficPolicy", "Cluster");
  }
  if (type == "LoadBalancer") set_default(*spec, "allocateLoadBalancerNodePorts", true);
  if (type == "ExternalName") return;
  // What the registry's IP allocation records on a single-stack IPv4 cluster:
  // headless services without a selector may use every family.
  const json* selector = get_object(*spec, "selector");
  bool headless = get_string(*spec, "clusterIP") == "None";
  bool no_selector = selector == nullptr || selector->empty();
  set_default(*spec, "ipFamilyPolicy",
              headless && no_selector ? "RequireDualStack" : "SingleStack");
  std::string ip = get_string(*spec, "clusterIP");
  bool v6 = ip.find(':') != std::string::npos;
  set_default(*spec, "ipFamilies", json::array({v6 ? "IPv6" : "IPv4"}));
}

void default_secret(json& obj) {
  if (!obj.is_object()) return;
  set_default(obj, "type", "Opaque");
  // stringData is write-only: the v1 conversion merges it into data.
  const json* string_data = get_object(obj, "stringData");
  if (string_data == nullptr) return;
  json* data = ensure_object(obj, "data");
  if (data == nullptr) return;
  for (const auto& [k, v] : string_data->items()) {
    if (v.is_string()) (*data)[k] = vkube::base64_encode(v.get<std::string>());
  }
  obj.erase("stringData");
}

void default_namespace(json& obj) {
  json* meta = ensure_object(obj, "metadata");
  std::string name = meta ? get_string(*meta, "name") : "";
  if (!name.empty()) {
    if (json* labels = ensure_object(*meta, "labels")) {
      (*labels)["kubernetes.io/metadata.name"] = name;
    }
  }
  if (json* spec = ensure_object(obj, "spec")) {
    set_default(*spec, "finalizers", json::array({"kubernetes"}));
  }
  if (json* status = ensure_object(obj, "status")) set_default(*status, "phase", "Active");
}

void default_persistent_volume(json& obj) {
  if (json* spec = ensure_object(obj, "spec")) {
    set_default(*spec, "persistentVolumeReclaimPolicy", "Retain");
    set_default(*spec, "volumeMode", "Filesystem");
    default_volume_source(*spec);
  }
  if (json* status = ensure_object(obj, "status")) set_default(*status, "phase", "Pending");
}

void default_persistent_volume_claim(json& obj) {
  if (json* spec = ensure_object(obj, "spec")) default_pvc_spec(*spec);
  if (json* status = ensure_object(obj, "status")) set_default(*status, "phase", "Pending");
}

void default_ports_protocol(json& holder, const char* k) {
  if (json* ports = get_array(holder, k)) {
    for (json& p : *ports) set_default(p, "protocol", "TCP");
  }
}

void default_endpoints(json& obj) {
  if (json* subsets = get_array(obj, "subsets")) {
    for (json& s : *subsets) default_ports_protocol(s, "ports");
  }
}

void default_node(json& obj) {
  json* status = get_object(obj, "status");
  if (status == nullptr) return;
  if (absent(*status, "allocatable") && get_object(*status, "capacity")) {
    (*status)["allocatable"] = (*status)["capacity"];
  }
}

void default_limit_range(json& obj) {
  json* spec = get_object(obj, "spec");
  json* limits = spec ? get_array(*spec, "limits") : nullptr;
  if (limits == nullptr) return;
  for (json& item : *limits) {
    if (get_string(item, "type") != "Container") continue;
    json* def = ensure_object(item, "default");
    json* def_request = ensure_object(item, "defaultRequest");
    if (def == nullptr || def_request == nullptr) continue;
    auto fill = [](json& to, const json* from) {
      if (from == nullptr) return;
      for (const auto& [name, q] : from->items()) {
        if (!to.contains(name)) to[name] = q;
      }
    };
    fill(*def, get_object(item, "max"));
    fill(*def_request, def);
    fill(*def_request, get_object(item, "min"));
  }
}

void default_network_policy(json& obj) {
  json* spec = ensure_object(obj, "spec");
  if (spec == nullptr) return;
  const json* types = get(*spec, "policyTypes");
  if (types == nullptr || (types->is_array() && types->empty())) {
    json list = json::array({"Ingress"});
    const json* egress = get_array(*spec, "egress");
    if (egress != nullptr && !egress->empty()) list.push_back("Egress");
    (*spec)["policyTypes"] = list;
  }
  for (const char* direction : {"ingress", "egress"}) {
    if (json* rules = get_array(*spec, direction)) {
      for (json& rule : *rules) default_ports_protocol(rule, "ports");
    }
  }
}

void default_binding(json& obj) {
  if (json* ref = ensure_object(obj, "roleRef")) {
    const json* group = get(*ref, "apiGroup");
    if (group == nullptr || (group->is_string() && group->get<std::string>().empty())) {
      (*ref)["apiGroup"] = kRbacGroup;
    }
  }
  json* subjects = get_array(obj, "subjects");
  if (subjects == nullptr) return;
  for (json& s : *subjects) {
    if (!s.is_object() || !get_string(s, "apiGroup").empty()) continue;
    std::string kind = get_string(s, "kind");
    if (kind == "ServiceAccount") s["apiGroup"] = "";
    if (kind == "User" || kind == "Group") s["apiGroup"] = kRbacGroup;
  }
}

void default_csi_driver(json& obj) {
  json* spec = ensure_object(obj, "spec");
  if (spec == nullptr) return;
  set_default(*spec, "attachRequired", true);
  set_default(*spec, "podInfoOnMount", false);
  set_default(*spec, "storageCapacity", false);
  set_default(*spec, "fsGroupPolicy", "ReadWriteOnceWithFSType");
  set_default(*spec, "requiresRepublish", false);
  set_default(*spec, "seLinuxMount", false);
  const json* modes = get(*spec, "volumeLifecycleModes");
  if (modes == nullptr || (modes->is_array() && modes->empty())) {
    (*spec)["volumeLifecycleModes"] = json::array({"Persistent"});
  }
}

void default_endpoint_slice(json& obj) {
  if (json* ports = get_array(obj, "ports")) {
    for (json& p : *ports) {
      set_default(p, "name", "");
      set_default(p, "protocol", "TCP");
    }
  }
}

// admissionregistration/v1 SetDefaults_*: rules' scope "*", empty selectors.
void default_match_resources(json& m) {
  set_default(m, "matchPolicy", "Equivalent");
  set_default(m, "namespaceSelector", json::object());
  set_default(m, "objectSelector", json::object());
  for (const char* list : {"resourceRules", "excludeResourceRules"}) {
    if (json* rules = get_array(m, list))
      for (json& r : *rules)
        if (r.is_object()) set_default(r, "scope", "*");
  }
}

void default_admission(const std::string& kind, json& obj) {
  if (kind == "MutatingWebhookConfiguration" || kind == "ValidatingWebhookConfiguration") {
    json* hooks = get_array(obj, "webhooks");
    if (hooks == nullptr) return;
    for (json& h : *hooks) {
      if (!h.is_object()) continue;
      set_default(h, "failurePolicy", "Fail");
      set_default(h, "matchPolicy", "Equivalent");
      set_default(h, "namespaceSelector", json::object());
      set_default(h, "objectSelector", json::object());
      set_default(h, "timeoutSeconds", 10);
      if (kind == "MutatingWebhookConfiguration") set_default(h, "reinvocationPolicy", "Never");
      if (json* cc = get_object(h, "clientConfig"))
        if (json* svc = get_object(*cc, "service")) set_default(*svc, "port", 443);
      if (json* rules = get_array(h, "rules"))
        for (json& r : *rules)
          if (r.is_object()) set_default(r, "scope", "*");
    }
    return;
  }
  json* spec = ensure_object(obj, "spec");
  if (spec == nullptr) return;
  if (kind == "ValidatingAdmissionPolicy") {
    set_default(*spec, "failurePolicy", "Fail");
    if (json* m = get_object(*spec, "matchConstraints")) default_match_resources(*m);
  } else if (kind == "ValidatingAdmissionPolicyBinding") {
    if (json* m = get_object(*spec, "matchResources")) default_match_resources(*m);
  }
}

void default_core(const std::string& kind, json& obj) {
  if (kind == "Pod") default_pod(obj);
  if (kind == "PodTemplate") default_pod_template(obj, "template");
  if (kind == "ReplicationController") default_replication_controller(obj);
  if (kind == "Service") default_service(obj);
  if (kind == "Secret") default_secret(obj);
  if (kind == "Namespace") default_namespace(obj);
  if (kind == "PersistentVolume") default_persistent_volume(obj);
  if (kind == "PersistentVolumeClaim") default_persistent_volume_claim(obj);
  if (kind == "Endpoints") default_endpoints(obj);
  if (kind == "Node") default_node(obj);
  if (kind == "LimitRange") default_limit_range(obj);
}

}  // namespace

void apply_defaults(const api::Resource& r, json& obj) {
  if (r.is_custom || !obj.is_object()) return;
  const std::string& g = r.gv.group;
  const std::string& kind = r.kind;
  if (g.empty()) {
    default_core(kind, obj);
  } else if (g == "apps") {
    if (kind == "Deployment") default_deployment(obj);
    if (kind == "ReplicaSet") default_replica_set(obj);
    if (kind == "StatefulSet") default_stateful_set(obj);
    if (kind == "DaemonSet") default_daemon_set(obj);
  } else if (g == "batch") {
    if (kind == "Job") default_job(obj);
    if (kind == "CronJob") default_cron_job(obj);
  } else if (g == "networking.k8s.io") {
    if (kind == "NetworkPolicy") default_network_policy(obj);
  } else if (g == kRbacGroup) {
    if (kind == "RoleBinding" || kind == "ClusterRoleBinding") default_binding(obj);
  } else if (g == "admissionregistration.k8s.io") {
    default_admission(kind, obj);
  } else if (g == "scheduling.k8s.io") {
    set_default(obj, "preemptionPolicy", "PreemptLowerPriority");
  } else if (g == "storage.k8s.io") {
    if (kind == "StorageClass") {
      set_default(obj, "reclaimPolicy", "Delete");
      set_default(obj, "volumeBindingMode", "Immediate");
    }
    if (kind == "CSIDriver") default_csi_driver(obj);
  } else if (g == "discovery.k8s.io") {
    default_endpoint_slice(obj);
  } else if (g == "autoscaling") {
    json* spec = ensure_object(obj, "spec");
    if (spec != nullptr) set_default(*spec, "minReplicas", 1);
    // v2: no metric means 80 % CPU utilization (v1 says so by leaving its target unset).
    if (spec != nullptr && r.gv.version == "v2" && 
        (absent(*spec, "metrics") || (get_array(*spec, "metrics") && (*spec)["metrics"].empty())))
      (*spec)["metrics"] = json::array({{{"type", "Resource"},
                                         {"resource", {{"name", "cpu"},
                                                       {"target", {{"type", "Utilization"},
                                                                   {"averageUtilization", 80}}}}}}});
  } else if (g == "apiextensions.k8s.io") {
    if (json* spec = ensure_object(obj, "spec")) {
      if (json* conversion = ensure_object(*spec, "conversion")) {
        set_default(*conversion, "strategy", "None");
      }
    }
  } else if (g == "apiregistration.k8s.io") {
    // An APIService's Service port is 443 unless given (v1 defaulting).
    if (json* spec = get_object(obj, "spec"))
      if (json* service = get_object(*spec, "service")) set_default(*service, "port", 443);
  }
}

}  // namespace vkube::apiserver::builtin
