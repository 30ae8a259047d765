// Table printers of core/v1 pods, nodes, namespaces, config and identity
// objects, quotas, and events (core/v1 and events.k8s.io/v1).
#include <set>

#include "kinds.h"
#include "tables_util.h"

namespace vkube::apiserver::builtin::tables {

namespace {

// --- pods --------------------------------------------------------------------

bool has_condition(const json& pod, std::string_view type, std::string_view status) {
  for (const json& c : array(pod, {"status", "conditions"})) {
    if (str(c, {"type"}) == type) return str(c, {"status"}) == status;
  }
  return false;
}

// Keeps the latest lastState.terminated.finishedAt of a container status.
void note_restart(const json& status, std::optional<int64_t>& latest) {
  std::optional<int64_t> t = parse_time(find(status, {"lastState", "terminated", "finishedAt"}));
  if (t && (!latest || *t > *latest)) latest = t;
}

// The reason a terminated container with no reason of its own shows.
std::string exit_reason(const json& terminated, std::string_view prefix) {
  const int64_t signal = integer(terminated, {"signal"});
  if (signal != 0) return std::string(prefix) + "Signal:" + std::to_string(signal);
  return std::string(prefix) + "ExitCode:" + std::to_string(integer(terminated, {"exitCode"}));
}

struct PodSummary {
  int64_t ready = 0;
  int64_t total = 0;
  std::string reason;
  int64_t restarts = 0;
  std::optional<int64_t> last_restart;
};

// printPod's STATUS / READY / RESTARTS logic: init containers first, then
// app containers (last one wins), then deletion.
PodSummary summarize_pod(const json& pod) {
  PodSummary s;
  const json& init_specs = array(pod, {"spec", "initContainers"});
  s.total = static_cast<int64_t>(array(pod, {"spec", "containers"}).size());
  const std::string phase = str(pod, {"status", "phase"});
  s.reason = str(pod, {"status", "reason"}, phase);
  if (s.reason.empty()) s.reason = phase;
  for (const json& c : array(pod, {"status", "conditions"})) {
    if (str(c, {"type"}) == "PodScheduled" && str(c, {"reason"}) == "SchedulingGated") {
      s.reason = "SchedulingGated";
    }
  }
  // Sidecars (restartPolicy Always) count as containers of the pod.
  std::set<std::string> sidecars;
  for (const json& c : init_specs) {
    if (str(c, {"restartPolicy"}) == "Always") {
      sidecars.insert(str(c, {"name"}));
      ++s.total;
    }
  }

  int64_t sidecar_restarts = 0;
  std::optional<int64_t> last_sidecar_restart;
  bool initializing = false;
  const json& init_statuses = array(pod, {"status", "initContainerStatuses"});
  for (std::size_t i = 0; i < init_statuses.size(); ++i) {
    const json& c = init_statuses[i];
    const bool sidecar = sidecars.count(str(c, {"name"})) > 0;
    s.restarts += integer(c, {"restartCount"});
    note_restart(c, s.last_restart);
    if (sidecar) {
      sidecar_restarts += integer(c, {"restartCount"});
      note_restart(c, last_sidecar_restart);
    }
    const json* terminated = find(c, {"state", "terminated"});
    const std::string waiting = str(c, {"state", "waiting", "reason"});
    if (terminated != nullptr && integer(*terminated, {"exitCode"}) == 0) continue;
    if (sidecar && opt_bool(c, {"started"}).value_or(false)) {
      if (opt_bool(c, {"ready"}).value_or(false)) ++s.ready;
      continue;
    }
    if (terminated != nullptr) {
      const std::string r = str(*terminated, {"reason"});
      s.reason = r.empty() ? exit_reason(*terminated, "Init:") : "Init:" + r;
    } else if (!waiting.empty() && waiting != "PodInitializing") {
      s.reason = "Init:" + waiting;
    } else {
      s.reason = "Init:" + std::to_string(i) + "/" + std::to_string(init_specs.size());
    }
    initializing = true;
    break;
  }

  if (!initializing || has_condition(pod, "Initialized", "True")) {
    s.restarts = sidecar_restarts;
    s.last_restart = last_sidecar_restart;
    bool has_running = false;
    const json& statuses = array(pod, {"status", "containerStatuses"});
    for (auto it = statuses.rbegin(); it != statuses.rend(); ++it) {
      const json& c = *it;
      s.restarts += integer(c, {"restartCount"});
      note_restart(c, s.last_restart);
      const std::string waiting = str(c, {"state", "waiting", "reason"});
      const json* terminated = find(c, {"state", "terminated"});
      if (!waiting.empty()) {
        s.reason = waiting;
      } else if (terminated != nullptr) {
        const std::string r = str(*terminated, {"reason"});
        s.reason = r.empty() ? exit_reason(*terminated, "") : r;
      } else if (opt_bool(c, {"ready"}).value_or(false) &&
                 find(c, {"state", "running"}) != nullptr) {
        has_running = true;
        ++s.ready;
      }
    }
    if (s.reason == "Completed" && has_running) {
      s.reason = has_condition(pod, "Ready", "True") ? "Running" : "NotReady";
    }
  }

  if (find(pod, {"metadata", "deletionTimestamp"}) != nullptr) {
    if (str(pod, {"status", "reason"}) == "NodeLost") {
      s.reason = "Unknown";
    } else if (phase != "Succeeded" && phase != "Failed") {
      s.reason = "Terminating";
    }
  }
  return s;
}

json pod_cells(const json& pod, int64_t now) {
  const PodSummary s = summarize_pod(pod);
  std::string restarts = std::to_string(s.restarts);
  if (s.restarts != 0 && s.last_restart) {
    restarts += " (" + human_duration(now - *s.last_restart) + " ago)";
  }
  std::string ip;
  if (const json& ips = array(pod, {"status", "podIPs"}); !ips.empty()) {
    ip = str(ips[0], {"ip"});
  } else {
    ip = str(pod, {"status", "podIP"});
  }
  std::string gates = "<none>";
  if (const json& specs = array(pod, {"spec", "readinessGates"}); !specs.empty()) {
    int64_t satisfied = 0;
    for (const json& g : specs) {
      if (has_condition(pod, str(g, {"conditionType"}), "True")) ++satisfied;
    }
    gates = std::to_string(satisfied) + "/" + std::to_string(specs.size());
  }
  auto or_none = [](std::string v) { return v.empty() ? std::string("<none>") : v; };
  return json::array({str(pod, {"metadata", "name"}),
                      std::to_string(s.ready) + "/" + std::to_string(s.total), s.reason, restarts,
                      age(pod, now), or_none(ip), or_none(str(pod, {"spec", "nodeName"})),
                      or_none(str(pod, {"status", "nominatedNodeName"})), gates});
}

Printer pod_printer() {
  return {{name_column(),
           column("Ready", "string", "Ready containers out of all containers of the pod."),
           column("Status", "string", "Summary of the pod's phase and container states."),
           column("Restarts", "string",
                  "Container restarts in the pod, and how long ago the last one was."),
           age_column(), column("IP", "string", "The pod's primary IP address.", 1),
           column("Node", "string", "The node the pod is bound to.", 1),
           column("Nominated Node", "string", "The node preemption nominated for the pod.", 1),
           column("Readiness Gates", "string", "Readiness gates whose condition is True.", 1)},
          pod_cells};
}

// --- nodes -------------------------------------------------------------------

std::string node_address(const json& node, std::string_view type) {
  for (const json& a : array(node, {"status", "addresses"})) {
    if (str(a, {"type"}) == type) return str(a, {"address"});
  }
  return "<none>";
}

json node_cells(const json& node, int64_t now) {
  std::vector<std::string> status;
  for (const json& c : array(node, {"status", "conditions"})) {
    if (str(c, {"type"}) != "Ready") continue;
    // As a map keyed by type, the last Ready condition counts.
    status.assign(1, str(c, {"status"}) == "True" ? "Ready" : "NotReady");
  }
  if (status.empty()) status.push_back("Unknown");
  if (opt_bool(node, {"spec", "unschedulable"}).value_or(false)) {
    status.push_back("SchedulingDisabled");
  }
  std::set<std::string> roles;
  for (const auto& [key, value] : object(node, {"metadata", "labels"}).items()) {
    constexpr std::string_view kPrefix = "node-role.kubernetes.io/";
    if (key.rfind(kPrefix, 0) == 0) {
      if (key.size() > kPrefix.size()) roles.insert(key.substr(kPrefix.size()));
    } else if (key == "kubernetes.io/role" && value.is_string() &&
               !value.get_ref<const std::string&>().empty()) {
      roles.insert(value.get<std::string>());
    }
  }
  const std::string role_text = join({roles.begin(), roles.end()}, ",");
  auto info = [&](std::string_view field) {
    std::string v = str(node, {"status", "nodeInfo", field});
    return v.empty() ? std::string("<unknown>") : v;
  };
  return json::array({str(node, {"metadata", "name"}), join(status, ","),
                      role_text.empty() ? "<none>" : role_text, age(node, now),
                      str(node, {"status", "nodeInfo", "kubeletVersion"}),
                      node_address(node, "InternalIP"), node_address(node, "ExternalIP"),
                      info("osImage"), info("kernelVersion"), info("containerRuntimeVersion")});
}

Printer node_printer() {
  return {{name_column(), column("Status", "string", "Readiness and schedulability of the node."),
           column("Roles", "string", "Roles from the node's node-role.kubernetes.io labels."),
           age_column(), column("Version", "string", "Version of the node's kubelet."),
           column("Internal-IP", "string", "The node's first InternalIP address.", 1),
           column("External-IP", "string", "The node's first ExternalIP address.", 1),
           column("OS-Image", "string", "Operating system image of the node.", 1),
           column("Kernel-Version", "string", "Kernel version of the node.", 1),
           column("Container-Runtime", "string", "Container runtime name and version.", 1)},
          node_cells};
}

// --- small core kinds --------------------------------------------------------

json namespace_cells(const json& ns, int64_t now) {
  return json::array({str(ns, {"metadata", "name"}), str(ns, {"status", "phase"}), age(ns, now)});
}

json configmap_cells(const json& cm, int64_t now) {
  const auto n = object(cm, {"data"}).size() + object(cm, {"binaryData"}).size();
  return json::array({str(cm, {"metadata", "name"}), static_cast<int64_t>(n), age(cm, now)});
}

json secret_cells(const json& s, int64_t now) {
  return json::array({str(s, {"metadata", "name"}), str(s, {"type"}),
                      static_cast<int64_t>(object(s, {"data"}).size()), age(s, now)});
}

json serviceaccount_cells(const json& sa, int64_t now) {
  return json::array({str(sa, {"metadata", "name"}),
                      static_cast<int64_t>(array(sa, {"secrets"}).size()), age(sa, now)});
}

json podtemplate_cells(const json& pt, int64_t) {
  auto [names, images] = container_cells(array(pt, {"template", "spec", "containers"}));
  return json::array({str(pt, {"metadata", "name"}), names, images,
                      format_labels(find(pt, {"template", "metadata", "labels"}))});
}

// "cpu: 500m/1, pods: 3/10" for requests, the "limits.*" resources apart.
json resourcequota_cells(const json& q, int64_t now) {
  std::vector<std::string> requests, limits;
  for (const auto& [resource, hard] : object(q, {"status", "hard"}).items()) {
    const json& used = object(q, {"status", "used"});
    auto u = used.find(resource);
    std::string entry =
        resource + ": " + quantity(u == used.end() ? nullptr : &*u) + "/" + quantity(&hard);
    (resource.rfind("limits.", 0) == 0 ? limits : requests).push_back(std::move(entry));
  }
  return json::array(
      {str(q, {"metadata", "name"}), age(q, now), join(requests, ", "), join(limits, ", ")});
}

// --- events ------------------------------------------------------------------

// The fields the event printer reads, wherever the API version keeps them.
struct EventFields {
  const char* involved;
  const char* message;
  const char* source;
  const char* reporting_controller;
  const char* first_timestamp;
  const char* last_timestamp;
  const char* count;
};
constexpr EventFields kCoreEvent = {
    "involvedObject", "message",       "source", "reportingComponent",
    "firstTimestamp", "lastTimestamp", "count"};
constexpr EventFields kEventsV1 = {"regarding",
                                   "note",
                                   "deprecatedSource",
                                   "reportingController",
                                   "deprecatedFirstTimestamp",
                                   "deprecatedLastTimestamp",
                                   "deprecatedCount"};

json event_cells(const json& ev, int64_t now, const EventFields& f) {
  std::string first = since(find(ev, {f.first_timestamp}), now);
  if (!parse_time(find(ev, {f.first_timestamp}))) first = since(find(ev, {"eventTime"}), now);
  std::string last = since(find(ev, {f.last_timestamp}), now);
  if (!parse_time(find(ev, {f.last_timestamp}))) last = first;
  int64_t count = integer(ev, {f.count});
  if (const json* series = find(ev, {"series"}); series != nullptr && series->is_object()) {
    last = since(find(*series, {"lastObservedTime"}), now);
    count = integer(*series, {"count"});
  } else if (count == 0) {
    count = 1;  // singleton events of the new API carry no count
  }
  const std::string kind = lower(str(ev, {f.involved, "kind"}));
  const std::string name = str(ev, {f.involved, "name"});
  auto first_non_empty = [](std::string a, std::string b) { return a.empty() ? b : a; };
  const std::string component =
      first_non_empty(str(ev, {f.source, "component"}), str(ev, {f.reporting_controller}));
  const std::string host =
      first_non_empty(str(ev, {f.source, "host"}), str(ev, {"reportingInstance"}));
  return json::array({last, str(ev, {"type"}), str(ev, {"reason"}),
                      name.empty() ? kind : kind + "/" + name, str(ev, {f.involved, "fieldPath"}),
                      host.empty() ? component : component + ", " + host,
                      trim(str(ev, {f.message})), first, count, str(ev, {"metadata", "name"})});
}

json core_event_cells(const json& ev, int64_t now) {
  return event_cells(ev, now, kCoreEvent);
}
json events_v1_cells(const json& ev, int64_t now) {
  return event_cells(ev, now, kEventsV1);
}

std::vector<api::Column> event_columns() {
  return {column("Last Seen", "string", "Time since the event was last observed."),
          column("Type", "string", "Normal or Warning."),
          column("Reason", "string", "Short machine-readable reason for the event."),
          column("Object", "string", "The object the event is about, as kind/name."),
          column("Subobject", "string", "Part of the object the event is about.", 1),
          column("Source", "string", "Component (and host) that reported the event.", 1),
          column("Message", "string", "Human-readable description of the event."),
          column("First Seen", "string", "Time since the event was first observed.", 1),
          column("Count", "string", "Number of times the event occurred.", 1),
          name_column(1)};
}

}  // namespace

void add_core_printers(PrinterMap& m) {
  m["/pods"] = pod_printer();
  m["/nodes"] = node_printer();
  m["/namespaces"] = {
      {name_column(), column("Status", "string", "Phase of the namespace."), age_column()},
      namespace_cells};
  m["/configmaps"] = {
      {name_column(), column("Data", "string", "Number of data and binaryData entries."),
       age_column()},
      configmap_cells};
  m["/secrets"] = {{name_column(), column("Type", "string", "Type of the secret's data."),
                    column("Data", "string", "Number of data entries."), age_column()},
                   secret_cells};
  m["/serviceaccounts"] = {
      {name_column(), column("Secrets", "string", "Number of secrets listed."), age_column()},
      serviceaccount_cells};
  m["/podtemplates"] = {
      {name_column(), column("Containers", "string", "Names of the template's containers."),
       column("Images", "string", "Images of the template's containers."),
       column("Pod Labels", "string", "Labels of the pod template.")},
      podtemplate_cells};
  m["/resourcequotas"] = {
      {name_column(), age_column(),
       column("Request", "string", "Used and hard quota of the request resources."),
       column("Limit", "string", "Used and hard quota of the limits.* resources.")},
      resourcequota_cells};
  m["/events"] = {event_columns(), core_event_cells};
  m["events.k8s.io/events"] = {event_columns(), events_v1_cells};
}

}  // namespace vkube::apiserver::builtin::tables
