// Defaulting of the built-in kinds, checked against what a kube-apiserver 1.32
// cluster shows (`kubectl get -o json`) after creating the same objects.
#include <catch2/catch.hpp>

#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "kinds.h"

namespace vkube::apiserver::builtin {
namespace {

using json = nlohmann::json;

const api::Resource& resource(const std::string& group, const std::string& kind) {
  for (const Kind& k : builtin_kinds()) {
    if (k.resource.gv.group == group && k.resource.kind == kind) return k.resource;
  }
  FAIL("no built-in kind " << group << "/" << kind);
  throw;  // unreachable
}

json defaulted(const std::string& group, const std::string& kind, json obj) {
  apply_defaults(resource(group, kind), obj);
  return obj;
}

// What kube adds to every container.
json container_defaults(const std::string& name, const std::string& image, const char* pull) {
  return {{"name", name},
          {"image", image},
          {"imagePullPolicy", pull},
          {"resources", json::object()},
          {"terminationMessagePath", "/dev/termination-log"},
          {"terminationMessagePolicy", "File"}};
}

TEST_CASE("a pod gets the fields a real cluster shows after create", "[kinds]") {
  json pod = defaulted("", "Pod",
                       {{"metadata", {{"name", "web"}, {"namespace", "default"}}},
                        {"spec", {{"containers", {{{"name", "nginx"}, {"image", "nginx"}}}}}}});
  json want = {{"containers", {container_defaults("nginx", "nginx", "Always")}},
               {"dnsPolicy", "ClusterFirst"},
               {"enableServiceLinks", true},
               {"preemptionPolicy", "PreemptLowerPriority"},
               {"priority", 0},
               {"restartPolicy", "Always"},
               {"schedulerName", "default-scheduler"},
               {"securityContext", json::object()},
               {"serviceAccount", "default"},
               {"serviceAccountName", "default"},
               {"terminationGracePeriodSeconds", 30},
               {"tolerations",
                {{{"effect", "NoExecute"},
                  {"key", "node.kubernetes.io/not-ready"},
                  {"operator", "Exists"},
                  {"tolerationSeconds", 300}},
                 {{"effect", "NoExecute"},
                  {"key", "node.kubernetes.io/unreachable"},
                  {"operator", "Exists"},
                  {"tolerationSeconds", 300}}}}};
  CHECK(pod["spec"] == want);
}

TEST_CASE("image pull policy follows the image tag", "[kinds]") {
  auto policy = [](const std::string& image) {
    json pod =
        defaulted("", "Pod", {{"spec", {{"containers", {{{"name", "c"}, {"image", image}}}}}}});
    return pod["spec"]["containers"][0]["imagePullPolicy"].get<std::string>();
  };
  CHECK(policy("nginx") == "Always");
  CHECK(policy("nginx:latest") == "Always");
  CHECK(policy("nginx:1.27") == "IfNotPresent");
  CHECK(policy("localhost:5000/app") == "Always");
  CHECK(policy("localhost:5000/app:v2") == "IfNotPresent");
  CHECK(policy("nginx@sha256:0123456789abcdef") == "IfNotPresent");
  CHECK(policy("") == "IfNotPresent");
}

TEST_CASE("pod defaults reach ports, probes, env, volumes and init containers", "[kinds]") {
  json pod = defaulted(
      "", "Pod",
      {{"spec",
        {{"hostNetwork", true},
         {"serviceAccountName", "builder"},
         {"tolerations", {{{"operator", "Exists"}}}},
         {"initContainers", {{{"name", "init"}, {"image", "busybox:1.36"}}}},
         {"containers",
          {{{"name", "app"},
            {"image", "app:v1"},
            {"ports", {{{"containerPort", 8080}}}},
            {"resources", {{"limits", {{"cpu", "1"}}}}},
            {"env",
             {{{"name", "NODE"}, {"valueFrom", {{"fieldRef", {{"fieldPath", "spec.nodeName"}}}}}}}},
            {"livenessProbe", {{"httpGet", {{"port", 8080}}}}}}}},
         {"volumes",
          {{{"name", "scratch"}},
           {{"name", "cfg"}, {"configMap", {{"name", "cfg"}}}},
           {{"name", "host"}, {"hostPath", {{"path", "/var/log"}}}}}}}}});
  const json& spec = pod["spec"];
  const json& app = spec["containers"][0];
  CHECK(app["ports"][0] == json{{"containerPort", 8080}, {"hostPort", 8080}, {"protocol", "TCP"}});
  CHECK(app["resources"]["requests"] == json{{"cpu", "1"}});
  CHECK(app["env"][0]["valueFrom"]["fieldRef"]["apiVersion"] == "v1");
  CHECK(app["livenessProbe"] ==
        json{{"httpGet", {{"port", 8080}, {"path", "/"}, {"scheme", "HTTP"}}},
             {"timeoutSeconds", 1},
             {"periodSeconds", 10},
             {"successThreshold", 1},
             {"failureThreshold", 3}});
  CHECK(spec["initContainers"][0] == container_defaults("init", "busybox:1.36", "IfNotPresent"));
  CHECK(spec["volumes"][0] == json{{"name", "scratch"}, {"emptyDir", json::object()}});
  CHECK(spec["volumes"][1]["configMap"]["defaultMode"] == 420);
  CHECK(spec["volumes"][2]["hostPath"] == json{{"path", "/var/log"}, {"type", ""}});
  CHECK(spec["serviceAccount"] == "builder");
  // A toleration of every taint already covers not-ready and unreachable.
  CHECK(spec["tolerations"] == json{{{"operator", "Exists"}}});
}

TEST_CASE("a deployment gets strategy and limits, its template the pod spec defaults", "[kinds]") {
  json d =
      defaulted("apps", "Deployment",
                {{"spec",
                  {{"selector", {{"matchLabels", {{"app", "web"}}}}},
                   {"template",
                    {{"metadata", {{"labels", {{"app", "web"}}}}},
                     {"spec", {{"containers", {{{"name", "web"}, {"image", "nginx:1.27"}}}}}}}}}}});
  const json& spec = d["spec"];
  CHECK(spec["replicas"] == 1);
  CHECK(spec["strategy"] ==
        json{{"type", "RollingUpdate"},
             {"rollingUpdate", {{"maxSurge", "25%"}, {"maxUnavailable", "25%"}}}});
  CHECK(spec["revisionHistoryLimit"] == 10);
  CHECK(spec["progressDeadlineSeconds"] == 600);
  const json& pod = spec["template"]["spec"];
  CHECK(pod["restartPolicy"] == "Always");
  CHECK(pod["dnsPolicy"] == "ClusterFirst");
  CHECK(pod["terminationGracePeriodSeconds"] == 30);
  CHECK(pod["containers"][0] == container_defaults("web", "nginx:1.27", "IfNotPresent"));
  // Pod-only defaults and admission stay out of templates, as on a cluster.
  CHECK_FALSE(pod.contains("enableServiceLinks"));
  CHECK_FALSE(pod.contains("tolerations"));
  CHECK_FALSE(pod.contains("serviceAccountName"));
}

TEST_CASE("a recreate deployment gets no rolling update parameters", "[kinds]") {
  json d = defaulted("apps", "Deployment", {{"spec", {{"strategy", {{"type", "Recreate"}}}}}});
  CHECK(d["spec"]["strategy"] == json{{"type", "Recreate"}});
}

TEST_CASE("a job gets its generated selector and labels from its uid and name", "[kinds]") {
  const std::string uid = "5f0c7a1e-3b9d-4f61-9c2e-0a1b2c3d4e5f";
  json job = defaulted("batch", "Job",
                       {{"metadata", {{"name", "pi"}, {"namespace", "default"}, {"uid", uid}}},
                        {"spec",
                         {{"template",
                           {{"spec",
                             {{"restartPolicy", "Never"},
                              {"containers", {{{"name", "pi"}, {"image", "perl"}}}}}}}}}}});
  const json& spec = job["spec"];
  CHECK(spec["completions"] == 1);
  CHECK(spec["parallelism"] == 1);
  CHECK(spec["backoffLimit"] == 6);
  CHECK(spec["completionMode"] == "NonIndexed");
  CHECK(spec["suspend"] == false);
  CHECK(spec["podReplacementPolicy"] == "TerminatingOrFailed");
  CHECK_FALSE(spec.contains("manualSelector"));
  CHECK(spec["selector"] == json{{"matchLabels", {{"batch.kubernetes.io/controller-uid", uid}}}});
  json labels = {{"batch.kubernetes.io/controller-uid", uid},
                 {"batch.kubernetes.io/job-name", "pi"},
                 {"controller-uid", uid},
                 {"job-name", "pi"}};
  CHECK(spec["template"]["metadata"]["labels"] == labels);
  CHECK(job["metadata"]["labels"] == labels);
  CHECK(spec["template"]["spec"]["restartPolicy"] == "Never");
}

TEST_CASE("a job with a manual selector keeps it, and parallel jobs keep completions unset",
          "[kinds]") {
  json job = defaulted("batch", "Job",
                       {{"metadata", {{"name", "w"}, {"uid", "u1"}}},
                        {"spec",
                         {{"manualSelector", true},
                          {"parallelism", 3},
                          {"selector", {{"matchLabels", {{"app", "w"}}}}},
                          {"template", {{"metadata", {{"labels", {{"app", "w"}}}}}}}}}});
  CHECK(job["spec"]["selector"] == json{{"matchLabels", {{"app", "w"}}}});
  CHECK(job["spec"]["template"]["metadata"]["labels"] == json{{"app", "w"}});
  CHECK_FALSE(job["spec"].contains("completions"));
  CHECK(job["spec"]["parallelism"] == 3);
}

TEST_CASE("a cron job's job template gets pod spec defaults only", "[kinds]") {
  json cj =
      defaulted("batch", "CronJob",
                {{"spec",
                  {{"schedule", "*/5 * * * *"},
                   {"jobTemplate",
                    {{"spec",
                      {{"template",
                        {{"spec",
                          {{"restartPolicy", "OnFailure"},
                           {"containers", {{{"name", "c"}, {"image", "busybox"}}}}}}}}}}}}}}});
  const json& spec = cj["spec"];
  CHECK(spec["concurrencyPolicy"] == "Allow");
  CHECK(spec["suspend"] == false);
  CHECK(spec["successfulJobsHistoryLimit"] == 3);
  CHECK(spec["failedJobsHistoryLimit"] == 1);
  const json& job_spec = spec["jobTemplate"]["spec"];
  CHECK_FALSE(job_spec.contains("backoffLimit"));
  CHECK(job_spec["template"]["spec"]["schedulerName"] == "default-scheduler");
}

TEST_CASE("a service gets type, affinity, traffic policies and its IP family", "[kinds]") {
  json svc = defaulted("", "Service",
                       {{"spec", {{"selector", {{"app", "web"}}}, {"ports", {{{"port", 80}}}}}}});
  CHECK(svc["spec"] == json{{"selector", {{"app", "web"}}},
                            {"ports", {{{"port", 80}, {"protocol", "TCP"}, {"targetPort", 80}}}},
                            {"type", "ClusterIP"},
                            {"sessionAffinity", "None"},
                            {"internalTrafficPolicy", "Cluster"},
                            {"ipFamilyPolicy", "SingleStack"},
                            {"ipFamilies", {"IPv4"}}});

  json node_port = defaulted(
      "", "Service",
      {{"spec", {{"type", "NodePort"}, {"ports", {{{"port", 443}, {"targetPort", "https"}}}}}}});
  CHECK(node_port["spec"]["externalTrafficPolicy"] == "Cluster");
  CHECK(node_port["spec"]["ports"][0]["targetPort"] == "https");

  json lb =
      defaulted("", "Service", {{"spec", {{"type", "LoadBalancer"}, {"ports", {{{"port", 80}}}}}}});
  CHECK(lb["spec"]["allocateLoadBalancerNodePorts"] == true);

  json external = defaulted(
      "", "Service", {{"spec", {{"type", "ExternalName"}, {"externalName", "db.example.com"}}}});
  CHECK_FALSE(external["spec"].contains("ipFamilies"));
  CHECK_FALSE(external["spec"].contains("internalTrafficPolicy"));

  json sticky = defaulted("", "Service", {{"spec", {{"sessionAffinity", "ClientIP"}}}});
  CHECK(sticky["spec"]["sessionAffinityConfig"] == json{{"clientIP", {{"timeoutSeconds", 10800}}}});
}

TEST_CASE("a namespace gets its name label, finalizer and phase", "[kinds]") {
  json ns = defaulted("", "Namespace", {{"metadata", {{"name", "team-a"}}}});
  CHECK(ns["metadata"]["labels"] == json{{"kubernetes.io/metadata.name", "team-a"}});
  CHECK(ns["spec"] == json{{"finalizers", {"kubernetes"}}});
  CHECK(ns["status"] == json{{"phase", "Active"}});
}

TEST_CASE("a secret is Opaque by default and stringData moves into data", "[kinds]") {
  json secret = defaulted(
      "", "Secret", {{"data", {{"a", "YQ=="}}}, {"stringData", {{"b", "hello"}, {"a", "x"}}}});
  CHECK(secret["type"] == "Opaque");
  CHECK(secret["data"] == json{{"a", "eA=="}, {"b", "aGVsbG8="}});
  CHECK_FALSE(secret.contains("stringData"));
}

TEST_CASE("other kinds get their kube-apiserver defaults", "[kinds]") {
  json sts = defaulted("apps", "StatefulSet",
                       {{"spec",
                         {{"volumeClaimTemplates",
                           {{{"metadata", {{"name", "data"}}}, {"spec", json::object()}}}}}}});
  CHECK(sts["spec"]["podManagementPolicy"] == "OrderedReady");
  CHECK(sts["spec"]["updateStrategy"] ==
        json{{"type", "RollingUpdate"}, {"rollingUpdate", {{"partition", 0}}}});
  CHECK(sts["spec"]["persistentVolumeClaimRetentionPolicy"] ==
        json{{"whenDeleted", "Retain"}, {"whenScaled", "Retain"}});
  CHECK(sts["spec"]["volumeClaimTemplates"][0]["spec"]["volumeMode"] == "Filesystem");

  json ds = defaulted("apps", "DaemonSet", json::object());
  CHECK(
      ds["spec"]["updateStrategy"] ==
      json{{"type", "RollingUpdate"}, {"rollingUpdate", {{"maxSurge", 0}, {"maxUnavailable", 1}}}});

  json rc = defaulted("", "ReplicationController",
                      {{"spec", {{"template", {{"metadata", {{"labels", {{"app", "x"}}}}}}}}}});
  CHECK(rc["spec"]["selector"] == json{{"app", "x"}});
  CHECK(rc["metadata"]["labels"] == json{{"app", "x"}});
  CHECK(rc["spec"]["replicas"] == 1);

  json np = defaulted("networking.k8s.io", "NetworkPolicy",
                      {{"spec", {{"egress", {{{"ports", {{{"port", 53}}}}}}}}}});
  CHECK(np["spec"]["policyTypes"] == json{"Ingress", "Egress"});
  CHECK(np["spec"]["egress"][0]["ports"][0]["protocol"] == "TCP");

  json rb = defaulted(
      "rbac.authorization.k8s.io", "RoleBinding",
      {{"roleRef", {{"kind", "Role"}, {"name", "r"}}},
       {"subjects",
        {{{"kind", "User"}, {"name", "u"}}, {{"kind", "ServiceAccount"}, {"name", "s"}}}}});
  CHECK(rb["roleRef"]["apiGroup"] == "rbac.authorization.k8s.io");
  CHECK(rb["subjects"][0]["apiGroup"] == "rbac.authorization.k8s.io");
  CHECK(rb["subjects"][1]["apiGroup"] == "");

  CHECK(defaulted("", "PersistentVolumeClaim", json::object())["spec"]["volumeMode"] ==
        "Filesystem");
  json pv = defaulted("", "PersistentVolume", json::object());
  CHECK(pv["spec"]["persistentVolumeReclaimPolicy"] == "Retain");
  CHECK(pv["spec"]["volumeMode"] == "Filesystem");
  json sc = defaulted("storage.k8s.io", "StorageClass", {{"provisioner", "x"}});
  CHECK(sc["reclaimPolicy"] == "Delete");
  CHECK(sc["volumeBindingMode"] == "Immediate");
  CHECK(defaulted("scheduling.k8s.io", "PriorityClass", {{"value", 5}})["preemptionPolicy"] ==
        "PreemptLowerPriority");
  json slice = defaulted("discovery.k8s.io", "EndpointSlice", {{"ports", {{{"port", 80}}}}});
  CHECK(slice["ports"][0] == json{{"port", 80}, {"name", ""}, {"protocol", "TCP"}});
  json crd =
      defaulted("apiextensions.k8s.io", "CustomResourceDefinition", {{"spec", json::object()}});
  CHECK(crd["spec"]["conversion"] == json{{"strategy", "None"}});
}

// Samples rich enough to reach most defaulting and validation branches.
std::vector<json> samples() {
  json container = {{"name", "a"},
                    {"image", "a:1"},
                    {"ports", {{{"containerPort", 80}, {"name", "http"}}}},
                    {"env", {{{"name", "N"}, {"valueFrom", {{"fieldRef", {{"fieldPath", "x"}}}}}}}},
                    {"resources", {{"limits", {{"cpu", "1"}}}, {"requests", {{"cpu", "500m"}}}}},
                    {"volumeMounts", {{{"name", "v"}, {"mountPath", "/v"}}}},
                    {"livenessProbe", {{"httpGet", {{"port", 80}}}}},
                    {"lifecycle", {{"preStop", {{"httpGet", {{"port", 80}}}}}}}};
  json pod_spec = {
      {"containers", {container}},
      {"initContainers", {container}},
      {"tolerations", {{{"key", "k"}, {"operator", "Exists"}}}},
      {"volumes",
       {{{"name", "v"}},
        {{"name", "p"},
         {"projected", {{"sources", {{{"serviceAccountToken", {{"path", "t"}}}}}}}}}}}};
  json tmpl = {{"metadata", {{"labels", {{"app", "a"}}}}}, {"spec", pod_spec}};
  json selector = {{"matchLabels", {{"app", "a"}}},
                   {"matchExpressions", {{{"key", "app"}, {"operator", "In"}, {"values", {"a"}}}}}};
  return {
      json::object(),
      {{"metadata", {{"name", "n"}, {"uid", "u"}}}, {"spec", pod_spec}},
      {{"metadata", {{"name", "n"}, {"uid", "u"}}},
       {"spec",
        {{"template", tmpl},
         {"selector", selector},
         {"strategy", {{"type", "RollingUpdate"}, {"rollingUpdate", {{"maxSurge", "50%"}}}}},
         {"updateStrategy", {{"type", "RollingUpdate"}}},
         {"ports", {{{"port", 80}, {"targetPort", "http"}}}},
         {"type", "NodePort"},
         {"podFailurePolicy", {{"rules", {{{"onPodConditions", {json::object()}}}}}}}}}},
      {{"spec",
        {{"schedule", "0 * * * *"},
         {"jobTemplate", {{"spec", {{"template", tmpl}}}}},
         {"egress", {{{"ports", {{{"port", 1}}}}}}},
         {"rules",
          {{{"host", "h"}, {"http", {{"paths", {{{"path", "/"}, {"backend", json::object()}}}}}}}}},
         {"limits", {{{"type", "Container"}, {"max", {{"cpu", "1"}}}}}}}},
       {"status", {{"capacity", {{"cpu", "1"}}}}}},
      {{"stringData", {{"k", "v"}}},
       {"data", {{"a", "YQ=="}}},
       {"roleRef", {{"name", "r"}}},
       {"rules", {{{"verbs", {"get"}}}}},
       {"subjects", {{{"kind", "Group"}, {"name", "g"}}}},
       {"involvedObject", {{"namespace", "x"}}}},
  };
}

TEST_CASE("defaulting twice changes nothing the first pass did not", "[kinds]") {
  for (const Kind& k : builtin_kinds()) {
    for (const json& sample : samples()) {
      json once = sample;
      apply_defaults(k.resource, once);
      json twice = once;
      apply_defaults(k.resource, twice);
      INFO(k.resource.kind << " from " << sample.dump());
      CHECK(twice == once);
    }
  }
}

// Values of every JSON type, for fields that expect another.
json wrong_value(std::mt19937& rng) {
  static const json kValues[] = {
      nullptr,        7,          "x",   json::array({1, "a", nullptr}), true, -1.5,
      json::object(), {{"x", 1}}, 1e300, json::array({json::object()})};
  return kValues[std::uniform_int_distribution<size_t>(0, std::size(kValues) - 1)(rng)];
}

void collect_nodes(json& node, std::vector<json*>& out) {
  out.push_back(&node);
  if (node.is_structured()) {
    for (json& child : node) collect_nodes(child, out);
  }
}

// A sample with a few of its fields, at any depth, replaced by wrong types.
json mutate(const json& sample, std::mt19937& rng) {
  json obj = sample;
  int changes = std::uniform_int_distribution<int>(1, 4)(rng);
  for (int i = 0; i < changes; ++i) {
    std::vector<json*> nodes;
    collect_nodes(obj, nodes);
    if (nodes.size() < 2) break;
    json* target = nodes[std::uniform_int_distribution<size_t>(1, nodes.size() - 1)(rng)];
    *target = wrong_value(rng);
  }
  return obj;
}

// The fields defaulting and validation read, each set to a value of a random
// type, one level of objects deep.
json flat_garbage(std::mt19937& rng, int depth) {
  static const char* kKeys[] = {"metadata",
                                "spec",
                                "template",
                                "containers",
                                "initContainers",
                                "volumes",
                                "ports",
                                "env",
                                "selector",
                                "matchLabels",
                                "matchExpressions",
                                "labels",
                                "strategy",
                                "rollingUpdate",
                                "updateStrategy",
                                "jobTemplate",
                                "data",
                                "stringData",
                                "binaryData",
                                "type",
                                "name",
                                "image",
                                "port",
                                "targetPort",
                                "resources",
                                "tolerations",
                                "status",
                                "subjects",
                                "roleRef",
                                "rules",
                                "http",
                                "paths",
                                "uid",
                                "volumeClaimTemplates",
                                "egress",
                                "capacity",
                                "subsets",
                                "conversion",
                                "sessionAffinity",
                                "clusterIP",
                                "schedule",
                                "minAvailable",
                                "maxUnavailable",
                                "value",
                                "serviceAccountName",
                                "immutable",
                                "involvedObject",
                                "eventTime"};
  json obj = json::object();
  for (const char* k : kKeys) {
    if (std::uniform_int_distribution<int>(0, 3)(rng) == 0) continue;
    obj[k] = depth > 0 && std::uniform_int_distribution<int>(0, 2)(rng) == 0
                 ? flat_garbage(rng, depth - 1)
                 : wrong_value(rng);
  }
  return obj;
}

TEST_CASE("defaulting and validation never throw on garbage of any kind", "[kinds]") {
  std::mt19937 rng(42);
  std::vector<json> inputs = {nullptr,
                              5,
                              "x",
                              json::array(),
                              json::object(),
                              {{"spec", 5}},
                              {{"spec", {{"template", "x"}}}},
                              {{"spec", {{"containers", "x"}}}}};
  for (int i = 0; i < 10; ++i) inputs.push_back(flat_garbage(rng, 1));
  for (const json& sample : samples()) {
    for (int i = 0; i < 30; ++i) inputs.push_back(mutate(sample, rng));
  }
  for (const Kind& k : builtin_kinds()) {
    for (const json& input : inputs) {
      INFO(k.resource.kind << ": " << input.dump());
      json obj = input;
      REQUIRE_NOTHROW(apply_defaults(k.resource, obj));
      FieldErrors errs;
      REQUIRE_NOTHROW(validate(k.resource, obj, nullptr, errs));
      REQUIRE_NOTHROW(validate(k.resource, obj, &input, errs));
      REQUIRE_NOTHROW(validate(k.resource, input, &obj, errs));
      for (const FieldError& e : errs) REQUIRE_NOTHROW(e.to_string());
    }
  }
}

}  // namespace
}  // namespace vkube::apiserver::builtin
