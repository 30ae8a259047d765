// Which nodes a DaemonSet's pods belong on, without I/O (kube's
// NodeShouldRunDaemonPod and pkg/controller/daemon/util): the template's
// nodeName, nodeSelector and required node affinity against the node's name
// and labels, its NoSchedule/NoExecute taints against the pod's tolerations
// (with the tolerations every daemon pod gets), and the node affinity that
// pins a daemon pod to its node.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace vkube::controllers::daemonset {

using json = nlohmann::json;

struct Placement {
  bool should_run = false;       // a daemon pod should be created there
  bool should_continue = false;  // an existing daemon pod may stay
};

// kube's NodeShouldRunDaemonPod for the DaemonSet `ds` and `node`.
Placement placement(const json& node, const json& ds);

// Adds the tolerations of every daemon pod to a pod spec (kube's
// AddOrUpdateDaemonPodTolerations): not-ready and unreachable NoExecute;
// disk-, memory-, pid-pressure and unschedulable NoSchedule; and
// network-unavailable NoSchedule for hostNetwork pods.
void add_daemon_tolerations(json& pod_spec);

// Replaces the required node affinity terms of a pod spec with one that
// matches only the node `node_name` (metadata.name In [node_name]).
void pin_to_node(json& pod_spec, const std::string& node_name);

// The node a daemon pod is for: spec.nodeName, else the single value of its
// metadata.name In term; "" when neither is there.
std::string target_node(const json& pod);

// Node selector terms (v1.NodeSelector) against a node: terms are ORed, the
// expressions of a term ANDed; an empty term matches nothing.
bool node_selector_matches(const json& node_selector, const json& node);
// A toleration that tolerates `taint` (kube's ToleratesTaint).
bool tolerates(const json& toleration, const json& taint);

}  // namespace vkube::controllers::daemonset
