// The RBAC authorizer: the compiled policy, cached until an RBAC object
// changes, and kube's wording of a denial.
#include "authz.h"

#include <thread>

#include <algorithm>

#include "aggregator.h"
#include "server_impl.h"
#include "vkube/api/selector.h"
#include "vkube/common/log.h"

namespace vkube::apiserver {

namespace {

// Roles, role bindings, cluster roles and cluster role bindings, one prefix.
constexpr std::string_view kRbacPrefix = "/registry/rbac.authorization.k8s.io/";

// The kind of a stored RBAC object, from its key; nullopt for none of the four.
std::optional<rbac::CompiledObject::Kind> kind_of(std::string_view key) {
  using Kind = rbac::CompiledObject::Kind;
  std::string_view rest = key.substr(kRbacPrefix.size());
  std::string_view plural = rest.substr(0, rest.find('/'));
  if (plural == "roles") return Kind::kRole;
  if (plural == "rolebindings") return Kind::kRoleBinding;
  if (plural == "clusterroles") return Kind::kClusterRole;
  if (plural == "clusterrolebindings") return Kind::kClusterRoleBinding;
  return std::nullopt;
}

}  // namespace

Authorizer::Authorizer(storage::Backend* backend) : backend_(backend) {
  if (backend_ != nullptr)
    rbac_revision_ = std::make_unique<PrefixRevision>(backend_, std::string(kRbacPrefix), "rbac");
}

Authorizer::~Authorizer() {
  shutdown();
}

void Authorizer::shutdown() {
  if (rbac_revision_) rbac_revision_->shutdown();
}

Result<std::shared_ptr<const rbac::Policy>> Authorizer::policy() {
  if (backend_ == nullptr) return Status::unavailable("no store to read RBAC objects from");
  auto fresh = [&]() -> std::shared_ptr<const rbac::Policy> {
    std::lock_guard lock(mu_);
    if (policy_ && rbac_revision_->watching() && built_revision_ >= rbac_revision_->newest())
      return policy_;
    return nullptr;
  };
  if (auto p = fresh()) return p;

  std::lock_guard rebuild(rebuild_mu_);
  rbac_revision_->ensure();
  if (auto p = fresh()) return p;  // another thread rebuilt it meanwhile
  storage::ListOptions o;
  o.prefix = std::string(kRbacPrefix);
  auto listed = backend_->list(o);
  if (!listed.is_ok()) return listed.status();
  // Objects unchanged since the last build are not read again: with a
  // hundred tenants' roles and bindings on a host, reading them all at each
  // RBAC write was most of what admitting a tenant cost there.
  std::map<std::string, ParsedObject, std::less<>> parsed;
  rbac::CompiledObjects objects;
  objects.reserve(listed->items.size());
  for (storage::KeyValue& kv : listed->items) {
    auto old = parsed_.find(kv.key);
    ParsedObject entry;
    if (old != parsed_.end() && old->second.mod_revision == kv.mod_revision) {
      entry = std::move(old->second);
    } else {
      entry.mod_revision = kv.mod_revision;
      if (auto kind = kind_of(kv.key))
        entry.object = rbac::CompiledObject::read(*kind, json::parse(kv.value, nullptr, false));
    }
    if (entry.object) objects.push_back(entry.object);
    parsed.emplace(std::move(kv.key), std::move(entry));
  }
  parsed_ = std::move(parsed);
  std::shared_ptr<const rbac::Policy> p = rbac::Policy::compile(objects);
  std::lock_guard lock(mu_);
  policy_ = p;
  // Listed at a revision older than a write the watch reported (the watch
  // cache applies it a moment later): compiled again on the next request.
  built_revision_ = listed->revision;
  return p;
}

rbac::Decision Authorizer::authorize(const rbac::Attributes& a) {
  if (rbac::is_privileged(a.groups)) return {true, ""};
  auto p = policy();
  if (!p.is_ok()) return {false, "RBAC: " + p.status().message()};
  return (*p)->authorize(a);
}

rbac::Attributes request_attributes(const http::Request& req, const RequestInfo& info,
                                    const UserInfo& user) {
  rbac::Attributes a;
  a.user = user.name;
  a.groups = user.groups;
  a.verb = info.verb;
  a.resource_request = info.is_resource_request;
  if (!a.resource_request) {
    a.path = info.path;
    return a;
  }
  a.api_group = info.group;
  a.resource = info.resource;
  a.subresource = info.subresource;
  a.name = info.name;
  a.ns = info.namespace_;
  // kube's RequestInfo: a namespace is in itself.
  if (info.resource == "namespaces" && !info.name.empty()) a.ns = info.name;
  if (a.name.empty() && (a.verb == "list" || a.verb == "watch")) {
    if (auto fs = http::query_param(req.query, "fieldSelector")) {
      auto parsed = api::FieldSelector::parse(*fs);
      if (parsed.is_ok()) {
        for (const api::FieldRequirement& r : parsed->requirements())
          if (r.field == "metadata.name" && r.equals) a.name = r.value;
      }
    }
  }
  return a;
}

ApiError forbidden(const rbac::Attributes& a, const std::string& reason) {
  std::string msg = rbac::forbidden_message(a);
  if (!reason.empty()) msg += ": " + reason;
  if (!a.resource_request || a.resource.empty())
    return ApiError(Status(Code::kForbidden, "forbidden: " + msg));
  std::string what = a.api_group.empty() ? a.resource : a.resource + "." + a.api_group;
  if (!a.name.empty()) what += " " + rbac::go_quote(a.name);
  json details = {{"kind", a.resource}};
  if (!a.name.empty()) details["name"] = a.name;
  if (!a.api_group.empty()) details["group"] = a.api_group;
  return {Status(Code::kForbidden, what + " is forbidden: " + msg), details};
}

Status Server::ensure_bootstrap_policy() {
  // Through the whole chain, as the API server's own privileged user, so
  // the objects get defaults and validation like any other.
  auto create = [&](const std::string& plural, const json& obj) -> Status {
    http::Request req;
    req.method = "POST";
    req.path = "/apis/rbac.authorization.k8s.io/v1/" + plural;
    req.target = req.path;
    req.remote = "in-process";
    req.peer = http::PeerCertificate{"system:apiserver", {std::string(rbac::kMastersGroup)}};
    req.headers.push_back({"Content-Type", "application/json"});
    // Present already (every start but the first): a read, not a write.
    http::Request get = req;
    get.method = "GET";
    get.path = get.target = req.path + "/" + obj["metadata"].value("name", "");
    if (handle(get).status == 200) return Status::ok();
    req.body = obj.dump();
    http::Response resp = handle(req);
    if (resp.status == 201 || resp.status == 409) return Status::ok();  // 409: already there
    return Status::internal("creating " + plural + " " + obj["metadata"].value("name", "") + ": " +
                            resp.body);
  };
  // All at once: concurrent durable writes share one WAL sync (group
  // commit), which keeps a fresh tenant's start in milliseconds.
  std::vector<std::pair<std::string, json>> objects;
  for (const json& role : rbac::bootstrap_cluster_roles()) objects.emplace_back("clusterroles", role);
  for (const json& binding : rbac::bootstrap_cluster_role_bindings())
    objects.emplace_back("clusterrolebindings", binding);
  std::vector<Status> results(objects.size());
  std::vector<std::thread> threads;
  threads.reserve(objects.size());
  for (size_t i = 0; i < objects.size(); ++i)
    threads.emplace_back([&, i] { results[i] = create(objects[i].first, objects[i].second); });
  for (auto& t : threads) t.join();
  for (auto& r : results) VKUBE_RETURN_IF_ERROR(r);
  // The Local APIServices of the group versions served, as kube's autoregister makes them.
  aggregator_->sync(*this);
  return Status::ok();
}

}  // namespace vkube::apiserver
