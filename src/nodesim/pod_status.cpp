#include "pod_status.h"

#include <set>

namespace vkube::nodesim {

namespace {

// Condition types the kubelet owns, in the order it lists them.
constexpr const char* kReadyToStart = "PodReadyToStartContainers";
constexpr const char* kInitialized = "Initialized";
constexpr const char* kReady = "Ready";
constexpr const char* kContainersReady = "ContainersReady";
constexpr const char* kScheduled = "PodScheduled";

const json& field(const json& obj, const char* name) {
  static const json kNull;
  if (!obj.is_object()) return kNull;
  auto it = obj.find(name);
  return it == obj.end() ? kNull : *it;
}

const json& containers(const json& pod, const char* list) {
  static const json kEmpty = json::array();
  const json& c = field(field(pod, "spec"), list);
  return c.is_array() ? c : kEmpty;
}

std::string str(const json& v) {
  return v.is_string() ? v.get<std::string>() : std::string();
}

bool sidecar(const json& init_container) {
  return str(field(init_container, "restartPolicy")) == "Always";
}

// The previous status of container `name` in `list` (null when none).
const json& previous(const json& pod, const char* list, const std::string& name) {
  static const json kNull;
  const json& statuses = field(field(pod, "status"), list);
  if (!statuses.is_array()) return kNull;
  for (const json& s : statuses)
    if (str(field(s, "name")) == name) return s;
  return kNull;
}

json base(const json& c, const json& pod, bool started) {
  std::string name = str(field(c, "name"));
  std::string image = str(field(c, "image"));
  json s = {{"name", name},   {"image", image},     {"imageID", started ? "sim://" + image : ""},
            {"ready", false}, {"started", started}, {"restartCount", 0}};
  if (started) s["containerID"] = "sim://" + str(field(field(pod, "metadata"), "uid")) + "-" + name;
  return s;
}

json running(const json& c, const json& pod, const char* list, std::string_view now) {
  json s = base(c, pod, true);
  const json& prev = previous(pod, list, s["name"]);
  std::string since(now);
  if (const json& r = field(field(prev, "state"), "running"); r.is_object())
    since = str(field(r, "startedAt"));
  if (const json& n = field(prev, "restartCount"); n.is_number_integer()) s["restartCount"] = n;
  if (const json& last = field(prev, "lastState"); last.is_object()) s["lastState"] = last;
  s["ready"] = true;
  s["state"] = {{"running", {{"startedAt", since}}}};
  return s;
}

json terminated(const json& c, const json& pod, const char* list, int exit_code,
                std::string_view now) {
  json s = base(c, pod, true);
  const json& prev = previous(pod, list, s["name"]);
  std::string since(now);
  if (const json& r = field(field(prev, "state"), "running"); r.is_object())
    since = str(field(r, "startedAt"));
  if (const json& n = field(prev, "restartCount"); n.is_number_integer()) s["restartCount"] = n;
  s["started"] = false;
  s["state"] = {{"terminated",
                 {{"exitCode", exit_code},
                  {"reason", exit_reason(exit_code)},
                  {"startedAt", since},
                  {"finishedAt", now},
                  {"containerID", s["containerID"]}}}};
  return s;
}

// An init container that ran to completion (kept as reported once it was).
json completed_init(const json& c, const json& pod, std::string_view now) {
  const json& prev = previous(pod, "initContainerStatuses", str(field(c, "name")));
  if (field(field(prev, "state"), "terminated").is_object()) return prev;
  json s = terminated(c, pod, "initContainerStatuses", 0, now);
  s["ready"] = true;
  return s;
}

json waiting(const json& c, const json& pod, const char* reason, std::string_view message) {
  json s = base(c, pod, false);
  json w = {{"reason", reason}};
  if (!message.empty()) w["message"] = message;
  s["state"] = {{"waiting", std::move(w)}};
  return s;
}

struct Cond {
  const char* type;
  bool status;
  std::string reason, message;
};

// The kubelet's conditions in its order, then the others the pod had. A
// condition keeps its lastTransitionTime while its status does not change.
json conditions(const json& pod, const std::vector<Cond>& ours, std::string_view now) {
  const json& old = field(field(pod, "status"), "conditions");
  auto find_old = [&](std::string_view type) -> const json* {
    if (!old.is_array()) return nullptr;
    for (const json& c : old)
      if (str(field(c, "type")) == type) return &c;
    return nullptr;
  };
  json out = json::array();
  std::set<std::string> mine;
  for (const Cond& c : ours) {
    json cond = {{"type", c.type},
                 {"status", c.status ? "True" : "False"},
                 {"lastProbeTime", nullptr},
                 {"lastTransitionTime", now}};
    if (!c.reason.empty()) cond["reason"] = c.reason;
    if (!c.message.empty()) cond["message"] = c.message;
    if (const json* o = find_old(c.type); o && field(*o, "status") == cond["status"])
      cond["lastTransitionTime"] = field(*o, "lastTransitionTime");
    out.push_back(std::move(cond));
    mine.insert(c.type);
  }
  // The scheduler's condition stays as it set it (a pod bound directly has none).
  if (const json* s = find_old(kScheduled)) {
    out.push_back(*s);
  } else {
    out.push_back({{"type", kScheduled},
                   {"status", "True"},
                   {"lastProbeTime", nullptr},
                   {"lastTransitionTime", now}});
  }
  mine.insert(kScheduled);
  if (old.is_array())
    for (const json& c : old)
      if (!mine.count(str(field(c, "type")))) out.push_back(c);
  return out;
}

// "containers with unready status: [a b]"
std::string unready(const json& pod, const char* what) {
  std::string names;
  for (const json& c : containers(pod, "containers"))
    names += (names.empty() ? "" : " ") + str(field(c, "name"));
  return std::string("containers with ") + what + " status: [" + names + "]";
}

// The readiness gates whose condition is not True: Ready waits for them.
std::string unmet_gates(const json& pod) {
  const json& gates = field(field(pod, "spec"), "readinessGates");
  if (!gates.is_array()) return {};
  const json& conds = field(field(pod, "status"), "conditions");
  for (const json& g : gates) {
    std::string type = str(field(g, "conditionType"));
    bool ok = false;
    if (conds.is_array())
      for (const json& c : conds)
        ok |= str(field(c, "type")) == type && str(field(c, "status")) == "True";
    if (!ok) return "corresponding condition of pod readiness gate \"" + type + "\" is not True";
  }
  return {};
}

json start_of(const json& pod, const Addresses& a, std::string_view now) {
  json status = field(pod, "status").is_object() ? field(pod, "status") : json::object();
  if (!a.host_ip.empty()) {
    status["hostIP"] = a.host_ip;
    status["hostIPs"] = {{{"ip", a.host_ip}}};
  }
  if (!a.pod_ip.empty()) {
    status["podIP"] = a.pod_ip;
    status["podIPs"] = {{{"ip", a.pod_ip}}};
  }
  if (!status.contains("startTime")) status["startTime"] = now;
  return status;
}

}  // namespace

std::string_view exit_reason(int exit_code) {
  return exit_code == 0 ? "Completed" : "Error";
}

json creating_status(const json& pod, const Addresses& a, std::string_view now,
                     std::string_view message) {
  json status = start_of(pod, a, now);
  status["phase"] = "Pending";
  const json& inits = containers(pod, "initContainers");
  std::string pending_inits;
  json init_statuses = json::array();
  for (const json& c : inits) {
    init_statuses.push_back(waiting(c, pod, "ContainerCreating", message));
    if (!sidecar(c)) pending_inits += (pending_inits.empty() ? "" : " ") + str(field(c, "name"));
  }
  json statuses = json::array();
  for (const json& c : containers(pod, "containers"))
    statuses.push_back(
        waiting(c, pod, inits.empty() ? "ContainerCreating" : "PodInitializing", message));
  if (!inits.empty()) status["initContainerStatuses"] = std::move(init_statuses);
  status["containerStatuses"] = std::move(statuses);
  std::string why = unready(pod, "unready");
  status["conditions"] = conditions(
      pod,
      {{kReadyToStart, false, "", ""},
       pending_inits.empty() ? Cond{kInitialized, true, "", ""}
                             : Cond{kInitialized, false, "ContainersNotInitialized",
                                    "containers with incomplete status: [" + pending_inits + "]"},
       {kReady, false, "ContainersNotReady", why},
       {kContainersReady, false, "ContainersNotReady", why}},
      now);
  return status;
}

json running_status(const json& pod, const Addresses& a, std::string_view now) {
  json status = start_of(pod, a, now);
  status["phase"] = "Running";
  const json& inits = containers(pod, "initContainers");
  if (!inits.empty()) {
    json init_statuses = json::array();
    for (const json& c : inits) {
      if (sidecar(c)) {
        init_statuses.push_back(running(c, pod, "initContainerStatuses", now));
      } else {
        init_statuses.push_back(completed_init(c, pod, now));
      }
    }
    status["initContainerStatuses"] = std::move(init_statuses);
  }
  json statuses = json::array();
  for (const json& c : containers(pod, "containers"))
    statuses.push_back(running(c, pod, "containerStatuses", now));
  status["containerStatuses"] = std::move(statuses);
  std::string gates = unmet_gates(pod);
  status["conditions"] =
      conditions(pod,
                 {{kReadyToStart, true, "", ""},
                  {kInitialized, true, "", ""},
                  gates.empty() ? Cond{kReady, true, "", ""}
                                : Cond{kReady, false, "ReadinessGatesNotReady", gates},
                  {kContainersReady, true, "", ""}},
                 now);
  return status;
}

json restarted_status(const json& pod, int exit_code, std::string_view now) {
  json status = field(pod, "status");
  json statuses = json::array();
  for (const json& c : containers(pod, "containers")) {
    json ended = terminated(c, pod, "containerStatuses", exit_code, now);
    json s = running(c, pod, "containerStatuses", now);
    s["restartCount"] = s.value("restartCount", 0) + 1;
    s["lastState"] = ended["state"];
    s["state"] = {{"running", {{"startedAt", now}}}};
    statuses.push_back(std::move(s));
  }
  status["containerStatuses"] = std::move(statuses);
  return status;
}

json finished_status(const json& pod, int exit_code, std::string_view now) {
  json status = field(pod, "status").is_object() ? field(pod, "status") : json::object();
  const bool ok = exit_code == 0;
  status["phase"] = ok ? "Succeeded" : "Failed";
  json statuses = json::array();
  for (const json& c : containers(pod, "containers"))
    statuses.push_back(terminated(c, pod, "containerStatuses", exit_code, now));
  status["containerStatuses"] = std::move(statuses);
  const json& inits = containers(pod, "initContainers");
  if (!inits.empty()) {
    json init_statuses = json::array();
    for (const json& c : inits)
      init_statuses.push_back(sidecar(c)
                                  ? terminated(c, pod, "initContainerStatuses", exit_code, now)
                                  : completed_init(c, pod, now));
    status["initContainerStatuses"] = std::move(init_statuses);
  }
  const std::string reason = ok ? "PodCompleted" : "PodFailed";
  status["conditions"] = conditions(pod,
                                    {{kReadyToStart, false, "", ""},
                                     {kInitialized, true, reason, ""},
                                     {kReady, false, reason, ""},
                                     {kContainersReady, false, reason, ""}},
                                    now);
  return status;
}

}  // namespace vkube::nodesim
