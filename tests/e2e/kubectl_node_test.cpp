// Nodes as a host cluster's operator sees them: kubectl get nodes (-o wide),
// cordon, describe node with what its pods requested of the GPUs, and a
// scheduler's binding sent through kubectl.
#include <algorithm>

#include "fixture.h"

namespace vkube::e2e {
namespace {

using Names = std::vector<std::string>;

const char* kNode = R"(
apiVersion: v1
kind: Node
metadata:
  name: gpu-node-1
  labels:
    kubernetes.io/hostname: gpu-node-1
    node-role.kubernetes.io/gpu: ""
)";

// What a kubelet would report: kubectl apply cannot set it (status is a
// subresource), replace --subresource=status can.
const char* kNodeStatus = R"(
apiVersion: v1
kind: Node
metadata:
  name: gpu-node-1
status:
  capacity: {cpu: "32", memory: 256Gi, pods: "110", nvidia.com/gpu: "8"}
  allocatable: {cpu: "32", memory: 250Gi, pods: "110", nvidia.com/gpu: "8"}
  conditions:
  - type: Ready
    status: "True"
    reason: KubeletReady
    message: kubelet is posting ready status
    lastHeartbeatTime: "2026-12-03T00:00:00Z"
    lastTransitionTime: "2026-12-03T00:00:00Z"
  addresses:
  - {type: InternalIP, address: 10.0.0.11}
  - {type: Hostname, address: gpu-node-1}
  nodeInfo:
    machineID: m1
    systemUUID: s1
    bootID: b1
    kernelVersion: 6.8.0-1015-nvidia
    osImage: Ubuntu 24.04 LTS
    containerRuntimeVersion: containerd://1.7.22
    kubeletVersion: v1.32.0
    kubeProxyVersion: v1.32.0
    operatingSystem: linux
    architecture: amd64
)";

// Extended resources are requested whole, with limits equal to requests.
const char* kTrainer = R"(
apiVersion: v1
kind: Pod
metadata: {name: trainer, namespace: default}
spec:
  nodeName: gpu-node-1
  containers:
  - name: main
    image: pytorch
    resources:
      requests: {cpu: "2", memory: 8Gi, nvidia.com/gpu: "2"}
      limits: {memory: 8Gi, nvidia.com/gpu: "2"}
)";

const char* kUnscheduled = R"(
apiVersion: v1
kind: Pod
metadata: {name: p, namespace: default}
spec:
  containers:
  - name: main
    image: pytorch
    resources:
      requests: {nvidia.com/gpu: "1"}
      limits: {nvidia.com/gpu: "1"}
)";

const char* kBinding = R"({
  "apiVersion": "v1", "kind": "Binding",
  "metadata": {"name": "p", "annotations": {"vkube.io/gpu-ids": "4"}},
  "target": {"apiVersion": "v1", "kind": "Node", "name": "gpu-node-1"}
})";

// The columns of the lines of `section` in kubectl describe's output: from
// the line starting with `section` to the next unindented line.
std::vector<Names> section_rows(const std::string& text, const std::string& section) {
  std::vector<Names> rows;
  bool in = false;
  for (const std::string& line : lines(text)) {
    if (line.starts_with(section))
      in = true;
    else if (in && line[0] != ' ')
      break;
    else if (in)
      rows.push_back(columns(line));
  }
  return rows;
}

bool has_row(const std::vector<Names>& rows, const Names& want) {
  return std::find(rows.begin(), rows.end(), want) != rows.end();
}

void create_gpu_node(Cluster& c) {
  REQUIRE_THAT(c.kubectl({"apply", "-f", c.file("node.yaml", kNode)}), Succeeded());
  REQUIRE_THAT(
      c.kubectl({"replace", "--subresource=status", "-f", c.file("node-status.yaml", kNodeStatus)}),
      Succeeded());
}

TEST_CASE("kubectl get nodes shows status, roles, version and -o wide the system info", "[e2e]") {
  Cluster c;
  create_gpu_node(c);

  Result get = c.kubectl({"get", "nodes"});
  REQUIRE_THAT(get, Succeeded());
  std::vector<std::string> out = lines(get.out);
  REQUIRE(out.size() == 2);
  CHECK(columns(out[0]) == Names{"NAME", "STATUS", "ROLES", "AGE", "VERSION"});
  Names row = columns(out[1]);
  REQUIRE(row.size() == 5);
  CHECK(row[0] == "gpu-node-1");
  CHECK(row[1] == "Ready");
  CHECK(row[2] == "gpu");
  CHECK(row[4] == "v1.32.0");

  Result wide = c.kubectl({"get", "nodes", "-o", "wide"});
  REQUIRE_THAT(wide, Succeeded());
  out = lines(wide.out);
  REQUIRE(out.size() == 2);
  CHECK(columns(out[0]) == Names{"NAME", "STATUS", "ROLES", "AGE", "VERSION", "INTERNAL-IP",
                                 "EXTERNAL-IP", "OS-IMAGE", "KERNEL-VERSION", "CONTAINER-RUNTIME"});
  row = columns(out[1]);
  REQUIRE(row.size() == 12);  // the OS image has two spaces
  CHECK(Names(row.begin() + 5, row.end()) == Names{"10.0.0.11", "<none>", "Ubuntu", "24.04", "LTS",
                                                   "6.8.0-1015-nvidia", "containerd://1.7.22"});

  REQUIRE_THAT(c.kubectl({"cordon", "gpu-node-1"}), Succeeded());
  out = lines(c.kubectl({"get", "nodes"}).out);
  REQUIRE(out.size() == 2);
  CHECK(columns(out[1])[1] == "Ready,SchedulingDisabled");
}

TEST_CASE("kubectl describe node shows capacity and the GPUs its pods requested", "[e2e]") {
  Cluster c;
  create_gpu_node(c);
  c.setup(kTrainer);

  Result describe = c.kubectl({"describe", "node", "gpu-node-1"});
  REQUIRE_THAT(describe, Succeeded());
  const std::string& text = describe.out;
  INFO(text);
  CHECK_THAT(text, Catch::StartsWith("Name:               gpu-node-1\n") &&
                       Catch::Contains("Roles:              gpu\n") &&
                       Catch::Contains("Kernel Version:             6.8.0-1015-nvidia"));
  CHECK(has_row(section_rows(text, "Capacity:"), Names{"nvidia.com/gpu:", "8"}));
  CHECK(has_row(section_rows(text, "Allocatable:"), Names{"memory:", "250Gi"}));
  CHECK(has_row(section_rows(text, "Allocatable:"), Names{"nvidia.com/gpu:", "8"}));
  const auto conditions = section_rows(text, "Conditions:");
  REQUIRE(conditions.size() == 3);  // header, rule, Ready
  CHECK(Names(conditions[2].begin(), conditions[2].begin() + 2) == Names{"Ready", "True"});
  CHECK_THAT(text, Catch::Contains("Non-terminated Pods:          (1 in total)"));
  const auto pods = section_rows(text, "Non-terminated Pods:");
  REQUIRE(pods.size() == 3);  // header, rule, trainer
  CHECK(Names(pods[2].begin(), pods[2].end() - 1) ==
        Names{"default", "trainer", "2", "(6%)", "0", "(0%)", "8Gi", "(3%)", "8Gi", "(3%)"});
  // kubectl prints extended resources without a share of the allocatable.
  const auto allocated = section_rows(text, "Allocated resources:");
  CHECK(has_row(allocated, Names{"cpu", "2", "(6%)", "0", "(0%)"}));
  CHECK(has_row(allocated, Names{"nvidia.com/gpu", "2", "2"}));
}

TEST_CASE("a binding posted through kubectl assigns the pod to the node", "[e2e]") {
  Cluster c;
  create_gpu_node(c);
  c.setup(kUnscheduled);
  const std::string binding = c.file("binding.json", kBinding);
  const std::vector<std::string> bind = {
      "create", "--raw", "/api/v1/namespaces/default/pods/p/binding", "-f", binding};

  Result r = c.kubectl(bind);
  REQUIRE_THAT(r, Succeeded());
  nlohmann::json status = nlohmann::json::parse(r.out);
  CHECK(status["kind"] == "Status");
  CHECK(status["status"] == "Success");
  CHECK(c.kubectl({"get", "pod", "p", "-o", "jsonpath={.spec.nodeName}"}).out == "gpu-node-1");
  CHECK(c.kubectl({"get", "pod", "p", "-o",
                   R"(jsonpath={.metadata.annotations.vkube\.io/gpu-ids} )"
                   R"({.status.conditions[?(@.type=="PodScheduled")].status})"})
            .out == "4 True");

  CHECK_THAT(c.kubectl(bind), FailedWith("pod p is already assigned to node \"gpu-node-1\""));
  Result describe = c.kubectl({"describe", "node", "gpu-node-1"});
  REQUIRE_THAT(describe, Succeeded());
  CHECK(has_row(section_rows(describe.out, "Allocated resources:"),
                Names{"nvidia.com/gpu", "1", "1"}));
}

}  // namespace
}  // namespace vkube::e2e
