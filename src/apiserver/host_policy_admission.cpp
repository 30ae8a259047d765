// The operator's host policy at the tenant's admission (server_impl.h):
// the syncer would refuse to run such a pod or copy such a Service on the
// host, so the tenant is told at once, with the policy's reasons, instead
// of finding a SyncError event later. Pods and Services are refused (403, as
// Pod Security refuses pods); workloads only get warnings for their pod
// template, as Pod Security warns, since their pods are refused when made.
#include "server_impl.h"
#include "vkube/syncer/host_policy.h"

namespace vkube::apiserver {

namespace {

// Where a workload keeps its pod template, by resource; null: no template.
const char* const* template_path(const api::Resource& r) {
  static const char* const kTemplate[] = {"spec", "template", nullptr};
  static const char* const kPodTemplate[] = {"template", nullptr};
  static const char* const kCronJob[] = {"spec", "jobTemplate", "spec", "template", nullptr};
  const std::string& g = r.gv.group;
  if (g == "apps" && (r.plural == "deployments" || r.plural == "replicasets" ||
                      r.plural == "statefulsets" || r.plural == "daemonsets"))
    return kTemplate;
  if (g == "batch" && r.plural == "jobs") return kTemplate;
  if (g == "batch" && r.plural == "cronjobs") return kCronJob;
  if (g.empty() && r.plural == "replicationcontrollers") return kTemplate;
  if (g.empty() && r.plural == "podtemplates") return kPodTemplate;
  return nullptr;
}

// obj at `path`; null when a step is missing.
const json* at(const json& obj, const char* const* path, std::string* prefix) {
  const json* cur = &obj;
  for (; *path != nullptr; ++path) {
    if (!cur->is_object()) return nullptr;
    auto it = cur->find(*path);
    if (it == cur->end()) return nullptr;
    cur = &*it;
    *prefix += std::string(*path) + ".";
  }
  return cur;
}

// What `next` breaks that `old` did not already break: an update is judged
// on what it adds, so an object admitted before the policy can still have
// its labels or replicas changed.
std::vector<syncer::PolicyViolation> added(std::vector<syncer::PolicyViolation> next,
                                           const std::vector<syncer::PolicyViolation>& old) {
  std::erase_if(next, [&](const syncer::PolicyViolation& v) {
    for (const auto& o : old)
      if (o.field == v.field && o.message == v.message) return true;
    return false;
  });
  return next;
}

ApiError forbidden(Context& c, const std::string& name,
                   const std::vector<syncer::PolicyViolation>& v) {
  const std::string& plural = c.resource().plural;
  return ApiError(
      Status(Code::kForbidden, plural + " \"" + name +
                                   "\" is forbidden: rejected by the tenant's host policy: " +
                                   syncer::join_violations(v, "spec.")),
      {{"name", name}, {"kind", plural}});
}

json spec_of(const json& obj) {
  auto it = obj.find("spec");
  return it != obj.end() && it->is_object() ? *it : json::object();
}

}  // namespace

std::optional<ApiError> admit_host_policy(Context& c, const json& obj, const json* old,
                                          const std::string& name) {
  const syncer::HostPolicy* policy = c.server.options().host_policy.get();
  if (policy == nullptr || !c.info.subresource.empty()) return std::nullopt;
  const api::Resource& r = c.resource();
  if (r.gv.group.empty() && r.plural == "pods") {
    auto v = syncer::pod_violations(*policy, spec_of(obj));
    if (old != nullptr) v = added(std::move(v), syncer::pod_violations(*policy, spec_of(*old)));
    if (!v.empty()) return forbidden(c, name, v);
    if (old == nullptr) {
      const json meta = obj.value("metadata", json::object());
      for (const std::string& k : syncer::stripped_keys(*policy, meta.value("labels", json())))
        c.warnings.push_back("metadata.labels[" + k +
                             "]: the operator's on the host; the host pod does not carry it");
    }
    return std::nullopt;
  }
  if (r.gv.group.empty() && r.plural == "services") {
    auto v = syncer::service_violations(*policy, spec_of(obj));
    if (old != nullptr) v = added(std::move(v), syncer::service_violations(*policy, spec_of(*old)));
    if (!v.empty()) return forbidden(c, name, v);
    return std::nullopt;
  }
  const char* const* path = template_path(r);
  if (path == nullptr) return std::nullopt;
  std::string prefix;
  const json* tmpl = at(obj, path, &prefix);
  if (tmpl == nullptr) return std::nullopt;
  auto v = syncer::pod_violations(*policy, spec_of(*tmpl));
  if (old != nullptr) {
    std::string ignored;
    const json* old_tmpl = at(*old, path, &ignored);
    if (old_tmpl != nullptr)
      v = added(std::move(v), syncer::pod_violations(*policy, spec_of(*old_tmpl)));
  }
  if (!v.empty())
    c.warnings.push_back("would violate the tenant's host policy (its pods will be refused): " +
                         syncer::join_violations(v, prefix + "spec."));
  return std::nullopt;
}

}  // namespace vkube::apiserver
