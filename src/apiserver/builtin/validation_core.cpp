// Validation of core/v1 Services, ConfigMaps, Secrets and Events
// (pkg/apis/core/validation), worded as kube-apiserver's.
#include <set>
#include <string>

#include "kind_util.h"
#include "pod_spec.h"
#include "validation_kinds.h"
#include "vkube/api/validation.h"

namespace vkube::apiserver::builtin {

namespace {

using namespace util;

const json kEmpty = json::object();
constexpr size_t kMaxSecretSize = 1024 * 1024;

// IsConfigMapKey (keys of ConfigMap data/binaryData and Secret data).
std::vector<std::string> config_key_errors(const std::string& k) {
  std::vector<std::string> out;
  if (k.size() > 253) out.push_back("must be no more than 253 characters");
  bool ok = !k.empty();
  for (char c : k) {
    ok &= std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
  }
  if (!ok) {
    out.push_back(
        "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. "
        "'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is "
        "'[-._a-zA-Z0-9]+')");
  }
  if (k == ".") {
    out.push_back("must not be '.'");
  } else if (k == "..") {
    out.push_back("must not be '..'");
  } else if (k.rfind("..", 0) == 0) {
    out.push_back("must not start with '..'");
  }
  return out;
}

// Keys valid, values of the right JSON type; returns the total value size.
size_t validate_data(const json& obj, const char* field, bool base64, FieldErrors& errs) {
  size_t total = 0;
  if (!check_object(errs, obj, field, "")) return total;
  const json* data = get_object(obj, field);
  if (data == nullptr) return total;
  for (const auto& [k, v] : data->items()) {
    std::string kp = key(field, k);
    for (const std::string& m : config_key_errors(k)) invalid(errs, kp, k, m);
    if (!v.is_string()) {
      invalid(errs, kp, v, "must be of type string");
      continue;
    }
    const std::string& text = v.get_ref<const std::string&>();
    total += text.size();
    if (!base64) continue;
    // kube-apiserver fails the request at decoding (400); vkube reports the
    // value as a field error so clients see which key is wrong.
    if (auto err = base64_error(text)) invalid(errs, kp, "<secret contents redacted>", *err);
  }
  return total;
}

// The immutable: true rules of ConfigMaps and Secrets.
void validate_immutable(const json& obj, const json& old, std::initializer_list<const char*> fields,
                        FieldErrors& errs) {
  if (!get_bool(old, "immutable")) return;
  const char* detail = "field is immutable when `immutable` is set";
  if (!get_bool(obj, "immutable")) forbidden(errs, "immutable", detail);
  for (const char* f : fields) {
    const json* now = get(obj, f);
    const json* before = get(old, f);
    if ((now ? *now : kEmpty) != (before ? *before : kEmpty)) forbidden(errs, f, detail);
  }
}

bool is_ip(const std::string& s) {
  if (s.find(':') != std::string::npos) {
    return s.find_first_not_of("0123456789abcdefABCDEF:.") == std::string::npos;
  }
  int parts = 0;
  size_t start = 0;
  while (start <= s.size()) {
    size_t dot = s.find('.', start);
    std::string part = s.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (part.empty() || part.size() > 3 ||
        part.find_first_not_of("0123456789") != std::string::npos || std::stoi(part) > 255 ||
        (part.size() > 1 && part[0] == '0')) {
      return false;
    }
    ++parts;
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return parts == 4;
}

void validate_service_ports(const json& spec, const std::string& type, FieldErrors& errs) {
  const json* ports = get_array(spec, "ports");
  if (ports == nullptr) return;
  std::set<std::string> names;
  std::set<std::string> port_keys;
  for (size_t i = 0; i < ports->size(); ++i) {
    const json& p = (*ports)[i];
    std::string pp = index("spec.ports", i);
    if (!p.is_object()) {
      invalid(errs, pp, p, "must be of type object");
      continue;
    }
    std::string name = get_string(p, "name");
    if (name.empty() && ports->size() > 1) {
      required(errs, child(pp, "name"));
    } else if (!name.empty()) {
      add_messages(errs, child(pp, "name"), name, api::validate_dns1123_label(name));
      if (!names.insert(name).second) duplicate(errs, child(pp, "name"), name);
    }
    check_int(errs, p, "port", pp);
    int64_t port = get_int(p, "port").value_or(0);
    if (!valid_port_num(port)) {
      invalid(errs, child(pp, "port"), port, "must be between 1 and 65535, inclusive");
    }
    std::string protocol = get_string(p, "protocol");
    if (protocol.empty()) {
      required(errs, child(pp, "protocol"));
    } else if (protocol != "TCP" && protocol != "UDP" && protocol != "SCTP") {
      not_supported(errs, child(pp, "protocol"), protocol, {"SCTP", "TCP", "UDP"});
    }
    if (const json* target = get(p, "targetPort")) {
      std::string tp = child(pp, "targetPort");
      if (target->is_number_integer()) {
        if (!valid_port_num(target->get<int64_t>())) {
          invalid(errs, tp, *target, "must be between 1 and 65535, inclusive");
        }
      } else if (target->is_string()) {
        add_messages(errs, tp, target->get<std::string>(),
                     port_name_errors(target->get<std::string>()));
      } else {
        invalid(errs, tp, *target, "must be an integer or string");
      }
    }
    if (type == "ClusterIP" && get_int(p, "nodePort").value_or(0) != 0) {
      forbidden(errs, child(pp, "nodePort"), "may not be used when `type` is 'ClusterIP'");
    }
    std::string port_key = std::to_string(port) + "/" + protocol;
    if (!port_keys.insert(port_key).second) {
      duplicate(errs, pp, json{{"port", port}, {"protocol", protocol}});
    }
  }
}

}  // namespace

void validate_service(const json& obj, const json* old, FieldErrors& errs) {
  const json* spec_ptr = get_object(obj, "spec");
  const json& spec = spec_ptr ? *spec_ptr : kEmpty;
  std::string type = get_string(spec, "type");
  std::string cluster_ip = get_string(spec, "clusterIP");
  bool headless = cluster_ip == "None";
  check_array(errs, spec, "ports", "spec");
  const json* ports = get_array(spec, "ports");
  if ((ports == nullptr || ports->empty()) && !headless && type != "ExternalName") {
    required(errs, "spec.ports");
  }
  if (type != "ClusterIP" && type != "NodePort" && type != "LoadBalancer" &&
      type != "ExternalName") {
    not_supported(errs, "spec.type", type,
                  {"ClusterIP", "ExternalName", "LoadBalancer", "NodePort"});
  }
  if (type == "ExternalName") {
    std::string name = get_string(spec, "externalName");
    std::string clean =
        !name.empty() && name.back() == '.' ? name.substr(0, name.size() - 1) : name;
    if (clean.empty()) {
      required(errs, "spec.externalName");
    } else {
      add_messages(errs, "spec.externalName", name, api::validate_dns1123_subdomain(clean));
    }
  } else if (!cluster_ip.empty() && !headless && !is_ip(cluster_ip)) {
    invalid(errs, "spec.clusterIPs[0]", cluster_ip,
            "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)");
  }
  validate_service_ports(spec, type, errs);
  if (const json* selector = get(spec, "selector"))
    validate_labels(*selector, "spec.selector", errs);
  std::string affinity = get_string(spec, "sessionAffinity");
  if (affinity.empty()) {
    required(errs, "spec.sessionAffinity");
  } else if (affinity != "ClientIP" && affinity != "None") {
    not_supported(errs, "spec.sessionAffinity", affinity, {"ClientIP", "None"});
  }
  const json* external_ips = get_array(spec, "externalIPs");
  bool external = type == "NodePort" || type == "LoadBalancer" ||
                  (external_ips != nullptr && !external_ips->empty());
  std::string etp = get_string(spec, "externalTrafficPolicy");
  if (!external && !etp.empty()) {
    invalid(errs, "spec.externalTrafficPolicy", etp,
            "may only be set for externally-accessible services");
  } else if (external && etp.empty()) {
    required(errs, "spec.externalTrafficPolicy");
  } else if (external && etp != "Cluster" && etp != "Local") {
    not_supported(errs, "spec.externalTrafficPolicy", etp, {"Cluster", "Local"});
  }
  std::string itp = get_string(spec, "internalTrafficPolicy");
  if (!itp.empty() && itp != "Cluster" && itp != "Local") {
    not_supported(errs, "spec.internalTrafficPolicy", itp, {"Cluster", "Local"});
  }
  std::string family_policy = get_string(spec, "ipFamilyPolicy");
  if (!family_policy.empty() && family_policy != "SingleStack" &&
      family_policy != "PreferDualStack" && family_policy != "RequireDualStack") {
    not_supported(errs, "spec.ipFamilyPolicy", family_policy,
                  {"PreferDualStack", "RequireDualStack", "SingleStack"});
  }
  if (old == nullptr) return;
  const json* old_spec = get_object(*old, "spec");
  std::string old_ip = old_spec ? get_string(*old_spec, "clusterIP") : "";
  std::string old_type = old_spec ? get_string(*old_spec, "type") : "";
  if (type != "ExternalName" && old_type != "ExternalName" && !old_ip.empty() &&
      !cluster_ip.empty() && cluster_ip != old_ip) {
    const json* ips = get_array(spec, "clusterIPs");
    invalid(errs, "spec.clusterIPs[0]", ips ? *ips : json::array({cluster_ip}),
            "may not change once set");
  }
}

void validate_config_map(const json& obj, const json* old, FieldErrors& errs) {
  size_t total = validate_data(obj, "data", false, errs);
  total += validate_data(obj, "binaryData", true, errs);
  const json* data = get_object(obj, "data");
  const json* binary = get_object(obj, "binaryData");
  if (data != nullptr && binary != nullptr) {
    for (const auto& [k, v] : data->items()) {
      if (binary->contains(k))
        invalid(errs, key("data", k), k, "duplicate of key present in binaryData");
    }
  }
  if (total > kMaxSecretSize) too_long(errs, "", kMaxSecretSize);
  if (old != nullptr) validate_immutable(obj, *old, {"data", "binaryData"}, errs);
}

void validate_secret(const json& obj, const json* old, FieldErrors& errs) {
  size_t total = validate_data(obj, "data", true, errs);
  if (total > kMaxSecretSize) too_long(errs, "data", kMaxSecretSize);
  const json* data_ptr = get_object(obj, "data");
  const json& data = data_ptr ? *data_ptr : kEmpty;
  std::string type = get_string(obj, "type");
  auto need = [&](const char* k) {
    if (!data.contains(k)) required(errs, key("data", k));
  };
  auto json_value = [&](const char* k) {
    if (!data.contains(k)) return need(k);
    auto bytes = data[k].is_string() ? base64_decode(data[k].get<std::string>()) : std::nullopt;
    if (bytes && !json::accept(*bytes)) {
      invalid(errs, key("data", k), "<secret contents redacted>",
              "invalid character in JSON input");
    }
  };
  if (type == "kubernetes.io/service-account-token") {
    const json* meta = get_object(obj, "metadata");
    const json* annotations = meta ? get_object(*meta, "annotations") : nullptr;
    if (annotations == nullptr ||
        get_string(*annotations, "kubernetes.io/service-account.name").empty()) {
      required(errs, "metadata.annotations[kubernetes.io/service-account.name]");
    }
  } else if (type == "kubernetes.io/dockercfg") {
    json_value(".dockercfg");
  } else if (type == "kubernetes.io/dockerconfigjson") {
    json_value(".dockerconfigjson");
  } else if (type == "kubernetes.io/basic-auth") {
    if (!data.contains("username") && !data.contains("password")) {
      need("username");
      need("password");
    }
  } else if (type == "kubernetes.io/ssh-auth") {
    need("ssh-privatekey");
  } else if (type == "kubernetes.io/tls") {
    need("tls.crt");
    need("tls.key");
  }
  if (old == nullptr) return;
  immutable(errs, "type", get(obj, "type"), get(*old, "type"));
  validate_immutable(obj, *old, {"data"}, errs);
}

void validate_event(const json& obj, const json* old, bool events_group, FieldErrors& errs) {
  // events.k8s.io spells the legacy fields differently.
  const char* regarding = events_group ? "regarding" : "involvedObject";
  const char* note = events_group ? "note" : "message";
  const json* meta = get_object(obj, "metadata");
  std::string ns = meta ? get_string(*meta, "namespace") : "";
  const json* involved = get_object(obj, regarding);
  std::string involved_ns = involved ? get_string(*involved, "namespace") : "";
  bool new_style = get(obj, "eventTime") != nullptr;
  bool mismatch = new_style ? involved_ns.empty() && ns != "default" && ns != "kube-system"
                  : involved_ns.empty() ? !ns.empty() && ns != "default"
                                        : ns != involved_ns;
  if (mismatch)
    invalid(errs, "involvedObject.namespace", involved_ns, "does not match event.namespace");
  if (new_style || events_group) {
    if (events_group && !new_style) required(errs, "eventTime");
    for (const char* k : {"reportingController", "reportingInstance", "action", "reason"}) {
      if (get_string(obj, k).empty()) required(errs, k);
    }
    std::string controller = get_string(obj, "reportingController");
    if (!controller.empty()) {
      add_messages(errs, "reportingController", controller,
                   api::validate_qualified_name(controller));
    }
    for (const auto& [k, limit] : {std::pair<const char*, size_t>{"reportingInstance", 128},
                                   {"action", 128},
                                   {"reason", 128},
                                   {note, 1024}}) {
      if (get_string(obj, k).size() > limit) {
        invalid(errs, k, "", "can have at most " + std::to_string(limit) + " characters");
      }
    }
  }
  if (events_group) {
    std::string type = get_string(obj, "type");
    if (type != "Normal" && type != "Warning") {
      invalid(errs, "type", "", "has invalid value: " + type);
    }
  }
  if (old != nullptr && events_group) {
    for (const char* k : {regarding, "reason", note, "type", "eventTime", "action", "related",
                          "reportingController", "reportingInstance"}) {
      immutable(errs, k, get(obj, k), get(*old, k));
    }
  }
}

}  // namespace vkube::apiserver::builtin
