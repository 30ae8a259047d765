// The disruption controller (kube's pkg/controller/disruption): computes
// every PodDisruptionBudget's status from the pods its selector matches:
// expectedPods, currentHealthy, desiredHealthy, disruptionsAllowed and the
// DisruptionAllowed condition that the eviction API reads.
#include <map>

#include "controller.h"
#include "deployment_util.h"
#include "util.h"

namespace vkube::controllers {

namespace {

using namespace std::chrono_literals;

constexpr const char* kComponent = "controllermanager";
constexpr const char* kConditionType = "DisruptionAllowed";
// How long a pod named in status.disruptedPods counts as about to go (kube's DeletionTimeout).
constexpr auto kDeletionTimeout = 2min;

const json& section(const json& obj, const char* key) {
  static const json empty = json::object();
  auto it = obj.find(key);
  return it != obj.end() && it->is_object() ? *it : empty;
}

int64_t int_field(const json& obj, const char* key) {
  auto it = obj.find(key);
  return it != obj.end() && it->is_number_integer() ? it->get<int64_t>() : 0;
}

// metav1.LabelSelector as Go's %v prints it, for the UnmanagedPods message.
std::string go_selector(const json& sel) {
  std::string out = "&LabelSelector{MatchLabels:map[string]string{";
  for (const auto& [k, v] : section(sel, "matchLabels").items())
    out += k + ": " + (v.is_string() ? v.get<std::string>() : v.dump()) + ",";
  out += "},MatchExpressions:[]LabelSelectorRequirement{";
  for (const json& e : sel.value("matchExpressions", json::array())) {
    std::string values;
    for (const json& v : e.value("values", json::array()))
      values += (values.empty() ? "" : " ") + (v.is_string() ? v.get<std::string>() : v.dump());
    out += "LabelSelectorRequirement{Key:" + e.value("key", "") +
           ",Operator:" + e.value("operator", "") + ",Values:[" + values + "],},";
  }
  return out + "},}";
}

struct Expected {
  int64_t expected = 0;
  int64_t desired_healthy = 0;
  std::vector<std::string> unmanaged;
};

class DisruptionController final : public Controller {
 public:
  explicit DisruptionController(Context& ctx)
      : Controller(ctx, "disruption-controller"),
        pdbs_(ctx.informers.cache({"policy", "poddisruptionbudgets"})),
        pods_(ctx.informers.cache({"core", "pods"})),
        replicasets_(ctx.informers.cache({"apps", "replicasets"})),
        deployments_(ctx.informers.cache({"apps", "deployments"})),
        statefulsets_(ctx.informers.cache({"apps", "statefulsets"})),
        rcs_(ctx.informers.cache({"core", "replicationcontrollers"})) {
    ctx.informers.on_event({"policy", "poddisruptionbudgets"}, [this](const ObjectEvent& e) {
      if (e.type != EventType::kDeleted) queue().add(e.key);
    });
    ctx.informers.on_event({"core", "pods"}, [this](const ObjectEvent& e) {
      queue_budgets_for(*e.object);
      if (e.old && labels_of(*e.old) != labels_of(*e.object)) queue_budgets_for(*e.old);
    });
  }

 protected:
  Status reconcile(const std::string& key) override;

 private:
  void queue_budgets_for(const json& pod);
  // kube's getExpectedScale: the summed scale of the pods' controllers.
  Result<int64_t> expected_scale(const std::vector<ObjectPtr>& pods,
                                 std::vector<std::string>* unmanaged) const;
  // The {uid, scale} of a pod's controller; nullopt when no supported one.
  std::optional<std::pair<std::string, int64_t>> controller_scale(const json& ref,
                                                                  const std::string& ns) const;
  Result<Expected> expected_pods(const json& pdb, const std::vector<ObjectPtr>& pods) const;
  Status write_status(const json& pdb, json status);

  const Lister& pdbs_;
  const Lister& pods_;
  const Lister& replicasets_;
  const Lister& deployments_;
  const Lister& statefulsets_;
  const Lister& rcs_;
};

void DisruptionController::queue_budgets_for(const json& pod) {
  const json& labels = labels_of(pod);
  if (labels.empty()) return;  // kube: a pod without labels has no budget
  for (const ObjectPtr& pdb : pdbs_.list(meta(pod, "namespace"))) {
    auto sel = selector_of(section(*pdb, "spec").value("selector", json()));
    if (sel && sel->matches(labels)) queue().add(object_key(*pdb));
  }
}

std::optional<std::pair<std::string, int64_t>> DisruptionController::controller_scale(
    const json& ref, const std::string& ns) const {
  const std::string kind = ref.value("kind", ""), name = ref.value("name", "");
  const std::string uid = ref.value("uid", "");
  const std::string api_version = ref.value("apiVersion", "");
  const auto slash = api_version.find('/');
  const std::string group = slash == std::string::npos ? "" : api_version.substr(0, slash);
  auto owned = [&](const Lister& l) -> ObjectPtr {
    ObjectPtr o = l.get(ns, name);
    return o != nullptr && meta(*o, "uid") == uid ? o : nullptr;
  };
  if (kind == "ReplicaSet" && group == "apps") {
    ObjectPtr rs = owned(replicasets_);
    if (rs == nullptr) return std::nullopt;
    const json* owner = controller_ref(*rs);
    if (owner == nullptr || owner->value("kind", "") != "Deployment")
      return std::pair{uid, deploy::spec_replicas(*rs)};
    ObjectPtr d = deployments_.get(ns, owner->value("name", ""));
    if (d == nullptr || meta(*d, "uid") != owner->value("uid", "")) return std::nullopt;
    return std::pair{meta(*d, "uid"), deploy::spec_replicas(*d)};
  }
  if (kind == "StatefulSet" && group == "apps") {
    if (ObjectPtr s = owned(statefulsets_)) return std::pair{uid, deploy::spec_replicas(*s)};
  } else if (kind == "ReplicationController" && group.empty()) {
    if (ObjectPtr rc = owned(rcs_)) return std::pair{uid, deploy::spec_replicas(*rc)};
  }
  return std::nullopt;
}

Result<int64_t> DisruptionController::expected_scale(const std::vector<ObjectPtr>& pods,
                                                     std::vector<std::string>* unmanaged) const {
  std::map<std::string, int64_t> scale;  // controller uid -> replicas
  for (const ObjectPtr& pod : pods) {
    const json* ref = controller_ref(*pod);
    if (ref == nullptr) {
      unmanaged->push_back(meta(*pod, "name"));
      continue;
    }
    if (scale.count(ref->value("uid", ""))) continue;
    auto found = controller_scale(*ref, meta(*pod, "namespace"));
    if (!found)
      return Status::not_found("found no controllers for pod \"" + meta(*pod, "name") + "\"");
    scale[found->first] = found->second;
  }
  int64_t total = 0;
  for (const auto& [uid, n] : scale) total += n;
  return total;
}

// kube's getExpectedPodCount.
Result<Expected> DisruptionController::expected_pods(const json& pdb,
                                                     const std::vector<ObjectPtr>& pods) const {
  const json& spec = section(pdb, "spec");
  Expected out;
  auto max_unavailable = spec.find("maxUnavailable");
  auto min_available = spec.find("minAvailable");
  if (max_unavailable != spec.end() && !max_unavailable->is_null()) {
    auto scale = expected_scale(pods, &out.unmanaged);
    if (!scale.is_ok()) return scale.status();
    out.expected = *scale;
    auto n = deploy::scaled_value(*max_unavailable, out.expected, true);
    if (!n.is_ok()) return n.status();
    out.desired_healthy = std::max<int64_t>(0, out.expected - *n);
  } else if (min_available != spec.end() && min_available->is_number_integer()) {
    out.desired_healthy = min_available->get<int64_t>();
    out.expected = static_cast<int64_t>(pods.size());
  } else if (min_available != spec.end() && min_available->is_string()) {
    auto scale = expected_scale(pods, &out.unmanaged);
    if (!scale.is_ok()) return scale.status();
    out.expected = *scale;
    auto n = deploy::scaled_value(*min_available, out.expected, true);
    if (!n.is_ok()) return n.status();
    out.desired_healthy = *n;
  }
  return out;
}

// kube's apimeta.SetStatusCondition for the one condition type.
void set_condition(json& status, const std::string& cond_status, const std::string& reason,
                   const std::string& message, int64_t observed, TimePoint now) {
  json& conditions = status["conditions"];
  if (!conditions.is_array()) conditions = json::array();
  for (json& c : conditions) {
    if (c.value("type", "") != kConditionType) continue;
    if (c.value("status", "") != cond_status) {
      c["status"] = cond_status;
      c["lastTransitionTime"] = rfc3339(now);
    }
    c["reason"] = reason;
    c["message"] = message;
    if (observed != 0)
      c["observedGeneration"] = observed;
    else
      c.erase("observedGeneration");
    return;
  }
  json c = {{"type", kConditionType},
            {"status", cond_status},
            {"reason", reason},
            {"message", message},
            {"lastTransitionTime", rfc3339(now)}};
  if (observed != 0) c["observedGeneration"] = observed;
  conditions.push_back(std::move(c));
}

Status DisruptionController::reconcile(const std::string& key) {
  ObjectPtr p = pdbs_.get(key);
  if (p == nullptr) return Status::ok();
  const json& pdb = *p;
  json typed = pdb;
  typed["apiVersion"] = "policy/v1";
  typed["kind"] = "PodDisruptionBudget";
  const TimePoint now = ctx_.now();
  const json& old_status = section(pdb, "status");
  const int64_t generation = int_field(section(pdb, "metadata"), "generation");

  std::vector<ObjectPtr> pods;
  if (auto sel = selector_of(section(pdb, "spec").value("selector", json()))) {
    for (const ObjectPtr& pod : pods_.list(meta(pdb, "namespace")))
      if (sel->matches(labels_of(*pod))) pods.push_back(pod);
  }
  if (pods.empty())
    ctx_.events.record(typed, kComponent, "Normal", "NoPods", "No matching pods found");

  auto expected = expected_pods(pdb, pods);
  if (!expected.is_ok()) {
    ctx_.events.record(
        typed, kComponent, "Warning", "CalculateExpectedPodCountFailed",
        "Failed to calculate the number of expected pods: " + expected.status().message());
    // kube's failSafe: no disruptions until the budget can be computed.
    json status = old_status;
    status["disruptionsAllowed"] = 0;
    set_condition(status, "False", "SyncFailed", expected.status().message(),
                  int_field(old_status, "observedGeneration"), now);
    return write_status(typed, std::move(status));
  }
  if (!expected->unmanaged.empty())
    ctx_.events.record(
        typed, kComponent, "Warning", "UnmanagedPods",
        "Pods selected by this PodDisruptionBudget (selector: " +
            go_selector(section(pdb, "spec").value("selector", json::object())) +
            ") were found to be unmanaged. As a result, the status of the PDB cannot be calculated "
            "correctly, which may result in undefined behavior. To account for these pods please "
            "set \".spec.minAvailable\" field of the PDB to an integer value.");

  // Pods the eviction API is deleting count as gone for two minutes.
  json disrupted = json::object();
  std::optional<TimePoint> recheck;
  const json& listed = section(old_status, "disruptedPods");
  int64_t healthy = 0;
  for (const ObjectPtr& pod : pods) {
    if (is_terminating(*pod)) continue;
    const std::string name = meta(*pod, "name");
    if (auto it = listed.find(name); it != listed.end() && it->is_string()) {
      auto at = parse_rfc3339(it->get<std::string>());
      if (at && *at + kDeletionTimeout > now) {
        disrupted[name] = *it;
        if (!recheck || *at + kDeletionTimeout < *recheck) recheck = *at + kDeletionTimeout;
        continue;
      }
    }
    if (pod_ready(*pod)) ++healthy;
  }

  int64_t allowed = healthy - expected->desired_healthy;
  if (expected->expected <= 0 || allowed <= 0) allowed = 0;
  json status = old_status;
  status["currentHealthy"] = healthy;
  status["desiredHealthy"] = expected->desired_healthy;
  status["expectedPods"] = expected->expected;
  status["disruptionsAllowed"] = allowed;
  if (disrupted.empty())
    status.erase("disruptedPods");
  else
    status["disruptedPods"] = disrupted;
  if (generation != 0) status["observedGeneration"] = generation;
  set_condition(status, allowed > 0 ? "True" : "False",
                allowed > 0 ? "SufficientPods" : "InsufficientPods", "", generation, now);
  Status s = write_status(typed, std::move(status));
  if (s.is_ok() && recheck)
    queue().add_after(key, std::chrono::duration_cast<std::chrono::milliseconds>(*recheck - now));
  return s;
}

Status DisruptionController::write_status(const json& pdb, json status) {
  std::string path =
      api_path("policy/v1", "poddisruptionbudgets", meta(pdb, "namespace"), meta(pdb, "name"));
  ApiResult r = update_status(ctx_.client, path, pdb, status);
  // A 404 is retried too: the budget may be too new for the API server's
  // reads, or deleted, which the retry finds in the cache.
  if (!r.ok()) {
    std::string msg = r.body.is_object() ? r.body.value("message", "") : "";
    return r.code == 409 ? Status::conflict(msg) : Status::internal("update pdb status: " + msg);
  }
  ctx_.informers.sync();
  return Status::ok();
}

}  // namespace

std::unique_ptr<Controller> make_disruption_controller(Context& ctx) {
  return std::make_unique<DisruptionController>(ctx);
}

}  // namespace vkube::controllers
