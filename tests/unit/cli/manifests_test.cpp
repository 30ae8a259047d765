// The tenant's host objects `vkube create` applies: the embedded YAML
// rendered from the chart, made for one tenant.
#include <catch2/catch.hpp>

#include <set>

#include "vkube/cli/manifests.h"

namespace vkube::cli {
namespace {

bool mentions(const json& v, const std::string& word) {
  if (v.is_string()) return v.get<std::string>().find(word) != std::string::npos;
  if (v.is_object() || v.is_array())
    for (const auto& child : v)
      if (mentions(child, word)) return true;
  return false;
}

const json* find(const std::vector<json>& objects, const std::string& kind) {
  for (const json& o : objects)
    if (o.value("kind", "") == kind) return &o;
  return nullptr;
}

TEST_CASE("manifests: the embedded chart rendering is made for one tenant", "[cli]") {
  TenantSpec spec;
  spec.name = "team-a";
  spec.ns = "vkube-team-a";
  spec.pod_security = "restricted";
  spec.gpu_sharing = "kai";
  spec.gpu_quota = "gpus=8";
  spec.service_cidr = "10.100.0.0/16";
  auto objects = tenant_objects(tenant_manifest(), spec);
  REQUIRE(objects.is_ok());
  std::set<std::string> kinds;
  for (const json& o : *objects) {
    kinds.insert(o["kind"].get<std::string>());
    INFO(o.dump());
    CHECK_FALSE(mentions(o, "example"));  // nothing of the rendered release is left
    if (o["kind"].get<std::string>().rfind("Cluster", 0) != 0)
      CHECK(o["metadata"]["namespace"] == "vkube-team-a");
    CHECK(o["metadata"]["labels"]["vkube.io/tenant"] == "team-a");
  }
  for (const char* k :
       {"ServiceAccount", "Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding", "Service",
        "StatefulSet", "ResourceQuota", "LimitRange", "NetworkPolicy"})
    CHECK(kinds.count(k) == 1);

  const json* sts = find(*objects, "StatefulSet");
  REQUIRE(sts != nullptr);
  const json& args = (*sts)["spec"]["template"]["spec"]["containers"][0]["args"];
  auto has = [&](const std::string& a) {
    return std::find(args.begin(), args.end(), json(a)) != args.end();
  };
  CHECK(args[0] == "serve");
  CHECK(has("--name=team-a"));
  CHECK(has("--pod-security=restricted"));
  CHECK(has("--host-gpu-sharing=kai"));
  CHECK(has("--gpu-quota=gpus=8"));
  CHECK(has("--service-cluster-ip-range=10.100.0.0/16"));
  CHECK(has("--kubeconfig-secret=vkube-kubeconfig"));
  const json* crb = find(*objects, "ClusterRoleBinding");
  REQUIRE(crb != nullptr);
  CHECK((*crb)["metadata"]["name"] == "vkube-nodes-vkube-team-a");
  CHECK((*crb)["subjects"][0]["namespace"] == "vkube-team-a");

  // No quota: the flag is not there at all.
  spec.gpu_quota.clear();
  spec.image = "registry.example/vkube:dev";
  auto plain = tenant_objects(tenant_manifest(), spec);
  REQUIRE(plain.is_ok());
  const json& c = (*find(*plain, "StatefulSet"))["spec"]["template"]["spec"]["containers"][0];
  CHECK(c["image"] == "registry.example/vkube:dev");
  for (const json& a : c["args"]) CHECK(a.get<std::string>().rfind("--gpu-quota", 0) != 0);

  json ns = tenant_namespace(spec);
  CHECK(ns["metadata"]["name"] == "vkube-team-a");
  CHECK(ns["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted");
}

TEST_CASE("manifests: set_flag and tenant names", "[cli]") {
  json args = json::array({"serve", "--a=1", "--b=2"});
  set_flag(args, "a", "9");
  set_flag(args, "c", "3");
  set_flag(args, "b", "");
  CHECK(args == json::array({"serve", "--a=9", "--c=3"}));
  CHECK(validate_tenant_name("team-a").is_ok());
  CHECK_FALSE(validate_tenant_name("").is_ok());
  CHECK_FALSE(validate_tenant_name("Team").is_ok());
  CHECK_FALSE(validate_tenant_name("-a").is_ok());
  CHECK_FALSE(validate_tenant_name(std::string(58, 'a')).is_ok());  // vkube-<name> > 63
  CHECK(validate_tenant_name(std::string(57, 'a')).is_ok());
}

TEST_CASE("manifests: a malformed document is an error", "[cli]") {
  TenantSpec spec;
  spec.name = "t";
  spec.ns = "vkube-t";
  CHECK_FALSE(tenant_objects("kind: [\n", spec).is_ok());
  auto two = tenant_objects("---\nkind: A\n---\n\n---\nkind: B\n", spec);
  REQUIRE(two.is_ok());
  CHECK(two->size() == 2);
}

TEST_CASE("manifests: a GPU share is the namespace's annotation and the serve flag",
          "[cli][share]") {
  TenantSpec spec;
  spec.name = "a";
  spec.ns = "vkube-a";
  spec.gpu_share = "deserved=2,limit=4";
  auto objects = tenant_objects(tenant_manifest(), spec);
  REQUIRE(objects.is_ok());
  const json& args =
      (*find(*objects, "StatefulSet"))["spec"]["template"]["spec"]["containers"][0]["args"];
  CHECK(std::find(args.begin(), args.end(), json("--gpu-share=deserved=2,limit=4")) != args.end());
  CHECK(tenant_namespace(spec)["metadata"]["annotations"]["vkube.io/gpu-share"] ==
        "deserved=2,limit=4");
  // Without one, neither.
  spec.gpu_share.clear();
  CHECK_FALSE(tenant_namespace(spec)["metadata"].contains("annotations"));
  objects = tenant_objects(tenant_manifest(), spec);
  REQUIRE(objects.is_ok());
  for (const json& a :
       (*find(*objects, "StatefulSet"))["spec"]["template"]["spec"]["containers"][0]["args"])
    CHECK(a.get<std::string>().rfind("--gpu-share", 0) != 0);
}

}  // namespace
}  // namespace vkube::cli
