#include <catch2/catch.hpp>

#include "vkube/gpu/node_spec.h"
#include "vkube/syncer/translate_back.h"

using json = nlohmann::json;

TEST_CASE("a tenant pod's status comes from its host pod", "[syncer]") {
  json host =
      json::parse(R"({"metadata":{"name":"web-0-x-default-x-a"},"spec":{"nodeName":"gpu-node-3"},
    "status":{"phase":"Running","podIP":"10.244.3.7","podIPs":[{"ip":"10.244.3.7"}],
      "hostIP":"172.16.0.4","startTime":"2026-12-01T10:00:00Z","qosClass":"Guaranteed",
      "nominatedNodeName":"other","conditions":[{"type":"Ready","status":"True"}],
      "containerStatuses":[{"name":"main","ready":true,"restartCount":0}]}})");
  json s = vkube::syncer::tenant_pod_status(host);
  CHECK(s["phase"] == "Running");
  CHECK(s["podIP"] == "10.244.3.7");
  CHECK(s["hostIP"] == "172.16.0.4");
  CHECK(s["conditions"][0]["type"] == "Ready");
  CHECK(s["containerStatuses"][0]["ready"] == true);
  CHECK(s["qosClass"] == "Guaranteed");
  CHECK_FALSE(s.contains("nominatedNodeName"));  // a host scheduling detail
}

TEST_CASE("a virtual node shows the host node's GPUs, not its scheduling internals", "[syncer]") {
  auto model = vkube::gpu::find_model("H100-80GB");
  REQUIRE(model.is_ok());
  vkube::gpu::NodeSpec spec;
  spec.name = "gpu-node-3";
  spec.gpus = 8;
  spec.model = *model;
  spec.pod_cidr = "10.244.3.0/24";
  spec.internal_ip = "172.16.0.4";
  spec.labels = {{"team-internal/rack", "r12"}};
  spec.taints = json::array({{{"key", "dedicated"}, {"value", "gpu"}, {"effect", "NoSchedule"}}});
  json host = vkube::gpu::node_object(spec, "2026-12-01T00:00:00Z");
  json node = vkube::syncer::virtual_node(host);
  CHECK(node["metadata"]["name"] == "gpu-node-3");
  const json& labels = node["metadata"]["labels"];
  CHECK(labels["nvidia.com/gpu.product"] == host["metadata"]["labels"]["nvidia.com/gpu.product"]);
  CHECK(labels["nvidia.com/gpu.count"] == "8");
  CHECK(labels["vkube.io/virtual-node"] == "true");
  CHECK_FALSE(labels.contains("team-internal/rack"));
  CHECK(node["status"]["capacity"]["nvidia.com/gpu"] ==
        host["status"]["capacity"]["nvidia.com/gpu"]);
  CHECK(node["status"]["allocatable"] == host["status"]["allocatable"]);
  CHECK(node["metadata"]["annotations"].contains("gpu.vkube.io/devices"));
  CHECK_FALSE(node.contains("spec"));  // no taints, pod CIDR or provider ID
}
