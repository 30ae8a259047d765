// The tenant's default/kubernetes Service on a host (as vcluster does it):
// in a tenant made by `vkube create` on `vkube host`, the Service takes the
// cluster IP and port of the host Service fronting the tenant's API (`vkube`
// in the tenant's host namespace), so in-cluster clients that resolve
// kubernetes.default.svc reach their own tenant and not the host's API (the
// tenant's own first service address, 10.96.0.1, is the host's API server on
// a host using the same range). The kubernetes-service controller keeps it so.
#include <thread>

#include "fixture.h"

namespace vkube::e2e {
namespace {

using json = nlohmann::json;

TEST_CASE("a vkube create tenant's kubernetes Service has the host vkube Service's address",
          "[e2e][k8s-svc]") {
  Cluster host(Cluster::Host{});
  const std::string kubeconfig = host.dir() + "/svc.kubeconfig";
  REQUIRE_THAT(host.run({VKUBE_BINARY, "create", "svc", "--kubeconfig", host.kubeconfig(), "--out",
                         kubeconfig},
                        seconds(90)),
               Succeeded());
  auto tenant = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {kubectl_path(), "--kubeconfig", kubeconfig});
    return host.run(args);
  };
  const json hsvc = host.get_json({"svc", "vkube", "-n", "vkube-svc"});
  const std::string host_ip = hsvc["spec"]["clusterIP"];
  REQUIRE(!host_ip.empty());
  REQUIRE(host_ip != "10.96.0.1");  // the host's own kubernetes Service has that one

  std::string ip, port;
  const bool adopted = eventually(
      [&] {
        Result r = tenant({"get", "svc", "kubernetes", "-n", "default", "-o",
                           "jsonpath={.spec.clusterIP} {.spec.ports[0].port}"});
        if (r.exit_code != 0) return false;
        auto cols = columns(r.out);
        if (cols.size() != 2) return false;
        ip = cols[0];
        port = cols[1];
        return ip == host_ip;
      },
      seconds(30));
  INFO("tenant kubernetes Service: " << ip << ":" << port);
  REQUIRE(adopted);
  CHECK(port == "443");  // the host Service's https port
  CHECK(tenant({"get", "svc", "kubernetes", "-n", "default", "-o",
                "jsonpath={.metadata.annotations.vkube\\.io/host-service}"})
            .out == "vkube-svc/vkube");

  // Deleted by the tenant admin, it comes back with the host's address again
  // (the controller makes it, the syncer gives it the address), not 10.96.0.1.
  REQUIRE_THAT(tenant({"delete", "svc", "kubernetes", "-n", "default"}), Succeeded());
  CHECK(eventually(
      [&] {
        Result r = tenant(
            {"get", "svc", "kubernetes", "-n", "default", "-o", "jsonpath={.spec.clusterIP}"});
        return r.exit_code == 0 && r.out == host_ip;
      },
      seconds(30)));
  // And stays so: the controller does not take it back.
  std::this_thread::sleep_for(seconds(2));
  CHECK(tenant({"get", "svc", "kubernetes", "-n", "default", "-o", "jsonpath={.spec.clusterIP}"})
            .out == host_ip);
}

TEST_CASE("vkube serve --api-service: the tenant's DNS answers kubernetes.default.svc with it",
          "[e2e][k8s-svc]") {
  Cluster host(Cluster::Host{});
  // The operator's own Service in front of the tenant, on another port than 443.
  host.setup(R"(apiVersion: v1
kind: Namespace
metadata:
  name: vkube-dns
---
apiVersion: v1
kind: Service
metadata:
  name: front
  namespace: vkube-dns
spec:
  selector:
    app: tenant-api
  ports:
  - name: https
    port: 8443
    targetPort: 6443
)");
  const std::string front = host.get_json({"svc", "front", "-n", "vkube-dns"})["spec"]["clusterIP"];
  Cluster t(Cluster::Serve{{"--name", "dns", "--host-kubeconfig", host.kubeconfig(),
                            "--api-service", "front", "--dns-listen", "127.0.0.1:0"}});
  std::string got;
  const bool adopted = eventually(
      [&] {
        Result r = t.kubectl({"get", "svc", "kubernetes", "-n", "default", "-o",
                              "jsonpath={.spec.clusterIP}:{.spec.ports[0].port}"});
        got = r.out;
        return r.exit_code == 0 && got == front + ":8443";
      },
      seconds(30));
  INFO("tenant kubernetes Service: " << got << ", host front: " << front);
  REQUIRE(adopted);

  const std::string log = t.server_log();
  const size_t at = log.find("msg=\"dns: serving\"");
  REQUIRE(at != std::string::npos);
  const size_t port_at = log.find("port=", at) + 5;
  const std::string port =
      log.substr(port_at, log.find_first_not_of("0123456789", port_at) - port_at);
  Result dig = t.run(
      {"/usr/bin/dig", "@127.0.0.1", "-p", port, "+short", "kubernetes.default.svc.cluster.local"});
  INFO(dig);
  CHECK(lines(dig.out) == std::vector<std::string>{front});
}

}  // namespace
}  // namespace vkube::e2e
