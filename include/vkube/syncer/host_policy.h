// The operator's placement policy for one tenant: what a tenant's pods and
// Services may ask of the shared host, what their host copies get whatever
// the tenant wrote, and what never travels. It is the one policy step at the
// tenant -> host boundary (STYLE.md §8): the tenant's admission refuses what
// it refuses, with its messages (apiserver/host_policy_admission.cpp), and
// the syncer's translators apply it to every host copy; neither decides on
// its own. Pure functions over JSON, table-tested.
//
//   injected  schedulerName, scheduler/queue labels, priorityClassName: the
//             operator's (--host-scheduler-name, --host-pod-labels,
//             --host-priority-class), never the tenant's; nodeSelector
//             entries (--host-node-selector): the tenant's slice of nodes,
//             which its own selector and node affinity can only narrow
//   stripped  tenant labels and annotations of host schedulers and queues
//             (kai.scheduler/, kueue.x-k8s.io/, volcano.sh/, ...)
//   allowed   tolerations, node label keys (nodeSelector, node affinity,
//             topology keys), runtime classes and Service types the operator
//             lists; everything else is refused. Never allowed: a toleration
//             of every taint (no key), node affinity on node names
//             (matchFields, kubernetes.io/hostname), pod affinity into other
//             namespaces, externalIPs. ExternalName Services stay in the
//             tenant (its DNS answers them) and never reach the host.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "vkube/common/status.h"

namespace vkube::syncer {

// A taint tenant pods may tolerate: `key` (never empty), `value` (empty: any
// value, or operator Exists), `effect` (empty: any effect).
struct TolerationRule {
  std::string key;
  std::string value;
  std::string effect;
  // As kubectl taint writes a taint: key[=value][:effect].
  std::string str() const;
  bool operator==(const TolerationRule&) const = default;
};

// The node-condition taints every tenant may tolerate, and nvidia.com/gpu,
// the taint of GPU nodes. not-ready and unreachable NoExecute (what kube's
// DefaultTolerationSeconds gives every pod) are allowed whatever the list.
std::vector<TolerationRule> default_toleration_rules();
// GPU Feature Discovery's labels, the topology zone and region, the
// architecture, OS and instance type. "p*" allows every key starting with p.
std::vector<std::string> default_node_label_keys();
// configMap, csi, downwardAPI, emptyDir, ephemeral, image,
// persistentVolumeClaim, projected, secret.
std::vector<std::string> default_volume_types();

struct HostPolicy {
  // Injected into every host pod.
  std::string scheduler_name;                 // empty: the host's default scheduler
  std::map<std::string, std::string> labels;  // e.g. {"kai.scheduler/queue": "team-a"}
  std::string priority_class;                 // empty: none
  // The tenant's slice of host nodes: set in every host pod's nodeSelector,
  // over the tenant's value of the same key (e.g. {"vkube.io/team": "a"}).
  std::map<std::string, std::string> node_selector;
  // Allowed.
  std::vector<TolerationRule> tolerations = default_toleration_rules();
  std::vector<std::string> node_label_keys = default_node_label_keys();
  std::vector<std::string> runtime_classes;  // none: runtimeClassName is refused
  // Of ClusterIP, NodePort and LoadBalancer (ExternalName is always the
  // tenant's own).
  std::vector<std::string> service_types = {"ClusterIP"};
  // Volume sources a pod may use: kube's restricted Pod Security set by
  // default, which reaches nothing of the node's or the network's (an nfs,
  // iscsi or cephfs volume is mounted by the host's kubelet from wherever
  // the tenant points it; hostPath is the host's own disk).
  std::vector<std::string> volume_types = default_volume_types();
};

// One thing the policy refuses.
struct PolicyViolation {
  std::string field;    // under the pod's (or Service's) spec: "tolerations[0]"
  std::string message;  // "operator Exists with no key tolerates every taint"
  std::string allowed;  // what the operator allows instead ("" when nothing)
  // The host copy gets the operator's value in its place (schedulerName):
  // the tenant's admission still refuses it, the syncer does not.
  bool overridden = false;
  // "field: message (allowed: ...)", with `prefix` before the field.
  std::string str(std::string_view prefix = "") const;
};

// "a; b; c": violations as one message, each field under `prefix` ("spec.").
std::string join_violations(const std::vector<PolicyViolation>& v, std::string_view prefix);

// What `policy` refuses in a pod spec (a pod's, or a workload's template's).
std::vector<PolicyViolation> pod_violations(const HostPolicy& policy, const nlohmann::json& spec);

// The labels (or annotations) of `meta` the host copy will not carry: those
// of host schedulers and queues, and those the operator injects.
std::vector<std::string> stripped_keys(const HostPolicy& policy, const nlohmann::json& meta);

// The syncer's step on a host pod (translated from the tenant's): kForbidden
// listing what the policy refuses (the tenant is told, the pod never
// reaches the host); otherwise the stripped labels and annotations removed
// and the operator's scheduler name, labels and priority class set.
Status apply_pod_policy(const HostPolicy& policy, nlohmann::json& host_pod);

// What `policy` refuses in a Service spec. ExternalName is never refused.
std::vector<PolicyViolation> service_violations(const HostPolicy& policy,
                                                const nlohmann::json& spec);

// Whether a tenant Service stays in the tenant: ExternalName (the tenant's
// DNS answers it with a CNAME; the host would refuse or misuse it).
bool tenant_only_service(const nlohmann::json& service);

// From the operator's YAML (as JSON): allowedTolerations (strings
// "key[=value][:effect]" or {key, value, effect}), allowedNodeSelectorKeys,
// allowedRuntimeClasses, allowedServiceTypes, nodeSelector (a mapping of
// label keys to values); a list left out keeps the
// default; unknown keys are refused (a typo must not widen nothing
// silently). kInvalid naming the field.
Status merge_policy_file(const nlohmann::json& doc, HostPolicy& policy);

// Whether `node` (a host Node) is in the tenant's slice: the policy has a
// node selector and the node's labels match every entry of it.
bool node_in_slice(const HostPolicy& policy, const nlohmann::json& node);

// "k=v,k2=v2": a node selector in its flag form (the empty map: "").
std::string node_selector_text(const std::map<std::string, std::string>& selector);

// The flag form of a node selector, key=value,...: keys and values checked
// as kube checks label keys and values. kInvalid naming the entry.
Result<std::map<std::string, std::string>> parse_node_selector(std::string_view text);

// The flag forms: comma-separated; "none" is the empty list.
Result<std::vector<TolerationRule>> parse_toleration_rules(std::string_view text);
Result<std::vector<std::string>> parse_node_label_keys(std::string_view text);
Result<std::vector<std::string>> parse_service_types(std::string_view text);
Result<std::vector<std::string>> parse_runtime_classes(std::string_view text);

}  // namespace vkube::syncer
