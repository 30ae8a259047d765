// The syncer end to end: `vkube host` and two tenants (`vkube serve
// --host-kubeconfig`), real kubectl on all three. A tenant's GPU pod and
// Deployment run on the host in the tenant's namespace and show Running on a
// GPU virtual node; the other tenant sees none of it; deletion flows both
// ways; a tenant killed mid-way converges after restart without duplicates;
// deleting the tenant's anchor cleans its host namespace.
#include <signal.h>

#include <map>
#include <set>

#include "fixture.h"

namespace vkube::e2e {
namespace {

using json = nlohmann::json;

std::string gpu_pod(const std::string& name, int gpus) {
  return "apiVersion: v1\nkind: Pod\nmetadata:\n  name: " + name +
         "\n  labels:\n    app: train\nspec:\n  containers:\n  - name: main\n"
         "    image: nvcr.io/nvidia/pytorch:24.05-py3\n    resources:\n      limits:\n"
         "        nvidia.com/gpu: " +
         std::to_string(gpus) + "\n";
}

std::string plain_pod(const std::string& name) {
  return "apiVersion: v1\nkind: Pod\nmetadata:\n  name: " + name +
         "\nspec:\n  containers:\n  - name: main\n    image: busybox:1.36\n";
}

constexpr const char* kDeployment = R"(apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: nginx
        image: nginx:1.27
        envFrom:
        - configMapRef: {name: web-config}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: web-config
data:
  MODE: production
---
apiVersion: v1
kind: Service
metadata:
  name: web
spec:
  selector: {app: web}
  ports:
  - name: http
    port: 80
    targetPort: 8080
)";

// Long enough for a loaded 2-core CI machine; a pass returns at once.
constexpr auto kSettle = seconds(30);

// `kubectl get ARGS -o json`'s items (a copy: safe in a range-for).
json items(Cluster& c, std::vector<std::string> args) {
  return c.get_json(std::move(args))["items"];
}

// The host pods of `tenant` (in its host namespace), by name.
std::map<std::string, json> host_pods(Cluster& host, const std::string& tenant) {
  std::map<std::string, json> out;
  for (const json& p : items(host, {"pods", "-n", "vkube-" + tenant}))
    out[p["metadata"]["name"].get<std::string>()] = p;
  return out;
}

std::string pod_phase(Cluster& c, const std::string& ns, const std::string& name) {
  Result r = c.kubectl({"get", "pod", name, "-n", ns, "-o", "jsonpath={.status.phase}"});
  return r.exit_code == 0 ? r.out : "";
}

Cluster::Serve tenant_flags(const Cluster& host, const std::string& name,
                            std::vector<std::string> extra = {}) {
  Cluster::Serve s{{"--name", name, "--host-kubeconfig", host.kubeconfig()}};
  s.args.insert(s.args.end(), extra.begin(), extra.end());
  return s;
}

TEST_CASE("syncer: tenant pods run on the shared host, isolated, both ways, across restarts",
          "[e2e][syncer]") {
  Cluster host(Cluster::Host{});
  Cluster a(tenant_flags(host, "team-a", {"--gpu-quota", "gpus=6", "--dns-listen", "127.0.0.1:0"}));
  Cluster b(tenant_flags(host, "team-b"));

  // --- A GPU pod runs on the host and shows Running on a GPU virtual node.
  a.setup(gpu_pod("train", 2));
  {
    Result r =
        a.kubectl({"wait", "--for=condition=Ready", "pod/train", "--timeout=30s"}, seconds(40));
    INFO(r << a.server_log() << host.server_log());
    REQUIRE_THAT(r, Succeeded());
  }
  auto hp = host_pods(host, "team-a");
  REQUIRE(hp.count("train-x-default-x-team-a") == 1);
  const json& hpod = hp["train-x-default-x-team-a"];
  CHECK(hpod["status"]["phase"] == "Running");
  CHECK(hpod["metadata"]["labels"]["vkube.io/tenant"] == "team-a");
  CHECK(hpod["metadata"]["labels"]["vkube.io/tenant-namespace"] == "default");
  CHECK(hpod["metadata"]["annotations"]["vkube.io/tenant-name"] == "train");
  CHECK(hpod["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == "2");
  REQUIRE(hpod["metadata"]["ownerReferences"].size() == 1);
  CHECK(hpod["metadata"]["ownerReferences"][0]["name"] == "vkube-tenant-team-a");
  const std::string node = hpod["spec"]["nodeName"].get<std::string>();
  REQUIRE(!node.empty());

  json tpod = a.get_json({"pod", "train"});
  CHECK(tpod["spec"]["nodeName"] == node);
  CHECK(tpod["status"]["podIP"] == hpod["status"]["podIP"]);
  Result wide = a.kubectl({"get", "pod", "train", "-o", "wide"});
  CHECK(wide.out.find(node) != std::string::npos);
  // The virtual node: the host node's GPUs and GPU labels.
  json vnode = a.get_json({"node", node});
  CHECK(vnode["metadata"]["labels"]["vkube.io/virtual-node"] == "true");
  json hnode = host.get_json({"node", node});
  CHECK(vnode["status"]["capacity"]["nvidia.com/gpu"] ==
        hnode["status"]["capacity"]["nvidia.com/gpu"]);
  CHECK(vnode["metadata"]["labels"]["nvidia.com/gpu.product"] ==
        hnode["metadata"]["labels"]["nvidia.com/gpu.product"]);
  CHECK(vnode["metadata"]["labels"].contains("nvidia.com/gpu.product"));
  Result nodes = a.kubectl({"get", "nodes"});
  INFO(nodes);
  CHECK(lines(nodes.out).size() == 2);  // the header and the one node in use

  // --- A Deployment with a ConfigMap and a Service.
  a.setup(kDeployment);
  REQUIRE(eventually(
      [&] {
        int running = 0;
        for (const json& p : items(a, {"pods", "-l", "app=web"}))
          running += p["status"].value("phase", "") == "Running";
        return running == 2;
      },
      seconds(30)));
  hp = host_pods(host, "team-a");
  CHECK(hp.size() == 3);
  json hcm = host.get_json({"configmap", "web-config-x-default-x-team-a", "-n", "vkube-team-a"});
  CHECK(hcm["data"]["MODE"] == "production");
  REQUIRE(eventually(
      [&] {
        Result r = host.kubectl({"get", "svc", "web-x-default-x-team-a", "-n", "vkube-team-a", "-o",
                                 "jsonpath={.spec.clusterIP}"});
        return r.exit_code == 0 && !r.out.empty() &&
               a.get_json({"svc", "web"})["spec"]["clusterIP"] == r.out;
      },
      kSettle));

  // --- A host object changed behind vkube's back is repaired; one that
  // stands for another tenant object (its tenant UID differs) is replaced.
  {
    const std::string cm = "web-config-x-default-x-team-a";
    std::string web = items(a, {"pods", "-l", "app=web"})[0]["metadata"]["name"];
    const std::string hweb = web + "-x-default-x-team-a";
    REQUIRE_THAT(
        host.kubectl({"label", "pod", hweb, "-n", "vkube-team-a", "app=other", "--overwrite"}),
        Succeeded());
    REQUIRE_THAT(host.kubectl({"patch", "configmap", cm, "-n", "vkube-team-a", "--type=merge", "-p",
                               R"({"data":{"MODE":"hacked"}})"}),
                 Succeeded());
    REQUIRE(eventually(
        [&] {
          return host.get_json({"pod", hweb, "-n", "vkube-team-a"})["metadata"]["labels"]["app"] ==
                     "web" &&
                 host.get_json({"configmap", cm, "-n", "vkube-team-a"})["data"]["MODE"] ==
                     "production";
        },
        kSettle));
    const std::string old_uid =
        host.get_json({"configmap", cm, "-n", "vkube-team-a"})["metadata"]["uid"];
    REQUIRE_THAT(host.kubectl({"annotate", "configmap", cm, "-n", "vkube-team-a",
                               "vkube.io/tenant-uid=someone-else", "--overwrite"}),
                 Succeeded());
    const std::string tenant_uid = a.get_json({"configmap", "web-config"})["metadata"]["uid"];
    REQUIRE(eventually(
        [&] {
          Result r = host.kubectl({"get", "configmap", cm, "-n", "vkube-team-a", "-o", "json"});
          if (r.exit_code != 0) return false;
          json h = json::parse(r.out);
          return h["metadata"]["uid"] != old_uid &&
                 h["metadata"]["annotations"]["vkube.io/tenant-uid"] == tenant_uid;
        },
        kSettle));
  }

  // --- vkube answers the tenant's DNS (no CoreDNS pod): a real resolver
  // finds the Service at the address the host gave it, over UDP and TCP.
  {
    const std::string log = a.server_log();
    const size_t at = log.find("msg=\"dns: serving\"");
    REQUIRE(at != std::string::npos);
    const size_t port_at = log.find("port=", at) + 5;
    const std::string port =
        log.substr(port_at, log.find_first_not_of("0123456789", port_at) - port_at);
    const std::string ip = a.get_json({"svc", "web"})["spec"]["clusterIP"];
    for (const char* transport : {"+notcp", "+tcp"}) {
      Result dig = a.run({"/usr/bin/dig", "@127.0.0.1", "-p", port, transport, "+short",
                          "web.default.svc.cluster.local"});
      INFO(dig);
      CHECK(lines(dig.out) == std::vector<std::string>{ip});
    }
    Result srv = a.run({"/usr/bin/dig", "@127.0.0.1", "-p", port, "+short", "SRV",
                        "_http._tcp.web.default.svc.cluster.local"});
    INFO(srv);
    CHECK(srv.out.find("80 web.default.svc.cluster.local.") != std::string::npos);
    Result nx =
        a.run({"/usr/bin/dig", "@127.0.0.1", "-p", port, "nothere.default.svc.cluster.local"});
    CHECK(nx.out.find("status: NXDOMAIN") != std::string::npos);
    // Host pods are pointed at it.
    json dns = host.get_json({"pod", "train-x-default-x-team-a", "-n", "vkube-team-a"})["spec"];
    CHECK(dns["dnsPolicy"] == "None");
    CHECK(dns["dnsConfig"]["nameservers"] == json::array({"127.0.0.1"}));
    CHECK(dns["dnsConfig"]["searches"][0] == "default.svc.cluster.local");
  }

  // --- Tenant B sees none of it, and the host keeps B's namespace apart.
  CHECK(b.get_json({"pods", "-A"})["items"].empty());
  CHECK(b.get_json({"nodes"})["items"].empty());
  CHECK(host_pods(host, "team-b").empty());
  // B's Service gets the address the host gives it, whatever B chose first
  // (both tenants allocate from the same range; the host's addresses differ).
  b.setup(
      "apiVersion: v1\nkind: Service\nmetadata:\n  name: db\nspec:\n  selector: {app: db}\n"
      "  ports:\n  - port: 5432\n");
  REQUIRE(eventually(
      [&] {
        Result r = host.kubectl({"get", "svc", "db-x-default-x-team-b", "-n", "vkube-team-b", "-o",
                                 "jsonpath={.spec.clusterIP}"});
        return r.exit_code == 0 && !r.out.empty() &&
               b.get_json({"svc", "db"})["spec"]["clusterIP"] == r.out;
      },
      kSettle));
  CHECK(b.get_json({"svc", "db"})["spec"]["clusterIP"] !=
        a.get_json({"svc", "web"})["spec"]["clusterIP"]);

  // --- Refused at A's admission, never reaching the host.
  Result priv = a.kubectl(
      {"run", "root", "--image=busybox", "--overrides",
       R"({"spec":{"containers":[{"name":"root","image":"busybox","securityContext":{"privileged":true}}]}})"});
  INFO(priv);
  CHECK_THAT(priv, FailedWith("violates PodSecurity \"baseline:latest\": privileged"));
  a.file("big.yaml", gpu_pod("big", 5));
  Result over = a.kubectl({"apply", "-f", a.dir() + "/big.yaml"});
  INFO(over);
  CHECK_THAT(over, FailedWith("exceeded quota"));
  CHECK(host_pods(host, "team-a").size() == 3);

  // --- Deletion: tenant -> host, and host -> tenant.
  REQUIRE_THAT(a.kubectl({"delete", "pod", "train", "--wait=true", "--timeout=30s"}, seconds(40)),
               Succeeded());
  REQUIRE(eventually(
      [&] { return host_pods(host, "team-a").count("train-x-default-x-team-a") == 0; }, kSettle));
  // The node no longer runs anything of A's... unless the web pods share it.
  std::string web_pod = a.get_json({"pods", "-l", "app=web"})["items"][0]["metadata"]["name"];
  REQUIRE_THAT(
      host.kubectl({"delete", "pod", web_pod + "-x-default-x-team-a", "-n", "vkube-team-a"}),
      Succeeded());
  REQUIRE(eventually([&] { return pod_phase(a, "default", web_pod).empty(); }, kSettle));
  // The ReplicaSet replaces it, on the host too.
  REQUIRE(eventually(
      [&] {
        int running = 0;
        for (const json& p : items(a, {"pods", "-l", "app=web"}))
          running += p["status"].value("phase", "") == "Running";
        return running == 2 && host_pods(host, "team-a").size() == 2;
      },
      seconds(30)));

  // --- Killed mid-way: pods created, the tenant killed before it can sync
  // them all, restarted: every pod once on the host.
  std::string many;
  for (int i = 0; i < 20; ++i) many += (i ? "---\n" : "") + plain_pod("job-" + std::to_string(i));
  a.setup(many);
  a.restart(SIGKILL);
  REQUIRE(eventually(
      [&] {
        auto pods = host_pods(host, "team-a");
        return pods.size() == 22;
      },
      seconds(30)));
  {
    std::set<std::string> tenant_uids;
    for (const json& p : items(a, {"pods"}))
      tenant_uids.insert(p["metadata"]["uid"].get<std::string>());
    REQUIRE(tenant_uids.size() == 22);
    for (const auto& [name, p] : host_pods(host, "team-a")) {
      INFO(name);
      CHECK(tenant_uids.count(
                p["metadata"]["annotations"]["vkube.io/tenant-uid"].get<std::string>()) == 1);
    }
  }
  REQUIRE(eventually(
      [&] {
        int running = 0;
        for (const json& p : items(a, {"pods"}))
          running += p["status"].value("phase", "") == "Running";
        return running == 22;
      },
      seconds(30)));

  // --- Deleting the tenant: its anchor goes, and with it everything on the host.
  a.stop();
  REQUIRE_THAT(host.kubectl({"delete", "configmap", "vkube-tenant-team-a", "-n", "vkube-team-a"}),
               Succeeded());
  REQUIRE(eventually(
      [&] {
        return host
            .get_json({"pods,configmaps,services", "-n", "vkube-team-a", "-l",
                       "vkube.io/tenant=team-a"})["items"]
            .empty();
      },
      seconds(30)));
  // Tenant B is untouched.
  CHECK(b.get_json({"pods", "-A"})["items"].empty());
}

}  // namespace
}  // namespace vkube::e2e
