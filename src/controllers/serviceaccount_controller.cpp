// Two per-namespace controllers: the ServiceAccount controller (kube's
// pkg/controller/serviceaccount) keeps a "default" ServiceAccount in every
// active namespace, and the root CA publisher (kube's
// pkg/controller/certificates/rootcacertpublisher) keeps the kube-root-ca.crt
// ConfigMap holding the tenant's CA in every namespace.
#include "controller.h"
#include "util.h"
#include "vkube/common/log.h"

namespace vkube::controllers {

namespace {

constexpr const char* kDefaultAccount = "default";
constexpr const char* kRootCAConfigMap = "kube-root-ca.crt";
constexpr const char* kDescriptionAnnotation = "kubernetes.io/description";
constexpr const char* kDescription =
    "Contains a CA bundle that can be used to verify the kube-apiserver when using internal "
    "endpoints such as the internal service IP or kubernetes.default.svc. No other usage is "
    "guaranteed across distributions of Kubernetes clusters.";

// A namespace new objects can go into: present, not deleted, phase Active.
bool namespace_active(const Lister& namespaces, const std::string& name) {
  ObjectPtr ns = namespaces.get(name);
  if (ns == nullptr || is_terminating(*ns)) return false;
  auto status = ns->find("status");
  std::string phase = status != ns->end() && status->is_object() ? status->value("phase", "") : "";
  return phase.empty() || phase == "Active";
}

// Creates refused because the namespace is terminating are not retried. A
// 404 is: the informers may announce a namespace a moment before the API
// server's reads include it; the retry first looks at the namespace again.
bool terminating(const ApiResult& r) {
  if (r.code != 403 || !r.body.is_object()) return false;
  const json details = r.body.value("details", json::object());
  for (const json& c : details.value("causes", json::array()))
    if (c.is_object() && c.value("reason", "") == "NamespaceTerminating") return true;
  return false;
}

Status failure(const ApiResult& r, const std::string& what) {
  std::string msg = r.body.is_object() ? r.body.value("message", "") : std::string();
  return Status::internal(what + ": " + (msg.empty() ? "HTTP " + std::to_string(r.code) : msg));
}

class ServiceAccountController final : public Controller {
 public:
  explicit ServiceAccountController(Context& ctx)
      : Controller(ctx, "serviceaccount-controller"),
        namespaces_(ctx.informers.cache({"core", "namespaces"})),
        accounts_(ctx.informers.cache({"core", "serviceaccounts"})) {
    ctx.informers.on_event({"core", "namespaces"}, [this](const ObjectEvent& e) {
      if (e.type != EventType::kDeleted) queue().add(e.key);
    });
    ctx.informers.on_event({"core", "serviceaccounts"}, [this](const ObjectEvent& e) {
      if (e.type == EventType::kDeleted && meta(*e.object, "name") == kDefaultAccount)
        queue().add(meta(*e.object, "namespace"));
    });
  }

 protected:
  Status reconcile(const std::string& ns) override {
    if (!namespace_active(namespaces_, ns)) return Status::ok();
    if (accounts_.get(ns, kDefaultAccount) != nullptr) return Status::ok();
    json sa = {{"apiVersion", "v1"},
               {"kind", "ServiceAccount"},
               {"metadata", {{"name", kDefaultAccount}}}};
    ApiResult r = ctx_.client.call("POST", api_path("v1", "serviceaccounts", ns), sa);
    if (!r.ok() && r.code != 409 && !terminating(r))
      return failure(r, "create serviceaccount " + ns + "/" + kDefaultAccount);
    ctx_.informers.sync();
    return Status::ok();
  }

 private:
  const Lister& namespaces_;
  const Lister& accounts_;
};

class RootCAPublisher final : public Controller {
 public:
  explicit RootCAPublisher(Context& ctx)
      : Controller(ctx, "root-ca-cert-publisher"),
        namespaces_(ctx.informers.cache({"core", "namespaces"})),
        config_maps_(ctx.informers.cache({"core", "configmaps"}, [](std::string_view key) {
          return key.substr(key.find('/') + 1) == kRootCAConfigMap;
        })) {
    ctx.informers.on_event({"core", "namespaces"}, [this](const ObjectEvent& e) {
      if (e.type != EventType::kDeleted) queue().add(e.key);
    });
    ctx.informers.on_event({"core", "configmaps"}, [this](const ObjectEvent& e) {
      if (e.type != EventType::kAdded && meta(*e.object, "name") == kRootCAConfigMap)
        queue().add(meta(*e.object, "namespace"));
    });
  }

 protected:
  Status reconcile(const std::string& ns) override {
    if (!namespace_active(namespaces_, ns)) return Status::ok();
    const json data = {{"ca.crt", ctx_.options.root_ca_pem}};
    ObjectPtr cm = config_maps_.get(ns, kRootCAConfigMap);
    ApiResult r;
    if (cm == nullptr) {
      json created = {
          {"apiVersion", "v1"},
          {"kind", "ConfigMap"},
          {"metadata",
           {{"name", kRootCAConfigMap}, {"annotations", {{kDescriptionAnnotation, kDescription}}}}},
          {"data", data}};
      r = ctx_.client.call("POST", api_path("v1", "configmaps", ns), created);
      if (!r.ok() && !terminating(r))
        return failure(r, "create configmap " + ns + "/" + kRootCAConfigMap);
    } else {
      const json& m = (*cm)["metadata"];
      auto annotations = m.find("annotations");
      bool described = annotations != m.end() && annotations->is_object() &&
                       !annotations->value(kDescriptionAnnotation, "").empty();
      if (cm->value("data", json()) == data && described) return Status::ok();
      json next = *cm;
      next["data"] = data;
      json& a = next["metadata"]["annotations"];
      if (!a.is_object()) a = json::object();
      if (a.value(kDescriptionAnnotation, json("")) == "") a[kDescriptionAnnotation] = kDescription;
      r = ctx_.client.call("PUT", api_path("v1", "configmaps", ns, kRootCAConfigMap), next);
      // A conflict is retried against the newer version, a 404 as a create.
      if (!r.ok()) return failure(r, "update configmap " + ns + "/" + kRootCAConfigMap);
    }
    ctx_.informers.sync();
    return Status::ok();
  }

 private:
  const Lister& namespaces_;
  const Lister& config_maps_;
};

}  // namespace

std::unique_ptr<Controller> make_serviceaccount_controller(Context& ctx) {
  return std::make_unique<ServiceAccountController>(ctx);
}

std::unique_ptr<Controller> make_root_ca_controller(Context& ctx) {
  if (ctx.options.root_ca_pem.empty()) {
    VKUBE_LOG(info, "no root CA configured: the root-ca-cert-publisher does not run");
    return nullptr;
  }
  return std::make_unique<RootCAPublisher>(ctx);
}

}  // namespace vkube::controllers
