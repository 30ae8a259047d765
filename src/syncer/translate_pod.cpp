// Tenant pod -> host pod (see translate_pod.h).
#include "vkube/syncer/translate_pod.h"

#include <algorithm>
#include <cctype>

#include "vkube/syncer/gpu_sharing.h"

namespace vkube::syncer {

namespace {

using json = nlohmann::json;

std::string str(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// Renames the string at obj[key] with the mapper, when present.
void rename(json& obj, const char* key, const NameMapper& m, const std::string& ns) {
  auto it = obj.find(key);
  if (it != obj.end() && it->is_string()) *it = m.host_name(ns, it->get<std::string>());
}

// On the host, metadata.name/namespace/uid are the host pod's: the downward
// API reads the tenant's from the ownership marks instead.
void rewrite_field_ref(json& holder) {
  auto ref = holder.find("fieldRef");
  if (ref == holder.end() || !ref->is_object()) return;
  const std::string path = str(*ref, "fieldPath");
  if (path == "metadata.name")
    (*ref)["fieldPath"] = "metadata.annotations['" + std::string(kNameAnnotation) + "']";
  else if (path == "metadata.namespace")
    (*ref)["fieldPath"] = "metadata.labels['" + std::string(kNamespaceLabel) + "']";
  else if (path == "metadata.uid")
    (*ref)["fieldPath"] = "metadata.annotations['" + std::string(kUidAnnotation) + "']";
}

void rewrite_downward_items(json& source) {
  auto items = source.find("items");
  if (items == source.end() || !items->is_array()) return;
  for (json& item : *items)
    if (item.is_object()) rewrite_field_ref(item);
}

void rename_volume(json& v, const PodContext& ctx, const std::string& ns) {
  const NameMapper& m = *ctx.names;
  if (auto c = v.find("configMap"); c != v.end() && c->is_object()) rename(*c, "name", m, ns);
  if (auto s = v.find("secret"); s != v.end() && s->is_object()) rename(*s, "secretName", m, ns);
  if (auto p = v.find("persistentVolumeClaim"); p != v.end() && p->is_object())
    rename(*p, "claimName", m, ns);
  if (auto d = v.find("downwardAPI"); d != v.end() && d->is_object()) rewrite_downward_items(*d);
  auto proj = v.find("projected");
  if (proj == v.end() || !proj->is_object()) return;
  auto sources = proj->find("sources");
  if (sources == proj->end() || !sources->is_array()) return;
  json kept = json::array();
  for (json src : *sources) {
    if (auto c = src.find("configMap"); c != src.end() && c->is_object()) rename(*c, "name", m, ns);
    if (auto s = src.find("secret"); s != src.end() && s->is_object()) rename(*s, "name", m, ns);
    if (auto d = src.find("downwardAPI"); d != src.end() && d->is_object())
      rewrite_downward_items(*d);
    if (auto t = src.find("serviceAccountToken"); t != src.end() && t->is_object()) {
      // The host would mint a token of a host account: the tenant's token
      // comes from the Secret the syncer keeps instead, or not at all.
      if (ctx.token_secret.empty()) continue;
      std::string path = str(*t, "path").empty() ? "token" : str(*t, "path");
      src = {{"secret",
              {{"name", ctx.token_secret}, {"items", {{{"key", "token"}, {"path", path}}}}}}};
    }
    kept.push_back(std::move(src));
  }
  (*proj)["sources"] = std::move(kept);
}

void rename_container(json& c, const NameMapper& m, const std::string& ns) {
  if (auto env = c.find("env"); env != c.end() && env->is_array())
    for (json& e : *env) {
      auto from = e.find("valueFrom");
      if (from == e.end() || !from->is_object()) continue;
      rewrite_field_ref(*from);
      if (auto r = from->find("configMapKeyRef"); r != from->end() && r->is_object())
        rename(*r, "name", m, ns);
      if (auto r = from->find("secretKeyRef"); r != from->end() && r->is_object())
        rename(*r, "name", m, ns);
    }
  if (auto env = c.find("envFrom"); env != c.end() && env->is_array())
    for (json& e : *env) {
      if (auto r = e.find("configMapRef"); r != e.end() && r->is_object())
        rename(*r, "name", m, ns);
      if (auto r = e.find("secretRef"); r != e.end() && r->is_object()) rename(*r, "name", m, ns);
    }
}

std::string env_name(const std::string& service) {
  std::string out;
  for (char ch : service)
    out += ch == '-' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  return out;
}

// kube's docker-link style variables for each Service with a cluster IP,
// in name order, as the kubelet makes them.
json service_env(std::vector<ServiceEnv> services) {
  std::sort(services.begin(), services.end(),
            [](const ServiceEnv& a, const ServiceEnv& b) { return a.name < b.name; });
  json env = json::array();
  auto add = [&](const std::string& name, const std::string& value) {
    env.push_back({{"name", name}, {"value", value}});
  };
  for (const ServiceEnv& s : services) {
    if (s.cluster_ip.empty() || s.cluster_ip == "None" || s.ports.empty()) continue;
    const std::string n = env_name(s.name);
    add(n + "_SERVICE_HOST", s.cluster_ip);
    add(n + "_SERVICE_PORT", std::to_string(s.ports[0].second.value("port", 0)));
    for (const auto& [port_name, p] : s.ports)
      if (!port_name.empty())
        add(n + "_SERVICE_PORT_" + env_name(port_name), std::to_string(p.value("port", 0)));
    for (size_t i = 0; i < s.ports.size(); ++i) {
      const json& p = s.ports[i].second;
      std::string proto = p.value("protocol", "TCP");
      std::string lower = proto;
      for (char& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
      const std::string port = std::to_string(p.value("port", 0));
      const std::string url = lower + "://" + s.cluster_ip + ":" + port;
      if (i == 0) add(n + "_PORT", url);
      const std::string prefix = n + "_PORT_" + port + "_" + proto;
      add(prefix, url);
      add(prefix + "_PROTO", lower);
      add(prefix + "_PORT", port);
      add(prefix + "_ADDR", s.cluster_ip);
    }
  }
  return env;
}

}  // namespace

Result<json> translate_pod(const json& tenant_pod, const PodContext& ctx) {
  if (ctx.names == nullptr) return Status::invalid("translate_pod: no NameMapper");
  const json& tmeta = tenant_pod.value("metadata", json::object());
  const std::string ns = str(tmeta, "namespace");
  const std::string name = str(tmeta, "name");
  json host = {{"apiVersion", "v1"}, {"kind", "Pod"}};
  json meta = {{"name", ctx.names->host_name(ns, name)}, {"namespace", ctx.host_namespace}};
  if (auto l = tmeta.find("labels"); l != tmeta.end() && l->is_object()) meta["labels"] = *l;
  if (auto a = tmeta.find("annotations"); a != tmeta.end() && a->is_object())
    meta["annotations"] = *a;
  if (ctx.owner.is_object()) meta["ownerReferences"] = json::array({ctx.owner});
  host["metadata"] = std::move(meta);
  ctx.names->mark(host, tenant_pod);
  VKUBE_RETURN_IF_ERROR(apply_gang_markers(tenant_pod, *ctx.names, host));

  json spec = tenant_pod.value("spec", json::object());
  spec.erase("nodeName");
  spec.erase("serviceAccount");
  spec.erase("serviceAccountName");  // the host namespace's default account, without its token
  spec["automountServiceAccountToken"] = false;
  spec["enableServiceLinks"] = false;  // the host's Services are not the tenant's
  // The container sees the tenant's pod name as its hostname, as the kubelet
  // would give it (cut at 63, no trailing '-'); a name with dots is no DNS
  // label, and the kubelet would cut at the first dot's label anyway.
  if (str(spec, "hostname").empty() && name.find('.') == std::string::npos) {
    std::string hostname = name.substr(0, 63);
    while (!hostname.empty() && hostname.back() == '-') hostname.pop_back();
    if (!hostname.empty()) spec["hostname"] = hostname;
  }
  if (auto vs = spec.find("volumes"); vs != spec.end() && vs->is_array())
    for (json& v : *vs) rename_volume(v, ctx, ns);
  if (auto ps = spec.find("imagePullSecrets"); ps != spec.end() && ps->is_array())
    for (json& p : *ps) rename(p, "name", *ctx.names, ns);
  const bool links = tenant_pod.value("spec", json::object()).value("enableServiceLinks", true);
  const json links_env = links ? service_env(ctx.services) : json::array();
  constexpr const char* kAccessPath = "/var/run/secrets/kubernetes.io/serviceaccount";
  constexpr const char* kAccessVolume = "vkube-api-access";
  bool access_mounted = false;
  json api_env = json::array();
  if (!ctx.api_host.empty()) {
    const std::string port = std::to_string(ctx.api_port);
    api_env = {{{"name", "KUBERNETES_SERVICE_HOST"}, {"value", ctx.api_host}},
               {{"name", "KUBERNETES_SERVICE_PORT"}, {"value", port}},
               {{"name", "KUBERNETES_SERVICE_PORT_HTTPS"}, {"value", port}}};
  }
  for (const char* list : {"initContainers", "containers", "ephemeralContainers"}) {
    auto cs = spec.find(list);
    if (cs == spec.end() || !cs->is_array()) continue;
    for (json& c : *cs) {
      rename_container(c, *ctx.names, ns);
      if (!ctx.api_access_secret.empty() && std::string(list) != "ephemeralContainers") {
        bool mounted = false;
        for (const json& m : c.value("volumeMounts", json::array()))
          mounted = mounted || (m.is_object() && m.value("mountPath", "") == kAccessPath);
        if (!mounted) {
          c["volumeMounts"].push_back(
              {{"name", kAccessVolume}, {"mountPath", kAccessPath}, {"readOnly", true}});
          access_mounted = true;
        }
      }
      if (!api_env.empty()) {
        json env = api_env;
        for (const json& e : c.value("env", json::array())) env.push_back(e);
        c["env"] = std::move(env);
      }
      if (links_env.empty()) continue;
      // Service variables first: the container's own of the same name win.
      json env = links_env;
      for (const json& e : c.value("env", json::array())) env.push_back(e);
      c["env"] = std::move(env);
    }
  }
  if (access_mounted)
    spec["volumes"].push_back(
        {{"name", kAccessVolume},
         {"secret", {{"secretName", ctx.api_access_secret}, {"defaultMode", 420}}}});
  if (!ctx.dns_ip.empty() && spec.value("dnsPolicy", "ClusterFirst") != "Default" &&
      !spec.value("hostNetwork", false)) {
    spec["dnsPolicy"] = "None";
    json config = spec.value("dnsConfig", json::object());
    config["nameservers"] = json::array({ctx.dns_ip});
    config["searches"] = json::array(
        {ns + ".svc." + ctx.cluster_domain, "svc." + ctx.cluster_domain, ctx.cluster_domain});
    if (!config.contains("options"))
      config["options"] = json::array({{{"name", "ndots"}, {"value", "5"}}});
    spec["dnsConfig"] = std::move(config);
  }
  host["spec"] = std::move(spec);
  VKUBE_RETURN_IF_ERROR(gpu::translate_for_host(host, ctx.gpu));
  static const HostPolicy kDefaults;
  const HostPolicy& policy = ctx.policy ? *ctx.policy : kDefaults;
  VKUBE_RETURN_IF_ERROR(apply_pod_policy(policy, host));
  VKUBE_RETURN_IF_ERROR(apply_host_queue_gang(tenant_pod, policy.labels, host));
  return host;
}

}  // namespace vkube::syncer
