// Validation of RBAC, networking, policy and scheduling kinds
// (pkg/apis/{rbac,networking,policy,scheduling}/validation).
#include <string>

#include "kind_util.h"
#include "validation_kinds.h"
#include "vkube/api/validation.h"

namespace vkube::apiserver::builtin {

namespace {

using namespace util;

constexpr const char* kRbacGroup = "rbac.authorization.k8s.io";

size_t length(const json& obj, const char* k) {
  const json* v = get_array(obj, k);
  return v ? v->size() : 0;
}

void validate_policy_rule(const json& rule, bool namespaced, const std::string& path,
                          FieldErrors& errs) {
  if (length(rule, "verbs") == 0) {
    required(errs, child(path, "verbs"), "verbs must contain at least one value");
  }
  if (length(rule, "nonResourceURLs") > 0) {
    const json& urls = rule["nonResourceURLs"];
    if (namespaced) {
      invalid(errs, child(path, "nonResourceURLs"), urls,
              "namespaced rules cannot apply to non-resource URLs");
    }
    if (length(rule, "apiGroups") + length(rule, "resources") + length(rule, "resourceNames") > 0) {
      invalid(errs, child(path, "nonResourceURLs"), urls,
              "rules cannot apply to both regular resources and non-resource URLs");
    }
    return;
  }
  if (length(rule, "apiGroups") == 0) {
    required(errs, child(path, "apiGroups"), "resource rules must supply at least one api group");
  }
  if (length(rule, "resources") == 0) {
    required(errs, child(path, "resources"), "resource rules must supply at least one resource");
  }
}

void validate_subject(const json& s, bool namespaced, const std::string& path, FieldErrors& errs) {
  std::string name = get_string(s, "name");
  std::string group = get_string(s, "apiGroup");
  std::string kind = get_string(s, "kind");
  if (name.empty()) required(errs, child(path, "name"));
  if (kind == "ServiceAccount") {
    if (!name.empty())
      add_messages(errs, child(path, "name"), name, api::validate_dns1123_subdomain(name));
    if (!group.empty()) not_supported(errs, child(path, "apiGroup"), group, {""});
    if (!namespaced && get_string(s, "namespace").empty()) required(errs, child(path, "namespace"));
  } else if (kind == "User" || kind == "Group") {
    if (group != kRbacGroup) not_supported(errs, child(path, "apiGroup"), group, {kRbacGroup});
  } else {
    not_supported(errs, child(path, "kind"), kind, {"ServiceAccount", "User", "Group"});
  }
}

void validate_binding(const json& obj, const json* old, bool namespaced, FieldErrors& errs) {
  const json* ref = get_object(obj, "roleRef");
  const json& role_ref = ref ? *ref : json::object();
  std::string group = get_string(role_ref, "apiGroup");
  if (group != kRbacGroup) not_supported(errs, "roleRef.apiGroup", group, {kRbacGroup});
  std::string kind = get_string(role_ref, "kind");
  if (namespaced && kind != "Role" && kind != "ClusterRole") {
    not_supported(errs, "roleRef.kind", kind, {"Role", "ClusterRole"});
  } else if (!namespaced && kind != "ClusterRole") {
    not_supported(errs, "roleRef.kind", kind, {"ClusterRole"});
  }
  std::string name = get_string(role_ref, "name");
  if (name.empty()) {
    required(errs, "roleRef.name");
  } else {
    add_messages(errs, "roleRef.name", name, api::validate_path_segment_name(name));
  }
  if (check_array(errs, obj, "subjects", "")) {
    if (const json* subjects = get_array(obj, "subjects")) {
      for (size_t i = 0; i < subjects->size(); ++i) {
        validate_subject((*subjects)[i], namespaced, index("subjects", i), errs);
      }
    }
  }
  if (old != nullptr) {
    const json* old_ref = get(*old, "roleRef");
    if (old_ref != nullptr && ref != nullptr && *old_ref != *ref) {
      invalid(errs, "roleRef", *ref, "cannot change roleRef");
    }
  }
}

void validate_backend(const json& backend, const std::string& path, FieldErrors& errs) {
  const json* resource = get(backend, "resource");
  const json* service = get_object(backend, "service");
  if (resource != nullptr && service != nullptr) {
    return invalid(errs, path, "", "cannot set both resource and service backends");
  }
  if (resource != nullptr) {
    if (get_string(*resource, "kind").empty()) required(errs, child(path, "resource.kind"));
    if (get_string(*resource, "name").empty()) required(errs, child(path, "resource.name"));
    return;
  }
  if (service == nullptr) return invalid(errs, path, "", "resource or service backend is required");
  std::string name = get_string(*service, "name");
  if (name.empty()) {
    required(errs, child(path, "service.name"));
  } else {
    add_messages(errs, child(path, "service.name"), name, api::validate_dns1035_label(name));
  }
  const json* port = get_object(*service, "port");
  std::string port_name = port ? get_string(*port, "name") : "";
  int64_t number = port ? get_int(*port, "number").value_or(0) : 0;
  if (!port_name.empty() && number != 0) {
    invalid(errs, path, "", "cannot set both port name & port number");
  } else if (!port_name.empty()) {
    add_messages(errs, child(path, "service.port.name"), port_name, port_name_errors(port_name));
  } else if (number != 0) {
    if (!valid_port_num(number)) {
      invalid(errs, child(path, "service.port.number"), number,
              "must be between 1 and 65535, inclusive");
    }
  } else {
    required(errs, path, "port name or number is required");
  }
}

void validate_ingress_path(const json& p, const std::string& path, FieldErrors& errs) {
  std::string type = get_string(p, "pathType");
  std::string value = get_string(p, "path");
  if (type.empty()) return required(errs, child(path, "pathType"), "pathType must be specified");
  std::string pp = child(path, "path");
  if (type == "Exact" || type == "Prefix") {
    if (value.rfind('/', 0) != 0) invalid(errs, pp, value, "must be an absolute path");
    for (const char* seq : {"//", "/./", "/../", "%2f", "%2F"}) {
      if (value.find(seq) != std::string::npos) {
        invalid(errs, pp, value, std::string("must not contain '") + seq + "'");
      }
    }
    for (const std::string suffix : {"/..", "/."}) {
      if (value.size() >= suffix.size() &&
          value.compare(value.size() - suffix.size(), suffix.size(), suffix) == 0) {
        invalid(errs, pp, value, "cannot end with '" + suffix + "'");
      }
    }
  } else if (type == "ImplementationSpecific") {
    if (!value.empty() && value[0] != '/') invalid(errs, pp, value, "must be an absolute path");
  } else {
    not_supported(errs, child(path, "pathType"), type,
                  {"Exact", "ImplementationSpecific", "Prefix"});
  }
  const json* backend = get_object(p, "backend");
  validate_backend(backend ? *backend : json::object(), child(path, "backend"), errs);
}

}  // namespace

void validate_rbac(const std::string& kind, const json& obj, const json* old, FieldErrors& errs) {
  if (kind == "RoleBinding" || kind == "ClusterRoleBinding") {
    return validate_binding(obj, old, kind == "RoleBinding", errs);
  }
  if (check_array(errs, obj, "rules", "")) {
    if (const json* rules = get_array(obj, "rules")) {
      for (size_t i = 0; i < rules->size(); ++i) {
        validate_policy_rule((*rules)[i], kind == "Role", index("rules", i), errs);
      }
    }
  }
  if (const json* aggregation = get_object(obj, "aggregationRule")) {
    const json* selectors = get_array(*aggregation, "clusterRoleSelectors");
    if (selectors == nullptr || selectors->empty()) {
      required(errs, "aggregationRule.clusterRoleSelectors",
               "at least one clusterRoleSelector required if aggregationRule is non-nil");
    } else {
      for (size_t i = 0; i < selectors->size(); ++i) {
        validate_label_selector(errs, (*selectors)[i],
                                index("aggregationRule.clusterRoleSelectors", i));
      }
    }
  }
}

void validate_ingress(const json& obj, FieldErrors& errs) {
  const json* spec_ptr = get_object(obj, "spec");
  const json& spec = spec_ptr ? *spec_ptr : json::object();
  const json* rules = get_array(spec, "rules");
  const json* backend = get(spec, "defaultBackend");
  if ((rules == nullptr || rules->empty()) && backend == nullptr) {
    invalid(errs, "spec", rules ? *rules : json(nullptr),
            "either `defaultBackend` or `rules` must be specified");
  }
  if (backend != nullptr) validate_backend(*backend, "spec.defaultBackend", errs);
  std::string class_name = get_string(spec, "ingressClassName");
  if (!class_name.empty()) {
    add_messages(errs, "spec.ingressClassName", class_name,
                 api::validate_dns1123_subdomain(class_name));
  }
  if (rules == nullptr) return;
  for (size_t i = 0; i < rules->size(); ++i) {
    const json& rule = (*rules)[i];
    std::string rp = index("spec.rules", i);
    std::string host = get_string(rule, "host");
    if (!host.empty()) {
      bool ip = host.find_first_not_of("0123456789.") == std::string::npos ||
                host.find(':') != std::string::npos;
      if (ip) invalid(errs, child(rp, "host"), host, "must be a DNS name, not an IP address");
      std::string bare = host.rfind("*.", 0) == 0 ? host.substr(2) : host;
      add_messages(errs, child(rp, "host"), host, api::validate_dns1123_subdomain(bare));
    }
    const json* http = get_object(rule, "http");
    if (http == nullptr) continue;
    const json* paths = get_array(*http, "paths");
    if (paths == nullptr || paths->empty()) {
      required(errs, child(rp, "http.paths"));
      continue;
    }
    for (size_t j = 0; j < paths->size(); ++j) {
      validate_ingress_path((*paths)[j], index(child(rp, "http.paths"), j), errs);
    }
  }
}

void validate_network_policy(const json& obj, FieldErrors& errs) {
  const json* spec = get_object(obj, "spec");
  if (spec == nullptr) return;
  if (const json* selector = get(*spec, "podSelector")) {
    validate_label_selector(errs, *selector, "spec.podSelector");
  }
  const json* types = get_array(*spec, "policyTypes");
  if (types == nullptr) return;
  if (types->size() > 2)
    invalid(errs, "spec.policyTypes", *types, "may not specify more than two policyTypes");
  for (size_t i = 0; i < types->size(); ++i) {
    const json& t = (*types)[i];
    if (t != "Ingress" && t != "Egress") {
      not_supported(errs, index("spec.policyTypes", i), t, {"Ingress", "Egress"});
    }
  }
}

void validate_pdb(const json& obj, FieldErrors& errs) {
  const json* spec = get_object(obj, "spec");
  if (spec == nullptr) return;
  const json* min_available = get(*spec, "minAvailable");
  const json* max_unavailable = get(*spec, "maxUnavailable");
  if (min_available != nullptr && max_unavailable != nullptr) {
    invalid(errs, "spec", *spec, "minAvailable and maxUnavailable cannot be both set");
  }
  for (const auto& [name, value] :
       {std::pair{"minAvailable", min_available}, std::pair{"maxUnavailable", max_unavailable}}) {
    if (value == nullptr) continue;
    std::string path = child("spec", name);
    int_or_percent(errs, *value, path);
    if (value->is_string()) {
      std::string s = value->get<std::string>();
      if (s.size() > 1 && s.size() < 12 && s.back() == '%' &&
          s.find_first_not_of("0123456789") == s.size() - 1 && std::stoll(s) > 100) {
        invalid(errs, path, *value, "must not be greater than 100%");
      }
    }
  }
  if (const json* selector = get(*spec, "selector")) {
    validate_label_selector(errs, *selector, "spec.selector");
  }
  std::string policy = get_string(*spec, "unhealthyPodEvictionPolicy");
  if (get(*spec, "unhealthyPodEvictionPolicy") != nullptr && policy != "IfHealthyBudget" &&
      policy != "AlwaysAllow") {
    not_supported(errs, "spec.unhealthyPodEvictionPolicy", policy,
                  {"AlwaysAllow", "IfHealthyBudget"});
  }
}

void validate_priority_class(const json& obj, const json* old, FieldErrors& errs) {
  const json* meta = get_object(obj, "metadata");
  std::string name = meta ? get_string(*meta, "name") : "";
  check_int(errs, obj, "value", "");
  int64_t value = get_int(obj, "value").value_or(0);
  if (name.rfind("system-", 0) == 0) {
    bool known = (name == "system-node-critical" && value == 2000001000) ||
                 (name == "system-cluster-critical" && value == 2000000000);
    if (!known) {
      forbidden(errs, "metadata.name",
                "priority class names with 'system-' prefix are reserved for system use only. "
                "error: " +
                    name + " is not a known system priority class");
    }
  } else if (value > 1000000000) {
    forbidden(errs, "value", "maximum allowed value of a user defined priority is 1000000000");
  }
  std::string policy = get_string(obj, "preemptionPolicy");
  if (!policy.empty() && policy != "Never" && policy != "PreemptLowerPriority") {
    not_supported(errs, "preemptionPolicy", policy, {"Never", "PreemptLowerPriority"});
  }
  if (old == nullptr) return;
  const json* old_value = get(*old, "value");
  const json* new_value = get(obj, "value");
  if ((old_value ? *old_value : json()) != (new_value ? *new_value : json())) {
    forbidden(errs, "value", "may not be changed in an update.");
  }
  immutable(errs, "preemptionPolicy", get(obj, "preemptionPolicy"), get(*old, "preemptionPolicy"));
}

}  // namespace vkube::apiserver::builtin
