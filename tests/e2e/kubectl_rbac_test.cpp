// RBAC as kubectl users meet it: a bearer-token user from --token-auth-file
// is refused with kube's Forbidden message until the admin grants a role;
// `kubectl auth can-i` and `auth whoami` answer; `kubectl --as` impersonates.
#include "fixture.h"

namespace vkube::e2e {
namespace {

const char* kTokens =
    "alice-token-5f1e9c,alice,1001,\"dev\"\n"
    "bob-token-77ab20,bob,1002\n";

const char* kNamespaces = R"(
apiVersion: v1
kind: Namespace
metadata: {name: team}
---
apiVersion: v1
kind: Namespace
metadata: {name: other}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: team}
data: {v: "1"}
)";

std::vector<std::string> with(const std::string& kubeconfig, std::vector<std::string> args) {
  args.insert(args.begin(), {"--kubeconfig", kubeconfig});
  return args;
}

TEST_CASE("kubectl: a token user is forbidden until a role binding grants it", "[e2e]") {
  Cluster c(kTokens);
  c.setup(kNamespaces);
  const std::string alice = c.token_kubeconfig("alice", "alice-token-5f1e9c");

  CHECK_THAT(c.kubectl(with(alice, {"get", "pods"})),
             FailedWith("Error from server (Forbidden): pods is forbidden: User \"alice\" cannot "
                        "list resource \"pods\" in API group \"\" in the namespace \"default\""));
  CHECK_THAT(c.kubectl(with(alice, {"get", "nodes"})),
             FailedWith("nodes is forbidden: User \"alice\" cannot list resource \"nodes\" in API "
                        "group \"\" at the cluster scope"));
  CHECK_THAT(c.kubectl(with(alice, {"get", "configmap", "settings", "-n", "team"})),
             FailedWith("configmaps \"settings\" is forbidden: User \"alice\" cannot get resource "
                        "\"configmaps\" in API group \"\" in the namespace \"team\""));
  CHECK_THAT(c.kubectl(with(alice, {"get", "--raw", "/metrics"})),
             FailedWith("forbidden: User \"alice\" cannot get path \"/metrics\""));
  // Discovery and the version are every authenticated user's.
  CHECK_THAT(c.kubectl(with(alice, {"version"})), Succeeded());
  CHECK_THAT(c.kubectl(with(alice, {"api-resources", "--api-group=apps", "-o", "name"})),
             Succeeded());

  // The admin grants reading pods in "team", with kubectl create.
  REQUIRE_THAT(c.kubectl({"create", "role", "pod-reader", "--verb=get,list,watch",
                          "--resource=pods", "-n", "team"}),
               Succeeded());
  REQUIRE_THAT(c.kubectl({"create", "rolebinding", "alice-reads-pods", "--role=pod-reader",
                          "--user=alice", "-n", "team"}),
               Succeeded());
  c.setup(R"(
apiVersion: v1
kind: Pod
metadata: {name: web, namespace: team}
spec:
  containers: [{name: web, image: nginx}]
)");
  Result pods = c.kubectl(with(alice, {"get", "pods", "-n", "team"}));
  REQUIRE_THAT(pods, Succeeded());
  CHECK_THAT(pods.out, Catch::Contains("web"));
  CHECK_THAT(c.kubectl(with(alice, {"get", "pod", "web", "-n", "team", "-o", "name"})),
             Succeeded());
  CHECK_THAT(c.kubectl(with(alice, {"get", "pods", "-n", "other"})),
             FailedWith("pods is forbidden: User \"alice\" cannot list resource \"pods\" in API "
                        "group \"\" in the namespace \"other\""));
  CHECK_THAT(c.kubectl(with(alice, {"delete", "pod", "web", "-n", "team"})),
             FailedWith("pods \"web\" is forbidden: User \"alice\" cannot delete resource \"pods\" "
                        "in API group \"\" in the namespace \"team\""));
  CHECK_THAT(c.kubectl(with(alice, {"get", "configmaps", "-n", "team"})), FailedWith("Forbidden"));

  // A ClusterRoleBinding from YAML, for alice's group from the token file.
  const std::string view = c.file("dev-view.yaml", R"(
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: dev-view}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: view}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: Group, name: dev}
)");
  REQUIRE_THAT(c.kubectl({"apply", "-f", view}), Succeeded());
  CHECK_THAT(c.kubectl(with(alice, {"get", "configmaps", "-n", "team"})), Succeeded());
  CHECK_THAT(c.kubectl(with(alice, {"get", "pods", "-A"})), Succeeded());
  CHECK_THAT(c.kubectl(with(alice, {"get", "secrets", "-n", "team"})), FailedWith("Forbidden"));
  REQUIRE_THAT(c.kubectl({"delete", "clusterrolebinding", "dev-view"}), Succeeded());
  CHECK_THAT(c.kubectl(with(alice, {"get", "configmaps", "-n", "team"})), FailedWith("Forbidden"));
}

TEST_CASE("kubectl auth can-i, can-i --list and whoami", "[e2e]") {
  Cluster c(kTokens);
  c.setup(kNamespaces);
  REQUIRE_THAT(c.kubectl({"create", "role", "pod-reader", "--verb=get,list,watch",
                          "--resource=pods", "-n", "team"}),
               Succeeded());
  REQUIRE_THAT(c.kubectl({"create", "rolebinding", "alice-reads-pods", "--role=pod-reader",
                          "--user=alice", "-n", "team"}),
               Succeeded());
  const std::string alice = c.token_kubeconfig("alice", "alice-token-5f1e9c");

  Result yes = c.kubectl(with(alice, {"auth", "can-i", "list", "pods", "-n", "team"}));
  CHECK_THAT(yes, Succeeded());
  CHECK(yes.out == "yes\n");
  Result no = c.kubectl(with(alice, {"auth", "can-i", "list", "pods", "-n", "other"}));
  CHECK(no.exit_code == 1);
  CHECK(no.out == "no\n");
  CHECK(c.kubectl(with(alice, {"auth", "can-i", "create", "pods", "-n", "team"})).out == "no\n");
  CHECK(c.kubectl(with(alice, {"auth", "can-i", "get", "/version"})).out == "yes\n");
  CHECK(c.kubectl(with(alice, {"auth", "can-i", "get", "/metrics"})).out == "no\n");

  // The admin asks on alice's and bob's behalf (impersonation).
  CHECK(c.kubectl({"auth", "can-i", "list", "pods", "-n", "team", "--as", "alice"}).out == "yes\n");
  CHECK(c.kubectl({"auth", "can-i", "list", "pods", "-n", "team", "--as", "bob"}).out == "no\n");
  CHECK(c.kubectl({"auth", "can-i", "delete", "nodes"}).out == "yes\n");

  Result list = c.kubectl(with(alice, {"auth", "can-i", "--list", "-n", "team"}));
  REQUIRE_THAT(list, Succeeded());
  bool pods_row = false;
  for (const std::string& line : lines(list.out)) {
    auto cols = columns(line);
    if (!cols.empty() && cols[0] == "pods")
      pods_row = line.find("[get list watch]") != std::string::npos;
  }
  INFO(list.out);
  CHECK(pods_row);
  CHECK_THAT(list.out, Catch::Contains("selfsubjectaccessreviews.authorization.k8s.io"));

  Result whoami = c.kubectl(with(alice, {"auth", "whoami"}));
  REQUIRE_THAT(whoami, Succeeded());
  bool user_row = false, groups_row = false;
  for (const std::string& line : lines(whoami.out)) {
    auto cols = columns(line);
    if (cols.size() >= 2 && cols[0] == "Username") user_row = cols[1] == "alice";
    if (cols.size() >= 2 && cols[0] == "Groups")
      groups_row = line.find("[dev system:authenticated]") != std::string::npos;
  }
  INFO(whoami.out);
  CHECK(user_row);
  CHECK(groups_row);
  Result admin = c.kubectl({"auth", "whoami", "-o", "json"});
  REQUIRE_THAT(admin, Succeeded());
  nlohmann::json info = nlohmann::json::parse(admin.out)["status"]["userInfo"];
  CHECK(info["username"] == "kubernetes-admin");
  CHECK(info["groups"] == nlohmann::json{"system:masters", "system:authenticated"});
}

TEST_CASE("kubectl --as evaluates the request as the impersonated user", "[e2e]") {
  Cluster c(kTokens);
  c.setup(kNamespaces);
  CHECK_THAT(c.kubectl({"get", "pods", "-n", "team", "--as=alice"}),
             FailedWith("Error from server (Forbidden): pods is forbidden: User \"alice\" cannot "
                        "list resource \"pods\" in API group \"\" in the namespace \"team\""));
  REQUIRE_THAT(c.kubectl({"create", "rolebinding", "alice-edits", "--clusterrole=edit",
                          "--user=alice", "-n", "team"}),
               Succeeded());
  CHECK_THAT(c.kubectl({"get", "pods", "-n", "team", "--as=alice"}), Succeeded());
  CHECK_THAT(c.kubectl({"create", "configmap", "made-by-alice", "-n", "team", "--as=alice"}),
             Succeeded());
  CHECK_THAT(c.kubectl({"get", "pods", "-n", "other", "--as=alice"}),
             FailedWith("in the namespace \"other\""));
  // Groups can be impersonated too, and a token user may not impersonate.
  CHECK_THAT(c.kubectl({"get", "nodes", "--as=carol", "--as-group=system:masters"}), Succeeded());
  const std::string bob = c.token_kubeconfig("bob", "bob-token-77ab20");
  CHECK_THAT(c.kubectl(with(bob, {"get", "pods", "-n", "team", "--as=alice"})),
             FailedWith("users \"alice\" is forbidden: User \"bob\" cannot impersonate resource "
                        "\"users\" in API group \"\" at the cluster scope"));
  // An unknown token is not a user at all.
  const std::string nobody = c.token_kubeconfig("nobody", "no-such-token");
  CHECK_THAT(c.kubectl(with(nobody, {"get", "pods"})), FailedWith("Unauthorized"));
}

}  // namespace
}  // namespace vkube::e2e

namespace vkube::e2e {
namespace {

TEST_CASE("kubectl create token issues a service-account token that RBAC evaluates", "[e2e]") {
  Cluster c;
  REQUIRE_THAT(c.kubectl({"create", "serviceaccount", "robot"}), Succeeded());
  Result token = c.kubectl({"create", "token", "robot", "--duration=1h"});
  REQUIRE_THAT(token, Succeeded());
  std::string jwt = token.out.substr(0, token.out.find('\n'));
  REQUIRE(std::count(jwt.begin(), jwt.end(), '.') == 2);
  const std::string robot = c.token_kubeconfig("robot", jwt);

  Result who = c.kubectl({"--kubeconfig", robot, "auth", "whoami", "-o", "jsonpath={.status.userInfo.username}"});
  REQUIRE_THAT(who, Succeeded());
  CHECK(who.out == "system:serviceaccount:default:robot");
  CHECK_THAT(c.kubectl({"--kubeconfig", robot, "get", "pods"}),
             FailedWith("User \"system:serviceaccount:default:robot\" cannot list resource \"pods\""));
  REQUIRE_THAT(c.kubectl({"create", "rolebinding", "robot-view", "--clusterrole=view",
                          "--serviceaccount=default:robot"}),
               Succeeded());
  CHECK_THAT(c.kubectl({"--kubeconfig", robot, "get", "pods"}), Succeeded());
  // A token that was tampered with, or for an account that does not exist.
  std::string forged = jwt;
  // The signature's first character: the last one may carry only padding
  // bits, which a base64url decoder ignores.
  char& sig = forged[forged.rfind('.') + 1];
  sig = sig == 'A' ? 'B' : 'A';
  CHECK_THAT(c.kubectl({"--kubeconfig", c.token_kubeconfig("forged", forged), "get", "pods"}),
             FailedWith("Unauthorized"));
  CHECK_THAT(c.kubectl({"create", "token", "nobody"}), FailedWith("serviceaccounts \"nobody\" not found"));
  CHECK_THAT(c.kubectl({"create", "token", "robot", "--duration=1m"}),
             FailedWith("may not specify a duration less than 10 minutes"));
}

}  // namespace
}  // namespace vkube::e2e
