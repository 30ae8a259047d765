#include "agent.h"

#include <algorithm>
#include <charconv>

#include "mounts.h"
#include "pod_status.h"
#include "vkube/common/log.h"
#include "vkube/nodesim/simulator.h"

namespace vkube::nodesim {

namespace {

using std::chrono::milliseconds;

// Retries of a write that lost a race before the key goes back to the queue.
constexpr int kConflictRetries = 4;
// How soon a pod that found no free address tries again.
constexpr milliseconds kNoAddressRetry = std::chrono::seconds(5);
// How soon a local process that could not start is tried again: soon, and
// less soon each time up to kLocalStartSoon, when what it waits for is on its
// way (its claims are bound within milliseconds of their creation, often
// just after the pod is bound), else as a kubelet retries a container it
// cannot create.
constexpr milliseconds kLocalStartFirstRetry(5);
constexpr milliseconds kLocalStartSoon(200);
constexpr milliseconds kLocalStartRetry = std::chrono::seconds(2);
// How soon a pod waiting for a missing Secret or ConfigMap looks again (the
// kubelet's volume manager retries within seconds too).
constexpr milliseconds kMountRetry(500);
// The exit code a container runtime reports for a container a reboot ended.
constexpr int kUnknownExit = 255;

// A restart back-off as the kubelet's: 1 s, doubling, at most 30 s (not
// reset by a short run here; a ready start resets it).
milliseconds next_backoff(milliseconds previous) {
  return std::min<milliseconds>(std::max<milliseconds>(previous * 2, std::chrono::seconds(1)),
                                std::chrono::seconds(30));
}

milliseconds local_start_retry(const Status& s, int failed_before) {
  if (s.code() != Code::kUnavailable) return kLocalStartRetry;
  return std::min(kLocalStartFirstRetry * (1 << std::min(failed_before, 6)), kLocalStartSoon);
}

const json& at(const json& obj, const char* a, const char* b = nullptr) {
  static const json kNull;
  if (!obj.is_object()) return kNull;
  auto it = obj.find(a);
  if (it == obj.end()) return kNull;
  if (b == nullptr) return *it;
  if (!it->is_object()) return kNull;
  auto jt = it->find(b);
  return jt == it->end() ? kNull : *jt;
}

std::string str(const json& v) {
  return v.is_string() ? v.get<std::string>() : std::string();
}

std::string annotation(const json& pod, std::string_view name) {
  const json& a = at(pod, "metadata", "annotations");
  if (!a.is_object()) return {};
  auto it = a.find(std::string(name));
  return it == a.end() ? std::string() : str(*it);
}

// An annotation holding a duration; nullopt when absent or malformed (a
// malformed one is logged and ignored, as the kubelet ignores annotations).
std::optional<milliseconds> duration_annotation(const json& pod, std::string_view name) {
  std::string text = annotation(pod, name);
  if (text.empty()) return std::nullopt;
  auto d = parse_duration(text);
  if (!d)
    VKUBE_LOG(warn, "ignoring a malformed pod annotation",
              {"pod", str(at(pod, "metadata", "name"))}, {"annotation", name}, {"value", text});
  return d;
}

// A pod of a Job: a controller reference to a batch Job (the host's own
// Jobs), or the labels the Job registry puts on its pods (a tenant's Job,
// whose host pod the syncer owns), and a restart policy a Job allows, so a
// Deployment's pod that merely carries the label is never taken for one.
bool job_pod(const json& pod) {
  const std::string policy = str(at(pod, "spec", "restartPolicy"));
  if (policy != "Never" && policy != "OnFailure") return false;
  const json& refs = at(pod, "metadata", "ownerReferences");
  if (refs.is_array())
    for (const json& r : refs)
      if (r.is_object() && r.value("controller", false) == true && str(at(r, "kind")) == "Job" &&
          str(at(r, "apiVersion")).starts_with("batch/"))
        return true;
  const json& labels = at(pod, "metadata", "labels");
  return labels.is_object() &&
         (labels.contains("batch.kubernetes.io/job-name") || labels.contains("job-name"));
}

int exit_code_of(const json& pod) {
  std::string text = annotation(pod, kExitCodeAnnotation);
  int v = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || p != text.data() + text.size() || v < 0 || v > 255)
    return 0;
  return v;
}

milliseconds ceil_ms(std::chrono::steady_clock::duration d) {
  return std::chrono::ceil<milliseconds>(d);
}

std::string key_of(const json& obj) {
  return str(at(obj, "metadata", "namespace")) + "/" + str(at(obj, "metadata", "name"));
}

}  // namespace

Agent::Agent(Client& client, const controllers::Lister& pods,
             const std::vector<gpu::NodeSpec>& nodes, std::function<TimePoint()> now,
             LocalOptions local, milliseconds job_duration)
    : client_(client),
      pods_(pods),
      nodes_(nodes),
      now_(std::move(now)),
      job_duration_(job_duration),
      loopback_slot_(local.loopback_slot) {
  if (!local.images.empty())
    local_ = std::make_unique<LocalPods>(client, std::move(local),
                                         [this](const std::string& key) { queue_.add(key); });
  index_.reserve(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) index_.emplace(nodes[i].name, static_cast<int>(i));
}

Agent::~Agent() {
  stop();
}

int Agent::node_index(std::string_view name) const {
  if (name.empty()) return -1;
  auto it = index_.find(std::string(name));
  return it == index_.end() ? -1 : it->second;
}

void Agent::on_pod(const controllers::ObjectEvent& e) {
  auto bound_here = [&](const controllers::ObjectPtr& p) {
    if (!p) return false;
    const json& n = at(*p, "spec", "nodeName");
    return n.is_string() && owns(n.get_ref<const std::string&>());
  };
  if (bound_here(e.object) || bound_here(e.old)) queue_.add(e.key);
}

void Agent::start(int workers) {
  std::vector<std::string> cidrs;
  cidrs.reserve(nodes_.size());
  for (const gpu::NodeSpec& n : nodes_) cidrs.push_back(n.pod_cidr);
  ips_ = std::make_unique<PodIps>(cidrs);
  // The addresses of running pods stay theirs across a restart.
  for (const controllers::ObjectPtr& p : pods_.list()) {
    int node = node_index(str(at(*p, "spec", "nodeName")));
    if (node < 0 || str(at(*p, "status", "phase")) != "Running") continue;
    auto ip = range_ip(node, str(at(*p, "status", "podIP")));
    if (!ip || !ips_->mark(node, *ip)) continue;
    Tracked t;
    t.uid = str(at(*p, "metadata", "uid"));
    t.node = node;
    t.ip = *ip;
    t.local = local_ && local_->runs(*p);
    t.from_last_run = t.local;
    save(key_of(*p), t);
  }
  for (int i = 0; i < std::max(workers, 1); ++i) workers_.emplace_back([this] { work(); });
}

void Agent::stop() {
  queue_.shutdown();
  for (auto& w : workers_) w.join();
  workers_.clear();
  // Local processes end with the node (the workers are gone, so their exits
  // are not taken for crashes).
  if (local_) local_->stop_all(std::chrono::seconds(5));
}

std::optional<uint32_t> Agent::range_ip(int node, const std::string& pod_ip) const {
  auto ip = PodIps::parse(pod_ip);
  if (!ip || (*ip >> 24) != 127) return ip;
  const std::string& cidr = nodes_[node].pod_cidr;
  auto base = PodIps::parse(cidr.substr(0, cidr.find('/')));
  if (!base) return std::nullopt;
  return range_address_of(*ip, *base);
}

void Agent::work() {
  queue_.run([this](const std::string& key) { return reconcile(key); },
             [](const std::string& key, const Status& s) {
               VKUBE_LOG(warn, "simulated kubelet: pod sync failed", {"pod", key},
                         {"error", s.to_string()});
             });
}

Status Agent::reconcile(const std::string& key) {
  controllers::ObjectPtr cached = pods_.get(key);
  if (!cached) {
    if (local_) local_->terminate(key);  // removed without waiting for us (force deletion)
    forget(key);
    return Status::ok();
  }
  json pod = *cached;
  for (int attempt = 0;; ++attempt) {
    Status s = handle(key, pod);
    if (s.code() != Code::kConflict || attempt + 1 >= kConflictRetries) return s;
    // The cache trails our own writes: read the pod as it is now.
    auto slash = key.find('/');
    ApiResult r = client_.call("GET", pod_path(key.substr(0, slash), key.substr(slash + 1)));
    if (r.code == 404) {
      forget(key);
      return Status::ok();
    }
    if (!r.ok()) return Status::internal("reading pod " + key + ": " + r.body.dump());
    pod = std::move(r.body);
  }
}

Status Agent::handle(const std::string& key, const json& pod) {
  const int node = node_index(str(at(pod, "spec", "nodeName")));
  if (node < 0) {
    forget(key);
    return Status::ok();
  }
  Tracked t = load(key);
  const std::string uid = str(at(pod, "metadata", "uid"));
  if (t.uid != uid) {  // first sight, or a new pod of the same name
    forget(key);
    t = Tracked{};
    t.uid = uid;
    t.node = node;
  }
  const std::string phase = str(at(pod, "status", "phase"));
  Status s;
  if (at(pod, "metadata", "deletionTimestamp").is_string()) {
    s = stop_pod(key, pod, t);
  } else if (phase == "Succeeded" || phase == "Failed") {
    forget(key);  // the sandbox is gone; the address is free again
    return Status::ok();
  } else if (phase == "Running") {
    s = run_pod(key, pod, t);
  } else {
    s = start_pod(key, pod, t);
  }
  return s;
}

Status Agent::start_pod(const std::string& key, const json& pod, Tracked& t) {
  const auto now = Steady::now();
  if (!t.seen) {
    auto started = parse_rfc3339(str(at(pod, "status", "startTime")));
    t.seen = started ? steady_of(*started) : now;
  }
  const gpu::NodeSpec& node = nodes_[t.node];
  Addresses a{node.internal_ip, {}};
  const std::string stamp = rfc3339(wall());
  if (auto delay = duration_annotation(pod, kStartDelayAnnotation);
      delay && now < *t.seen + *delay) {
    save(key, t);
    later(key, ceil_ms(*t.seen + *delay - now));
    return write_status(pod, creating_status(pod, a, stamp));
  }
  if (Status s; waits_for_volume(key, pod, t, a, stamp, &s)) return s;
  if (at(pod, "spec", "hostNetwork") == true) {
    a.pod_ip = node.internal_ip;
  } else {
    if (t.ip == 0) {
      auto ip = ips_->allocate(t.node);
      if (!ip) {
        save(key, t);
        later(key, kNoAddressRetry);
        // As a CNI out of addresses: the sandbox waits (no write when it already says so).
        return write_status(pod, creating_status(pod, a, stamp,
                                                 "no free pod IP in the node's range \"" +
                                                     ips_->cidr(t.node) + "\""));
      }
      t.ip = *ip;
    }
    a.pod_ip = PodIps::format(t.ip);
    if (local_ && local_->runs(pod)) {
      t.local = true;
      // Nodes 256 ranges apart share the low two bytes their local pods'
      // loopback addresses come from: one another local pod holds is skipped.
      std::vector<uint32_t> skipped;
      while (loopback_taken(key, loopback_of(t.ip, loopback_slot_)) && skipped.size() < 64) {
        auto other = ips_->allocate(t.node);
        if (!other) break;
        skipped.push_back(t.ip);
        t.ip = *other;
      }
      for (uint32_t ip : skipped) ips_->release(t.node, ip);
      a.pod_ip = PodIps::format(loopback_of(t.ip, loopback_slot_));
      return start_local(key, pod, t, a);
    }
  }
  save(key, t);  // the address stays the pod's even when the write below loses a race
  VKUBE_RETURN_IF_ERROR(write_status(pod, running_status(pod, a, stamp)));
  t.running_since = now;
  save(key, t);
  if (auto d = run_duration(pod)) later(key, *d);
  return Status::ok();
}

std::optional<milliseconds> Agent::run_duration(const json& pod) const {
  if (auto d = duration_annotation(pod, kDurationAnnotation)) return d;
  if (job_duration_ > milliseconds(0) && job_pod(pod)) return job_duration_;
  return std::nullopt;
}

bool Agent::waits_for_volume(const std::string& key, const json& pod, Tracked& t,
                             const Addresses& a, const std::string& stamp, Status* s) {
  auto missing = missing_volume(client_, pod);
  if (!missing) return false;
  if (t.mount_warned != missing->volume) {
    Status recorded = record_failed_mount(client_, pod, *missing, nodes_[t.node].name, stamp);
    if (recorded.is_ok()) t.mount_warned = missing->volume;
  }
  save(key, t);
  later(key, kMountRetry);
  // The sandbox is not made yet: no pod IP, containers ContainerCreating.
  *s = write_status(pod, creating_status(pod, Addresses{a.host_ip, {}}, stamp));
  return true;
}

Status Agent::run_pod(const std::string& key, const json& pod, Tracked& t) {
  if (t.ip == 0) {  // running before this process started: its address is taken
    if (auto ip = range_ip(t.node, str(at(pod, "status", "podIP"))); ip && ips_->mark(t.node, *ip))
      t.ip = *ip;
  }
  if (local_ && local_->runs(pod)) {
    t.local = true;
    return run_local(key, pod, t);
  }
  auto duration = run_duration(pod);
  if (!duration) {
    save(key, t);
    return Status::ok();
  }
  const auto now = Steady::now();
  if (!t.running_since) {
    const json& statuses = at(pod, "status", "containerStatuses");
    std::optional<TimePoint> since;
    if (statuses.is_array() && !statuses.empty())
      since = parse_rfc3339(str(at(at(statuses[0], "state"), "running", "startedAt")));
    t.running_since = since ? steady_of(*since) : now;
  }
  if (now < *t.running_since + *duration) {
    save(key, t);
    later(key, ceil_ms(*t.running_since + *duration - now));
    return Status::ok();
  }
  const int code = exit_code_of(pod);
  const std::string policy = str(at(pod, "spec", "restartPolicy"));
  const bool restart = policy.empty() || policy == "Always" || (policy == "OnFailure" && code != 0);
  const std::string stamp = rfc3339(wall());
  if (restart) {
    VKUBE_RETURN_IF_ERROR(write_status(pod, restarted_status(pod, code, stamp)));
    t.running_since = now;
    save(key, t);
    later(key, *duration);
    return Status::ok();
  }
  VKUBE_RETURN_IF_ERROR(write_status(pod, finished_status(pod, code, stamp)));
  forget(key);
  return Status::ok();
}

Status Agent::stop_pod(const std::string& key, const json& pod, Tracked& t) {
  if (local_ && (t.local || local_->runs(pod))) return stop_local(key, pod, t);
  const std::string phase = str(at(pod, "status", "phase"));
  if (phase != "Running") {  // nothing runs: gone at once
    VKUBE_RETURN_IF_ERROR(remove(pod));
    forget(key);
    return Status::ok();
  }
  const auto now = Steady::now();
  const json& g = at(pod, "metadata", "deletionGracePeriodSeconds");
  const milliseconds grace = std::chrono::seconds(g.is_number_integer() ? g.get<int64_t>() : 0);
  const milliseconds wanted =
      duration_annotation(pod, kTerminationAnnotation).value_or(milliseconds(0));
  if (!t.deleting_since) {
    t.deleting_since = now;
    // Asked before this process saw it (a restart): count from the request.
    if (auto deadline = parse_rfc3339(str(at(pod, "metadata", "deletionTimestamp")))) {
      TimePoint asked = *deadline - grace;
      if (wall() - asked > std::chrono::seconds(2)) t.deleting_since = steady_of(asked);
    }
  }
  const milliseconds wait = std::min(wanted, grace);
  if (now < *t.deleting_since + wait) {
    save(key, t);
    later(key, ceil_ms(*t.deleting_since + wait - now));
    return Status::ok();
  }
  // Containers still running at the end of the grace period are killed.
  const int code = wanted > grace ? 137 : 0;
  VKUBE_RETURN_IF_ERROR(write_status(pod, finished_status(pod, code, rfc3339(wall()))));
  VKUBE_RETURN_IF_ERROR(remove(pod));
  forget(key);
  return Status::ok();
}

Status Agent::start_local(const std::string& key, const json& pod, Tracked& t, const Addresses& a) {
  const auto now = Steady::now();
  const std::string stamp = rfc3339(wall());
  int code = 0;
  LocalPods::State st = local_->state(key, &code);
  // Ended already. Without a readiness port it was running from its start
  // (a short job may end before the first poll): it ends as a container
  // that ran does, by the restart policy. With one, it ended before it was
  // ready and is started again.
  if (st == LocalPods::State::kExited && !local_->has_probe(key))
    return local_exited(key, pod, t, code);
  if (st == LocalPods::State::kExited) {  // ended before it was ready
    local_->forget(key);
    t.backoff = next_backoff(t.backoff);
    t.restart_at = now + t.backoff;
    t.polls = 0;
    save(key, t);
    later(key, t.backoff);
    return write_status(pod, creating_status(pod, a, stamp,
                                             "the container exited with code " +
                                                 std::to_string(code) + " before it was ready"));
  }
  if (st == LocalPods::State::kNone) {
    if (t.restart_at && now < *t.restart_at) {
      save(key, t);
      later(key, ceil_ms(*t.restart_at - now));
      return Status::ok();
    }
    Status s = local_->start(key, pod, a.pod_ip);
    if (!s.is_ok()) {  // as a kubelet whose container cannot be created: wait and retry
      const milliseconds retry = local_start_retry(s, t.failed_starts++);
      t.restart_at = now + retry;
      save(key, t);
      later(key, retry);
      return write_status(pod, creating_status(pod, a, stamp, s.message()));
    }
    t.failed_starts = 0;
    st = LocalPods::State::kStarting;
  }
  if (st == LocalPods::State::kStarting) {
    // Poll the readiness port: quickly at first, then once a second.
    const bool first = t.polls++ == 0;
    save(key, t);
    later(key, t.polls < 250 ? milliseconds(10) : milliseconds(1000));
    return first ? write_status(pod, creating_status(pod, a, stamp)) : Status::ok();
  }
  t.polls = 0;
  t.backoff = milliseconds(0);
  save(key, t);
  VKUBE_RETURN_IF_ERROR(write_status(pod, running_status(pod, a, stamp)));
  t.running_since = now;
  save(key, t);
  return Status::ok();
}

Status Agent::run_local(const std::string& key, const json& pod, Tracked& t) {
  const auto now = Steady::now();
  int code = 0;
  LocalPods::State st = local_->state(key, &code);
  if (st == LocalPods::State::kNone) {
    // Running before this node agent started (the host restarted): the
    // process is started again, as after a node reboot.
    if (t.restart_at && now < *t.restart_at) {
      save(key, t);
      later(key, ceil_ms(*t.restart_at - now));
      return Status::ok();
    }
    // Its address under this run's loopback slot (another host may hold
    // the one of the last run's).
    std::string ip = str(at(pod, "status", "podIP"));
    if (t.ip != 0 && PodIps::format(loopback_of(t.ip, loopback_slot_)) != ip) {
      ip = PodIps::format(loopback_of(t.ip, loopback_slot_));
      json status = at(pod, "status");
      status["podIP"] = ip;
      status["podIPs"] = json::array({{{"ip", ip}}});
      save(key, t);
      return write_status(pod, std::move(status));  // the write queues it again
    }
    if (t.from_last_run) {
      // As a kubelet after a reboot: the container that ran is gone (its log is the
      // previous one now), and the one started counts as a restart.
      t.from_last_run = false;
      save(key, t);
      json status = restarted_status(pod, kUnknownExit, rfc3339(wall()));
      for (json& c : status["containerStatuses"])
        c["lastState"]["terminated"]["reason"] = "Unknown";
      return write_status(pod, std::move(status));  // the write queues it again
    }
    Status s = local_->start(key, pod, ip);
    if (!s.is_ok()) {
      VKUBE_LOG(warn, "simulated kubelet: cannot start a local process", {"pod", key},
                {"error", s.message()});
      t.restart_at = now + kLocalStartRetry;
      later(key, kLocalStartRetry);
    }
    save(key, t);
    return Status::ok();
  }
  if (st != LocalPods::State::kExited) {
    save(key, t);
    return Status::ok();
  }
  return local_exited(key, pod, t, code);
}

Status Agent::local_exited(const std::string& key, const json& pod, Tracked& t, int code) {
  const auto now = Steady::now();
  local_->forget(key);
  const std::string policy = str(at(pod, "spec", "restartPolicy"));
  const bool restart = policy.empty() || policy == "Always" || (policy == "OnFailure" && code != 0);
  const std::string stamp = rfc3339(wall());
  if (!restart) {
    VKUBE_RETURN_IF_ERROR(write_status(pod, finished_status(pod, code, stamp)));
    forget(key);
    return Status::ok();
  }
  t.backoff = next_backoff(t.backoff);
  t.restart_at = now + t.backoff;
  save(key, t);
  later(key, t.backoff);
  return write_status(pod, restarted_status(pod, code, stamp));
}

Status Agent::stop_local(const std::string& key, const json& pod, Tracked& t) {
  const auto now = Steady::now();
  int code = 0;
  LocalPods::State st = local_->state(key, &code);
  if (st == LocalPods::State::kNone || st == LocalPods::State::kExited) {
    local_->forget(key);
    if (str(at(pod, "status", "phase")) == "Running")
      VKUBE_RETURN_IF_ERROR(write_status(pod, finished_status(pod, code, rfc3339(wall()))));
    VKUBE_RETURN_IF_ERROR(remove(pod));
    forget(key);
    return Status::ok();
  }
  const json& g = at(pod, "metadata", "deletionGracePeriodSeconds");
  const milliseconds grace = std::chrono::seconds(g.is_number_integer() ? g.get<int64_t>() : 0);
  if (!t.deleting_since) {
    t.deleting_since = now;
    local_->terminate(key);  // the process's exit queues the pod again
  }
  if (now >= *t.deleting_since + grace) {
    local_->kill(key);
  }
  save(key, t);
  later(key, std::max(milliseconds(100), ceil_ms(*t.deleting_since + grace - now)));
  return Status::ok();
}

Status Agent::write_status(const json& pod, json status) {
  if (at(pod, "status") == status) return Status::ok();
  json body = pod;
  body["status"] = std::move(status);
  ApiResult r = client_.call(
      "PUT",
      pod_path(str(at(pod, "metadata", "namespace")), str(at(pod, "metadata", "name")), "status"),
      body);
  if (r.ok() || r.code == 404) return Status::ok();
  if (r.code == 409) return Status::conflict("pod changed");
  return Status::internal("updating pod status: " + r.body.dump());
}

// As the kubelet does once the containers are gone: delete for good, but
// only the pod it stopped (a new pod of the same name is left alone).
Status Agent::remove(const json& pod) {
  json options = {{"apiVersion", "v1"},
                  {"kind", "DeleteOptions"},
                  {"gracePeriodSeconds", 0},
                  {"preconditions", {{"uid", str(at(pod, "metadata", "uid"))}}}};
  ApiResult r = client_.call(
      "DELETE", pod_path(str(at(pod, "metadata", "namespace")), str(at(pod, "metadata", "name"))),
      options);
  if (r.ok() || r.code == 404 || r.code == 409) return Status::ok();
  return Status::internal("deleting pod: " + r.body.dump());
}

bool Agent::loopback_taken(const std::string& key, uint32_t loopback) {
  std::lock_guard lock(mu_);
  for (const auto& [k, t] : tracked_)
    if (k != key && t.local && t.ip != 0 && loopback_of(t.ip, loopback_slot_) == loopback)
      return true;
  return false;
}

Agent::Tracked Agent::load(const std::string& key) {
  std::lock_guard lock(mu_);
  auto it = tracked_.find(key);
  return it == tracked_.end() ? Tracked{} : it->second;
}

void Agent::save(const std::string& key, const Tracked& t) {
  std::lock_guard lock(mu_);
  tracked_[key] = t;
}

void Agent::forget(const std::string& key) {
  std::lock_guard lock(mu_);
  auto it = tracked_.find(key);
  if (it == tracked_.end()) return;
  if (it->second.ip != 0 && ips_) ips_->release(it->second.node, it->second.ip);
  tracked_.erase(it);
}

void Agent::later(const std::string& key, milliseconds delay) {
  queue_.add_after(key, std::max(delay, milliseconds(1)));
}

Agent::Steady::time_point Agent::steady_of(TimePoint then) const {
  auto ago = wall() - then;
  if (ago < TimePoint::duration::zero()) ago = TimePoint::duration::zero();
  return Steady::now() - std::chrono::duration_cast<Steady::duration>(ago);
}

}  // namespace vkube::nodesim
