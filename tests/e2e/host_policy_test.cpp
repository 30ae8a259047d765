// The operator's host policy end to end: `vkube host` and tenants (`vkube
// serve --host-kubeconfig`), real kubectl and dig. What only the operator may
// choose (the scheduler, tolerations of every taint, host node names, node
// ports) is refused at the tenant's admission with the policy's reason; what
// it allows (a GPU product) runs on the host as written; an ExternalName
// Service stays in the tenant, answered by the tenant's DNS.
#include "fixture.h"

namespace vkube::e2e {
namespace {

using json = nlohmann::json;

std::string pod_yaml(const std::string& name, const std::string& spec_extra) {
  return "apiVersion: v1\nkind: Pod\nmetadata:\n  name: " + name + "\nspec:\n" + spec_extra +
         "  containers:\n  - name: main\n    image: busybox:1.36\n";
}

// The port the tenant's DNS serves on, from its log.
std::string dns_port(const Cluster& c) {
  const std::string log = c.server_log();
  const size_t at = log.find("msg=\"dns: serving\"");
  if (at == std::string::npos) return "";
  const size_t port_at = log.find("port=", at) + 5;
  return log.substr(port_at, log.find_first_not_of("0123456789", port_at) - port_at);
}

constexpr auto kSettle = seconds(30);

}  // namespace

TEST_CASE("host policy: what only the operator may choose is refused at the tenant's admission",
          "[e2e][syncer][host-policy]") {
  Cluster host(Cluster::Host{});
  Cluster a(Cluster::Serve{
      {"--name", "team-a", "--host-kubeconfig", host.kubeconfig(), "--dns-listen", "127.0.0.1:0"}});
  const json nodes = host.get_json({"nodes"})["items"];
  REQUIRE(!nodes.empty());
  std::string node, product;
  for (const json& n : nodes) {
    const json labels = n["metadata"].value("labels", json::object());
    if (labels.contains("nvidia.com/gpu.product")) {
      node = n["metadata"]["name"];
      product = labels["nvidia.com/gpu.product"];
      break;
    }
  }
  REQUIRE(!product.empty());

  // --- Refused with the policy's reason, and nothing reaches the host.
  struct Refused {
    const char* name;
    std::string spec;
    std::string message;
  };
  const std::vector<Refused> refused = {
      {"own-scheduler", "  schedulerName: my-scheduler\n",
       "spec.schedulerName: \"my-scheduler\" is not allowed: the operator chooses the host's "
       "scheduler (allowed: default-scheduler)"},
      {"every-taint", "  tolerations:\n  - operator: Exists\n",
       "spec.tolerations[0]: operator Exists with no key tolerates every taint (allowed: "
       "node.kubernetes.io/not-ready:NoExecute"},
      {"control-plane",
       "  tolerations:\n  - key: node-role.kubernetes.io/control-plane\n    operator: Exists\n"
       "    effect: NoSchedule\n",
       "spec.tolerations[0]: tolerating \"node-role.kubernetes.io/control-plane:NoSchedule\" is "
       "not allowed"},
      {"one-node", "  nodeSelector:\n    kubernetes.io/hostname: " + node + "\n",
       "spec.nodeSelector[kubernetes.io/hostname]: node label \"kubernetes.io/hostname\" names "
       "one host node"},
      {"runtime", "  runtimeClassName: nvidia\n",
       "spec.runtimeClassName: \"nvidia\" is not allowed (allowed: none)"},
  };
  // The class exists in the tenant: what refuses it is the host policy.
  a.setup(
      "apiVersion: node.k8s.io/v1\nkind: RuntimeClass\nmetadata:\n  name: nvidia\n"
      "handler: nvidia\n");
  for (const Refused& r : refused) {
    Result got = a.kubectl(
        {"create", "-f", a.file(std::string(r.name) + ".yaml", pod_yaml(r.name, r.spec))});
    INFO(got);
    CHECK_THAT(got, FailedWith("Error from server (Forbidden)"));
    CHECK_THAT(got,
               FailedWith("pods \"" + std::string(r.name) +
                          "\" is forbidden: rejected by the tenant's host policy: " + r.message));
  }
  CHECK(a.get_json({"pods"})["items"].empty());

  // --- A workload's template only warns (its pods are what is refused).
  Result deploy = a.kubectl({"create", "deployment", "anywhere", "--image=busybox:1.36",
                             "--dry-run=client", "-o", "yaml"});
  REQUIRE_THAT(deploy, Succeeded());
  std::string with_toleration = deploy.out;
  const std::string at = "      containers:\n";
  REQUIRE(with_toleration.find(at) != std::string::npos);
  with_toleration.insert(with_toleration.find(at),
                         "      tolerations:\n      - operator: Exists\n");
  Result warned = a.kubectl({"create", "-f", a.file("anywhere.yaml", with_toleration)});
  INFO(warned);
  CHECK_THAT(warned, Succeeded());
  CHECK_THAT(warned.output(),
             Catch::Contains("Warning: would violate the tenant's host policy") &&
                 Catch::Contains("spec.template.spec.tolerations[0]: operator Exists"));

  // --- What the operator allows travels as written: a GPU product.
  a.setup(pod_yaml("on-" + std::string("product"),
                   "  nodeSelector:\n    nvidia.com/gpu.product: " + product +
                       "\n  tolerations:\n  - key: nvidia.com/gpu\n    operator: Exists\n"
                       "    effect: NoSchedule\n"));
  json hpod;
  REQUIRE(eventually(
      [&] {
        Result r = host.kubectl(
            {"get", "pod", "on-product-x-default-x-team-a", "-n", "vkube-team-a", "-o", "json"});
        if (r.exit_code != 0) return false;
        hpod = json::parse(r.out);
        return hpod["spec"].value("nodeName", "") != "";
      },
      kSettle));
  CHECK(hpod["spec"]["nodeSelector"] == json({{"nvidia.com/gpu.product", product}}));
  CHECK(hpod["spec"].value("schedulerName", "default-scheduler") == "default-scheduler");
  CHECK(host.get_json(
            {"node", hpod["spec"]["nodeName"]})["metadata"]["labels"]["nvidia.com/gpu.product"] ==
        product);

  // --- Services: node ports and external IPs are the host's, refused.
  Result np = a.kubectl({"create", "service", "nodeport", "np", "--tcp=80:8080"});
  INFO(np);
  CHECK_THAT(np, FailedWith("services \"np\" is forbidden: rejected by the tenant's host policy: "
                            "spec.type: NodePort is not allowed (allowed: ClusterIP, "
                            "ExternalName)"));
  Result ext_ips = a.kubectl({"create", "-f", a.file("ips.yaml", R"(apiVersion: v1
kind: Service
metadata: {name: ips}
spec:
  ports: [{port: 80}]
  externalIPs: [203.0.113.7]
)")});
  CHECK_THAT(ext_ips, FailedWith("spec.externalIPs: not allowed"));

  // --- ExternalName stays in the tenant: its DNS answers the CNAME, the
  // host never sees it (a ClusterIP Service made after it reaches the host
  // first as a marker that the syncer has looked).
  a.setup(R"(apiVersion: v1
kind: Service
metadata: {name: db}
spec:
  type: ExternalName
  externalName: db.example.com
)");
  a.setup(R"(apiVersion: v1
kind: Service
metadata: {name: marker}
spec:
  ports: [{port: 80}]
)");
  REQUIRE(eventually(
      [&] {
        return host.kubectl({"get", "svc", "marker-x-default-x-team-a", "-n", "vkube-team-a"})
                   .exit_code == 0;
      },
      kSettle));
  Result hsvc = host.kubectl({"get", "svc", "db-x-default-x-team-a", "-n", "vkube-team-a"});
  CHECK_THAT(hsvc, FailedWith("NotFound"));
  CHECK(a.kubectl({"get", "events", "--field-selector", "reason=SyncError", "-o", "name"})
            .out.empty());
  const std::string port = dns_port(a);
  REQUIRE(!port.empty());
  // Asked for the CNAME itself: the answer is the tenant's, and nothing is
  // forwarded off the machine.
  Result dig = a.run({"/usr/bin/dig", "@127.0.0.1", "-p", port, "+short", "CNAME",
                      "db.default.svc.cluster.local"});
  INFO(dig);
  CHECK(lines(dig.out) == std::vector<std::string>{"db.example.com."});

  // --- `vkube host` itself has no such policy: its operators place as they like.
  Result on_host =
      host.kubectl({"create", "-f",
                    host.file("h.yaml", pod_yaml("h", "  tolerations:\n  - operator: Exists\n"))});
  CHECK_THAT(on_host, Succeeded());
}

TEST_CASE("host policy: the operator's file widens what travels", "[e2e][syncer][host-policy]") {
  Cluster host(Cluster::Host{});
  const std::string policy = host.file("team-b-policy.yaml", R"(allowedTolerations:
- dedicated=team-b:NoSchedule
allowedServiceTypes: [ClusterIP, NodePort]
)");
  Cluster b(Cluster::Serve{
      {"--name", "team-b", "--host-kubeconfig", host.kubeconfig(), "--host-policy-file", policy}});

  const std::string dedicated =
      "  tolerations:\n  - key: dedicated\n    value: team-b\n    effect: NoSchedule\n";
  b.setup(pod_yaml("mine", dedicated));
  std::string other = dedicated;
  other.replace(other.find("team-b"), 6, "team-c");
  Result theirs = b.kubectl({"create", "-f", b.file("theirs.yaml", pod_yaml("theirs", other))});
  CHECK_THAT(theirs, FailedWith("spec.tolerations[0]: tolerating \"dedicated=team-c:NoSchedule\" "
                                "is not allowed (allowed: node.kubernetes.io/not-ready:NoExecute, "
                                "node.kubernetes.io/unreachable:NoExecute, "
                                "dedicated=team-b:NoSchedule)"));
  // The list replaces the defaults: the GPU taint is no longer the tenant's.
  Result gpu = b.kubectl({"create", "-f",
                          b.file("gpu.yaml", pod_yaml("gpu",
                                                      "  tolerations:\n  - key: "
                                                      "nvidia.com/gpu\n    operator: "
                                                      "Exists\n"))});
  CHECK_THAT(gpu, FailedWith("tolerating \"nvidia.com/gpu\" (every effect) is not allowed"));

  REQUIRE_THAT(b.kubectl({"create", "service", "nodeport", "np", "--tcp=80:8080"}), Succeeded());
  json hsvc;
  REQUIRE(eventually(
      [&] {
        Result r = host.kubectl(
            {"get", "svc", "np-x-default-x-team-b", "-n", "vkube-team-b", "-o", "json"});
        if (r.exit_code != 0) return false;
        hsvc = json::parse(r.out);
        return true;
      },
      kSettle));
  CHECK(hsvc["spec"]["type"] == "NodePort");
  CHECK(hsvc["spec"]["ports"][0].value("nodePort", 0) > 0);
  REQUIRE(eventually(
      [&] {
        Result r = host.kubectl({"get", "pod", "mine-x-default-x-team-b", "-n", "vkube-team-b",
                                 "-o", "jsonpath={.spec.tolerations[*].key}"});
        return r.exit_code == 0 && r.out.find("dedicated") != std::string::npos;
      },
      kSettle));
}

}  // namespace vkube::e2e
