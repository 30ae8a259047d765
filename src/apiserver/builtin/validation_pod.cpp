// PodSpec validation (pkg/apis/core/validation ValidatePodSpec and the
// container, volume and template rules under it), worded as kube-apiserver's.
#include <set>
#include <string>

#include "kind_util.h"
#include "pod_spec.h"
#include "vkube/api/validation.h"

namespace vkube::apiserver::builtin {

namespace {

using namespace util;

const std::vector<std::string> kProtocols = {"SCTP", "TCP", "UDP"};

// A string enum field: Required when empty, NotSupported when unknown.
void one_of(FieldErrors& errs, const json& obj, const char* k, const std::string& path,
            const std::vector<std::string>& supported) {
  if (!check_string(errs, obj, k, path)) return;
  std::string v = get_string(obj, k);
  if (v.empty()) return required(errs, child(path, k));
  for (const std::string& s : supported) {
    if (s == v) return;
  }
  not_supported(errs, child(path, k), v, supported);
}

void validate_ports(const json& c, const std::string& cp, FieldErrors& errs) {
  if (!check_array(errs, c, "ports", cp)) return;
  const json* ports = get_array(c, "ports");
  if (ports == nullptr) return;
  std::set<std::string> names;
  for (size_t i = 0; i < ports->size(); ++i) {
    const json& p = (*ports)[i];
    std::string pp = index(child(cp, "ports"), i);
    if (!p.is_object()) {
      invalid(errs, pp, p, "must be of type object");
      continue;
    }
    std::string name = get_string(p, "name");
    if (!name.empty()) {
      std::vector<std::string> msgs = port_name_errors(name);
      add_messages(errs, child(pp, "name"), name, msgs);
      if (msgs.empty() && !names.insert(name).second) duplicate(errs, child(pp, "name"), name);
    }
    if (check_int(errs, p, "containerPort", pp)) {
      int64_t port = get_int(p, "containerPort").value_or(0);
      if (port == 0) {
        required(errs, child(pp, "containerPort"));
      } else if (!valid_port_num(port)) {
        invalid(errs, child(pp, "containerPort"), port, "must be between 1 and 65535, inclusive");
      }
    }
    if (check_int(errs, p, "hostPort", pp)) {
      int64_t port = get_int(p, "hostPort").value_or(0);
      if (port != 0 && !valid_port_num(port)) {
        invalid(errs, child(pp, "hostPort"), port, "must be between 1 and 65535, inclusive");
      }
    }
    one_of(errs, p, "protocol", pp, kProtocols);
  }
}

void validate_env(const json& c, const std::string& cp, FieldErrors& errs) {
  if (!check_array(errs, c, "env", cp)) return;
  const json* env = get_array(c, "env");
  if (env == nullptr) return;
  for (size_t i = 0; i < env->size(); ++i) {
    const json& e = (*env)[i];
    std::string ep = index(child(cp, "env"), i);
    if (!e.is_object()) {
      invalid(errs, ep, e, "must be of type object");
      continue;
    }
    check_string(errs, e, "value", ep);
    std::string name = get_string(e, "name");
    if (name.empty()) {
      required(errs, child(ep, "name"));
    } else {
      add_messages(errs, child(ep, "name"), name, api::validate_relaxed_env_var_name(name));
    }
    const json* from = get_object(e, "valueFrom");
    if (from == nullptr) continue;
    std::string fp = child(ep, "valueFrom");
    int sources = 0;
    for (const char* k : {"fieldRef", "resourceFieldRef", "configMapKeyRef", "secretKeyRef"}) {
      if (get(*from, k) != nullptr) ++sources;
    }
    if (!get_string(e, "value").empty()) {
      invalid(errs, fp, "", "may not be specified when `value` is not empty");
    }
    if (sources == 0) {
      invalid(errs, fp, "",
              "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or "
              "`secretKeyRef`");
    } else if (sources > 1) {
      invalid(errs, fp, "", "may not have more than one field specified at a time");
    }
    for (const char* k : {"configMapKeyRef", "secretKeyRef"}) {
      const json* ref = get_object(*from, k);
      if (ref == nullptr) continue;
      if (get_string(*ref, "key").empty()) required(errs, child(child(fp, k), "key"));
    }
    if (const json* ref = get_object(*from, "fieldRef")) {
      if (get_string(*ref, "fieldPath").empty()) required(errs, child(fp, "fieldRef.fieldPath"));
    }
  }
}

void validate_mounts(const json& c, const std::string& cp, const std::set<std::string>& volumes,
                     FieldErrors& errs) {
  if (!check_array(errs, c, "volumeMounts", cp)) return;
  const json* mounts = get_array(c, "volumeMounts");
  if (mounts == nullptr) return;
  std::set<std::string> paths;
  for (size_t i = 0; i < mounts->size(); ++i) {
    const json& m = (*mounts)[i];
    std::string mp = index(child(cp, "volumeMounts"), i);
    std::string name = get_string(m, "name");
    if (name.empty()) {
      required(errs, child(mp, "name"));
    } else if (!volumes.count(name)) {
      not_found(errs, child(mp, "name"), name);
    }
    std::string path = get_string(m, "mountPath");
    if (path.empty()) {
      required(errs, child(mp, "mountPath"));
    } else if (!paths.insert(path).second) {
      invalid(errs, child(mp, "mountPath"), path, "must be unique");
    }
    std::string sub = get_string(m, "subPath");
    if (!sub.empty() && sub.front() == '/') {
      invalid(errs, child(mp, "subPath"), sub, "must be a relative path");
    }
    if (("/" + sub + "/").find("/../") != std::string::npos) {
      invalid(errs, child(mp, "subPath"), sub, "must not contain '..'");
    }
  }
}

void validate_probe(const json& c, const char* k, const std::string& cp, bool init,
                    FieldErrors& errs) {
  const json* probe = get(c, k);
  if (probe == nullptr) return;
  std::string pp = child(cp, k);
  if (init && get_string(c, "restartPolicy") != "Always") {
    forbidden(errs, pp, "may not be set for init containers without restartPolicy=Always");
    return;
  }
  if (!probe->is_object()) return invalid(errs, pp, *probe, "must be of type object");
  int handlers = 0;
  for (const char* h : {"exec", "httpGet", "tcpSocket", "grpc"}) {
    if (get(*probe, h) != nullptr) ++handlers;
  }
  if (handlers == 0) required(errs, pp, "must specify a handler type");
  if (handlers > 1) forbidden(errs, pp, "may not specify more than 1 handler type");
  for (const char* f : {"initialDelaySeconds", "timeoutSeconds", "periodSeconds",
                        "successThreshold", "failureThreshold"}) {
    nonnegative(errs, *probe, f, pp);
  }
  std::string name(k);
  if (name != "readinessProbe" && get_int(*probe, "successThreshold").value_or(1) != 1) {
    invalid(errs, child(pp, "successThreshold"), *get_int(*probe, "successThreshold"), "must be 1");
  }
}

void validate_container(const json& c, const std::string& cp, bool init,
                        const std::set<std::string>& volumes, std::set<std::string>& names,
                        FieldErrors& errs) {
  if (!c.is_object()) return invalid(errs, cp, c, "must be of type object");
  check_string(errs, c, "name", cp);
  std::string name = get_string(c, "name");
  if (name.empty()) {
    required(errs, child(cp, "name"));
  } else {
    add_messages(errs, child(cp, "name"), name, api::validate_dns1123_label(name));
    if (!names.insert(name).second) duplicate(errs, child(cp, "name"), name);
  }
  if (check_string(errs, c, "image", cp) && get_string(c, "image").empty()) {
    required(errs, child(cp, "image"));
  }
  one_of(errs, c, "terminationMessagePolicy", cp, {"File", "FallbackToLogsOnError"});
  one_of(errs, c, "imagePullPolicy", cp, {"Always", "IfNotPresent", "Never"});
  if (get(c, "restartPolicy") != nullptr) {
    if (!init) {
      forbidden(errs, child(cp, "restartPolicy"), "may not be set for non-init containers");
    } else if (get_string(c, "restartPolicy") != "Always") {
      not_supported(errs, child(cp, "restartPolicy"), c["restartPolicy"], {"Always"});
    }
  }
  validate_ports(c, cp, errs);
  validate_env(c, cp, errs);
  validate_mounts(c, cp, volumes, errs);
  if (check_object(errs, c, "resources", cp)) {
    if (const json* res = get_object(c, "resources")) {
      validate_resources(*res, child(cp, "resources"), errs);
    }
  }
  for (const char* k : {"livenessProbe", "readinessProbe", "startupProbe"}) {
    validate_probe(c, k, cp, init, errs);
  }
}

void validate_volume(const json& v, const std::string& vp, FieldErrors& errs) {
  std::vector<std::string> sources;
  for (const auto& [k, val] : v.items()) {
    if (k != "name" && !val.is_null()) sources.push_back(k);
  }
  if (sources.empty()) return required(errs, vp, "must specify a volume type");
  if (sources.size() > 1) {
    forbidden(errs, child(vp, sources[1]), "may not specify more than 1 volume type");
  }
  const json& source = v[sources[0]];
  std::string sp = child(vp, sources[0]);
  static const std::vector<std::pair<std::string, std::string>> kRequiredName = {
      {"hostPath", "path"},     {"configMap", "name"},
      {"secret", "secretName"}, {"persistentVolumeClaim", "claimName"},
      {"nfs", "server"},
  };
  for (const auto& [type, field] : kRequiredName) {
    if (sources[0] == type && get_string(source, field.c_str()).empty()) {
      required(errs, child(sp, field));
    }
  }
  if (const json* mode = get(source, "defaultMode")) {
    std::optional<int64_t> m = get_int(source, "defaultMode");
    if (!m || *m < 0 || *m > 0777) {
      invalid(errs, child(sp, "defaultMode"), *mode,
              "must be a number between 0 and 0777 (octal), both inclusive");
    }
  }
}

std::set<std::string> validate_volumes(const json& spec, const std::string& path,
                                       FieldErrors& errs) {
  std::set<std::string> names;
  if (!check_array(errs, spec, "volumes", path)) return names;
  const json* volumes = get_array(spec, "volumes");
  if (volumes == nullptr) return names;
  for (size_t i = 0; i < volumes->size(); ++i) {
    const json& v = (*volumes)[i];
    std::string vp = index(child(path, "volumes"), i);
    if (!v.is_object()) {
      invalid(errs, vp, v, "must be of type object");
      continue;
    }
    std::string name = get_string(v, "name");
    if (name.empty()) {
      required(errs, child(vp, "name"));
    } else {
      add_messages(errs, child(vp, "name"), name, api::validate_dns1123_label(name));
      if (!names.insert(name).second) duplicate(errs, child(vp, "name"), name);
    }
    validate_volume(v, vp, errs);
  }
  return names;
}

}  // namespace

void validate_labels(const json& labels, const std::string& path, FieldErrors& errs) {
  if (!labels.is_object()) return invalid(errs, path, labels, "must be of type object");
  for (const auto& [k, v] : labels.items()) {
    add_messages(errs, path, k, api::validate_qualified_name(k));
    if (!v.is_string()) {
      invalid(errs, path, v, "must be of type string");
    } else {
      add_messages(errs, path, v.get<std::string>(),
                   api::validate_label_value(v.get<std::string>()));
    }
  }
}

void validate_pod_spec(const json& spec, const std::string& path, FieldErrors& errs) {
  if (!spec.is_object()) return invalid(errs, path, spec, "must be of type object");
  std::set<std::string> volumes = validate_volumes(spec, path, errs);
  std::set<std::string> names;
  for (const char* k : {"containers", "initContainers"}) {
    if (!check_array(errs, spec, k, path)) continue;
    const json* list = get_array(spec, k);
    if (list == nullptr || list->empty()) {
      if (std::string(k) == "containers") required(errs, child(path, k));
      continue;
    }
    for (size_t i = 0; i < list->size(); ++i) {
      validate_container((*list)[i], index(child(path, k), i), std::string(k) != "containers",
                         volumes, names, errs);
    }
  }
  one_of(errs, spec, "restartPolicy", path, {"Always", "OnFailure", "Never"});
  one_of(errs, spec, "dnsPolicy", path,
         {"ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"});
  if (get_string(spec, "dnsPolicy") == "None" && get(spec, "dnsConfig") == nullptr) {
    required(errs, child(path, "dnsConfig"), "must provide `dnsConfig` when `dnsPolicy` is None");
  }
  if (check_string(errs, spec, "serviceAccountName", path)) {
    std::string sa = get_string(spec, "serviceAccountName");
    if (!sa.empty()) {
      add_messages(errs, child(path, "serviceAccountName"), sa,
                   api::validate_dns1123_subdomain(sa));
    }
  }
  for (const char* k : {"hostname", "subdomain"}) {
    if (!check_string(errs, spec, k, path)) continue;
    std::string v = get_string(spec, k);
    if (!v.empty()) add_messages(errs, child(path, k), v, api::validate_dns1123_label(v));
  }
  if (check_int(errs, spec, "activeDeadlineSeconds", path)) {
    std::optional<int64_t> v = get_int(spec, "activeDeadlineSeconds");
    if (v && (*v < 1 || *v > 2147483647)) {
      invalid(errs, child(path, "activeDeadlineSeconds"), *v,
              "must be between 1 and 2147483647, inclusive");
    }
  }
  check_int(errs, spec, "terminationGracePeriodSeconds", path);
  if (const json* selector = get(spec, "nodeSelector")) {
    validate_labels(*selector, child(path, "nodeSelector"), errs);
  }
  if (check_array(errs, spec, "tolerations", path)) {
    if (const json* list = get_array(spec, "tolerations")) {
      validate_tolerations(*list, child(path, "tolerations"), errs);
    }
  }
  if (check_object(errs, spec, "resources", path)) {
    if (const json* res = get_object(spec, "resources")) {
      validate_resources(*res, child(path, "resources"), errs);
    }
  }
}

void validate_pod_template(const json* tmpl, const std::string& path, FieldErrors& errs) {
  if (tmpl == nullptr) return required(errs, path);
  if (!tmpl->is_object()) return invalid(errs, path, *tmpl, "must be of type object");
  if (const json* meta = get_object(*tmpl, "metadata")) {
    if (const json* labels = get(*meta, "labels")) {
      validate_labels(*labels, child(path, "metadata.labels"), errs);
    }
  }
  const json* spec = get(*tmpl, "spec");
  validate_pod_spec(spec ? *spec : json::object(), child(path, "spec"), errs);
}

}  // namespace vkube::apiserver::builtin
