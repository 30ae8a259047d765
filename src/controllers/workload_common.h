// What the StatefulSet and DaemonSet controllers share: API answers as
// Status, claiming objects by ownerReference (kube's ControllerRefManager),
// the slow-start batches of bulk writes, and ControllerRevision history
// (kube's pkg/controller/history).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "controller.h"
#include "util.h"
#include "vkube/api/selector.h"
#include "vkube/common/status.h"

// Nested so that these names cannot collide with other controllers' helpers.
namespace vkube::controllers::workload {

// The Status of a failed API answer (404 NotFound, 409 AlreadyExists or
// Conflict, 422 Invalid, ...) with the server's message; OK for 2xx.
Status api_status(const ApiResult& r);

// kube's ClaimObjects: of `candidates`, the objects `owner` controls and that
// `match` accepts, plus orphans `match` accepts, which are adopted (a
// strategic merge patch adds a controller ownerReference). Objects it
// controls that no longer match are released (their ownerReference to it is
// removed). An owner being deleted adopts and releases nothing. Errors: a
// failed adoption (an object that went away meanwhile is skipped).
// `api_version`/`plural` name the candidates' resource ("v1", "pods").
Result<std::vector<ObjectPtr>> claim_objects(LocalClient& client, const json& owner,
                                             const std::vector<ObjectPtr>& candidates,
                                             const std::function<bool(const json&)>& match,
                                             std::string_view api_version, std::string_view plural);

// kube's slowStartBatch: runs fn(0) .. fn(n-1) on the write pool in batches
// of 1, 2, 4, ... (at most 500 at once), and stops after the first batch in
// which a call failed. Returns the number of successful calls; the first
// failure goes to *error (left OK when none failed).
size_t slow_start(Context& ctx, size_t n, const std::function<Status(size_t)>& fn, Status* error);

// --- ControllerRevisions ----------------------------------------------------

inline constexpr std::string_view kRevisionHashLabel = "controller.kubernetes.io/hash";

// The strategic merge patch a StatefulSet's or DaemonSet's revision stores
// (kube's getPatch): {"spec": {"template": <template + "$patch": "replace">}}.
json revision_data(const json& pod_template);
// The pod template a revision restores (its data without the directive).
json revision_template(const json& revision);
int64_t revision_number(const json& revision);
// kube's HashControllerRevision: FNV-1 (32 bit) of the data's JSON, then of
// the collision count, as SafeEncodeString of the decimal value.
std::string revision_hash(const json& data, std::optional<int64_t> collision_count);
// Revisions holding the same data.
bool equal_revisions(const json& a, const json& b);
// Sorts by revision number, then creation time, then name.
void sort_revisions(std::vector<ObjectPtr>& revisions);

// The owner's history: the ControllerRevisions of `revisions` in its
// namespace that `selector` matches and that it controls (orphans adopted),
// sorted by revision number.
Result<std::vector<ObjectPtr>> claim_revisions(LocalClient& client, const json& owner,
                                               const Lister& revisions,
                                               const api::LabelSelector& selector);
// Creates `revision` (metadata.namespace set). When a revision of that name
// already exists with the same data, returns it; with different data, fails
// with kAlreadyExists (the caller bumps its collision count).
Result<json> create_revision(LocalClient& client, const json& revision);
// Sets a revision's number (rolling back to an earlier template reuses it).
Result<json> renumber_revision(LocalClient& client, const json& revision, int64_t number);
Status delete_revision(LocalClient& client, const json& revision);

// Small JSON accessors.
int64_t int_at(const json& obj, std::initializer_list<const char*> path, int64_t fallback = 0);
std::string str_at(const json& obj, std::initializer_list<const char*> path);
// The owner with apiVersion and kind set (ownerReferences and Events need them).
json with_type(json obj, std::string_view api_version, std::string_view kind);

}  // namespace vkube::controllers::workload
