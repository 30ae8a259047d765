// The generic part of the syncer: informers on both sides, queues and
// workers, host writes with their bookkeeping, start-up (host namespace,
// anchor, quota) and metrics.
#include <charconv>
#include <random>
#include <sstream>

#include "syncer_impl.h"
#include "vkube/apiserver/apiserver.h"
#include "vkube/common/log.h"
#include "vkube/syncer/pod_proxy.h"

namespace vkube::syncer {

std::string str_at(const json& obj, const char* a, const char* b) {
  auto it = obj.find(a);
  if (it == obj.end()) return {};
  if (b == nullptr) return it->is_string() ? it->get<std::string>() : std::string();
  if (!it->is_object()) return {};
  auto v = it->find(b);
  return v != it->end() && v->is_string() ? v->get<std::string>() : std::string();
}

std::string ns_of(const std::string& key) {
  auto slash = key.find('/');
  return slash == std::string::npos ? std::string() : key.substr(0, slash);
}

std::string name_of(const std::string& key) {
  auto slash = key.find('/');
  return slash == std::string::npos ? key : key.substr(slash + 1);
}

namespace {

constexpr std::string_view kEnforceLabel = "pod-security.kubernetes.io/enforce";
constexpr std::string_view kEnforceVersionLabel = "pod-security.kubernetes.io/enforce-version";
// nodesim/local_pods.h reads it on `vkube host`.
constexpr std::string_view kUnsandboxedLabel = "vkube.io/unsandboxed-local-pods";

// Pod Security levels from the loosest; an unknown or missing level ranks
// below all (kube reads an invalid level as the strictest, but here it is
// what the syncer replaces).
int pod_security_rank(std::string_view level) {
  if (level == "privileged") return 1;
  if (level == "baseline") return 2;
  if (level == "restricted") return 3;
  return 0;
}

// resourceVersions are opaque, but every server vkube meets (itself, etcd's
// revisions) issues increasing integers; when one is not, the cache wins.
std::optional<uint64_t> rv_number(const ObjectPtr& obj) {
  if (!obj) return std::nullopt;
  const std::string rv = str_at(*obj, "metadata", "resourceVersion");
  uint64_t n = 0;
  auto [p, ec] = std::from_chars(rv.data(), rv.data() + rv.size(), n);
  if (ec != std::errc() || p != rv.data() + rv.size()) return std::nullopt;
  return n;
}

std::string uid_of(const ObjectPtr& obj) {
  return obj ? str_at(*obj, "metadata", "uid") : "";
}

std::string key_of(const json& obj) {
  const std::string ns = str_at(obj, "metadata", "namespace");
  const std::string name = str_at(obj, "metadata", "name");
  return ns.empty() ? name : ns + "/" + name;
}

}  // namespace

// ---------------------------------------------------------------- HostView

namespace {
// Deleted UIDs remembered: far more than the deletes that can be in flight.
constexpr size_t kMaxGone = 4096;
// A recorded write the informer has not confirmed in this long is dropped:
// the cache, fed by a watch that resumes and relists, is the truth.
constexpr auto kWrittenTtl = std::chrono::seconds(30);
}  // namespace

HostView::HostView(hostclient::Client& client, hostclient::InformerOptions options)
    : informer(client, std::move(options)) {
  // A recorded write outlives nothing the host has removed: a pod deleted at
  // once (grace 0, never scheduled, finished) is gone, not being deleted.
  informer.on_event([this](const controllers::ObjectEvent& e) {
    if (e.type != controllers::EventType::kDeleted) return;
    const std::string uid = uid_of(e.object);
    std::lock_guard lock(mu_);
    auto w = written_.find(e.key);
    if (w != written_.end() && uid_of(w->second.object) == uid) written_.erase(w);
    auto d = deleted_.find(e.key);
    if (d != deleted_.end() && d->second == uid) deleted_.erase(d);
    if (uid.empty() || !gone_.insert(uid).second) return;
    gone_order_.push_back(uid);
    if (gone_order_.size() > kMaxGone) {
      gone_.erase(gone_order_.front());
      gone_order_.pop_front();
    }
  });
}

ObjectPtr HostView::get(const std::string& key) {
  ObjectPtr cached = informer.get(key);
  std::lock_guard lock(mu_);
  if (auto d = deleted_.find(key); d != deleted_.end()) {
    if (!cached || uid_of(cached) != d->second) {
      deleted_.erase(d);
    } else {
      return nullptr;
    }
  }
  auto w = written_.find(key);
  if (w == written_.end()) return cached;
  auto wrv = rv_number(w->second.object), crv = rv_number(cached);
  if ((cached && (!wrv || !crv || *crv >= *wrv)) ||
      std::chrono::steady_clock::now() - w->second.at > kWrittenTtl) {
    written_.erase(w);
    return cached;
  }
  return w->second.object;
}

void HostView::wrote(const std::string& key, json object) {
  if (auto m = object.find("metadata"); m != object.end() && m->is_object())
    m->erase("managedFields");
  auto obj = std::make_shared<const json>(std::move(object));
  std::lock_guard lock(mu_);
  deleted_.erase(key);
  if (gone_.count(uid_of(obj))) {
    // The watch delivered the deletion before this answer arrived.
    written_.erase(key);
    return;
  }
  written_[key] = Written{std::move(obj), std::chrono::steady_clock::now()};
}

void HostView::deleted(const std::string& key, const std::string& uid) {
  std::lock_guard lock(mu_);
  written_.erase(key);
  deleted_[key] = uid;
}

// ---------------------------------------------------------------- set-up

SyncerImpl::SyncerImpl(SyncerOptions options, std::unique_ptr<hostclient::Client> host)
    : o_(std::move(options)), names_(o_.tenant), host_(std::move(host)) {
  const std::string selector = std::string(kTenantLabel) + "=" + o_.tenant;
  auto view = [&](const char* plural, bool labelled) {
    hostclient::InformerOptions io;
    io.path = host_path(plural);
    if (labelled) io.label_selector = selector;
    io.resource = {std::string_view(plural) == "poddisruptionbudgets" ? "policy" : "core", plural};
    return std::make_unique<HostView>(*host_, io);
  };
  h_pods = view("pods", true);
  h_configmaps = view("configmaps", true);
  h_secrets = view("secrets", true);
  h_services = view("services", true);
  h_pvcs = view("persistentvolumeclaims", true);
  h_events = view("events", false);  // the host's events about the tenant's pods
  h_pdbs = view("poddisruptionbudgets", true);
  hostclient::InformerOptions nodes_options;
  nodes_options.path = "/api/v1/nodes";
  nodes_options.resource = {"core", "nodes"};
  h_nodes = std::make_unique<HostView>(*host_, nodes_options);

  pods.name = "pods";
  pods.reconcile = [this](const std::string& k) { return reconcile_pod(k); };
  configmaps.name = "configmaps";
  configmaps.reconcile = [this](const std::string& k) { return reconcile_config("configmaps", k); };
  secrets.name = "secrets";
  secrets.reconcile = [this](const std::string& k) { return reconcile_config("secrets", k); };
  services.name = "services";
  services.reconcile = [this](const std::string& k) { return reconcile_service(k); };
  pvcs.name = "persistentvolumeclaims";
  pvcs.reconcile = [this](const std::string& k) { return reconcile_pvc(k); };
  pdbs.name = "poddisruptionbudgets";
  pdbs.reconcile = [this](const std::string& k) { return reconcile_pdb(k); };
  events.name = "events";
  events.reconcile = [this](const std::string& k) { return reconcile_event(k); };
  nodes.name = "nodes";
  nodes.reconcile = [this](const std::string& k) { return reconcile_node(k); };
  tokens.name = "tokens";
  tokens.reconcile = [this](const std::string& k) { return reconcile_token(k); };
}

SyncerImpl::~SyncerImpl() {
  stop();
}

std::unique_ptr<Syncer> Syncer::create(SyncerOptions options,
                                       std::unique_ptr<hostclient::Client> host) {
  return std::make_unique<SyncerImpl>(std::move(options), std::move(host));
}

void SyncerImpl::attach(apiserver::ApiServer& tenant, controllers::Informers& informers) {
  tenant_ = &tenant;
  informers_ = &informers;
  client_ = std::make_unique<controllers::LocalClient>(tenant, kSyncerUser, "vkube-syncer");
  events_ = std::make_unique<controllers::EventRecorder>(*client_, nullptr);
  t_pods = &informers.cache({"core", "pods"});
  t_configmaps = &informers.cache({"core", "configmaps"});
  t_secrets = &informers.cache({"core", "secrets"});
  t_services = &informers.cache({"core", "services"});
  t_nodes = &informers.cache({"core", "nodes"});
  t_pvcs = &informers.cache({"core", "persistentvolumeclaims"});
  t_events = &informers.cache({"core", "events"});
  t_serviceaccounts = &informers.cache({"core", "serviceaccounts"});
  t_pdbs = &informers.cache({"policy", "poddisruptionbudgets"});
  // pods/log, exec, attach and portforward go to the host pod, on a client
  // of their own: a relay may outlive this syncer's stop.
  hostclient::Options proxy_options;
  proxy_options.user_agent = "vkube-tenant/" + o_.tenant;
  auto proxy_client = hostclient::Client::create(host_->config(), proxy_options);
  if (proxy_client.is_ok()) {
    std::shared_ptr<hostclient::Client> shared(std::move(proxy_client).value());
    tenant.set_pod_connector(make_pod_proxy(names_, o_.host_namespace, shared));
    tenant.set_metrics_provider(
        make_metrics_proxy(names_, o_.host_namespace, std::move(shared), *t_pods, *t_nodes));
  } else {
    VKUBE_LOG(error, "syncer: no host client for pod streams",
              {"error", proxy_client.status().message()});
  }

  informers.on_event({"core", "pods"},
                     [this](const controllers::ObjectEvent& e) { on_tenant_pod(e); });
  informers.on_event({"core", "configmaps"},
                     [this](const controllers::ObjectEvent& e) { configmaps.queue.add(e.key); });
  informers.on_event({"core", "secrets"},
                     [this](const controllers::ObjectEvent& e) { secrets.queue.add(e.key); });
  informers.on_event({"core", "services"},
                     [this](const controllers::ObjectEvent& e) { services.queue.add(e.key); });
  informers.on_event({"core", "persistentvolumeclaims"},
                     [this](const controllers::ObjectEvent& e) { pvcs.queue.add(e.key); });
  informers.on_event({"policy", "poddisruptionbudgets"},
                     [this](const controllers::ObjectEvent& e) { pdbs.queue.add(e.key); });
  informers.on_event({"core", "nodes"},
                     [this](const controllers::ObjectEvent& e) { nodes.queue.add(e.key); });

  h_pods->informer.on_event([this](const controllers::ObjectEvent& e) { on_host_pod(e); });
  h_configmaps->informer.on_event([this](const controllers::ObjectEvent& e) {
    if (name_of(e.key) == kAnchorPrefix + o_.tenant) {
      if (e.type == controllers::EventType::kDeleted) configmaps.queue.add("");  // re-anchor
      return;
    }
    queue_origin(configmaps, e);
  });
  h_secrets->informer.on_event([this](const controllers::ObjectEvent& e) {
    // Service account credentials belong to pods, not to a tenant Secret:
    // the tokens loop sees whether a pod still runs as their account.
    if (e.object->value("type", "") == kApiAccessType) {
      if (auto o = names_.token_origin(*e.object)) tokens.queue.add(o->ns + "/" + o->name);
      return;
    }
    queue_origin(secrets, e);
  });
  h_services->informer.on_event([this](const controllers::ObjectEvent& e) {
    if (!o_.api_service.empty() && name_of(e.key) == o_.api_service)
      services.queue.add("default/kubernetes");
    queue_origin(services, e);
  });
  h_pvcs->informer.on_event([this](const controllers::ObjectEvent& e) { queue_origin(pvcs, e); });
  h_pdbs->informer.on_event([this](const controllers::ObjectEvent& e) { queue_origin(pdbs, e); });
  h_events->informer.on_event([this](const controllers::ObjectEvent& e) {
    if (e.type != controllers::EventType::kDeleted) events.queue.add(e.key);
  });
  h_nodes->informer.on_event([this](const controllers::ObjectEvent& e) {
    if (node_users(e.key) > 0 || t_nodes->get(e.key) ||
        (e.object && node_in_slice(o_.host_policy, *e.object)))
      nodes.queue.add(e.key);
  });
  // The host is listed while the tenant starts: the two overlap.
  bootstrap_ = std::thread([this] { bootstrap(); });
}

void SyncerImpl::queue_origin(Loop& loop, const controllers::ObjectEvent& e) {
  if (auto o = names_.origin(*e.object)) loop.queue.add(o->ns + "/" + o->name);
}

SyncerImpl::Refs SyncerImpl::refs_of(const json& pod) {
  Refs r;
  const json spec = pod.value("spec", json::object());
  auto name = [](const json& holder, const char* field) {
    auto it = holder.find(field);
    return it != holder.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  auto add = [](std::set<std::string>& to, const std::string& n) {
    if (!n.empty()) to.insert(n);
  };
  for (const json& v : spec.value("volumes", json::array())) {
    if (!v.is_object()) continue;
    if (auto c = v.find("configMap"); c != v.end() && c->is_object())
      add(r.configmaps, name(*c, "name"));
    if (auto s = v.find("secret"); s != v.end() && s->is_object())
      add(r.secrets, name(*s, "secretName"));
    if (auto p = v.find("projected"); p != v.end() && p->is_object())
      for (const json& src : p->value("sources", json::array())) {
        if (!src.is_object()) continue;
        if (auto c = src.find("configMap"); c != src.end() && c->is_object())
          add(r.configmaps, name(*c, "name"));
        if (auto s = src.find("secret"); s != src.end() && s->is_object())
          add(r.secrets, name(*s, "name"));
      }
  }
  for (const json& p : spec.value("imagePullSecrets", json::array()))
    if (p.is_object()) add(r.secrets, name(p, "name"));
  for (const char* list : {"initContainers", "containers", "ephemeralContainers"})
    for (const json& c : spec.value(list, json::array())) {
      if (!c.is_object()) continue;
      for (const json& e : c.value("env", json::array())) {
        const json from = e.is_object() ? e.value("valueFrom", json::object()) : json::object();
        if (auto r1 = from.find("configMapKeyRef"); r1 != from.end() && r1->is_object())
          add(r.configmaps, name(*r1, "name"));
        if (auto r2 = from.find("secretKeyRef"); r2 != from.end() && r2->is_object())
          add(r.secrets, name(*r2, "name"));
      }
      for (const json& e : c.value("envFrom", json::array())) {
        if (!e.is_object()) continue;
        if (auto r1 = e.find("configMapRef"); r1 != e.end() && r1->is_object())
          add(r.configmaps, name(*r1, "name"));
        if (auto r2 = e.find("secretRef"); r2 != e.end() && r2->is_object())
          add(r.secrets, name(*r2, "name"));
      }
    }
  return r;
}

bool SyncerImpl::referenced(const char* plural, const std::string& key) {
  std::lock_guard lock(mu_);
  auto& users = std::string_view(plural) == "configmaps" ? configmap_users_ : secret_users_;
  auto it = users.find(key);
  return it != users.end() && it->second > 0;
}

void SyncerImpl::on_tenant_pod(const controllers::ObjectEvent& e) {
  const std::string ns = ns_of(e.key);
  // The last pod of a service account takes its host credentials along.
  if (e.type == controllers::EventType::kDeleted)
    tokens.queue.add(ns + "/" + account_of(*e.object));
  Refs now;
  if (e.type != controllers::EventType::kDeleted) now = refs_of(*e.object);
  std::vector<std::string> cms, secs;
  {
    std::lock_guard lock(mu_);
    Refs before = pod_refs_[e.key];
    if (e.type == controllers::EventType::kDeleted)
      pod_refs_.erase(e.key);
    else
      pod_refs_[e.key] = now;
    auto update = [&](const std::set<std::string>& old_set, const std::set<std::string>& new_set,
                      std::unordered_map<std::string, int>& users, std::vector<std::string>& out) {
      for (const auto& n : old_set)
        if (!new_set.count(n)) {
          const std::string k = ns + "/" + n;
          if (--users[k] <= 0) users.erase(k);
          out.push_back(k);
        }
      for (const auto& n : new_set)
        if (!old_set.count(n)) {
          const std::string k = ns + "/" + n;
          ++users[k];
          out.push_back(k);
        }
    };
    update(before.configmaps, now.configmaps, configmap_users_, cms);
    update(before.secrets, now.secrets, secret_users_, secs);
  }
  for (const auto& k : cms) configmaps.queue.add(k);
  for (const auto& k : secs) secrets.queue.add(k);
  // After the references are counted: the pod's reconcile may mount them.
  pods.queue.add(e.key);
}

void SyncerImpl::on_host_pod(const controllers::ObjectEvent& e) {
  // The node's count first: the pod's reconcile may make its virtual node.
  std::string node;
  if (e.type != controllers::EventType::kDeleted)
    node = str_at(e.object->value("spec", json::object()), "nodeName");
  std::string before;
  bool moved = false;
  {
    std::lock_guard lock(mu_);
    auto it = pod_node_.find(e.key);
    if (it != pod_node_.end()) before = it->second;
    moved = before != node;
    if (e.type == controllers::EventType::kDeleted)
      if (auto o = names_.origin(*e.object)) final_host_pods_[o->ns + "/" + o->name] = e.object;
    if (moved) {
      if (!before.empty() && --node_pods_[before] <= 0) node_pods_.erase(before);
      if (node.empty()) {
        pod_node_.erase(e.key);
      } else {
        pod_node_[e.key] = node;
        ++node_pods_[node];
      }
    }
  }
  queue_origin(pods, e);
  if (!moved) return;
  if (!before.empty()) nodes.queue.add(before);
  if (!node.empty()) nodes.queue.add(node);
}

json SyncerImpl::owner() const {
  std::lock_guard lock(mu_);
  return owner_;
}

// ---------------------------------------------------------------- running

Status SyncerImpl::start() {
  if (!informers_) return Status::internal("syncer: start before attach");
  std::lock_guard lock(mu_);
  started_ = true;
  cv_.notify_all();
  return Status::ok();
}

bool SyncerImpl::sleep_for(std::chrono::milliseconds d) {
  std::unique_lock lock(mu_);
  return !cv_.wait_for(lock, d, [&] { return stopping_; });
}

Status SyncerImpl::ensure_host_basics() {
  const std::string ns_path = "/api/v1/namespaces/" + o_.host_namespace;
  auto got = host_->call("GET", ns_path);
  // The host namespace always carries the operator's Pod Security level, so
  // the host's own admission refuses a pod past it whatever the tenant's
  // levels say (a tenant admin may relabel the tenant's namespaces).
  json pod_security = {{std::string(kEnforceLabel), o_.host_pod_security},
                       {std::string(kEnforceVersionLabel), "latest"}};
  if (o_.unsandboxed_local_pods) pod_security[std::string(kUnsandboxedLabel)] = "true";
  if (got.code == 404 && o_.create_namespace) {
    json labels = {{std::string(kManagedByLabel), std::string(kManagedByValue)},
                   {std::string(kTenantLabel), o_.tenant}};
    labels.update(pod_security);
    json ns = {{"apiVersion", "v1"},
               {"kind", "Namespace"},
               {"metadata", {{"name", o_.host_namespace}, {"labels", std::move(labels)}}}};
    got = host_->call("POST", "/api/v1/namespaces", ns);
    if (got.code == 409) got = host_->call("GET", ns_path);
  }
  if (got.ok() && !o_.host_pod_security.empty()) {
    const json labels = got.body.value("metadata", json::object()).value("labels", json::object());
    const std::string have = labels.value(std::string(kEnforceLabel), "");
    const bool opt_in_missing =
        o_.unsandboxed_local_pods && labels.value(std::string(kUnsandboxedLabel), "") != "true";
    if (pod_security_rank(have) < pod_security_rank(o_.host_pod_security) || opt_in_missing) {
      auto p = host_->call("PATCH", ns_path, {{"metadata", {{"labels", pod_security}}}},
                           "application/merge-patch+json");
      if (!p.ok())
        return Status::unavailable("host namespace " + o_.host_namespace +
                                   " is labelled Pod Security '" + have + "', below the '" +
                                   o_.host_pod_security + "' this tenant is given, and " +
                                   "cannot be relabelled: " + p.message());
    }
  }
  // A syncer confined to its namespace by a Role may not read the namespace
  // object itself: the namespace it runs in exists (labelled by `vkube
  // create` or the chart), and the writes below will say so if not.
  if (got.code == 403 && !o_.create_namespace) got.code = 200;
  if (!got.ok())
    return Status::unavailable("host namespace " + o_.host_namespace + ": " + got.message());

  // The anchor: every host object of the tenant is owned by it, so deleting
  // it (deleting the tenant) lets the host's garbage collector remove them.
  const std::string anchor = kAnchorPrefix + o_.tenant;
  auto a = host_->call("GET", host_path("configmaps") + "/" + anchor);
  if (a.code == 404) {
    json cm = {{"apiVersion", "v1"},
               {"kind", "ConfigMap"},
               {"metadata",
                {{"name", anchor},
                 {"namespace", o_.host_namespace},
                 {"labels",
                  {{std::string(kManagedByLabel), std::string(kManagedByValue)},
                   {std::string(kTenantLabel), o_.tenant}}}}},
               {"data", {{"tenant", o_.tenant}}}};
    a = host_->call("POST", host_path("configmaps"), cm);
    if (a.code == 409) a = host_->call("GET", host_path("configmaps") + "/" + anchor);
    if (a.ok()) ++host_writes;
  }
  if (!a.ok()) return Status::unavailable("anchor " + anchor + ": " + a.message());
  {
    std::lock_guard lock(mu_);
    owner_ = {{"apiVersion", "v1"},
              {"kind", "ConfigMap"},
              {"name", anchor},
              {"uid", str_at(a.body, "metadata", "uid")}};
  }

  if (o_.host_quota.is_object()) {
    json quota = o_.host_quota;
    quota["metadata"]["namespace"] = o_.host_namespace;
    const std::string qname = str_at(quota, "metadata", "name");
    auto q = host_->call("GET", host_path("resourcequotas") + "/" + qname);
    if (q.code == 404) {
      q = host_->call("POST", host_path("resourcequotas"), quota);
      if (q.ok()) ++host_writes;
    } else if (q.ok() &&
               q.body.value("spec", json::object()) != quota.value("spec", json::object())) {
      quota["metadata"]["resourceVersion"] = str_at(q.body, "metadata", "resourceVersion");
      q = host_->call("PUT", host_path("resourcequotas") + "/" + qname, quota);
      if (q.ok()) ++host_writes;
    }
    if (!q.ok()) VKUBE_LOG(warn, "syncer: host quota not set", {"error", q.message()});
  }
  return Status::ok();
}

void SyncerImpl::bootstrap() {
  const auto t0 = std::chrono::steady_clock::now();
  auto ms = [&] {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  };
  auto backoff = std::chrono::milliseconds(200);
  for (;;) {
    Status s = ensure_host_basics();
    if (s.is_ok()) break;
    VKUBE_LOG(warn, "syncer: host not ready, retrying", {"error", s.message()},
              {"in_ms", backoff.count()});
    if (!sleep_for(backoff)) return;
    backoff = std::min(backoff * 2, std::chrono::milliseconds(10000));
  }
  VKUBE_LOG(debug, "syncer: host namespace and anchor present", {"ms", ms()});
  // The host's events are listed after the rest: copying them back is
  // not on the way to running the tenant's pods.
  for (HostView* v : views())
    if (v != h_events.get()) v->informer.start();
  for (HostView* v : views()) {
    if (v == h_events.get()) continue;
    const auto since = std::chrono::steady_clock::now();
    while (!v->informer.wait_synced(std::chrono::milliseconds(200))) {
      if (!sleep_for(std::chrono::milliseconds(1))) return;
      // Nodes are cluster-wide: a host that grants only the namespace
      // (403 on nodes) still runs pods, without virtual nodes. A Role from
      // before PodDisruptionBudgets were synced likewise runs pods without.
      if ((v == h_nodes.get() || v == h_pdbs.get()) &&
          std::chrono::steady_clock::now() - since > std::chrono::seconds(5)) {
        VKUBE_LOG(warn, "syncer: host objects not listed, their kind waits for them",
                  {"path", v == h_nodes.get() ? "nodes" : host_path("poddisruptionbudgets")});
        break;
      }
    }
  }
  {
    std::lock_guard lock(mu_);
    if (stopping_) return;
  }
  VKUBE_LOG(debug, "syncer: host listed", {"ms", ms()});
  {
    // The tenant's side is listed once start() is called.
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return started_ || stopping_; });
    if (stopping_) return;
  }
  start_loop(pods, o_.pod_workers);
  for (Loop* l : loops())
    if (l != &pods && l != &events) start_loop(*l, o_.other_workers);
  ready_ = true;
  VKUBE_LOG(info, "syncer: running", {"tenant", o_.tenant}, {"host_namespace", o_.host_namespace},
            {"host_pods", h_pods->informer.size()}, {"tenant_pods", t_pods->size()});
  h_events->informer.start();
  while (!h_events->informer.wait_synced(std::chrono::milliseconds(200)))
    if (!sleep_for(std::chrono::milliseconds(1))) return;
  start_loop(events, o_.other_workers);
  if (o_.resync_period.count() <= 0) return;
  while (sleep_for(o_.resync_period)) resync();
}

void SyncerImpl::start_loop(Loop& loop, int workers) {
  loop.workers = std::make_unique<controllers::QueueWorkers>(
      loop.queue, loop.reconcile, [this, &loop](const std::string& key, const Status& s) {
        ++errors;
        if (s.code() != Code::kConflict)
          VKUBE_LOG(warn, "syncer: retrying", {"kind", loop.name}, {"key", key},
                    {"error", s.message()});
      });
  loop.workers->start(workers);
}

void SyncerImpl::requeue_all() {
  for (const auto& p : t_pods->list()) pods.queue.add(key_of(*p));
  for (const auto& c : t_configmaps->list()) configmaps.queue.add(key_of(*c));
  for (const auto& s : t_secrets->list()) secrets.queue.add(key_of(*s));
  for (const auto& s : t_services->list()) services.queue.add(key_of(*s));
  for (const auto& c : t_pvcs->list()) pvcs.queue.add(key_of(*c));
  for (const auto& b : t_pdbs->list()) pdbs.queue.add(key_of(*b));
}

void SyncerImpl::resync() {
  requeue_all();
  const std::pair<Loop*, HostView*> copies[] = {{&pods, h_pods.get()},
                                                {&configmaps, h_configmaps.get()},
                                                {&services, h_services.get()},
                                                {&pvcs, h_pvcs.get()},
                                                {&pdbs, h_pdbs.get()}};
  for (const auto& [loop, view] : copies)
    for (const auto& obj : view->informer.list())
      if (auto o = names_.origin(*obj)) loop->queue.add(o->ns + "/" + o->name);
  for (const auto& obj : h_secrets->informer.list()) {
    if (auto t = names_.token_origin(*obj))
      tokens.queue.add(t->ns + "/" + t->name);
    else if (auto o = names_.origin(*obj))
      secrets.queue.add(o->ns + "/" + o->name);
  }
}

void SyncerImpl::stop() {
  {
    std::lock_guard lock(mu_);
    if (stopping_) return;
    stopping_ = true;
    cv_.notify_all();
  }
  ready_ = false;
  if (tenant_) tenant_->set_metrics_provider(nullptr);  // it reads this syncer's caches
  if (host_) host_->stop();
  for (Loop* l : loops()) l->queue.shutdown();
  if (bootstrap_.joinable()) bootstrap_.join();
  for (Loop* l : loops())
    if (l->workers) l->workers->stop();
  for (HostView* v : views())
    if (v) v->informer.stop();
  if (events_) events_->stop();
}

// Events are copied in the background: they do not make the syncer busy.
bool SyncerImpl::busy() const {
  for (Loop* l : const_cast<SyncerImpl*>(this)->loops())
    if (l != &events && !l->queue.idle()) return true;
  return false;
}

bool SyncerImpl::wait_idle(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  int quiet = 0;
  while (std::chrono::steady_clock::now() < deadline) {
    bool idle = ready_;
    for (Loop* l : loops()) idle = idle && l->queue.idle();
    quiet = idle ? quiet + 1 : 0;
    if (quiet >= 3) return true;  // idle across a few looks: informers caught up too
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

SyncerStats SyncerImpl::stats() const {
  return {host_writes.load(), tenant_writes.load(), errors.load()};
}

std::string SyncerImpl::metrics() const {
  std::ostringstream out;
  out << "# HELP vkube_syncer_ready Whether the syncer has listed both clusters and runs.\n"
         "# TYPE vkube_syncer_ready gauge\n"
      << "vkube_syncer_ready " << (ready_ ? 1 : 0) << "\n"
      << "# HELP vkube_syncer_host_reachable Whether the last request reached the host cluster.\n"
         "# TYPE vkube_syncer_host_reachable gauge\n"
      << "vkube_syncer_host_reachable " << (host_ && host_->reachable() ? 1 : 0) << "\n"
      << "# HELP vkube_syncer_busy Whether a reconcile (not an event copy) is queued or running.\n"
         "# TYPE vkube_syncer_busy gauge\n"
      << "vkube_syncer_busy " << (busy() ? 1 : 0) << "\n"
      << "# HELP vkube_syncer_writes_total Writes the syncer made, by cluster.\n"
         "# TYPE vkube_syncer_writes_total counter\n"
      << "vkube_syncer_writes_total{cluster=\"host\"} " << host_writes.load() << "\n"
      << "vkube_syncer_writes_total{cluster=\"tenant\"} " << tenant_writes.load() << "\n"
      << "# HELP vkube_syncer_errors_total Reconciles that failed and were retried.\n"
         "# TYPE vkube_syncer_errors_total counter\n"
      << "vkube_syncer_errors_total " << errors.load() << "\n"
      << "# HELP vkube_syncer_host_objects Objects of the tenant on the host, by kind.\n"
         "# TYPE vkube_syncer_host_objects gauge\n";
  const std::pair<const char*, HostView*> kinds[] = {{"pods", h_pods.get()},
                                                     {"configmaps", h_configmaps.get()},
                                                     {"secrets", h_secrets.get()},
                                                     {"services", h_services.get()},
                                                     {"persistentvolumeclaims", h_pvcs.get()}};
  for (const auto& [kind, v] : kinds)
    out << "vkube_syncer_host_objects{kind=\"" << kind << "\"} " << v->informer.size() << "\n";
  return out.str();
}

// ---------------------------------------------------------------- writes

namespace {
Status answer_status(const hostclient::Response& r, const std::string& what) {
  if (r.code == 409) return Status::conflict(what + ": " + r.message());
  if (r.code == 0) return Status::unavailable(what + ": " + r.message());
  return Status(r.code == 404   ? Code::kNotFound
                : r.code == 422 ? Code::kInvalid
                : r.code == 403 ? Code::kForbidden
                                : Code::kInternal,
                what + ": " + std::to_string(r.code) + " " + r.message());
}
}  // namespace

Status SyncerImpl::host_create(HostView& view, const char* plural, const json& obj) {
  auto r = host_->call("POST", host_path(plural), obj);
  ++host_writes;
  if (r.ok()) {
    view.wrote(key_of(r.body), r.body);
    return Status::ok();
  }
  if (r.code == 409) {
    // Ours, not yet in the cache (a retried create, a trailing watch): look
    // again soon. Someone else's (no tenant label, so no cache sees it):
    // say so and back off.
    const std::string name = str_at(obj, "metadata", "name");
    auto got = host_->call("GET", host_path(plural) + "/" + name);
    const auto want = names_.origin(obj);
    if (got.ok() && (!want || !names_.stands_for(got.body, want->ns, want->name)))
      return Status::already_exists(std::string(plural) + " " + o_.host_namespace + "/" + name +
                                    " exists on the host and is not this tenant's");
    return Status::conflict("create " + name + ": the cache trails");
  }
  return answer_status(r, std::string("create ") + plural + " " + key_of(obj));
}

Status SyncerImpl::host_put(HostView& view, const char* plural, const json& obj) {
  auto r = host_->call("PUT", host_path(plural) + "/" + str_at(obj, "metadata", "name"), obj);
  ++host_writes;
  if (r.ok()) {
    view.wrote(key_of(r.body), r.body);
    return Status::ok();
  }
  return answer_status(r, std::string("update ") + plural + " " + key_of(obj));
}

Status SyncerImpl::host_patch(HostView& view, const char* plural, const std::string& name,
                              const json& patch) {
  auto r =
      host_->call("PATCH", host_path(plural) + "/" + name, patch, "application/merge-patch+json");
  ++host_writes;
  if (r.ok()) {
    view.wrote(key_of(r.body), r.body);
    return Status::ok();
  }
  return answer_status(r, std::string("patch ") + plural + " " + name);
}

Status SyncerImpl::host_delete(HostView& view, const char* plural, const json& obj, int64_t grace) {
  const std::string name = str_at(obj, "metadata", "name");
  const std::string uid = str_at(obj, "metadata", "uid");
  json options = {
      {"apiVersion", "v1"}, {"kind", "DeleteOptions"}, {"preconditions", {{"uid", uid}}}};
  if (grace >= 0) options["gracePeriodSeconds"] = grace;
  auto r = host_->call("DELETE", host_path(plural) + "/" + name, options);
  ++host_writes;
  const std::string key = o_.host_namespace + "/" + name;
  if (r.code == 404) {
    view.deleted(key, uid);
    return Status::ok();
  }
  if (!r.ok()) return answer_status(r, std::string("delete ") + plural + " " + name);
  // A pod in its grace period comes back with deletionTimestamp set.
  if (r.body.value("kind", "") != "Status" && r.body.contains("metadata") &&
      r.body["metadata"].contains("deletionTimestamp"))
    view.wrote(key, r.body);
  else
    view.deleted(key, uid);
  return Status::ok();
}

controllers::ApiResult SyncerImpl::tenant_call(std::string_view method, const std::string& target,
                                               const json& body, std::string_view content_type) {
  auto r = client_->call(method, target, body, content_type);
  ++tenant_writes;
  if (r.ok() && r.body.is_object()) {
    const std::string rv = str_at(r.body, "metadata", "resourceVersion");
    uint64_t n = 0;
    auto [p, ec] = std::from_chars(rv.data(), rv.data() + rv.size(), n);
    if (ec == std::errc() && n > 0) informers_->wait_for(static_cast<storage::Revision>(n));
  }
  return r;
}

void SyncerImpl::warn(const json& tenant_obj, const std::string& reason,
                      const std::string& message) {
  events_->record(tenant_obj, "vkube-syncer", "Warning", reason, message);
}

}  // namespace vkube::syncer
