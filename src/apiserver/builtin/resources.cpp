// The built-in resource table. Adding a built-in kind starts with a row here.
#include "kinds.h"

namespace vkube::apiserver::builtin {

namespace {

using api::GroupVersion;

struct Row {
  const char* group;
  const char* version;
  const char* kind;
  const char* plural;
  bool namespaced;
  std::vector<std::string> short_names = {};
  std::vector<std::string> categories = {};
  bool status = false;
  bool scale = false;
  bool generation = false;
  NameRule name_rule = NameRule::kSubdomain;
  std::vector<std::string> fields = {};
  bool return_deleted = false;
  std::vector<std::string> verbs = {};
  const char* storage_of = "";
  bool create_only = false;
};

std::string lowercase(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::vector<Kind> build() {
  const std::vector<std::string> all = {"all"};
  const std::vector<std::string> cluster_readonly = {"get", "list", "watch"};
  std::vector<Row> rows = {
      // core/v1
      {"", "v1", "Namespace", "namespaces", false, {"ns"}, {}, true, false, false,
       NameRule::kLabel, {"status.phase"}, true,
       {"create", "delete", "get", "list", "patch", "update", "watch"}},
      {"", "v1", "Pod", "pods", true, {"po"}, all, true, false, false, NameRule::kSubdomain,
       {"spec.nodeName", "spec.restartPolicy", "spec.schedulerName", "spec.serviceAccountName",
        "spec.hostNetwork", "status.phase", "status.podIP", "status.nominatedNodeName"},
       true},
      // POST only: binds a pod to a node as pods/<name>/binding does
      // (binding.cpp); kube keeps it for older schedulers.
      {"", "v1", "Binding", "bindings", true, {}, {}, false, false, false, NameRule::kSubdomain,
       {}, false, {"create"}, "", true},
      {"", "v1", "Service", "services", true, {"svc"}, all, true, false, false,
       NameRule::kDns1035Label, {}, true},
      {"", "v1", "Endpoints", "endpoints", true, {"ep"}},
      {"", "v1", "ConfigMap", "configmaps", true, {"cm"}},
      {"", "v1", "Secret", "secrets", true, {}, {}, false, false, false, NameRule::kSubdomain,
       {"type"}},
      {"", "v1", "ServiceAccount", "serviceaccounts", true, {"sa"}},
      {"", "v1", "Event", "events", true, {"ev"}, {}, false, false, false, NameRule::kSubdomain,
       {"involvedObject.kind", "involvedObject.namespace", "involvedObject.name",
        "involvedObject.uid", "involvedObject.apiVersion", "involvedObject.resourceVersion",
        "involvedObject.fieldPath", "reason", "reportingComponent", "source", "type"}},
      {"", "v1", "Node", "nodes", false, {"no"}, {}, true, false, false, NameRule::kSubdomain,
       {"spec.unschedulable"}},
      {"", "v1", "PersistentVolumeClaim", "persistentvolumeclaims", true, {"pvc"}, {}, true},
      {"", "v1", "PersistentVolume", "persistentvolumes", false, {"pv"}, {}, true},
      {"", "v1", "ResourceQuota", "resourcequotas", true, {"quota"}, {}, true},
      {"", "v1", "LimitRange", "limitranges", true, {"limits"}},
      {"", "v1", "ReplicationController", "replicationcontrollers", true, {"rc"}, all, true, true,
       true, NameRule::kSubdomain, {"status.replicas"}},
      {"", "v1", "PodTemplate", "podtemplates", true},
      // apps/v1
      {"apps", "v1", "Deployment", "deployments", true, {"deploy"}, all, true, true, true},
      {"apps", "v1", "ReplicaSet", "replicasets", true, {"rs"}, all, true, true, true,
       NameRule::kSubdomain, {"status.replicas"}},
      {"apps", "v1", "StatefulSet", "statefulsets", true, {"sts"}, all, true, true, true},
      {"apps", "v1", "DaemonSet", "daemonsets", true, {"ds"}, all, true, false, true},
      {"apps", "v1", "ControllerRevision", "controllerrevisions", true},
      // batch/v1
      {"batch", "v1", "Job", "jobs", true, {}, all, true, false, true},
      {"batch", "v1", "CronJob", "cronjobs", true, {"cj"}, all, true, false, true},
      // rbac.authorization.k8s.io/v1
      {"rbac.authorization.k8s.io", "v1", "Role", "roles", true, {}, {}, false, false, false,
       NameRule::kPathSegment},
      {"rbac.authorization.k8s.io", "v1", "RoleBinding", "rolebindings", true, {}, {}, false,
       false, false, NameRule::kPathSegment},
      {"rbac.authorization.k8s.io", "v1", "ClusterRole", "clusterroles", false, {}, {}, false,
       false, false, NameRule::kPathSegment},
      {"rbac.authorization.k8s.io", "v1", "ClusterRoleBinding", "clusterrolebindings", false, {},
       {}, false, false, false, NameRule::kPathSegment},
      // networking.k8s.io/v1
      {"networking.k8s.io", "v1", "Ingress", "ingresses", true, {"ing"}, {}, true, false, true},
      {"networking.k8s.io", "v1", "IngressClass", "ingressclasses", false, {}, {}, false, false,
       true},
      {"networking.k8s.io", "v1", "NetworkPolicy", "networkpolicies", true, {"netpol"}, {}, false,
       false, true},
      // policy/v1
      {"policy", "v1", "PodDisruptionBudget", "poddisruptionbudgets", true, {"pdb"}, {}, true,
       false, true},
      // storage.k8s.io/v1
      {"storage.k8s.io", "v1", "StorageClass", "storageclasses", false, {"sc"}},
      {"storage.k8s.io", "v1", "CSIDriver", "csidrivers", false},
      {"storage.k8s.io", "v1", "CSINode", "csinodes", false},
      {"storage.k8s.io", "v1", "VolumeAttachment", "volumeattachments", false, {}, {}, true},
      // node.k8s.io/v1
      {"node.k8s.io", "v1", "RuntimeClass", "runtimeclasses", false},
      // scheduling.k8s.io/v1
      {"scheduling.k8s.io", "v1", "PriorityClass", "priorityclasses", false, {"pc"}},
      // admissionregistration.k8s.io/v1
      {"admissionregistration.k8s.io", "v1", "MutatingWebhookConfiguration",
       "mutatingwebhookconfigurations", false, {}, {"api-extensions"}, false, false, true},
      {"admissionregistration.k8s.io", "v1", "ValidatingWebhookConfiguration",
       "validatingwebhookconfigurations", false, {}, {"api-extensions"}, false, false, true},
      {"admissionregistration.k8s.io", "v1", "ValidatingAdmissionPolicy",
       "validatingadmissionpolicies", false, {}, {"api-extensions"}, true, false, true},
      {"admissionregistration.k8s.io", "v1", "ValidatingAdmissionPolicyBinding",
       "validatingadmissionpolicybindings", false, {}, {"api-extensions"}, false, false, true},
      // certificates.k8s.io/v1: any name will do, as in kube (approval via
      // the certificates strategy, apiserver/certificates.cpp)
      {"certificates.k8s.io", "v1", "CertificateSigningRequest", "certificatesigningrequests",
       false, {"csr"}, {}, true, false, false, NameRule::kPathSegment, {"spec.signerName"}},
      // coordination.k8s.io/v1
      {"coordination.k8s.io", "v1", "Lease", "leases", true},
      // discovery.k8s.io/v1
      {"discovery.k8s.io", "v1", "EndpointSlice", "endpointslices", true, {}, {}, false, false,
       true},
      // events.k8s.io/v1: its own objects until field conversion to and from
      // core/v1 Events exists (the two spell their fields differently).
      {"events.k8s.io", "v1", "Event", "events", true, {"ev"}, {}, false, false, false,
       NameRule::kSubdomain, {"regarding.kind", "regarding.namespace", "regarding.name",
                              "reason", "type"}},
      // autoscaling/v2 and v1 share one set of objects
      {"autoscaling", "v2", "HorizontalPodAutoscaler", "horizontalpodautoscalers", true, {"hpa"},
       all, true, false, true},
      {"autoscaling", "v1", "HorizontalPodAutoscaler", "horizontalpodautoscalers", true, {"hpa"},
       all, true, false, true, NameRule::kSubdomain, {}, false, {},
       "autoscaling/horizontalpodautoscalers"},
      // authorization.k8s.io/v1 and authentication.k8s.io/v1: reviews, computed
      // by the authorizer (reviews.cpp), never stored.
      {"authorization.k8s.io", "v1", "SelfSubjectAccessReview", "selfsubjectaccessreviews",
       false, {}, {}, false, false, false, NameRule::kSubdomain, {}, false, {"create"}, "", true},
      {"authorization.k8s.io", "v1", "SelfSubjectRulesReview", "selfsubjectrulesreviews", false,
       {}, {}, false, false, false, NameRule::kSubdomain, {}, false, {"create"}, "", true},
      {"authorization.k8s.io", "v1", "SubjectAccessReview", "subjectaccessreviews", false, {},
       {}, false, false, false, NameRule::kSubdomain, {}, false, {"create"}, "", true},
      {"authorization.k8s.io", "v1", "LocalSubjectAccessReview", "localsubjectaccessreviews",
       true, {}, {}, false, false, false, NameRule::kSubdomain, {}, false, {"create"}, "", true},
      {"authentication.k8s.io", "v1", "SelfSubjectReview", "selfsubjectreviews", false, {}, {},
       false, false, false, NameRule::kSubdomain, {}, false, {"create"}, "", true},
      {"authentication.k8s.io", "v1", "TokenReview", "tokenreviews", false, {}, {}, false, false,
       false, NameRule::kSubdomain, {}, false, {"create"}, "", true},
      // metrics.k8s.io/v1beta1, as metrics-server serves it (`kubectl top`):
      // measured on every read by the MetricsProvider, never stored.
      {"metrics.k8s.io", "v1beta1", "NodeMetrics", "nodes", false, {}, {}, false, false, false,
       NameRule::kSubdomain, {}, false, {"get", "list"}},
      {"metrics.k8s.io", "v1beta1", "PodMetrics", "pods", true, {}, {}, false, false, false,
       NameRule::kSubdomain, {}, false, {"get", "list"}},
      // apiregistration.k8s.io/v1: who serves each group version (aggregator.cpp)
      {"apiregistration.k8s.io", "v1", "APIService", "apiservices", false, {},
       {"api-extensions"}, true, false, false, NameRule::kPathSegment},
      // apiextensions.k8s.io/v1 (stored and listed; serving custom kinds comes later)
      {"apiextensions.k8s.io", "v1", "CustomResourceDefinition", "customresourcedefinitions",
       false, {"crd", "crds"}, {"api-extensions"}, true, false, true, NameRule::kSubdomain, {},
       true},
  };

  std::vector<Kind> kinds;
  for (Row& row : rows) {
    Kind k;
    api::Resource& r = k.resource;
    r.gv = GroupVersion{row.group, row.version};
    r.kind = row.kind;
    r.plural = row.plural;
    r.singular = lowercase(row.kind);
    r.namespaced = row.namespaced;
    r.short_names = row.short_names;
    r.categories = row.categories;
    if (!row.verbs.empty()) r.verbs = row.verbs;
    r.status_subresource = row.status;
    r.scale_subresource = row.scale;
    r.selectable_fields = row.fields;
    r.storage_of = row.storage_of;
    k.has_generation = row.generation;
    k.name_rule = row.name_rule;
    k.return_deleted_object = row.return_deleted;
    k.create_only = row.create_only;
    r.columns = table_columns(r);
    k.strategy = strategy_for(r);
    if (k.create_only && k.strategy.handler == Handler::kStore) k.strategy.handler = Handler::kReview;
    kinds.push_back(std::move(k));
  }
  return kinds;
}

}  // namespace

const std::vector<Kind>& builtin_kinds() {
  static const std::vector<Kind> kKinds = build();
  return kKinds;
}

}  // namespace vkube::apiserver::builtin
