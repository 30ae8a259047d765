// Where a tenant's objects live on the host, in one place (STYLE.md §4): a
// tenant object ns/name becomes <name>-x-<ns>-x-<tenant> in the tenant's host
// namespace, shortened with a hash when it would pass 63 characters, and
// carries labels and annotations naming the tenant, the tenant namespace,
// name and UID, so the syncer can tell its own host objects from others and
// recognise one left by an earlier tenant object of the same name.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace vkube::syncer {

inline constexpr std::string_view kManagedByLabel = "app.kubernetes.io/managed-by";
inline constexpr std::string_view kManagedByValue = "vkube";
inline constexpr std::string_view kTenantLabel = "vkube.io/tenant";
inline constexpr std::string_view kNamespaceLabel = "vkube.io/tenant-namespace";
inline constexpr std::string_view kNameAnnotation = "vkube.io/tenant-name";
inline constexpr std::string_view kUidAnnotation = "vkube.io/tenant-uid";
// The host Secrets holding a tenant service account's credentials (its
// token for the tenant's API), and the service account they belong to.
inline constexpr std::string_view kApiAccessType = "vkube.io/api-access";
inline constexpr std::string_view kServiceAccountAnnotation = "vkube.io/tenant-serviceaccount";

// A tenant object a host object stands for.
struct Origin {
  std::string ns, name, uid;
};

class NameMapper {
 public:
  // `tenant` is the tenant's name (a DNS label).
  explicit NameMapper(std::string tenant) : tenant_(std::move(tenant)) {}

  const std::string& tenant() const { return tenant_; }
  // The host name of tenant object ns/name, at most 63 characters, and
  // never the same for two (ns, name): <name>-x-<ns>-x-<tenant> where that
  // reads back one way only, else a prefix of it and a 20-hex-digit hash
  // (SHA-256) of name, namespace and tenant. Dots in subdomain names are kept.
  std::string host_name(std::string_view ns, std::string_view name) const;
  // Sets the ownership labels and annotations on `host` for `tenant_obj`.
  void mark(nlohmann::json& host, const nlohmann::json& tenant_obj) const;
  // The tenant object `host` stands for; nullopt when it is not this
  // tenant's (another tenant's, or not vkube's at all).
  std::optional<Origin> origin(const nlohmann::json& host) const;
  // `host` is this tenant's and records tenant object ns/name (of any UID).
  // A host object under the expected name that records another origin is
  // never adopted, replaced, deleted or mounted.
  bool stands_for(const nlohmann::json& host, std::string_view ns, std::string_view name) const;
  // `host` stands for an earlier object of the same name: its recorded UID
  // is not the tenant object's.
  bool stale(const nlohmann::json& host, const nlohmann::json& tenant_obj) const;

  // The host Secret with tenant service account ns/sa's credentials:
  // "<host_name(ns, sa)>.sa-token" (no tenant object maps to a name with a
  // dot after the tenant or the hash, so it meets no copied object).
  std::string token_secret_name(std::string_view ns, std::string_view sa) const;
  // The service account (ns, name; no uid) whose credentials `host` holds:
  // this tenant's labels, the credentials type, and a name that is
  // token_secret_name of the account it records (an annotation; read from
  // the name itself for Secrets made before the annotation). nullopt for
  // anything else, so nothing foreign is taken for a token Secret.
  std::optional<Origin> token_origin(const nlohmann::json& host) const;

 private:
  std::string tenant_;
};

}  // namespace vkube::syncer
