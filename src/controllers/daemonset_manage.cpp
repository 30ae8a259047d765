// The writing part of a DaemonSet pass: a pod for every node that should run
// one and none elsewhere (kube's manage / podsShouldBeOnNode / syncNodes),
// and the rolling update that replaces old pods within maxUnavailable, or
// surges new ones next to them within maxSurge (kube's rollingUpdate).
#include <algorithm>
#include <cmath>
#include <mutex>
#include <set>

#include "daemonset_nodes.h"
#include "daemonset_sync.h"
#include "workload_common.h"

namespace vkube::controllers::daemonset {

using workload::api_status;
using workload::str_at;

namespace {

constexpr size_t kBurstReplicas = 250;  // kube's BurstReplicas: writes per pass

// An IntOrString of the rolling update scaled against `total`, rounding up.
int64_t scaled(const json& v, int64_t total) {
  if (v.is_number_integer()) return v.get<int64_t>();
  if (!v.is_string()) return 0;
  std::string s = v.get<std::string>();
  if (s.empty() || s.back() != '%') return 0;
  try {
    double percent = std::stod(s.substr(0, s.size() - 1));
    return static_cast<int64_t>(std::ceil(percent * static_cast<double>(total) / 100.0));
  } catch (const std::exception&) {
    return 0;
  }
}

json rolling_param(const json& ds, const char* name) {
  if (str_at(ds, {"spec", "updateStrategy", "type"}) != "RollingUpdate") return json();
  const json& spec = ds["spec"];
  if (!spec["updateStrategy"].contains("rollingUpdate")) return json();
  return spec["updateStrategy"]["rollingUpdate"].value(name, json());
}

bool allows_surge(const json& ds) {
  return scaled(rolling_param(ds, "maxSurge"), 1) != 0;
}

}  // namespace

Status DaemonSync::manage() {
  NodePods by_node = pods_by_node(false);
  std::vector<std::string> create, remove;
  std::set<std::string> names;
  for (const ObjectPtr& node : node_list_) {
    names.insert(meta(*node, "name"));
    plan_node(*node, by_node, &create, &remove);
  }
  // Pods for nodes that are gone: nothing else would remove them here.
  for (const auto& [node, pods] : by_node)
    if (!names.count(node))
      for (const json* p : pods)
        if (!is_terminating(*p)) remove.push_back(meta(*p, "name"));
  return sync_nodes(remove, create);
}

void DaemonSync::plan_node(const json& node, const NodePods& by_node,
                           std::vector<std::string>* create, std::vector<std::string>* remove) {
  const std::string node_name = meta(node, "name");
  const Placement place = placement(node, ds_);
  auto it = by_node.find(node_name);
  const bool exists = it != by_node.end();
  if (place.should_run && !exists) {
    create->push_back(node_name);
    return;
  }
  if (!exists) return;
  if (!place.should_continue) {
    for (const json* p : it->second)
      if (!is_terminating(*p)) remove->push_back(meta(*p, "name"));
    return;
  }
  std::vector<const json*> running;
  for (const json* p : it->second) {
    if (is_terminating(*p)) continue;
    const std::string phase = pod_phase(*p);
    if (phase == "Failed") {
      // kube's guard against fighting a kubelet that keeps rejecting the pod.
      const std::string key = meta(ds_, "uid") + "/" + node_name;
      std::chrono::milliseconds wait{0};
      if (backoff_.in_backoff(key, now_, &wait)) {
        requeue(wait);
        continue;
      }
      backoff_.next(key, now_);
      ctx_.events.record(ds_, std::string(kComponent), "Warning", "FailedDaemonPod",
                         "Found failed daemon pod " + meta(*p, "namespace") + "/" +
                             meta(*p, "name") + " on node " + node_name + ", will try to kill it");
      remove->push_back(meta(*p, "name"));
    } else if (phase == "Succeeded") {
      remove->push_back(meta(*p, "name"));
    } else {
      running.push_back(p);
    }
  }
  std::sort(running.begin(), running.end(), older_first);
  if (!allows_surge(ds_)) {
    // One pod per node: the oldest stays.
    for (size_t i = 1; i < running.size(); ++i) remove->push_back(meta(*running[i], "name"));
    return;
  }
  if (running.size() <= 1) {
    if (running.empty() && place.should_run) create->push_back(node_name);
    return;
  }
  // Surging: at most the oldest new and the oldest old pod; the old one goes
  // once it is not ready or the new one is available.
  const json* oldest_new = nullptr;
  const json* oldest_old = nullptr;
  for (const json* p : running) {
    const json*& slot = pod_updated(*p) ? oldest_new : oldest_old;
    if (slot == nullptr)
      slot = p;
    else
      remove->push_back(meta(*p, "name"));
  }
  if (oldest_new != nullptr && oldest_old != nullptr &&
      (!pod_ready(*oldest_old) || available(*oldest_new)))
    remove->push_back(meta(*oldest_old, "name"));
}

Status DaemonSync::sync_nodes(const std::vector<std::string>& remove_all,
                              const std::vector<std::string>& create_all) {
  std::vector<std::string> remove;
  for (const std::string& n : remove_all)
    if (std::find(remove.begin(), remove.end(), n) == remove.end()) remove.push_back(n);
  const size_t creates = std::min(create_all.size(), kBurstReplicas);
  if (remove.size() > kBurstReplicas) remove.resize(kBurstReplicas);

  json tmpl = ds_["spec"].value("template", json::object());
  if (!tmpl["spec"].is_object()) tmpl["spec"] = json::object();
  add_daemon_tolerations(tmpl["spec"]);
  json& labels = tmpl["metadata"]["labels"];
  if (!labels.is_object()) labels = json::object();
  labels[std::string(kHashLabel)] = hash_;
  const json& annotations = ds_["metadata"].value("annotations", json::object());
  if (annotations.contains(std::string(kGenerationAnnotation)))
    labels[std::string(kGenerationLabel)] = annotations[std::string(kGenerationAnnotation)];

  const std::string ns = meta(ds_, "namespace");
  Status error;
  workload::slow_start(
      ctx_, creates,
      [&](size_t i) {
        json pod = pod_from_template(tmpl, ds_, meta(ds_, "name") + "-");
        pin_to_node(pod["spec"], create_all[i]);
        ApiResult r = ctx_.client.call("POST", api_path("v1", "pods", ns), pod);
        Status s = api_status(r);
        if (s.is_ok()) {
          wrote_ = true;
          ctx_.events.record(ds_, std::string(kComponent), "Normal", "SuccessfulCreate",
                             "Created pod: " + meta(r.body, "name"));
        } else {
          ctx_.events.record(ds_, std::string(kComponent), "Warning", "FailedCreate",
                             "Error creating: " + s.message());
        }
        return s;
      },
      &error);

  std::mutex mu;
  ctx_.parallel(remove.size(), [&](size_t i) {
    ApiResult r = ctx_.client.call("DELETE", api_path("v1", "pods", ns, remove[i]));
    if (r.code == 404) return;
    Status s = api_status(r);
    if (s.is_ok()) {
      wrote_ = true;
      ctx_.events.record(ds_, std::string(kComponent), "Normal", "SuccessfulDelete",
                         "Deleted pod: " + remove[i]);
      return;
    }
    ctx_.events.record(ds_, std::string(kComponent), "Warning", "FailedDelete",
                       "Error deleting: " + s.message());
    std::lock_guard lock(mu);
    if (error.is_ok()) error = std::move(s);
  });
  return error;
}

Status DaemonSync::rolling_update() {
  NodePods by_node = pods_by_node(false);
  int64_t desired = 0;
  for (const ObjectPtr& node : node_list_) {
    if (!placement(*node, ds_).should_run) continue;
    ++desired;
    by_node[meta(*node, "name")];  // a node that should run a pod counts even without one
  }
  int64_t max_unavailable = scaled(rolling_param(ds_, "maxUnavailable"), desired);
  const int64_t max_surge = scaled(rolling_param(ds_, "maxSurge"), desired);
  if (desired > 0 && max_unavailable == 0 && max_surge == 0) max_unavailable = 1;
  if (max_surge == 0) return roll_replacing(by_node, max_unavailable);
  return roll_surging(by_node, max_surge, desired);
}

bool DaemonSync::split_node(const std::vector<const json*>& pods, const json** fresh,
                            const json** old) const {
  *fresh = *old = nullptr;
  for (const json* p : pods) {
    if (is_terminating(*p)) continue;
    const json*& slot = pod_updated(*p) ? *fresh : *old;
    if (slot != nullptr) return false;
    slot = p;
  }
  return true;
}

// Old pods are deleted (manage() then creates their replacements) while at
// most max_unavailable nodes lack an available pod; unavailable old pods go
// at once, as replacing them costs nothing.
Status DaemonSync::roll_replacing(const NodePods& by_node, int64_t max_unavailable) {
  int64_t unavailable = 0;
  std::vector<std::string> to_delete, candidates;
  for (const auto& [node, pods] : by_node) {
    const json *fresh, *old;
    if (!split_node(pods, &fresh, &old) || (fresh == nullptr) == (old == nullptr)) {
      ++unavailable;  // manage() creates or prunes here first
    } else if (fresh != nullptr) {
      if (!available(*fresh)) ++unavailable;
    } else if (!available(*old)) {
      to_delete.push_back(meta(*old, "name"));
      ++unavailable;
    } else if (unavailable < max_unavailable) {
      candidates.push_back(meta(*old, "name"));
    }
  }
  int64_t room = std::clamp<int64_t>(max_unavailable - unavailable, 0,
                                     static_cast<int64_t>(candidates.size()));
  to_delete.insert(to_delete.end(), candidates.begin(), candidates.begin() + room);
  return sync_nodes(to_delete, {});
}

// New pods start next to old ones on at most max_surge nodes at once; an old
// pod goes when the new one of its node is available.
Status DaemonSync::roll_surging(const NodePods& by_node, int64_t max_surge, int64_t desired) {
  int64_t surge = 0, available_count = 0;
  std::vector<std::string> to_delete, to_create, candidates, must_go;
  for (const auto& [node_name, pods] : by_node) {
    const json *fresh, *old;
    if (!split_node(pods, &fresh, &old)) {
      ++surge;
      continue;
    }
    const json* current = old != nullptr ? old : fresh;
    if (current != nullptr && available(*current)) ++available_count;
    if (old == nullptr) continue;
    if (fresh != nullptr) {
      if (available(*fresh))
        to_delete.push_back(meta(*old, "name"));
      else
        ++surge;  // waiting for it
      continue;
    }
    ObjectPtr node = nodes_.get(node_name);
    const bool should_run = node && placement(*node, ds_).should_run;
    if (!available(*old)) {
      if (should_run)
        to_create.push_back(node_name);
      else
        to_delete.push_back(meta(*old, "name"));
    } else if (!should_run) {
      must_go.push_back(meta(*old, "name"));
    } else if (surge < max_surge) {
      candidates.push_back(node_name);
    }
  }
  // Pods on nodes no longer eligible go only while enough others are available.
  int64_t deletable =
      std::min<int64_t>(available_count - desired, static_cast<int64_t>(must_go.size()));
  for (int64_t i = 0; i < deletable; ++i) to_delete.push_back(must_go[static_cast<size_t>(i)]);
  int64_t room = std::clamp<int64_t>(max_surge - surge, 0, static_cast<int64_t>(candidates.size()));
  to_create.insert(to_create.end(), candidates.begin(), candidates.begin() + room);
  return sync_nodes(to_delete, to_create);
}

}  // namespace vkube::controllers::daemonset
