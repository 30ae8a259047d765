// Authentication and authorization steps of the handler chain: who is
// asking (client certificate, bearer token, impersonation headers), and may
// they (RBAC, see rbac/policy.h).
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <optional>

#include "errors.h"
#include "policy.h"
#include "prefix_revision.h"
#include "request_info.h"
#include "vkube/apiserver/apiserver.h"
#include "vkube/storage/backend.h"

namespace vkube::apiserver {

class Server;
struct Context;

// RBAC over the objects in the store. The compiled policy is cached and
// rebuilt only after an RBAC object changed: a watch on the RBAC prefix
// records the revision of each RBAC write on the committing writer's thread,
// before the writer is acknowledged, and a policy compiled from a list at an
// older revision is stale. So a client's next request sees its own RBAC
// writes, and a GET that changes nothing costs one comparison.
class Authorizer {
 public:
  // `backend` (not owned, may be null: then nothing but system:masters is
  // allowed) must outlive the authorizer or its shutdown().
  explicit Authorizer(storage::Backend* backend);
  ~Authorizer();
  Authorizer(const Authorizer&) = delete;
  Authorizer& operator=(const Authorizer&) = delete;

  // The decision for a request. Members of system:masters are allowed without
  // a lookup. A store error denies, with the error as the reason.
  // Thread-safe.
  rbac::Decision authorize(const rbac::Attributes& a);

  // The current policy, rebuilt first if RBAC objects changed; the storage
  // error if it could not be read. Thread-safe.
  Result<std::shared_ptr<const rbac::Policy>> policy();

  // Ends the watch (before the backend closes). Idempotent.
  void shutdown();

 private:
  storage::Backend* backend_;
  // The newest RBAC write (null without a backend).
  std::unique_ptr<PrefixRevision> rbac_revision_;
  std::mutex mu_;  // guards policy_ and built_revision_
  std::shared_ptr<const rbac::Policy> policy_;
  storage::Revision built_revision_ = -1;  // the revision policy_ was listed at
  std::mutex rebuild_mu_;                  // one rebuild at a time; guards the rest
  // The RBAC objects of the last build, read, by key.
  struct ParsedObject {
    storage::Revision mod_revision = 0;
    std::shared_ptr<const rbac::CompiledObject> object;  // null: grants nothing
  };
  std::map<std::string, ParsedObject, std::less<>> parsed_;
};

// The attributes of a request by `user` (kube's authorizer.Attributes), as
// kube's RequestInfo has them: for /api/v1/namespaces/<name> the namespace is
// <name>, and a list or watch with fieldSelector=metadata.name=<name> names
// its object (so resourceNames rules can grant `kubectl get -w` of one object).
rbac::Attributes request_attributes(const http::Request& req, const RequestInfo& info,
                                    const UserInfo& user);

// 403 Forbidden for a denied request, worded and detailed as kube-apiserver's:
//   pods "x" is forbidden: User "alice" cannot get resource "pods" in API group "" in ...
ApiError forbidden(const rbac::Attributes& a, const std::string& reason);

// The user of a request from its client certificate or bearer token, with the
// group system:authenticated added; nullopt when it presents no known
// credentials (anonymous when Options::allow_anonymous).
std::optional<UserInfo> authenticate(const Options& options, const http::Request& req);

// Applies the Impersonate-User/-Group/-Uid headers: checks that `user` may
// impersonate each (verb "impersonate" on users, groups, serviceaccounts or
// uids) and replaces it with the impersonated user. 403 when not allowed,
// 400 for groups without a user.
std::optional<ApiError> impersonate(Authorizer& authz, const http::Request& req, UserInfo& user);

// Admission of an RBAC object about to be written (create or update):
// Forbidden when it would grant the user permissions it does not hold (see
// rbac_admission.cpp); nullopt for other kinds and for system:masters.
std::optional<ApiError> admit_rbac(Context& c, const json& obj);

}  // namespace vkube::apiserver
