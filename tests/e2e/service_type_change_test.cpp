// A Service's type changed with kubectl as users and charts do: the node
// ports a new type needs are allocated, the ones a change drops are freed
// for other Services, and a three-way apply back to ClusterIP succeeds.
#include "fixture.h"

namespace vkube::e2e {
namespace {

using nlohmann::json;

std::string service(const std::string& name, const std::string& type,
                    const std::string& node_port = "") {
  return "apiVersion: v1\nkind: Service\nmetadata:\n  name: " + name + "\nspec:\n  type: " + type +
         "\n  selector: {app: " + name +
         "}\n  ports:\n  - {name: http, port: 80, targetPort: 8080" +
         (node_port.empty() ? "" : ", nodePort: " + node_port) + "}\n";
}

int node_port(const json& svc) {
  return svc["spec"]["ports"][0].value("nodePort", 0);
}

TEST_CASE("kubectl patch to NodePort allocates a node port, back to ClusterIP frees it",
          "[e2e][svc-type]") {
  Cluster c;
  REQUIRE_THAT(c.kubectl({"create", "service", "clusterip", "s", "--tcp=80:8080"}), Succeeded());
  REQUIRE_THAT(c.kubectl({"patch", "svc", "s", "-p", R"({"spec":{"type":"NodePort"}})"}),
               Succeeded());
  const int port = node_port(c.get_json({"svc", "s"}));
  CHECK(port >= 30000);
  CHECK(port <= 32767);

  // A second NodePort Service cannot take it while s holds it.
  Result taken =
      c.kubectl({"apply", "-f", c.file("t.yaml", service("t", "NodePort", std::to_string(port)))});
  CHECK(taken.exit_code != 0);
  CHECK(taken.err.find("spec.ports[0].nodePort: Invalid value: " + std::to_string(port) +
                       ": provided port is already allocated") != std::string::npos);

  REQUIRE_THAT(c.kubectl({"patch", "svc", "s", "-p", R"({"spec":{"type":"ClusterIP"}})"}),
               Succeeded());
  json back = c.get_json({"svc", "s"});
  CHECK(back["spec"]["type"] == "ClusterIP");
  CHECK_FALSE(back["spec"]["ports"][0].contains("nodePort"));

  REQUIRE_THAT(
      c.kubectl({"apply", "-f", c.file("t.yaml", service("t", "NodePort", std::to_string(port)))}),
      Succeeded());
  CHECK(node_port(c.get_json({"svc", "t"})) == port);
}

TEST_CASE("kubectl apply turns a LoadBalancer Service into ClusterIP and frees its node port",
          "[e2e][svc-type]") {
  Cluster c;
  REQUIRE_THAT(c.kubectl({"apply", "-f", c.file("lb.yaml", service("web", "LoadBalancer"))}),
               Succeeded());
  const int port = node_port(c.get_json({"svc", "web"}));
  REQUIRE(port >= 30000);
  // As `helm upgrade --set service.type=ClusterIP` does: a three-way merge
  // that never named the allocated node port.
  REQUIRE_THAT(c.kubectl({"apply", "-f", c.file("ip.yaml", service("web", "ClusterIP"))}),
               Succeeded());
  json after = c.get_json({"svc", "web"});
  CHECK(after["spec"]["type"] == "ClusterIP");
  CHECK_FALSE(after["spec"]["ports"][0].contains("nodePort"));
  REQUIRE_THAT(c.kubectl({"apply", "-f",
                          c.file("np.yaml", service("other", "NodePort", std::to_string(port)))}),
               Succeeded());
  CHECK(node_port(c.get_json({"svc", "other"})) == port);
}

TEST_CASE("kubectl patch --dry-run=server to NodePort reserves nothing", "[e2e][svc-type]") {
  Cluster c;
  REQUIRE_THAT(c.kubectl({"create", "service", "clusterip", "s", "--tcp=80:8080"}), Succeeded());
  Result dry = c.kubectl({"patch", "svc", "s", "--dry-run=server", "-o", "json", "-p",
                          R"({"spec":{"type":"NodePort"}})"});
  REQUIRE_THAT(dry, Succeeded());
  const int port = node_port(json::parse(dry.out));
  REQUIRE(port >= 30000);
  CHECK(c.get_json({"svc", "s"})["spec"]["type"] == "ClusterIP");
  REQUIRE_THAT(
      c.kubectl({"apply", "-f", c.file("t.yaml", service("t", "NodePort", std::to_string(port)))}),
      Succeeded());
}

}  // namespace
}  // namespace vkube::e2e
