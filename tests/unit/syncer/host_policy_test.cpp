// The operator's host policy: what tenant pods and Services may ask of the
// host, what their host copies get, and the operator's file and flag forms.
#include <catch2/catch.hpp>

#include "vkube/syncer/host_policy.h"
#include "vkube/syncer/translate_objects.h"

using json = nlohmann::json;
using vkube::Status;
using vkube::syncer::HostPolicy;
using vkube::syncer::PolicyViolation;

namespace {

std::string joined(const std::vector<PolicyViolation>& v) {
  return vkube::syncer::join_violations(v, "spec.");
}

HostPolicy kai_policy() {
  HostPolicy p;
  p.scheduler_name = "kai-scheduler";
  p.labels = {{"kai.scheduler/queue", "team-a"}};
  p.priority_class = "tenant-a";
  return p;
}

}  // namespace

TEST_CASE("the host policy refuses what only the operator may choose", "[syncer][host-policy]") {
  struct Row {
    const char* name;
    json spec;
    std::string want;  // "" : allowed; else a part of the message
  };
  const json gpu_toleration = {{"key", "nvidia.com/gpu"}, {"operator", "Exists"}};
  const std::vector<Row> rows = {
      {"an empty pod", json::object(), ""},
      {"volumes that reach nothing of the host's",
       {{"volumes",
         {{{"name", "a"}, {"configMap", {{"name", "c"}}}},
          {{"name", "b"}, {"emptyDir", json::object()}},
          {{"name", "c"}, {"persistentVolumeClaim", {{"claimName", "d"}}}}}}},
       ""},
      {"an nfs volume the host's kubelet would mount",
       {{"volumes",
         {{{"name", "a"}, {"emptyDir", json::object()}},
          {{"name", "n"}, {"nfs", {{"server", "10.0.0.1"}, {"path", "/"}}}}}}},
       "spec.volumes[1].nfs: volume type nfs is not allowed (allowed: configMap, csi"},
      {"kube's default tolerations",
       {{"tolerations",
         {{{"key", "node.kubernetes.io/not-ready"},
           {"operator", "Exists"},
           {"effect", "NoExecute"},
           {"tolerationSeconds", 300}},
          {{"key", "node.kubernetes.io/unreachable"},
           {"operator", "Exists"},
           {"effect", "NoExecute"},
           {"tolerationSeconds", 300}}}}},
       ""},
      {"the GPU taint", {{"tolerations", {gpu_toleration}}}, ""},
      {"a toleration of every taint",
       {{"tolerations", {{{"operator", "Exists"}}}}},
       "spec.tolerations[0]: operator Exists with no key tolerates every taint (allowed: "
       "node.kubernetes.io/not-ready:NoExecute"},
      {"the control plane's taint",
       {{"tolerations",
         {gpu_toleration,
          {{"key", "node-role.kubernetes.io/control-plane"},
           {"operator", "Exists"},
           {"effect", "NoSchedule"}}}}},
       "spec.tolerations[1]: tolerating \"node-role.kubernetes.io/control-plane:NoSchedule\" is "
       "not allowed"},
      {"a node-condition taint with every effect",
       {{"tolerations", {{{"key", "node.kubernetes.io/not-ready"}, {"operator", "Exists"}}}}},
       "tolerating \"node.kubernetes.io/not-ready\" (every effect) is not allowed"},
      {"the default scheduler", {{"schedulerName", "default-scheduler"}}, ""},
      {"the operator's scheduler", {{"schedulerName", "kai-scheduler"}}, ""},
      {"a scheduler of the tenant's choosing",
       {{"schedulerName", "my-scheduler"}},
       "spec.schedulerName: \"my-scheduler\" is not allowed: the operator chooses the host's "
       "scheduler (allowed: default-scheduler, kai-scheduler)"},
      {"a GPU product",
       {{"nodeSelector", {{"nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3"}}}},
       ""},
      {"a zone", {{"nodeSelector", {{"topology.kubernetes.io/zone", "a"}}}}, ""},
      {"one host node by its hostname label",
       {{"nodeSelector", {{"kubernetes.io/hostname", "gpu-node-7"}}}},
       "spec.nodeSelector[kubernetes.io/hostname]: node label \"kubernetes.io/hostname\" names one "
       "host node (allowed: nvidia.com/gpu.*"},
      {"a host label the operator did not list",
       {{"nodeSelector", {{"dedicated", "team-b"}}}},
       "spec.nodeSelector[dedicated]: node label \"dedicated\" is not allowed"},
      {"node affinity on the hostname",
       {{"affinity",
         {{"nodeAffinity",
           {{"requiredDuringSchedulingIgnoredDuringExecution",
             {{"nodeSelectorTerms",
               {{{"matchExpressions",
                  {{{"key", "kubernetes.io/hostname"},
                    {"operator", "In"},
                    {"values", {"gpu-node-7"}}}}}}}}}}}}}}},
       "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution."
       "nodeSelectorTerms[0].matchExpressions[0].key: node label \"kubernetes.io/hostname\""},
      {"node affinity on a node's name",
       {{"affinity",
         {{"nodeAffinity",
           {{"preferredDuringSchedulingIgnoredDuringExecution",
             {{{"weight", 1},
               {"preference",
                {{"matchFields",
                  {{{"key", "metadata.name"},
                    {"operator", "In"},
                    {"values", {"gpu-node-7"}}}}}}}}}}}}}}},
       "preferredDuringSchedulingIgnoredDuringExecution[0].preference.matchFields[0]: selecting "
       "host nodes by name is not allowed"},
      {"node affinity on a GPU product",
       {{"affinity",
         {{"nodeAffinity",
           {{"requiredDuringSchedulingIgnoredDuringExecution",
             {{"nodeSelectorTerms",
               {{{"matchExpressions",
                  {{{"key", "nvidia.com/gpu.product"},
                    {"operator", "In"},
                    {"values", {"A100"}}}}}}}}}}}}}}},
       ""},
      {"anti-affinity across nodes",
       {{"affinity",
         {{"podAntiAffinity",
           {{"requiredDuringSchedulingIgnoredDuringExecution",
             {{{"topologyKey", "kubernetes.io/hostname"},
               {"labelSelector", {{"matchLabels", {{"app", "web"}}}}}}}}}}}}},
       ""},
      {"affinity to pods of every host namespace",
       {{"affinity",
         {{"podAffinity",
           {{"requiredDuringSchedulingIgnoredDuringExecution",
             {{{"topologyKey", "kubernetes.io/hostname"},
               {"namespaceSelector", json::object()}}}}}}}}},
       "spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0]: namespaces "
       "and namespaceSelector would select the host's namespaces"},
      {"spread over a host label",
       {{"topologySpreadConstraints", {{{"topologyKey", "rack"}, {"maxSkew", 1}}}}},
       "spec.topologySpreadConstraints[0].topologyKey: node label \"rack\" is not allowed"},
      {"a runtime class",
       {{"runtimeClassName", "nvidia"}},
       "spec.runtimeClassName: \"nvidia\" is not allowed (allowed: none)"},
  };
  const HostPolicy policy = kai_policy();
  for (const Row& row : rows) {
    INFO(row.name << ": " << row.spec.dump());
    const std::string got = joined(vkube::syncer::pod_violations(policy, row.spec));
    if (row.want.empty())
      CHECK(got == "");
    else
      CHECK_THAT(got, Catch::Contains(row.want));
  }
}

TEST_CASE("the host policy allows what the operator lists", "[syncer][host-policy]") {
  HostPolicy p;
  p.runtime_classes = {"nvidia"};
  p.node_label_keys = {"dedicated", "example.com/*"};
  p.tolerations = {{"dedicated", "team-a", "NoSchedule"}};
  const json ok = {{"runtimeClassName", "nvidia"},
                   {"nodeSelector", {{"dedicated", "team-a"}, {"example.com/rack", "r1"}}},
                   {"tolerations",
                    {{{"key", "dedicated"},
                      {"operator", "Equal"},
                      {"value", "team-a"},
                      {"effect", "NoSchedule"}}}}};
  CHECK(vkube::syncer::pod_violations(p, ok).empty());
  // Another team's dedication, any value of it, or every effect: refused.
  for (const json& t :
       {json{{"key", "dedicated"}, {"value", "team-b"}, {"effect", "NoSchedule"}},
        json{{"key", "dedicated"}, {"operator", "Exists"}, {"effect", "NoSchedule"}},
        json{{"key", "dedicated"}, {"value", "team-a"}}}) {
    INFO(t.dump());
    auto v = vkube::syncer::pod_violations(p, {{"tolerations", {t}}});
    REQUIRE(v.size() == 1);
    CHECK(v[0].allowed ==
          "node.kubernetes.io/not-ready:NoExecute, node.kubernetes.io/unreachable:NoExecute, "
          "dedicated=team-a:NoSchedule");
  }
  // kube's own defaults stay allowed whatever the operator lists.
  CHECK(vkube::syncer::pod_violations(p, {{"tolerations",
                                           {{{"key", "node.kubernetes.io/unreachable"},
                                             {"operator", "Exists"},
                                             {"effect", "NoExecute"},
                                             {"tolerationSeconds", 300}}}}})
            .empty());
  // No list widens to the hostname.
  p.node_label_keys = {"kubernetes.*"};
  CHECK(vkube::syncer::pod_violations(p, {{"nodeSelector", {{"kubernetes.io/hostname", "n"}}}})
            .size() == 1);
}

TEST_CASE("the syncer's step injects the operator's and strips the tenant's",
          "[syncer][host-policy]") {
  const HostPolicy policy = kai_policy();
  json pod = {{"metadata",
               {{"name", "p"},
                {"labels",
                 {{"app", "web"},
                  {"kai.scheduler/queue", "team-b"},
                  {"kueue.x-k8s.io/queue-name", "fast"}}},
                {"annotations", {{"scheduling.k8s.io/group-name", "g"}, {"note", "keep"}}}}},
              {"spec",
               {{"schedulerName", "my-scheduler"},
                {"priorityClassName", "tenant-urgent"},
                {"priority", 1000000},
                {"nodeSelector", {{"nvidia.com/gpu.product", "A100"}}}}}};
  REQUIRE(vkube::syncer::apply_pod_policy(policy, pod).is_ok());
  CHECK(pod["metadata"]["labels"] == json({{"app", "web"}, {"kai.scheduler/queue", "team-a"}}));
  CHECK(pod["metadata"]["annotations"] == json({{"note", "keep"}}));
  CHECK(pod["spec"]["schedulerName"] == "kai-scheduler");
  CHECK(pod["spec"]["priorityClassName"] == "tenant-a");
  CHECK_FALSE(pod["spec"].contains("priority"));
  CHECK(pod["spec"]["nodeSelector"] == json({{"nvidia.com/gpu.product", "A100"}}));

  // Without a scheduler of the operator's, the host's default schedules it.
  json plain = {{"metadata", {{"name", "p"}}}, {"spec", {{"schedulerName", "my-scheduler"}}}};
  REQUIRE(vkube::syncer::apply_pod_policy(HostPolicy{}, plain).is_ok());
  CHECK_FALSE(plain["spec"].contains("schedulerName"));

  // What cannot be overridden is refused, never passed on.
  json bad = {{"metadata", {{"name", "p"}}},
              {"spec", {{"tolerations", {{{"operator", "Exists"}}}}}}};
  Status s = vkube::syncer::apply_pod_policy(policy, bad);
  CHECK(s.code() == vkube::Code::kForbidden);
  CHECK_THAT(s.message(),
             Catch::Contains("refused by the tenant's host policy: spec.tolerations[0]"));
}

TEST_CASE("the host policy decides which Services reach the host", "[syncer][host-policy]") {
  struct Row {
    const char* name;
    json spec;
    std::string want;
  };
  const std::vector<Row> rows = {
      {"ClusterIP", {{"type", "ClusterIP"}}, ""},
      {"no type", json::object(), ""},
      {"headless", {{"clusterIP", "None"}}, ""},
      {"ExternalName", {{"type", "ExternalName"}, {"externalName", "db.example.com"}}, ""},
      {"NodePort",
       {{"type", "NodePort"}},
       "spec.type: NodePort is not allowed (allowed: ClusterIP, ExternalName)"},
      {"LoadBalancer", {{"type", "LoadBalancer"}}, "spec.type: LoadBalancer is not allowed"},
      {"externalIPs",
       {{"externalIPs", {"203.0.113.7"}}},
       "spec.externalIPs: not allowed: the host's nodes would answer for these addresses"},
  };
  for (const Row& row : rows) {
    INFO(row.name);
    CHECK(joined(vkube::syncer::service_violations(HostPolicy{}, row.spec)).find(row.want) !=
          std::string::npos);
    if (row.want.empty()) CHECK(vkube::syncer::service_violations(HostPolicy{}, row.spec).empty());
  }
  HostPolicy lb;
  lb.service_types = {"ClusterIP", "LoadBalancer"};
  CHECK(vkube::syncer::service_violations(lb, {{"type", "LoadBalancer"}}).empty());

  // The translator: ExternalName stays in the tenant, a refused type never
  // becomes a host object.
  vkube::syncer::NameMapper names("team-a");
  vkube::syncer::ObjectContext ctx{&names, "vkube-team-a", nullptr};
  json ext = {{"apiVersion", "v1"},
              {"kind", "Service"},
              {"metadata", {{"name", "db"}, {"namespace", "shop"}}},
              {"spec", {{"type", "ExternalName"}, {"externalName", "db.example.com"}}}};
  auto none = vkube::syncer::translate_service(ext, ctx);
  REQUIRE(none.is_ok());
  CHECK(none->is_null());
  json np = ext;
  np["spec"] = {{"type", "NodePort"}, {"ports", {{{"port", 80}}}}};
  auto refused = vkube::syncer::translate_service(np, ctx);
  REQUIRE_FALSE(refused.is_ok());
  CHECK(refused.status().code() == vkube::Code::kForbidden);
  ctx.policy = &lb;
  np["spec"]["type"] = "LoadBalancer";
  CHECK(vkube::syncer::translate_service(np, ctx).is_ok());
}

TEST_CASE("the operator's policy file and flags", "[syncer][host-policy]") {
  HostPolicy p;
  REQUIRE(
      vkube::syncer::merge_policy_file(
          {{"allowedTolerations",
            {"dedicated=team-a:NoSchedule", {{"key", "nvidia.com/gpu"}, {"effect", "NoSchedule"}}}},
           {"allowedRuntimeClasses", {"nvidia"}},
           {"allowedServiceTypes", {"ClusterIP", "LoadBalancer"}}},
          p)
          .is_ok());
  REQUIRE(p.tolerations.size() == 2);
  CHECK(p.tolerations[0].str() == "dedicated=team-a:NoSchedule");
  CHECK(p.tolerations[1].str() == "nvidia.com/gpu:NoSchedule");
  CHECK(p.runtime_classes == std::vector<std::string>{"nvidia"});
  CHECK(p.node_label_keys == vkube::syncer::default_node_label_keys());  // left out: default

  struct Bad {
    json doc;
    const char* want;
  };
  for (const Bad& b : std::vector<Bad>{
           {{{"allowedTolerantions", json::array()}}, "unknown field \"allowedTolerantions\""},
           {{{"allowedTolerations", {":NoSchedule"}}}, "a key is required"},
           {{{"allowedTolerations", {"x:Never"}}}, "effect must be"},
           {{{"allowedNodeSelectorKeys", {"kubernetes.io/hostname"}}}, "never allowed"},
           {{{"allowedNodeSelectorKeys", {"*"}}}, "name a key or a prefix"},
           {{{"allowedServiceTypes", {"Ingress"}}}, "must be ClusterIP, NodePort"},
           {{{"allowedRuntimeClasses", {"Bad_Name"}}}, "lowercase DNS subdomain"},
           {json::array(), "must be a mapping"}}) {
    INFO(b.doc.dump());
    HostPolicy q;
    Status s = vkube::syncer::merge_policy_file(b.doc, q);
    CHECK(s.code() == vkube::Code::kInvalid);
    CHECK_THAT(s.message(), Catch::Contains(b.want));
  }

  auto rules = vkube::syncer::parse_toleration_rules("nvidia.com/gpu, dedicated=a:NoExecute");
  REQUIRE(rules.is_ok());
  REQUIRE(rules->size() == 2);
  CHECK((*rules)[1].str() == "dedicated=a:NoExecute");
  CHECK(vkube::syncer::parse_toleration_rules("none")->empty());
  CHECK(vkube::syncer::parse_service_types("ClusterIP,NodePort")->size() == 2);
  CHECK_FALSE(vkube::syncer::parse_service_types("Headless").is_ok());
  CHECK_FALSE(vkube::syncer::parse_node_label_keys("kubernetes.io/hostname").is_ok());
  CHECK(vkube::syncer::parse_runtime_classes("nvidia,kata")->size() == 2);
}
