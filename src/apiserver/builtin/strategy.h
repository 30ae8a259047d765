// A kind's REST strategy (kube-apiserver's rest.RESTCreateStrategy and
// friends): what happens to an object of this kind on create, update and
// delete beyond the generic steps, which subresources it has, and how its
// served versions convert. The verb handlers stay kind-blind: they ask the
// strategy, never compare resource names. Every hook is optional; a kind
// with no strategy of its own gets the generic behaviour.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "vkube/api/resource.h"

namespace vkube::apiserver::builtin {

using json = nlohmann::json;

// Which handler serves the kind's requests.
enum class Handler {
  kStore,    // the generic registry store (create/get/list/update/patch/delete/watch)
  kReview,   // computed from the request, never stored (access and token reviews)
  kBinding,  // acts on another kind: binds a pod to a node (bindings)
  kMetrics,  // measured on every read (metrics.k8s.io)
};

struct Strategy {
  using Mutate = void (*)(json& obj);
  using MutateFrom = void (*)(const json& old, json& obj);

  // PrepareForCreate, before defaulting: the status a new object starts
  // with (nullptr: the status it was sent with is kept, as for nodes).
  Mutate reset_status = nullptr;
  // PrepareForCreate, after defaulting: fields the server computes from
  // the object (a pod's status.qosClass).
  Mutate computed_on_create = nullptr;
  // PrepareForUpdate of the object itself (not a subresource), after the
  // old status was carried over: what an update may not change, and what
  // a change no longer allows when the request did not set it anew.
  MutateFrom prepare_for_update = nullptr;
  // PrepareForUpdate of the status subresource, `obj` being the request's
  // object: what a status write keeps of the old one. nullptr: a status
  // write changes the status and nothing else.
  MutateFrom prepare_status_update = nullptr;
  // Brings a status written by a client to the shape kube's types serialise
  // (required fields present with their zero values).
  Mutate normalize_status = nullptr;

  // Deletion. The grace period an object lingers with before it is removed
  // (a pod on a node waits for its kubelet); nullptr or 0: removed at once.
  int64_t (*grace_period)(const json& obj, std::optional<int64_t> requested) = nullptr;
  // The kind's own finalizers (a namespace's spec.finalizers) still hold it.
  bool (*held_by_own_finalizers)(const json& obj) = nullptr;
  // What marking the object for deletion also changes (status.phase).
  Mutate mark_terminating = nullptr;
  // Added to metadata.finalizers when deletion starts (CRD cleanup).
  const char* deletion_finalizer = nullptr;
  // Names kube's lifecycle admission never lets go (default, kube-system).
  std::vector<std::string> undeletable;

  // Subresources other than status and scale, each served by its own
  // handler (finalize, token, binding, log and the connect ones).
  std::vector<std::string> subresources;
  // Serves the connect subresources (exec, attach, portforward, proxy, log).
  bool connect = false;
  Handler handler = Handler::kStore;
  // Objects of this kind are namespaces: an admission namespaceSelector
  // matches their own labels, and they are addressed by name alone.
  bool is_namespace = false;
  // Allocates cluster IPs and node ports on create and on an update that
  // changes the type or ports (freeing what the update dropped), releases
  // them on delete, and lets the syncer adopt the host's address (services).
  bool allocates_cluster_ips = false;
  // Counted by the GPU quota: its create commits before answering, so a
  // failed commit can give the quota back.
  bool gpu_quota_counted = false;
  // A write changes the served kinds (CRDs): committed before answering,
  // and the registry is brought up to date.
  bool defines_kinds = false;
  // The scale subresource reads spec.selector as a plain label map (RCs).
  bool map_selector = false;

  // Version conversion for a resource served in several versions but
  // stored in one (storage_version): rewrites `obj` from whatever version
  // its apiVersion names into `to_version`. nullptr: versions share fields.
  void (*convert)(json& obj, std::string_view to_version) = nullptr;
  std::string storage_version;
};

// The strategy of the built-in resource `r` (builtin/strategy.cpp).
Strategy strategy_for(const api::Resource& r);

// Converts `obj` into the version `to_version` of its resource when the
// strategy has a conversion and obj is in another version.
void convert_to(const Strategy& s, json& obj, std::string_view to_version);

// --- Hooks shared by several kinds (strategy_status.cpp) ---------------------

// Fills the status fields kube's Go types serialise without omitempty
// (required scalars) with their zero values, for the kind of obj's
// apiVersion/kind as the schema registry describes it.
void fill_required_status(json& obj);

// A pod's QoS class from its containers' requests and limits.
std::string pod_qos_class(const json& pod);

// Service: kube's dropTypeDependentFields (strategy_service.cpp).
void drop_service_type_dependent_fields(const json& old, json& obj);
// Service: kube's patchAllocatedValues: an update that leaves out the cluster
// IP or node ports the type still needs keeps the allocated ones.
void keep_service_allocated_values(const json& old, json& obj);
// Service's PrepareForUpdate: both of the above.
void prepare_service_update(const json& old, json& obj);

// HorizontalPodAutoscaler autoscaling/v1 <-> v2 (strategy_hpa.cpp).
void convert_hpa(json& obj, std::string_view to_version);

}  // namespace vkube::apiserver::builtin
