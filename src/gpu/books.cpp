// The pool's books from host objects (books.h).
#include "vkube/gpu/books.h"

#include "vkube/gpu/quota.h"
#include "vkube/gpu/resources.h"

namespace vkube::gpu {

namespace {

using json = nlohmann::json;

constexpr const char* kTenantLabel = "vkube.io/tenant";

// The value at `path` in `obj`; null when absent.
const json* find_at(const json& obj, std::initializer_list<std::string_view> path) {
  const json* at = &obj;
  for (std::string_view key : path) {
    if (!at->is_object()) return nullptr;
    auto it = at->find(key);
    if (it == at->end()) return nullptr;
    at = &*it;
  }
  return at;
}

// The string at `path` in `obj` ("" when absent or not a string).
std::string string_at(const json& obj, std::initializer_list<std::string_view> path) {
  const json* v = find_at(obj, path);
  return v != nullptr && v->is_string() ? v->get<std::string>() : std::string();
}

const json& items(const json& list) {
  static const json kNone = json::array();
  if (list.is_array()) return list;
  if (list.is_object())
    if (auto it = list.find("items"); it != list.end() && it->is_array()) return *it;
  return kNone;
}

}  // namespace

std::optional<std::string> share_flag(const json& set) {
  const json* containers = find_at(set, {"spec", "template", "spec", "containers"});
  if (containers == nullptr || !containers->is_array()) return std::nullopt;
  for (const json& c : *containers) {
    const json* args = find_at(c, {"args"});
    if (args == nullptr || !args->is_array()) continue;
    for (const json& a : *args)
      if (a.is_string() && a.get<std::string>().starts_with(kShareFlag))
        return a.get<std::string>().substr(kShareFlag.size());
  }
  return std::nullopt;
}

Result<GpuShare> host_share(const json& ns, const json& statefulset) {
  if (const json* a = find_at(ns, {"metadata", "annotations", kShareAnnotation});
      a != nullptr && a->is_string())
    return parse_gpu_share(a->get<std::string>());
  if (auto flag = share_flag(statefulset)) return parse_gpu_share(*flag);
  return GpuShare{};
}

int64_t pool_capacity(const json& nodes) {
  int64_t out = 0;
  for (const json& n : items(nodes))
    if (n.is_object()) out += 1000 * static_cast<int64_t>(NodeGpus::of_node(n).gpus.size());
  return out;
}

PoolBooks pool_books(const json& namespaces, const json& statefulsets, const json& pods,
                     const json& nodes) {
  struct Found {
    const json* ns = nullptr;
    const json* set = nullptr;
    std::string tenant;
  };
  std::map<std::string, Found> found;  // by namespace
  for (const json& n : items(namespaces)) {
    std::string tenant = string_at(n, {"metadata", "labels", kTenantLabel});
    if (tenant.empty()) continue;
    Found& f = found[string_at(n, {"metadata", "name"})];
    f.ns = &n;
    f.tenant = tenant;
  }
  for (const json& s : items(statefulsets)) {
    std::string tenant = string_at(s, {"metadata", "labels", kTenantLabel});
    if (tenant.empty()) continue;
    Found& f = found[string_at(s, {"metadata", "namespace"})];
    if (f.set == nullptr) f.set = &s;
    if (f.tenant.empty()) f.tenant = tenant;
  }
  PoolBooks out;
  out.capacity = pool_capacity(nodes);
  std::map<std::string, size_t> row_of;
  for (const auto& [ns, f] : found) {
    TenantBooks b;
    b.ns = ns;
    b.tenant = f.tenant.empty() ? ns : f.tenant;
    auto share = host_share(f.ns ? *f.ns : json(), f.set ? *f.set : json());
    if (share.is_ok())
      b.share = *share;
    else
      out.bad_shares[ns] = share.status().message();
    row_of[ns] = out.tenants.size();
    out.tenants.push_back(std::move(b));
  }
  for (const json& p : items(pods)) {
    auto row = row_of.find(string_at(p, {"metadata", "namespace"}));
    if (row == row_of.end()) continue;
    const std::string phase = string_at(p, {"status", "phase"});
    if (phase == "Succeeded" || phase == "Failed") continue;
    const bool bound = !string_at(p, {"spec", "nodeName"}).empty();
    const bool terminating = !string_at(p, {"metadata", "deletionTimestamp"}).empty();
    if (!bound && terminating) continue;  // holds nothing and will not
    auto request = request_of(p);
    if (!request.is_ok() || request->empty()) continue;
    const int64_t milli = usage_of(p, *request).milli;
    TenantBooks& b = out.tenants[row->second];
    if (!bound)
      b.pending += milli;
    else if (terminating)
      b.reclaiming += milli;
    else
      b.allocated += milli;
  }
  settle(out.tenants, out.capacity);
  return out;
}

}  // namespace vkube::gpu
