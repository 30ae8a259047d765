// ConfigMaps, Secrets and Services for the host: golden files under golden/
// (VKUBE_UPDATE_GOLDEN=1 rewrites them; review the diff).
#include <catch2/catch.hpp>

#include "support/golden.h"
#include "vkube/syncer/translate_objects.h"

using json = nlohmann::json;
using vkube::syncer::NameMapper;
using vkube::syncer::ObjectContext;
using vkube::testing::check_golden;
using vkube::testing::golden_path;
using vkube::testing::read_json;

namespace {}  // namespace

TEST_CASE("a host claim's status becomes the tenant claim's", "[syncer]") {
  json host = {{"status",
                {{"phase", "Bound"},
                 {"capacity", {{"storage", "100Gi"}}},
                 {"accessModes", {"ReadWriteOnce"}},
                 {"extra", 1}}}};
  json s = vkube::syncer::tenant_pvc_status(host);
  CHECK(s["phase"] == "Bound");
  CHECK(s["capacity"]["storage"] == "100Gi");
  CHECK_FALSE(s.contains("extra"));
  CHECK(vkube::syncer::tenant_pvc_status(json::object()).empty());
}

TEST_CASE("config maps, secrets and services become their host objects (golden)", "[syncer]") {
  NameMapper names("team-a");
  ObjectContext ctx{&names,
                    "vkube-team-a",
                    {{"apiVersion", "v1"},
                     {"kind", "ConfigMap"},
                     {"name", "vkube-anchor"},
                     {"uid", "anchor-uid"}}};
  // The golden Service is a NodePort one: this operator allows them.
  vkube::syncer::HostPolicy node_ports;
  node_ports.service_types = {"ClusterIP", "NodePort"};
  ctx.policy = &node_ports;
  const json in = read_json(golden_path(__FILE__, "objects.in.json"));
  json got = json::object();
  for (const char* k : {"configmap", "secret"}) {
    auto r = vkube::syncer::translate_config(in[k], ctx);
    REQUIRE(r.is_ok());
    got[k] = *r;
  }
  for (const char* k : {"service", "headless"}) {
    auto r = vkube::syncer::translate_service(in[k], ctx);
    REQUIRE(r.is_ok());
    got[k] = *r;
  }
  auto pvc = vkube::syncer::translate_pvc(in["pvc"], ctx);
  REQUIRE(pvc.is_ok());
  got["pvc"] = *pvc;
  check_golden(golden_path(__FILE__, "objects.out.json"), got);
}

TEST_CASE("a claim's data sources stay in the tenant's own host namespace", "[syncer]") {
  NameMapper names("t");
  ObjectContext ctx{&names, "vkube-t", nullptr, nullptr};
  const json claim = {
      {"apiVersion", "v1"},
      {"kind", "PersistentVolumeClaim"},
      {"metadata", {{"name", "copy"}, {"namespace", "ml"}, {"uid", "u"}}},
      {"spec",
       {{"volumeName", "pvc-of-another-tenant"},
        {"dataSource", {{"kind", "PersistentVolumeClaim"}, {"name", "data"}}},
        {"dataSourceRef",
         {{"apiGroup", "snapshot.storage.k8s.io"},
          {"kind", "VolumeSnapshot"},
          {"name", "weights"},
          {"namespace", "vkube-other"}}}}}};
  auto host = vkube::syncer::translate_pvc(claim, ctx);
  REQUIRE(host.is_ok());
  const json& spec = (*host)["spec"];
  CHECK_FALSE(spec.contains("volumeName"));  // never bound to a host volume the tenant names
  CHECK(spec["dataSource"]["name"] == names.host_name("ml", "data"));
  CHECK_FALSE(spec["dataSourceRef"].contains("namespace"));
  CHECK(spec["dataSourceRef"]["name"] == "weights");
}
