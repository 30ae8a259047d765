// POST pods/<name>/eviction, as kube's pod eviction REST storage answers it:
// a pod goes only while the PodDisruptionBudget selecting it allows one more
// disruption. The budget's disruptionsAllowed is decremented and the pod named
// in status.disruptedPods, which the disruption controller
// (controllers/disruption_controller.cpp) counts as gone until it is.
#include <chrono>
#include <thread>

#include "admission.h"
#include "codec.h"
#include "delete.h"
#include "field_manager.h"
#include "object.h"
#include "server_impl.h"
#include "vkube/api/selector.h"

namespace vkube::apiserver {

namespace {

constexpr const char* kBudgetMessage =
    "Cannot evict pod as it would violate the pod's disruption budget.";
// kube's MaxDisruptedPodSize: evictions the controller has not yet seen.
constexpr size_t kMaxDisruptedPods = 2000;
// kube's EvictionsRetry has 20 steps; conflicts here are local and short.
constexpr int kRetries = 20;

void backoff(int attempt) {
  std::this_thread::sleep_for(std::chrono::milliseconds(5 << std::min(attempt, 6)));
}

// 429 with a DisruptionBudget cause; a positive retry-after also travels as
// the Retry-After header, which client-go waits for and retries on.
http::Response too_many_requests(const std::string& cause, int retry_after) {
  json details = {{"causes", json::array({{{"reason", "DisruptionBudget"}, {"message", cause}}})}};
  if (retry_after > 0) details["retryAfterSeconds"] = retry_after;
  http::Response r =
      error_response(ApiError(Status(Code::kTooManyRequests, kBudgetMessage), details));
  if (retry_after > 0) r.set_header("Retry-After", std::to_string(retry_after));
  return r;
}

http::Response still_processing(const std::string& pdb) {
  return too_many_requests(
      "The disruption budget " + pdb + " is still being processed by the server.", 10);
}

// kube words these with the singular resource "poddisruptionbudget.policy".
http::Response budget_forbidden(const std::string& pdb, const std::string& why) {
  return error_response(ApiError(
      Status(Code::kForbidden, "poddisruptionbudget.policy \"" + pdb + "\" is forbidden: " + why),
      {{"name", pdb}, {"group", "policy"}, {"kind", "poddisruptionbudget"}}));
}

json status_body(const char* status, int code, const std::string& message = "") {
  json s = {
      {"kind", "Status"}, {"apiVersion", "v1"}, {"metadata", json::object()}, {"status", status}};
  if (!message.empty()) s["message"] = message;
  s["code"] = code;
  return s;
}

int64_t int_at(const json& obj, const char* key) {
  auto it = obj.find(key);
  return it != obj.end() && it->is_number_integer() ? it->get<int64_t>() : 0;
}

const json& object_at(const json& obj, const char* key) {
  static const json empty = json::object();
  auto it = obj.find(key);
  return it != obj.end() && it->is_object() ? *it : empty;
}

bool pod_ready(const json& pod) {
  const json& status = object_at(pod, "status");
  auto conds = status.find("conditions");
  if (conds == status.end() || !conds->is_array()) return false;
  for (const json& c : *conds)
    if (c.is_object() && c.value("type", "") == "Ready") return c.value("status", "") == "True";
  return false;
}

bool deleting(const json& obj) {
  return object_at(obj, "metadata").contains("deletionTimestamp");
}

// Terminal and pending pods disrupt nothing more by going: no budget is read.
bool ignores_budget(const json& pod) {
  const std::string phase = str_at(pod, "status", "phase");
  return phase == "Succeeded" || phase == "Failed" || phase == "Pending" || deleting(pod);
}

// A running pod is deleted only at the revision that was judged, so that it
// cannot have become ready (and counted) in between.
bool enforces_revision(const json& pod) {
  const std::string phase = str_at(pod, "status", "phase");
  return phase != "Succeeded" && phase != "Failed" && !deleting(pod);
}

struct Budget {
  json object;
  std::string key;
};

// The budgets whose (non-empty, valid) selectors match the pod's labels.
Result<std::vector<Budget>> budgets_for(Context& c, const json& pod) {
  const Kind* kind = c.server.registry().builtin("policy", "v1", "poddisruptionbudgets");
  if (kind == nullptr) return std::vector<Budget>{};
  storage::ListOptions lo;
  lo.prefix = Registry::key(*kind, namespace_of(pod), "");
  auto listed = c.server.backend().list(lo);
  if (!listed.is_ok()) return listed.status();
  const json labels = object_at(pod, "metadata").value("labels", json());
  std::vector<Budget> out;
  for (const storage::KeyValue& kv : listed->items) {
    auto pdb = decode_stored(kv);
    if (!pdb.is_ok()) continue;
    auto sel = api::LabelSelector::from_json(object_at(*pdb, "spec").value("selector", json()));
    // A budget with an empty or broken selector selects nothing.
    if (!sel.is_ok() || sel->empty() || !sel->matches(labels.is_object() ? labels : json()))
      continue;
    out.push_back({std::move(pdb).value(), kv.key});
  }
  return out;
}

// pdbhelper.UpdateDisruptionAllowedCondition for a budget just brought to zero.
void mark_insufficient(json& status) {
  json& conds = status["conditions"];
  if (!conds.is_array()) conds = json::array();
  json* cond = nullptr;
  for (json& c : conds)
    if (c.is_object() && c.value("type", "") == "DisruptionAllowed") cond = &c;
  if (cond == nullptr) {
    conds.push_back({{"type", "DisruptionAllowed"}});
    cond = &conds.back();
  }
  if (cond->value("status", "") != "False") (*cond)["lastTransitionTime"] = now_rfc3339();
  (*cond)["status"] = "False";
  (*cond)["reason"] = "InsufficientPods";
  (*cond)["message"] = "";
  (*cond)["observedGeneration"] = int_at(status, "observedGeneration");
}

// kube's checkAndDecrement, retried on conflicts with a fresh read of the
// budget. nullopt when the eviction may go on; else the answer to give.
std::optional<http::Response> take_disruption(Context& c, Budget budget, const std::string& pod) {
  for (int attempt = 0;; ++attempt) {
    json& pdb = budget.object;
    const std::string name = name_of(pdb);
    json status = object_at(pdb, "status");
    if (int_at(status, "observedGeneration") < int_at(object_at(pdb, "metadata"), "generation"))
      return still_processing(name);
    const int64_t allowed = int_at(status, "disruptionsAllowed");
    if (allowed < 0) return budget_forbidden(name, "pdb disruptions allowed is negative");
    if (object_at(status, "disruptedPods").size() > kMaxDisruptedPods)
      return budget_forbidden(
          name, "DisruptedPods map too big - too many evictions not confirmed by PDB controller");
    if (allowed == 0)
      return too_many_requests("The disruption budget " + name + " needs " +
                                   std::to_string(int_at(status, "desiredHealthy")) +
                                   " healthy pods and has " +
                                   std::to_string(int_at(status, "currentHealthy")) + " currently",
                               0);
    if (c.dry_run()) return std::nullopt;  // judged, and nothing recorded
    status["disruptionsAllowed"] = allowed - 1;
    if (allowed - 1 == 0) mark_insufficient(status);
    if (!status["disruptedPods"].is_object()) status["disruptedPods"] = json::object();
    status["disruptedPods"][pod] = now_rfc3339();
    json next = pdb;
    next["status"] = std::move(status);
    const std::string rv = str_at(pdb, "metadata", "resourceVersion");
    auto written = c.server.backend().update(budget.key, encode_for_storage(next), std::stoll(rv));
    if (written.is_ok()) return std::nullopt;
    if (written.status().code() != Code::kConflict || attempt + 1 >= kRetries) {
      if (written.status().code() == Code::kConflict)
        return error_response(
            ApiError(Status(Code::kTimeout, "Timeout: couldn't update PodDisruptionBudget \"" +
                                                name + "\" due to conflicts"),
                     {{"retryAfterSeconds", 10}}));
      return error_response(written.status());
    }
    backoff(attempt);
    auto kv = c.server.backend().get(budget.key);
    if (!kv.is_ok()) return error_response(kv.status());
    auto fresh = decode_stored(*kv);
    if (!fresh.is_ok()) return error_response(fresh.status());
    budget.object = std::move(fresh).value();
  }
}

// The pod deletion that ends an eviction, with kube's answer: 201 and a
// Success Status (the Eviction is "created").
http::Response delete_pod(Context& c, const DeleteOptions& o) {
  auto d = delete_one(c, c.info.namespace_, c.info.name, o);
  if (!d.is_ok()) {
    if (d.status().code() == Code::kConflict && d.status().message().starts_with("Precondition"))
      return error_response(conflict(c.resource(), c.info.name, d.status().message()));
    return error_response(storage_error(c, d.status(), c.info.name));
  }
  return json_response(201, status_body("Success", 201));
}

// The Eviction body, decoded: policy/v1 is served; policy/v1beta1 bodies are
// still accepted, as kube does.
Result<json> decode_eviction(Context& c) {
  auto decoded = decode_request_body(c.req, /*custom_resource=*/false);
  if (!decoded.is_ok()) return decoded.status();
  json eviction = std::move(decoded).value();
  if (!eviction.is_object())
    return Status::bad_request("the request body must be an Eviction object");
  const std::string api_version = str_at(eviction, "apiVersion");
  const std::string kind = str_at(eviction, "kind");
  if (!api_version.empty() && api_version != "policy/v1" && api_version != "policy/v1beta1")
    return Status::bad_request("the API version in the data (" + api_version +
                               ") does not match the expected API version (policy/v1)");
  if (!kind.empty() && kind != "Eviction")
    return Status::bad_request("not a Eviction object: " + kind);
  if (api_version.empty()) eviction["apiVersion"] = "policy/v1";
  if (kind.empty()) eviction["kind"] = "Eviction";
  return eviction;
}

// The Eviction's DeleteOptions, with the request's dryRun carried into them
// (kube's propagateDryRun). An error answer when malformed.
std::optional<http::Response> read_eviction(Context& c, const json& eviction, DeleteOptions* out) {
  const json& meta = object_at(eviction, "metadata");
  if (str_at(meta, "name") != c.info.name)
    return error_response(bad_request("name in URL does not match name in Eviction object"));
  if (const std::string ns = str_at(meta, "namespace"); !ns.empty() && ns != c.info.namespace_)
    return error_response(bad_request(
        "the namespace of the provided object does not match the namespace sent on the request"));
  auto it = eviction.find("deleteOptions");
  auto opts = delete_options_from(it == eviction.end() ? json() : *it);
  if (!opts.is_ok()) return error_response(opts.status());
  std::vector<std::string> query;
  if (auto v = c.param("dryRun")) query.push_back(*v);
  if (opts->dry_run.empty()) {
    opts->dry_run = query;
  } else if (!query.empty() && query != opts->dry_run) {
    auto go_list = [](const std::vector<std::string>& v) {
      std::string s = "[";
      for (size_t i = 0; i < v.size(); ++i) s += (i ? " " : "") + v[i];
      return s + "]";
    };
    return error_response(Status::internal("Non-matching dry-run options in request and content: " +
                                           go_list(query) + " and " + go_list(opts->dry_run)));
  }
  // As kube's dryrun.IsDryRun: any value makes a dry run (nothing validates
  // an Eviction's options, and a dry run is the safe reading).
  c.options_dry_run = !opts->dry_run.empty();
  *out = std::move(opts).value();
  return std::nullopt;
}

}  // namespace

http::Response handle_eviction(Context& c) {
  if (c.info.verb != "create")
    return error_response(
        Status(Code::kMethodNotAllowed,
               "the server does not allow this method on the requested resource"));
  if (auto err = check_write_options(c, "CreateOptions", false)) return error_response(*err);
  auto eviction = decode_eviction(c);
  if (!eviction.is_ok()) return error_response(eviction.status());
  // Admission sees the Eviction, as for any create: mutation before it is
  // read, validation (kube's createValidation) before the pod is judged.
  AdmissionRequest review{"CREATE",
                          "eviction",
                          c.info.name,
                          c.info.namespace_,
                          std::move(*eviction),
                          nullptr,
                          write_options(c, "CreateOptions"),
                          "Eviction",
                          "policy/v1"};
  const bool admits = c.server.admission().active();
  if (admits)
    if (auto err = c.server.admission().mutate(c, review)) return error_response(*err);
  DeleteOptions opts;
  if (auto err = read_eviction(c, review.object, &opts)) return std::move(*err);
  if (admits)
    if (auto err = c.server.admission().validate(c, review)) return error_response(*err);
  const bool user_revision = !opts.precondition_rv.empty();

  json pod;
  for (int attempt = 0;; ++attempt) {
    auto kv = c.server.backend().get(c.key(c.info.name));
    if (!kv.is_ok()) return error_response(storage_error(c, kv.status(), c.info.name));
    auto decoded = decode_stored(*kv);
    if (!decoded.is_ok()) return error_response(decoded.status());
    pod = std::move(decoded).value();
    if (!ignores_budget(pod)) break;
    DeleteOptions o = opts;
    if (enforces_revision(pod) && !user_revision)
      o.precondition_rv = str_at(pod, "metadata", "resourceVersion");
    http::Response r = delete_pod(c, o);
    // Our own precondition failed: the pod changed; judge it again.
    if (r.status == 409 && !user_revision && attempt + 1 < kRetries) {
      backoff(attempt);
      continue;
    }
    return r;
  }

  auto budgets = budgets_for(c, pod);
  if (!budgets.is_ok()) return error_response(budgets.status());
  if (budgets->size() > 1)
    return json_response(500, status_body("Failure", 500,
                                          "This pod has more than one PodDisruptionBudget, which "
                                          "the eviction subresource does not support."));
  DeleteOptions o = opts;
  bool revision_added = false;
  std::string budget_name;
  if (budgets->size() == 1) {
    const json& pdb = (*budgets)[0].object;
    budget_name = name_of(pdb);
    const json& status = object_at(pdb, "status");
    const int64_t desired = int_at(status, "desiredHealthy");
    // An unready pod does not count as healthy: it may go without taking a
    // disruption while enough others are healthy (or when the budget says
    // unhealthy pods may always go).
    const bool unready_goes =
        !pod_ready(pod) &&
        ((int_at(status, "currentHealthy") >= desired && desired > 0) ||
         str_at(object_at(pdb, "spec"), "unhealthyPodEvictionPolicy") == "AlwaysAllow");
    if (unready_goes) {
      revision_added = true;
    } else if (auto refused = take_disruption(c, (*budgets)[0], c.info.name)) {
      return std::move(*refused);
    }
  }
  if (revision_added && !user_revision)
    o.precondition_rv = str_at(pod, "metadata", "resourceVersion");
  http::Response r = delete_pod(c, o);
  // The unready pod changed since it was judged (it may be ready now): the
  // client retries, as it does for a budget that does not allow it yet.
  if (r.status == 409 && revision_added && !user_revision) return still_processing(budget_name);
  return r;
}

}  // namespace vkube::apiserver
