#include "vkube/syncer/names.h"

#include <cstdint>
#include <cstdio>

namespace vkube::syncer {

namespace {

using json = nlohmann::json;

// At most a DNS label's length: a Service name must be one, and a pod's
// hostname is cut there.
constexpr size_t kMaxName = 63;

uint64_t fnv1a64(std::string_view s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

std::string str(const json& obj, const char* a, const char* b) {
  auto m = obj.find(a);
  if (m == obj.end() || !m->is_object()) return {};
  auto v = m->find(b);
  return v != m->end() && v->is_string() ? v->get<std::string>() : std::string();
}

std::string label_or_annotation(const json& obj, const char* where, std::string_view key) {
  auto m = obj.find("metadata");
  if (m == obj.end() || !m->is_object()) return {};
  auto l = m->find(where);
  if (l == m->end() || !l->is_object()) return {};
  auto v = l->find(std::string(key));
  return v != l->end() && v->is_string() ? v->get<std::string>() : std::string();
}

}  // namespace

std::string NameMapper::host_name(std::string_view ns, std::string_view name) const {
  std::string full = std::string(name) + "-x-" + std::string(ns) + "-x-" + tenant_;
  if (full.size() <= kMaxName) return full;
  char hash[17];
  // The hash is of the triple itself: "a-x-b" in "c" and "a" in "b-x-c" differ.
  std::snprintf(hash, sizeof hash, "%016llx",
                static_cast<unsigned long long>(
                    fnv1a64(std::string(name) + "/" + std::string(ns) + "/" + tenant_)));
  std::string prefix = full.substr(0, kMaxName - 1 - 16);
  while (!prefix.empty() && (prefix.back() == '-' || prefix.back() == '.')) prefix.pop_back();
  return prefix + "-" + hash;
}

void NameMapper::mark(json& host, const json& tenant_obj) const {
  json& meta = host["metadata"];
  meta["labels"][std::string(kManagedByLabel)] = std::string(kManagedByValue);
  meta["labels"][std::string(kTenantLabel)] = tenant_;
  const std::string ns = str(tenant_obj, "metadata", "namespace");
  if (!ns.empty()) meta["labels"][std::string(kNamespaceLabel)] = ns;
  meta["annotations"][std::string(kNameAnnotation)] = str(tenant_obj, "metadata", "name");
  meta["annotations"][std::string(kUidAnnotation)] = str(tenant_obj, "metadata", "uid");
}

std::optional<Origin> NameMapper::origin(const json& host) const {
  if (label_or_annotation(host, "labels", kManagedByLabel) != kManagedByValue ||
      label_or_annotation(host, "labels", kTenantLabel) != tenant_)
    return std::nullopt;
  Origin o{label_or_annotation(host, "labels", kNamespaceLabel),
           label_or_annotation(host, "annotations", kNameAnnotation),
           label_or_annotation(host, "annotations", kUidAnnotation)};
  if (o.name.empty()) return std::nullopt;
  return o;
}

bool NameMapper::stale(const json& host, const json& tenant_obj) const {
  auto o = origin(host);
  return !o || o->uid != str(tenant_obj, "metadata", "uid");
}

}  // namespace vkube::syncer
