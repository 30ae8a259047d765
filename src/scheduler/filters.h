// kube-scheduler's filter plugins that matter to a GPU host: NodeUnschedulable,
// NodeName, TaintToleration, NodeAffinity (nodeSelector and required node
// affinity) and NodeResourcesFit, plus the GPU device fit. Each failing node
// gets kube's reason text, so the FailedScheduling message reads the same.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "node_info.h"

namespace vkube::scheduler {

struct Requirement {
  std::string key, op;
  std::vector<std::string> values;
};
struct NodeSelectorTerm {
  std::vector<Requirement> expressions;  // on labels
  std::vector<Requirement> fields;       // on metadata.name
};
struct Toleration {
  std::string key, op, value, effect;
};

// A pod's placement constraints, parsed once per scheduling attempt.
struct Constraints {
  std::string node_name;  // spec.nodeName is empty for pods we schedule; kept for NodeName
  std::vector<std::pair<std::string, std::string>> node_selector;
  std::vector<NodeSelectorTerm> required_terms;  // ORed; empty: no required affinity
  std::vector<Toleration> tolerations;
};
Constraints constraints_of(const json& pod);

// Appends why `node` cannot run the pod (kube's reason texts) to `reasons`
// and returns false, or returns true. The GPU fit is separate (gpu::choose).
bool filter_node(const NodeInfo& node, const PodInfo& pod, const Constraints& c,
                 std::vector<std::string>* reasons);

// kube's "0/12 nodes are available: 8 Insufficient nvidia.com/gpu, 4 node(s)
// didn't match Pod's node affinity/selector." from reason -> node count.
std::string unschedulable_message(int nodes, const std::map<std::string, int>& reasons);

}  // namespace vkube::scheduler
