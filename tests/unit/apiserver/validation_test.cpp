// Kind-specific validation of the built-in kinds: the field errors a user
// sees in a 422 response, worded as kube-apiserver 1.32 words them.
#include <catch2/catch.hpp>

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

// Defaults `obj` (and `old`) as the create/update path does, validates, and
// returns the errors as kube prints them.
std::vector<std::string> errors(const std::string& group, const std::string& kind, json obj,
                                json old = nullptr) {
  const api::Resource& r = resource(group, kind);
  apply_defaults(r, obj);
  if (!old.is_null()) apply_defaults(r, old);
  FieldErrors errs;
  validate(r, obj, old.is_null() ? nullptr : &old, errs);
  std::vector<std::string> out;
  for (const FieldError& e : errs) out.push_back(e.to_string());
  return out;
}

using Catch::Matchers::VectorContains;
using Strings = std::vector<std::string>;

json container(const std::string& name = "app", const std::string& image = "nginx:1.27") {
  return {{"name", name}, {"image", image}};
}

json pod(json spec) {
  return {{"metadata", {{"name", "p"}, {"namespace", "default"}}}, {"spec", spec}};
}

json deployment(json selector_labels, json template_labels) {
  return {{"metadata", {{"name", "web"}}},
          {"spec",
           {{"selector", {{"matchLabels", selector_labels}}},
            {"template",
             {{"metadata", {{"labels", template_labels}}},
              {"spec", {{"containers", {container()}}}}}}}}};
}

json job(const std::string& uid, json pod_spec) {
  return {{"metadata", {{"name", "pi"}, {"uid", uid}}},
          {"spec", {{"template", {{"spec", pod_spec}}}}}};
}

TEST_CASE("a valid pod has no errors", "[kinds]") {
  CHECK(errors("", "Pod", pod({{"containers", {container()}}})).empty());
}

TEST_CASE("pod containers are required, named and imaged", "[kinds]") {
  CHECK(errors("", "Pod", pod(json::object())) == Strings{"spec.containers: Required value"});
  CHECK(errors("", "Pod", pod({{"containers", {container("app", "")}}})) ==
        Strings{"spec.containers[0].image: Required value"});
  CHECK(errors("", "Pod", pod({{"containers", {{{"image", "x"}}}}})) ==
        Strings{"spec.containers[0].name: Required value"});
  CHECK(errors("", "Pod", pod({{"containers", {container("a"), container("a")}}})) ==
        Strings{"spec.containers[1].name: Duplicate value: \"a\""});
  CHECK(errors("", "Pod",
               pod({{"containers", {container("a")}}, {"initContainers", {container("a")}}})) ==
        Strings{"spec.initContainers[0].name: Duplicate value: \"a\""});
  auto bad_name = errors("", "Pod", pod({{"containers", {container("Web_1")}}}));
  REQUIRE(bad_name.size() == 1);
  CHECK_THAT(bad_name[0],
             Catch::StartsWith(
                 "spec.containers[0].name: Invalid value: \"Web_1\": a lowercase RFC 1123 label"));
}

TEST_CASE("pod ports, policies, env and mounts are checked", "[kinds]") {
  json c = container();
  c["ports"] = {{{"containerPort", 70000}}, {{"containerPort", 80}, {"protocol", "ICMP"}}};
  c["env"] = {{{"name", "A=B"}}, {{"value", "x"}}};
  c["volumeMounts"] = {{{"name", "missing"}, {"mountPath", "/data"}},
                       {{"name", "cache"}, {"mountPath", "/data"}}};
  auto errs = errors("", "Pod",
                     pod({{"containers", {c}},
                          {"restartPolicy", "Sometimes"},
                          {"dnsPolicy", "Google"},
                          {"volumes", {{{"name", "cache"}}, {{"name", "cache"}}}}}));
  CHECK_THAT(errs,
             VectorContains(std::string("spec.containers[0].ports[0].containerPort: Invalid value: "
                                        "70000: must be between 1 and 65535, inclusive")));
  CHECK_THAT(errs,
             VectorContains(std::string("spec.containers[0].ports[1].protocol: Unsupported value: "
                                        "\"ICMP\": supported values: \"SCTP\", \"TCP\", \"UDP\"")));
  CHECK_THAT(errs, VectorContains(std::string("spec.containers[0].env[1].name: Required value")));
  CHECK_THAT(errs, VectorContains(std::string("spec.containers[0].volumeMounts[1].mountPath: "
                                              "Invalid value: \"/data\": must be unique")));
  CHECK_THAT(errs, VectorContains(std::string("spec.volumes[1].name: Duplicate value: \"cache\"")));
  CHECK_THAT(errs,
             VectorContains(std::string("spec.restartPolicy: Unsupported value: \"Sometimes\": "
                                        "supported values: \"Always\", \"OnFailure\", \"Never\"")));
  CHECK_THAT(errs, VectorContains(std::string(
                       "spec.dnsPolicy: Unsupported value: \"Google\": supported values: "
                       "\"ClusterFirstWithHostNet\", \"ClusterFirst\", \"Default\", \"None\"")));
  bool env_name = false;
  bool mount = false;
  for (const std::string& e : errs) {
    env_name |= e ==
                "spec.containers[0].env[0].name: Invalid value: \"A=B\": a valid environment "
                "variable name must consist only of printable ASCII characters other than '='";
    mount |= e.rfind("spec.containers[0].volumeMounts[0].name: ", 0) == 0 &&
             e.find("missing") != std::string::npos;
  }
  CHECK(env_name);
  CHECK(mount);
}

TEST_CASE("requests may not exceed limits", "[kinds]") {
  json c = container();
  c["resources"] = {{"requests", {{"cpu", "2"}, {"memory", "1Gi"}}},
                    {"limits", {{"cpu", "500m"}, {"memory", "2Gi"}}}};
  CHECK(
      errors("", "Pod", pod({{"containers", {c}}})) ==
      Strings{
          "spec.containers[0].resources.requests[cpu]: Invalid value: \"2\": must be less than or "
          "equal to cpu limit of 500m"});
}

TEST_CASE("a pod update may change images and add tolerations only", "[kinds]") {
  json old = pod({{"containers", {container()}}});
  json image = pod({{"containers", {container("app", "nginx:1.28")}}});
  CHECK(errors("", "Pod", image, old).empty());

  json tolerate = old;
  tolerate["spec"]["tolerations"] = {
      {{"key", "gpu"}, {"operator", "Exists"}, {"effect", "NoSchedule"}}};
  CHECK(errors("", "Pod", tolerate, old).empty());
  CHECK(errors("", "Pod", old, tolerate) ==
        Strings{"spec.tolerations: Forbidden: existing toleration can not be modified except its "
                "tolerationSeconds"});

  json ports = old;
  ports["spec"]["containers"][0]["ports"] = {{{"containerPort", 80}}};
  CHECK(
      errors("", "Pod", ports, old) ==
      Strings{
          "spec: Forbidden: pod updates may not change fields other than "
          "`spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,"
          "`spec.tolerations` (only additions to existing tolerations),"
          "`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously "
          "negative)"});

  json deadline = old;
  deadline["spec"]["activeDeadlineSeconds"] = 60;
  CHECK(errors("", "Pod", deadline, old).empty());
  json longer = old;
  longer["spec"]["activeDeadlineSeconds"] = 120;
  CHECK(errors("", "Pod", longer, deadline) ==
        Strings{"spec.activeDeadlineSeconds: Invalid value: 120: must be less than or equal to "
                "previous value"});
}

TEST_CASE("deployment selectors must match their template and stay fixed", "[kinds]") {
  CHECK(errors("apps", "Deployment", deployment({{"app", "web"}}, {{"app", "web"}})).empty());
  CHECK(errors("apps", "Deployment", deployment({{"app", "web"}}, {{"app", "api"}})) ==
        Strings{
            "spec.template.metadata.labels: Invalid value: {\"app\":\"api\"}: `selector` does not "
            "match template `labels`"});
  json no_selector = deployment({{"app", "web"}}, {{"app", "web"}});
  no_selector["spec"].erase("selector");
  CHECK(errors("apps", "Deployment", no_selector) == Strings{"spec.selector: Required value"});

  json never = deployment({{"app", "web"}}, {{"app", "web"}});
  never["spec"]["template"]["spec"]["restartPolicy"] = "Never";
  never["spec"]["replicas"] = -1;
  CHECK(errors("apps", "Deployment", never) ==
        Strings{"spec.replicas: Invalid value: -1: must be greater than or equal to 0",
                "spec.template.spec.restartPolicy: Unsupported value: \"Never\": supported values: "
                "\"Always\""});

  auto moved = errors("apps", "Deployment", deployment({{"app", "v2"}}, {{"app", "v2"}}),
                      deployment({{"app", "web"}}, {{"app", "web"}}));
  REQUIRE(moved.size() == 1);
  CHECK_THAT(moved[0], Catch::StartsWith("spec.selector: Invalid value: ") &&
                           Catch::EndsWith(": field is immutable"));
}

TEST_CASE("replica sets, daemon sets and stateful sets share the controller rules", "[kinds]") {
  json rs = deployment({{"app", "web"}}, {{"app", "api"}});
  CHECK(errors("apps", "ReplicaSet", rs).size() == 1);
  CHECK(errors("apps", "DaemonSet", deployment({{"app", "web"}}, {{"app", "web"}})).empty());
  json sts = deployment({{"app", "db"}}, {{"app", "db"}});
  CHECK(errors("apps", "StatefulSet", sts).empty());
  json renamed = sts;
  renamed["spec"]["serviceName"] = "other";
  CHECK(errors("apps", "StatefulSet", renamed, sts) ==
        Strings{"spec: Forbidden: updates to statefulset spec for fields other than 'replicas', "
                "'ordinals', 'template', 'updateStrategy', 'revisionHistoryLimit', "
                "'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden"});
  json scaled = sts;
  scaled["spec"]["replicas"] = 3;
  CHECK(errors("apps", "StatefulSet", scaled, sts).empty());
}

TEST_CASE("stateful set containers may mount their volume claim templates", "[kinds]") {
  json sts = deployment({{"app", "db"}}, {{"app", "db"}});
  sts["spec"]["template"]["spec"]["containers"][0]["volumeMounts"] =
      json::array({{{"name", "data"}, {"mountPath", "/data"}}});
  CHECK(errors("apps", "StatefulSet", sts).size() == 1);  // no such volume yet
  sts["spec"]["volumeClaimTemplates"] = json::array({{{"metadata", {{"name", "data"}}},
      {"spec", {{"accessModes", {"ReadWriteOnce"}},
                {"resources", {{"requests", {{"storage", "1Gi"}}}}}}}}});
  CHECK(errors("apps", "StatefulSet", sts).empty());
}

TEST_CASE("jobs need a restart policy of OnFailure or Never", "[kinds]") {
  const std::string uid = "0b6d2a4e-0000-4000-8000-000000000001";
  json never = job(uid, {{"restartPolicy", "Never"}, {"containers", {container()}}});
  CHECK(errors("batch", "Job", never).empty());
  CHECK(errors("batch", "Job", job(uid, {{"containers", {container()}}})) ==
        Strings{"spec.template.spec.restartPolicy: Required value: valid values: \"OnFailure\", "
                "\"Never\""});
  json negative = never;
  negative["spec"]["parallelism"] = -2;
  CHECK(errors("batch", "Job", negative) ==
        Strings{"spec.parallelism: Invalid value: -2: must be greater than or equal to 0"});

  json changed = never;
  changed["spec"]["template"]["spec"]["containers"][0]["image"] = "nginx:1.28";
  auto errs = errors("batch", "Job", changed, never);
  REQUIRE(errs.size() == 1);
  CHECK_THAT(errs[0], Catch::StartsWith("spec.template: Invalid value: ") &&
                          Catch::EndsWith(": field is immutable"));
  json scaled = never;
  scaled["spec"]["parallelism"] = 4;
  scaled["spec"]["completions"] = 1;  // a PUT carries what the create defaulted
  CHECK(errors("batch", "Job", scaled, never).empty());
  json more = scaled;
  more["spec"]["completions"] = 2;
  CHECK(errors("batch", "Job", more, never) ==
        Strings{"spec.completions: Invalid value: 2: field is immutable"});
}

TEST_CASE("cron job schedules parse as kube parses them", "[kinds]") {
  auto cron = [](const std::string& schedule) {
    json cj = {
        {"metadata", {{"name", "tick"}}},
        {"spec",
         {{"schedule", schedule},
          {"jobTemplate",
           {{"spec",
             {{"template",
               {{"spec", {{"restartPolicy", "OnFailure"}, {"containers", {container()}}}}}}}}}}}}};
    return errors("batch", "CronJob", cj);
  };
  CHECK(cron("*/5 * * * *").empty());
  CHECK(cron("0 3 * jan-mar MON-FRI").empty());
  CHECK(cron("@hourly").empty());
  CHECK(cron("@every 1h30m").empty());
  CHECK(
      cron("* * *") ==
      Strings{
          "spec.schedule: Invalid value: \"* * *\": expected exactly 5 fields, found 3: [* * *]"});
  CHECK(cron("61 * * * *") == Strings{"spec.schedule: Invalid value: \"61 * * * *\": end of range "
                                      "(61) above maximum (59): 61"});
  CHECK(cron("0 0 0 * *") == Strings{"spec.schedule: Invalid value: \"0 0 0 * *\": beginning of "
                                     "range (0) below minimum (1): 0"});
  CHECK(
      cron("x * * * *") ==
      Strings{
          "spec.schedule: Invalid value: \"x * * * *\": failed to parse int from x: strconv.Atoi: "
          "parsing \"x\": invalid syntax"});
  CHECK(
      cron("@fortnightly") ==
      Strings{
          "spec.schedule: Invalid value: \"@fortnightly\": unrecognized descriptor: @fortnightly"});
  CHECK(cron("") == Strings{"spec.schedule: Required value"});
  CHECK(cron("TZ=UTC 0 * * * *") ==
        Strings{"spec.schedule: Invalid value: \"TZ=UTC 0 * * * *\": cannot use TZ or CRON_TZ in "
                "schedule, use timeZone field instead"});
}

json service(json spec) {
  return {{"metadata", {{"name", "web"}}}, {"spec", spec}};
}

TEST_CASE("service ports, names and types are checked", "[kinds]") {
  CHECK(errors("", "Service", service({{"ports", {{{"port", 80}}}}})).empty());
  CHECK(errors("", "Service", service(json::object())) == Strings{"spec.ports: Required value"});
  CHECK(errors("", "Service", service({{"clusterIP", "None"}})).empty());
  CHECK(
      errors("", "Service", service({{"type", "ExternalName"}, {"externalName", "db.example.com"}}))
          .empty());
  CHECK(errors("", "Service", service({{"ports", {{{"port", 80}}, {{"port", 443}}}}})) ==
        Strings{"spec.ports[0].name: Required value", "spec.ports[1].name: Required value"});
  CHECK(errors("", "Service", service({{"ports", {{{"port", 0}, {"targetPort", 80}}}}})) ==
        Strings{"spec.ports[0].port: Invalid value: 0: must be between 1 and 65535, inclusive"});
  CHECK(errors("", "Service", service({{"type", "Magic"}, {"ports", {{{"port", 80}}}}})) ==
        Strings{"spec.type: Unsupported value: \"Magic\": supported values: \"ClusterIP\", "
                "\"ExternalName\", \"LoadBalancer\", \"NodePort\""});
  json old = service({{"clusterIP", "10.96.0.10"}, {"ports", {{{"port", 80}}}}});
  json moved = service({{"clusterIP", "10.96.0.11"}, {"ports", {{{"port", 80}}}}});
  CHECK(errors("", "Service", moved, old) ==
        Strings{"spec.clusterIPs[0]: Invalid value: [\"10.96.0.11\"]: may not change once set"});
  json external = service({{"type", "ExternalName"}, {"externalName", "db.example.com"}});
  CHECK(errors("", "Service", external, old).empty());
}

TEST_CASE("config map keys and immutability", "[kinds]") {
  CHECK(errors("", "ConfigMap", {{"data", {{"app.conf", "x"}, {"KEY_1", "y"}}}}).empty());
  CHECK(
      errors("", "ConfigMap", {{"data", {{"a/b", "x"}}}}) ==
      Strings{"data[a/b]: Invalid value: \"a/b\": a valid config key must consist of alphanumeric "
              "characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex "
              "used for validation is '[-._a-zA-Z0-9]+')"});
  CHECK(errors("", "ConfigMap", {{"data", {{"k", "x"}}}, {"binaryData", {{"k", "eA=="}}}}) ==
        Strings{"data[k]: Invalid value: \"k\": duplicate of key present in binaryData"});
  json frozen = {{"immutable", true}, {"data", {{"k", "v"}}}};
  json edited = {{"immutable", true}, {"data", {{"k", "w"}}}};
  CHECK(errors("", "ConfigMap", edited, frozen) ==
        Strings{"data: Forbidden: field is immutable when `immutable` is set"});
  json thawed = {{"immutable", false}, {"data", {{"k", "v"}}}};
  CHECK(errors("", "ConfigMap", thawed, frozen) ==
        Strings{"immutable: Forbidden: field is immutable when `immutable` is set"});
}

TEST_CASE("secret data is base64 and typed secrets carry their keys", "[kinds]") {
  CHECK(errors("", "Secret", {{"data", {{"password", "c2VjcmV0"}}}}).empty());
  CHECK(errors("", "Secret", {{"data", {{"password", "not base64!"}}}}) ==
        Strings{
            "data[password]: Invalid value: \"<secret contents redacted>\": illegal base64 data at "
            "input byte 3"});
  CHECK(errors("", "Secret", {{"type", "kubernetes.io/tls"}, {"data", {{"tls.crt", "eA=="}}}}) ==
        Strings{"data[tls.key]: Required value"});
  CHECK(errors("", "Secret", {{"type", "kubernetes.io/service-account-token"}}) ==
        Strings{"metadata.annotations[kubernetes.io/service-account.name]: Required value"});
  CHECK(errors("", "Secret", {{"type", "kubernetes.io/dockerconfigjson"}}) ==
        Strings{"data[.dockerconfigjson]: Required value"});
  CHECK(errors("", "Secret", {{"type", "kubernetes.io/basic-auth"}}, {{"data", json::object()}}) ==
        Strings{"data[username]: Required value", "data[password]: Required value",
                "type: Invalid value: \"kubernetes.io/basic-auth\": field is immutable"});
}

TEST_CASE("rbac rules, role references and subjects", "[kinds]") {
  const std::string rbac = "rbac.authorization.k8s.io";
  CHECK(errors(rbac, "Role", {{"rules", {{{"apiGroups", {""}}, {"resources", {"pods"}}}}}}) ==
        Strings{"rules[0].verbs: Required value: verbs must contain at least one value"});
  json binding = {{"roleRef", {{"kind", "Role"}, {"name", "reader"}}},
                  {"subjects", {{{"kind", "ServiceAccount"}, {"name", "default"}}}}};
  CHECK(errors(rbac, "RoleBinding", binding).empty());
  json rebound = binding;
  rebound["roleRef"]["name"] = "writer";
  auto errs = errors(rbac, "RoleBinding", rebound, binding);
  REQUIRE(errs.size() == 1);
  CHECK_THAT(errs[0], Catch::StartsWith("roleRef: Invalid value: ") &&
                          Catch::EndsWith(": cannot change roleRef"));
  json cluster = {
      {"roleRef", {{"kind", "Role"}, {"name", "reader"}}},
      {"subjects",
       {{{"kind", "ServiceAccount"}, {"name", "default"}}, {{"kind", "Robot"}, {"name", "r"}}}}};
  CHECK(errors(rbac, "ClusterRoleBinding", cluster) ==
        Strings{
            "roleRef.kind: Unsupported value: \"Role\": supported values: \"ClusterRole\"",
            "subjects[0].namespace: Required value",
            "subjects[1].kind: Unsupported value: \"Robot\": supported values: \"ServiceAccount\", "
            "\"User\", \"Group\""});
}

TEST_CASE("policy, networking and scheduling kinds", "[kinds]") {
  CHECK(errors("policy", "PodDisruptionBudget",
               {{"spec", {{"minAvailable", 1}, {"maxUnavailable", 1}}}}) ==
        Strings{"spec: Invalid value: {\"maxUnavailable\":1,\"minAvailable\":1}: minAvailable and "
                "maxUnavailable cannot be both set"});
  json ingress = {
      {"spec",
       {{"rules",
         {{{"host", "example.com"},
           {"http",
            {{"paths",
              {{{"path", "/"},
                {"backend",
                 {{"service", {{"name", "web"}, {"port", {{"number", 80}}}}}}}}}}}}}}}}}};
  CHECK(
      errors("networking.k8s.io", "Ingress", ingress) ==
      Strings{"spec.rules[0].http.paths[0].pathType: Required value: pathType must be specified"});
  ingress["spec"]["rules"][0]["http"]["paths"][0]["pathType"] = "Prefix";
  CHECK(errors("networking.k8s.io", "Ingress", ingress).empty());
  CHECK(
      errors("scheduling.k8s.io", "PriorityClass",
             {{"metadata", {{"name", "high"}}}, {"value", 2000000000}}) ==
      Strings{"value: Forbidden: maximum allowed value of a user defined priority is 1000000000"});
  CHECK(errors("scheduling.k8s.io", "PriorityClass",
               {{"metadata", {{"name", "high"}}}, {"value", 1000}})
            .empty());
}

TEST_CASE("everyday objects of the other kinds validate after defaulting", "[kinds]") {
  CHECK(errors("", "Namespace", {{"metadata", {{"name", "team-a"}}}}).empty());
  CHECK(errors("", "ServiceAccount", {{"metadata", {{"name", "builder"}}}}).empty());
  CHECK(errors("", "PersistentVolumeClaim",
               {{"spec",
                 {{"accessModes", {"ReadWriteOnce"}},
                  {"resources", {{"requests", {{"storage", "1Gi"}}}}}}}})
            .empty());
  CHECK(errors("", "Event",
               {{"metadata", {{"name", "e"}, {"namespace", "default"}}},
                {"involvedObject", {{"kind", "Pod"}, {"name", "p"}, {"namespace", "default"}}}})
            .empty());
  CHECK(
      errors("", "Event",
             {{"metadata", {{"name", "e"}, {"namespace", "team-a"}}},
              {"involvedObject", {{"kind", "Pod"}, {"namespace", "default"}}}}) ==
      Strings{
          "involvedObject.namespace: Invalid value: \"default\": does not match event.namespace"});
  CHECK(errors("coordination.k8s.io", "Lease",
               {{"spec", {{"holderIdentity", "a"}, {"leaseDurationSeconds", 15}}}})
            .empty());
  CHECK(errors(
            "autoscaling", "HorizontalPodAutoscaler",
            {{"spec",
              {{"scaleTargetRef", {{"kind", "Deployment"}, {"name", "web"}}}, {"maxReplicas", 5}}}})
            .empty());
  CHECK(errors("networking.k8s.io", "NetworkPolicy", {{"spec", {{"podSelector", json::object()}}}})
            .empty());
  CHECK(errors("", "ReplicationController",
               {{"spec",
                 {{"template",
                   {{"metadata", {{"labels", {{"app", "x"}}}}},
                    {"spec", {{"containers", {container()}}}}}}}}})
            .empty());
}

}  // namespace
}  // namespace vkube::apiserver::builtin
