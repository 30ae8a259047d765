// Which strategy each built-in resource has: the generic one, plus the
// hooks of the kinds kube-apiserver gives a strategy of their own.
#include "strategy.h"

#include "kind_util.h"

namespace vkube::apiserver::builtin {

namespace {

using util::get_object;
using util::get_string;

void empty_status(json& obj) {
  obj["status"] = json::object();
  fill_required_status(obj);
}
void pending_status(json& obj) {
  obj["status"] = {{"phase", "Pending"}};
}
void active_status(json& obj) {
  obj["status"] = {{"phase", "Active"}};
}
void service_status(json& obj) {
  obj["status"] = {{"loadBalancer", json::object()}};
}

void pod_qos(json& obj) {
  obj["status"]["qosClass"] = pod_qos_class(obj);
}

// Graceful deletion: a pod bound to a node lingers until its kubelet
// confirms, unless it already ended.
int64_t pod_grace(const json& pod, std::optional<int64_t> requested) {
  const json* spec = get_object(pod, "spec");
  const json* status = get_object(pod, "status");
  if (spec == nullptr || get_string(*spec, "nodeName").empty()) return 0;
  const std::string phase = status ? get_string(*status, "phase") : "";
  if (phase == "Succeeded" || phase == "Failed") return 0;
  int64_t grace =
      requested.value_or(util::get_int(*spec, "terminationGracePeriodSeconds").value_or(30));
  return grace < 0 ? 0 : grace;
}

bool namespace_finalizers(const json& ns) {
  const json* spec = get_object(ns, "spec");
  const json* finalizers = spec ? util::get_array(*spec, "finalizers") : nullptr;
  return finalizers != nullptr && !finalizers->empty();
}

void namespace_terminating(json& ns) {
  ns["status"]["phase"] = "Terminating";
}

// spec.finalizers changes only through /finalize.
void namespace_keep_spec(const json& old, json& ns) {
  if (old.contains("spec")) ns["spec"] = old["spec"];
}

// kube's deploymentStatusStrategy: a status write keeps the old spec and
// labels and takes the rest of the object's metadata (the controller's
// revision annotation above all) from the request.
void deployment_status_keep_spec(const json& old, json& d) {
  if (old.contains("spec"))
    d["spec"] = old["spec"];
  else
    d.erase("spec");
  const json* old_meta = get_object(old, "metadata");
  json& m = d["metadata"];
  if (old_meta != nullptr && old_meta->contains("labels"))
    m["labels"] = (*old_meta)["labels"];
  else
    m.erase("labels");
}

}  // namespace

Strategy strategy_for(const api::Resource& r) {
  Strategy s;
  const std::string& g = r.gv.group;
  const std::string& p = r.plural;
  if (r.status_subresource && !g.empty()) {
    s.reset_status = empty_status;
    s.normalize_status = fill_required_status;
  }
  if (g.empty()) {
    if (p == "pods") {
      s.reset_status = pending_status;
      s.computed_on_create = pod_qos;
      s.grace_period = pod_grace;
      s.subresources = {"binding", "eviction"};
      s.connect = true;
      s.gpu_quota_counted = true;
    } else if (p == "services") {
      s.reset_status = service_status;
      s.prepare_for_update = prepare_service_update;
      s.allocates_cluster_ips = true;
    } else if (p == "persistentvolumeclaims" || p == "persistentvolumes") {
      s.reset_status = pending_status;
    } else if (p == "namespaces") {
      s.reset_status = active_status;
      s.prepare_for_update = namespace_keep_spec;
      s.held_by_own_finalizers = namespace_finalizers;
      s.mark_terminating = namespace_terminating;
      s.undeletable = {"default", "kube-system", "kube-public"};
      s.subresources = {"finalize"};
      s.is_namespace = true;
    } else if (p == "replicationcontrollers") {
      s.reset_status = empty_status;
      s.normalize_status = fill_required_status;
      s.map_selector = true;
    } else if (p == "serviceaccounts") {
      s.subresources = {"token"};
    } else if (p == "bindings") {
      s.handler = Handler::kBinding;
    }
  } else if (g == "apps" && p == "deployments") {
    s.prepare_status_update = deployment_status_keep_spec;
  } else if (g == "apiextensions.k8s.io" && p == "customresourcedefinitions") {
    s.deletion_finalizer = "customresourcecleanup.apiextensions.k8s.io";
    s.defines_kinds = true;
  } else if (g == "autoscaling" && p == "horizontalpodautoscalers") {
    s.convert = convert_hpa;
    s.storage_version = "v2";
  } else if (g == "metrics.k8s.io") {
    s.handler = Handler::kMetrics;
  } else if (g == "certificates.k8s.io" && p == "certificatesigningrequests") {
    // Served by the store; its strategy per subresource is apiserver/certificates.cpp.
    s.subresources = {"approval"};
  }
  return s;
}

void convert_to(const Strategy& s, json& obj, std::string_view to_version) {
  if (s.convert == nullptr || !obj.is_object()) return;
  const std::string api_version = get_string(obj, "apiVersion");
  const size_t slash = api_version.rfind('/');
  const std::string_view from = slash == std::string::npos
                                    ? std::string_view(api_version)
                                    : std::string_view(api_version).substr(slash + 1);
  if (from == to_version) return;
  s.convert(obj, to_version);
}

}  // namespace vkube::apiserver::builtin
