#include "aggregator.h"

#include <set>

#include "object.h"
#include "server_impl.h"
#include "tables_util.h"
#include "vkube/common/log.h"

namespace vkube::apiserver {

namespace {

using json = nlohmann::json;

constexpr const char* kAutomanaged = "kube-aggregator.kubernetes.io/automanaged";
// How long a fetched resource list is served before the aggregated server is asked again.
constexpr auto kDiscoveryFresh = std::chrono::seconds(10);
// kube's availability check gives the discovery GET five seconds.
constexpr int kCheckTimeoutSeconds = 5;
// How often an unavailable aggregated server is checked again.
constexpr auto kRecheckEvery = std::chrono::seconds(10);

// Tolerant readers (tables_util.h): answers and stored objects may have any shape.
// Tolerant readers (tables_util.h): stored objects and answers may have any shape.
std::string text(const json& obj, std::string_view key) {
  return builtin::tables::str(obj, {key});
}

int number(const json& obj, std::string_view key) {
  return static_cast<int>(builtin::tables::integer(obj, {key}));
}

// kube's priorities for its own group versions (controlplane apiVersionPriorities); other
// built-in ones and CRD groups get kube's defaults for what it does not list.
std::pair<int, int> local_priority(const api::GroupVersion& gv, bool custom) {
  static const std::map<std::string, std::pair<int, int>> kKnown = {
      {"v1", {18000, 1}},
      {"apiregistration.k8s.io/v1", {18000, 21}},
      {"apps/v1", {17800, 15}},
      {"events.k8s.io/v1", {17750, 15}},
      {"authentication.k8s.io/v1", {17700, 15}},
      {"authorization.k8s.io/v1", {17600, 15}},
      {"autoscaling/v2", {17500, 30}},
      {"autoscaling/v1", {17500, 15}},
      {"batch/v1", {17400, 15}},
      {"certificates.k8s.io/v1", {17300, 15}},
      {"networking.k8s.io/v1", {17200, 15}},
      {"policy/v1", {17100, 15}},
      {"rbac.authorization.k8s.io/v1", {17000, 15}},
      {"storage.k8s.io/v1", {16800, 15}},
      {"apiextensions.k8s.io/v1", {16700, 15}},
      {"admissionregistration.k8s.io/v1", {16700, 15}},
      {"scheduling.k8s.io/v1", {16600, 15}},
      {"coordination.k8s.io/v1", {16500, 15}},
      {"node.k8s.io/v1", {16300, 15}},
      {"discovery.k8s.io/v1", {16200, 15}},
      {"metrics.k8s.io/v1beta1", {100, 100}},
  };
  auto it = kKnown.find(gv.api_version());
  if (it != kKnown.end()) return it->second;
  return custom ? std::pair{1000, 100} : std::pair{15000, 15};
}

json local_api_service(const api::GroupVersion& gv, bool custom) {
  auto [group_min, version_priority] = local_priority(gv, custom);
  const std::string now = now_rfc3339();
  return {
      {"apiVersion", "apiregistration.k8s.io/v1"},
      {"kind", "APIService"},
      {"metadata",
       {{"name", gv.version + "." + gv.group},
        {"uid", new_uid()},
        {"creationTimestamp", now},
        {"labels", {{kAutomanaged, custom ? "true" : "onstart"}}}}},
      {"spec",
       {{"group", gv.group},
        {"version", gv.version},
        {"groupPriorityMinimum", group_min},
        {"versionPriority", version_priority}}},
      {"status",
       {{"conditions", json::array({{{"type", "Available"},
                                     {"status", "True"},
                                     {"lastTransitionTime", now},
                                     {"reason", "Local"},
                                     {"message", "Local APIServices are always available"}}})}}}};
}

RemoteApi remote_of(const json& obj) {
  RemoteApi r;
  const json& spec = builtin::tables::object(obj, {"spec"});
  r.name = name_of(obj);
  r.group = text(spec, "group");
  r.version = text(spec, "version");
  r.group_priority = number(spec, "groupPriorityMinimum");
  r.version_priority = number(spec, "versionPriority");
  json cc = {{"service", builtin::tables::object(spec, {"service"})},
             {"caBundle", text(spec, "caBundle")}};
  r.service = parse_client_config(cc);
  r.service.service_path.clear();
  r.service.insecure_skip_verify =
      builtin::tables::opt_bool(spec, {"insecureSkipTLSVerify"}).value_or(false);
  return r;
}

bool same(const RemoteApi& a, const RemoteApi& b) {
  const ClientConfig &x = a.service, &y = b.service;
  return a.group == b.group && a.version == b.version &&
         x.service_namespace == y.service_namespace && x.service_name == y.service_name &&
         x.service_port == y.service_port && x.ca_pem == y.ca_pem &&
         x.insecure_skip_verify == y.insecure_skip_verify;
}

}  // namespace

Aggregator::~Aggregator() {
  stop();
}

void Aggregator::start(Server& s) {
  std::lock_guard lock(wake_mu_);
  if (worker_.joinable() || stopping_) return;
  worker_ = std::thread([this, &s] { run(s); });
}

void Aggregator::stop() {
  {
    std::lock_guard lock(wake_mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (worker_.joinable()) worker_.join();
}

void Aggregator::changed() {
  {
    std::lock_guard lock(wake_mu_);
    dirty_ = true;
  }
  wake_.notify_all();
}

// A watch of every APIService write (creates may be committed after their request returns),
// each waking the worker; null when the store refuses one.
std::unique_ptr<storage::Watch> Aggregator::watch_api_services(Server& s) {
  const Kind* kind = s.registry().builtin("apiregistration.k8s.io", "v1", "apiservices");
  if (kind == nullptr) return nullptr;
  auto w = s.backend().watch(Registry::storage_prefix(*kind), s.backend().current_revision());
  if (!w.is_ok()) return nullptr;
  std::unique_ptr<storage::Watch> watch = std::move(w).value();
  watch->set_notifier([this] { changed(); });
  return watch;
}

void Aggregator::run(Server& s) {
  std::unique_ptr<storage::Watch> watch = watch_api_services(s);
  std::unique_lock lock(wake_mu_);
  while (!stopping_) {
    wake_.wait_for(lock, kRecheckEvery, [&] { return stopping_ || dirty_; });
    if (stopping_) break;
    const bool full = dirty_;
    dirty_ = false;
    lock.unlock();
    if (watch) {
      std::vector<storage::EventPtr> events;
      Status live = Status::ok();
      do {
        events.clear();
        live = watch->poll(&events, std::chrono::milliseconds(0));
      } while (live.is_ok() && !events.empty());
      if (!live.is_ok()) watch = watch_api_services(s);  // fell behind: sync() re-lists anyway
    } else {
      watch = watch_api_services(s);
    }
    if (full) {
      sync(s);
    } else {
      for (const RemoteApi& r : remotes())
        if (!available(r)) check_remote(s, r);
    }
    lock.lock();
  }
}

void Aggregator::sync(Server& s, bool create_local) {
  std::lock_guard serial(sync_mu_);
  const Kind* kind = s.registry().builtin("apiregistration.k8s.io", "v1", "apiservices");
  if (kind == nullptr) return;
  storage::ListOptions opts;
  opts.prefix = Registry::storage_prefix(*kind);
  auto listed = s.backend().list(opts);
  if (!listed.is_ok()) return;
  std::map<std::string, std::pair<json, storage::Revision>> stored;
  for (const auto& kv : listed->items)
    if (auto obj = decode_stored(kv); obj.is_ok()) {
      const std::string name = name_of(*obj);  // before the object is moved away
      stored[name] = {std::move(obj).value(), kv.mod_revision};
    }

  std::set<std::string> served;
  std::shared_ptr<const KindSet> kinds = s.registry().snapshot();
  for (const api::GroupVersion& gv : kinds->group_versions()) {
    const std::string name = gv.version + "." + gv.group;
    served.insert(name);
    if (stored.contains(name) || !create_local) continue;
    bool custom = false;
    for (const Kind* k : kinds->kinds_in(gv)) custom = custom || k->custom != nullptr;
    json obj = local_api_service(gv, custom);
    auto created = s.backend().create(Registry::key(*kind, "", name), encode_for_storage(obj));
    if (created.is_ok()) stored[name] = {std::move(obj), created->mod_revision};
  }
  std::map<std::string, RemoteApi> remotes;
  for (const auto& [name, entry] : stored) {
    const json& obj = entry.first;
    const json* service = builtin::tables::find(obj, {"spec", "service"});
    if (service != nullptr && service->is_object()) {
      remotes[name] = remote_of(obj);
      continue;
    }
    // A CRD group version that is gone takes its automanaged APIService with it.
    if (builtin::tables::str(obj, {"metadata", "labels", kAutomanaged}) == "true" &&
        !served.contains(name))
      (void)s.backend().remove(Registry::key(*kind, "", name), entry.second);
  }
  std::vector<RemoteApi> changed;
  {
    std::lock_guard lock(mu_);
    for (const auto& [name, r] : remotes) {
      auto old = remotes_.find(name);
      if (old == remotes_.end() || !same(old->second, r)) {
        changed.push_back(r);
        state_.erase(name);
        discovery_.erase(name);
      }
    }
    for (auto it = state_.begin(); it != state_.end();)
      it = remotes.contains(it->first) ? std::next(it) : state_.erase(it);
    for (auto it = discovery_.begin(); it != discovery_.end();)
      it = remotes.contains(it->first) ? std::next(it) : discovery_.erase(it);
    remotes_ = std::move(remotes);
  }
  // A newly registered server is checked at once, so its condition says how it is.
  for (const RemoteApi& r : changed) resources(s, r);
}

std::optional<RemoteApi> Aggregator::remote(const std::string& group,
                                            const std::string& version) const {
  std::lock_guard lock(mu_);
  auto it = remotes_.find(version + "." + group);
  if (it == remotes_.end()) return std::nullopt;
  return it->second;
}

std::vector<RemoteApi> Aggregator::remotes() const {
  std::lock_guard lock(mu_);
  std::vector<RemoteApi> out;
  for (const auto& [name, r] : remotes_) out.push_back(r);
  return out;
}

bool Aggregator::available(const RemoteApi& r) const {
  std::lock_guard lock(mu_);
  auto it = state_.find(r.name);
  return it == state_.end() || it->second == "True";
}

void Aggregator::report(Server& s, const RemoteApi& r, bool available, const std::string& reason,
                        const std::string& message) {
  const std::string state = available ? "True" : "False:" + reason + ":" + message;
  {
    std::lock_guard lock(mu_);
    if (!remotes_.contains(r.name)) return;
    auto& last = state_[r.name];
    if (last == state) return;
    last = state;
    if (!available) discovery_.erase(r.name);
  }
  const Kind* kind = s.registry().builtin("apiregistration.k8s.io", "v1", "apiservices");
  if (kind == nullptr) return;
  const std::string key = Registry::key(*kind, "", r.name);
  for (int attempt = 0; attempt < 4; ++attempt) {
    auto kv = s.backend().get(key);
    if (!kv.is_ok()) return;
    auto obj = decode_stored(*kv);
    if (!obj.is_ok()) return;
    json condition = {{"type", "Available"},
                      {"status", available ? "True" : "False"},
                      {"lastTransitionTime", now_rfc3339()},
                      {"reason", reason},
                      {"message", message}};
    (*obj)["status"] = {{"conditions", json::array({std::move(condition)})}};
    auto written = s.backend().update(key, encode_for_storage(*obj), kv->mod_revision);
    if (written.is_ok() || written.status().code() != Code::kConflict) break;
  }
  VKUBE_LOG(info, "aggregated API availability", {"apiservice", r.name}, {"available", available},
            {"reason", reason}, {"message", message});
}

json Aggregator::resources(Server& s, const RemoteApi& r) {
  {
    std::lock_guard lock(mu_);
    auto it = discovery_.find(r.name);
    if (it != discovery_.end() &&
        std::chrono::steady_clock::now() - it->second.at < kDiscoveryFresh)
      return it->second.list;
  }
  json list = check_remote(s, r);
  if (list.is_object()) {
    std::lock_guard lock(mu_);
    if (remotes_.contains(r.name)) discovery_[r.name] = {list, std::chrono::steady_clock::now()};
  }
  return list;
}

json check_remote(Server& s, const RemoteApi& r) {
  const ClientConfig& svc = r.service;
  const std::string path = "/apis/" + r.group + "/" + r.version;
  auto dest = resolve_destination(s, svc, path, "");
  Aggregator& agg = s.aggregator();
  if (!dest.is_ok()) {
    if (dest.status().code() == Code::kNotFound &&
        dest.status().message().find("not found") != std::string::npos)
      agg.report(
          s, r, false, "ServiceNotFound",
          "service/" + svc.service_name + " in \"" + svc.service_namespace + "\" is not present");
    else
      agg.report(s, r, false, "MissingEndpoints",
                 "endpoints for service/" + svc.service_name + " in \"" + svc.service_namespace +
                     "\" have no addresses with port name \"\"");
    return nullptr;
  }
  const std::string url = dest->server + path;
  auto client = dial_client(*dest, svc, kCheckTimeoutSeconds, "kube-aggregator");
  if (!client.is_ok()) {
    agg.report(s, r, false, "FailedDiscoveryCheck",
               "failing or missing response from " + url + ": " + client.status().message());
    return nullptr;
  }
  hostclient::Response resp = (*client)->call("GET", dest->target);
  if (resp.code == 0) {
    agg.report(s, r, false, "FailedDiscoveryCheck",
               "failing or missing response from " + url + ": Get \"" + url +
                   "\": " + transport_error(resp));
    return nullptr;
  }
  if (resp.code < 200 || resp.code >= 300) {
    agg.report(s, r, false, "FailedDiscoveryCheck",
               "failing or missing response from " + url + ": bad status from " + url + ": " +
                   std::to_string(resp.code));
    return nullptr;
  }
  agg.report(s, r, true, "Passed", "all checks passed");
  return resp.body.is_object() ? resp.body : json::object();
}

}  // namespace vkube::apiserver
