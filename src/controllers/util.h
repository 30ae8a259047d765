// Small helpers every controller shares: metadata access, owner references,
// pod state, selectors, time, API paths and the pod-template hash.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include <nlohmann/json.hpp>

#include "vkube/api/selector.h"
#include "vkube/controllers/local_client.h"
#include "vkube/controllers/object_cache.h"

namespace vkube::controllers {

using json = nlohmann::json;
using TimePoint = std::chrono::system_clock::time_point;

// metadata.<field> as a string ("" when absent or not a string).
std::string meta(const json& obj, std::string_view field);
// object_key(obj) ("ns/name", or "name") comes from object_cache.h.
// {"ns", "name"} from "ns/name"; {"", "name"} from "name".
std::pair<std::string, std::string> split_key(std::string_view key);

// The ownerReference with controller: true, or nullptr.
const json* controller_ref(const json& obj);
bool is_controlled_by(const json& obj, std::string_view owner_uid);
// An ownerReference to `owner` ({apiVersion, kind, name, uid, controller:
// true, blockOwnerDeletion: true}), as controllers set on what they create.
json controller_owner_ref(const json& owner);
bool is_terminating(const json& obj);  // metadata.deletionTimestamp is set

// Pods.
std::string pod_phase(const json& pod);
// The pod's condition of `type` ("Ready", ...) has status "True".
bool pod_condition_true(const json& pod, std::string_view type);
bool pod_ready(const json& pod);
// Not Succeeded, not Failed, not being deleted (kube's IsPodActive).
bool pod_active(const json& pod);
// Ready for at least min_ready_seconds (from the Ready condition's
// lastTransitionTime), as kube's IsPodAvailable.
bool pod_available(const json& pod, int64_t min_ready_seconds, TimePoint now);
// A pod for `owner` from its pod template (kube's GetPodFromTemplate):
// template labels, annotations and finalizers, generateName
// "<generate_prefix>" (or name when `name` is set), the owner's namespace,
// a controller ownerReference to the owner, the template's spec.
json pod_from_template(const json& pod_template, const json& owner,
                       std::string_view generate_prefix, std::string_view name = {});

// A workload's spec.selector (metav1.LabelSelector). nullopt when absent or
// invalid: such a selector selects nothing.
std::optional<api::LabelSelector> selector_of(const json& selector);
// Labels of an object (metadata.labels or an empty object).
const json& labels_of(const json& obj);

// RFC 3339 times with second precision ("2026-12-02T21:00:00Z").
std::string rfc3339(TimePoint t);
std::optional<TimePoint> parse_rfc3339(std::string_view s);

// The API path of an object or collection:
//   api_path("apps/v1", "deployments", "ns", "web", "status")
//   -> "/apis/apps/v1/namespaces/ns/deployments/web/status"
// ns empty: cluster-scoped; name empty: the collection.
std::string api_path(std::string_view api_version, std::string_view plural, std::string_view ns,
                     std::string_view name = {}, std::string_view subresource = {});

// FNV-1a, 32 bit.
uint32_t fnv32a(std::string_view data);
// kube's rand.SafeEncodeString: every character mapped into
// "bcdfghjklmnpqrstvwxz2456789" (no vowels, no confusable digits).
std::string safe_encode(std::string_view s);
// The pod-template-hash label value for a template (and the owner's
// status.collisionCount): stable for equal templates, differs when they
// differ. The template's own pod-template-hash label is ignored.
std::string template_hash(const json& pod_template, std::optional<int64_t> collision_count = {});

// Replaces the object's status through its /status subresource when
// `status` differs from obj["status"]. Returns the answer (code 200 with no
// call made when nothing changed: body is then the object itself).
ApiResult update_status(LocalClient& client, const std::string& object_path, const json& obj,
                        const json& status);

}  // namespace vkube::controllers
