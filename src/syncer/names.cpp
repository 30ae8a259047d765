#include "vkube/syncer/names.h"

#include <openssl/evp.h>

#include <cstdint>
#include <cstdio>

namespace vkube::syncer {

namespace {

using json = nlohmann::json;

// At most a DNS label's length: a Service name must be one, and a pod's
// hostname is cut there.
constexpr size_t kMaxName = 63;

// Hex digits of the hash a shortened or ambiguous name carries: 80 bits of
// SHA-256, so a tenant cannot search out a name that meets another's (a
// second preimage); FNV, which this replaced, yields to arithmetic.
constexpr size_t kHashDigits = 20;

std::string hash_hex(std::string_view s) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(s.data(), s.size(), md, &len, EVP_sha256(), nullptr);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; out.size() < kHashDigits; ++i) {
    out.push_back(kHex[md[i] >> 4]);
    out.push_back(kHex[md[i] & 15]);
  }
  return out;
}

// Whether name-x-ns can be split back into name and ns in one way only. Two
// splits would put the second separator at most two characters after the
// first (else the longer name holds a whole "-x-"); one character is
// impossible ('x' is not '-'), two needs a name ending in "-x" and a
// namespace starting with "x-": pod "a" of namespace "x-b" and pod "a-x" of
// namespace "b" both read "a-x-x-b".
bool readable(std::string_view ns, std::string_view name) {
  return name.find("-x-") == std::string_view::npos && !name.ends_with("-x") &&
         ns.find("-x-") == std::string_view::npos && !ns.starts_with("x-");
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
  if (full.size() <= kMaxName && readable(ns, name)) return full;
  // The hash is of the triple with a separator no name can hold, so
  // "a-x-b" in "c" and "a" in "b-x-c" differ. A hashed name ends in hex
  // digits, a readable one in "-x-<tenant>": the two forms never meet.
  std::string prefix = full.substr(0, kMaxName - 1 - kHashDigits);
  while (!prefix.empty() && (prefix.back() == '-' || prefix.back() == '.')) prefix.pop_back();
  return prefix + "-" + hash_hex(std::string(name) + "/" + std::string(ns) + "/" + tenant_);
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

bool NameMapper::stands_for(const json& host, std::string_view ns, std::string_view name) const {
  auto o = origin(host);
  return o && o->ns == ns && o->name == name;
}

bool NameMapper::stale(const json& host, const json& tenant_obj) const {
  auto o = origin(host);
  return !o || o->uid != str(tenant_obj, "metadata", "uid");
}

std::string NameMapper::token_secret_name(std::string_view ns, std::string_view sa) const {
  return host_name(ns, sa) + ".sa-token";
}

std::optional<Origin> NameMapper::token_origin(const json& host) const {
  if (label_or_annotation(host, "labels", kManagedByLabel) != kManagedByValue ||
      label_or_annotation(host, "labels", kTenantLabel) != tenant_)
    return std::nullopt;
  auto type = host.find("type");
  if (type == host.end() || !type->is_string() || type->get<std::string>() != kApiAccessType)
    return std::nullopt;
  const std::string name = str(host, "metadata", "name");
  Origin o{label_or_annotation(host, "labels", kNamespaceLabel),
           label_or_annotation(host, "annotations", kServiceAccountAnnotation), ""};
  if (o.name.empty()) {
    // "<sa>-x-<ns>-x-<tenant>.sa-token"; a shortened (hashed) name does not
    // say its account, and is left to the anchor's garbage collection.
    const std::string tail = "-x-" + o.ns + "-x-" + tenant_ + ".sa-token";
    if (name.size() > tail.size() && name.ends_with(tail))
      o.name = name.substr(0, name.size() - tail.size());
  }
  if (o.ns.empty() || o.name.empty() || token_secret_name(o.ns, o.name) != name)
    return std::nullopt;
  return o;
}

}  // namespace vkube::syncer
