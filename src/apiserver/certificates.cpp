// The CertificateSigningRequest strategy and admission (see certificates.h):
// who asked is recorded by the server, never by the body; approval and
// issuance go through their own subresources, each with its own permission.
#include "certificates.h"

#include <algorithm>

#include "authz.h"
#include "object.h"
#include "server_impl.h"
#include "vkube/common/base64.h"
#include "vkube/pki/csr.h"

namespace vkube::apiserver {

namespace {

constexpr const char* kGroup = "certificates.k8s.io";
constexpr const char* kApiServerClientSigner = "kubernetes.io/kube-apiserver-client";

json& object_at(json& obj, const char* key) {
  json& v = obj[key];
  if (!v.is_object()) v = json::object();
  return v;
}

const json& section(const json& obj, const char* key) {
  static const json kEmpty = json::object();
  if (!obj.is_object()) return kEmpty;
  auto it = obj.find(key);
  return it != obj.end() && it->is_object() ? *it : kEmpty;
}

// kube's v1 defaulting of conditions (status "True") and its
// populateConditionTimestamps: an unset lastUpdateTime is now, an unset
// lastTransitionTime is the stored one of the same type and status, or now.
void default_conditions(json& next, const json& cur) {
  json& status = object_at(next, "status");
  json& list = status["conditions"];
  if (list.is_null()) status.erase("conditions");
  if (!list.is_array()) return;  // validation says what is wrong with it
  const json& before = section(cur, "status").value("conditions", json::array());
  const std::string now = now_rfc3339();
  for (json& c : list) {
    if (!c.is_object()) continue;
    if (c.value("status", json()).is_null()) c["status"] = "True";
    if (c.value("lastUpdateTime", json()).is_null()) c["lastUpdateTime"] = now;
    if (!c.value("lastTransitionTime", json()).is_null()) continue;
    json transition = now;
    for (const json& o : before) {
      if (o.is_object() && o.value("type", json()) == c["type"] &&
          o.value("status", json()) == c["status"] && o.contains("lastTransitionTime")) {
        transition = o["lastTransitionTime"];
        break;
      }
    }
    c["lastTransitionTime"] = transition;
  }
}

bool is_approval_type(const json& condition) {
  const json type = condition.is_object() ? condition.value("type", json()) : json();
  return type == "Approved" || type == "Denied";
}

ApiError csr_forbidden(const Context& c, const std::string& name, const std::string& why) {
  return ApiError(Status(Code::kForbidden,
                         c.resource().group_resource() + " \"" + name + "\" is forbidden: " + why),
                  {{"name", name}, {"group", kGroup}, {"kind", c.resource().plural}});
}

// kube's IsAuthorizedForSignerName: `verb` on signers named after the signer,
// or after its domain with "/*".
bool authorized_for_signer(Context& c, const std::string& verb, const std::string& signer) {
  rbac::Attributes a;
  a.user = c.user.name;
  a.groups = c.user.groups;
  a.verb = verb;
  a.resource_request = true;
  a.api_group = kGroup;
  a.resource = "signers";
  a.name = signer;
  if (c.server.authorizer().authorize(a).allowed) return true;
  const size_t slash = signer.find('/');
  if (slash == std::string::npos) return false;
  a.name = signer.substr(0, slash) + "/*";
  return c.server.authorizer().authorize(a).allowed;
}

// kube's CertificateSubjectRestriction plugin.
std::optional<ApiError> restrict_subject(const Context& c, const json& obj) {
  const json& spec = section(obj, "spec");
  if (str_at(spec, "signerName") != kApiServerClientSigner) return std::nullopt;
  const json& request = spec.value("request", json());
  auto pem = request.is_string() ? base64_decode(request.get<std::string>()) : std::nullopt;
  if (!pem) return std::nullopt;  // validation refused it already
  auto subject = pki::parse_csr(*pem);
  if (!subject.is_ok()) return std::nullopt;
  const auto& orgs = subject->organizations;
  if (std::find(orgs.begin(), orgs.end(), "system:masters") == orgs.end()) return std::nullopt;
  return csr_forbidden(c, str_at(obj["metadata"], "name"),
                       std::string("use of ") + kApiServerClientSigner +
                           " signer with system:masters group is not allowed");
}

}  // namespace

bool is_csr(const api::Resource& r) {
  return !r.is_custom && r.gv.group == kGroup && r.plural == "certificatesigningrequests";
}

void prepare_csr_create(const Context& c, json& obj) {
  if (!is_csr(c.resource())) return;
  json& spec = object_at(obj, "spec");
  spec.erase("extra");
  spec["username"] = c.user.name;
  if (c.user.uid.empty())
    spec.erase("uid");
  else
    spec["uid"] = c.user.uid;
  if (c.user.groups.empty())
    spec.erase("groups");
  else
    spec["groups"] = c.user.groups;
  // Nobody creates a pre-approved (or pre-issued) request.
  obj["status"] = json::object();
}

bool prepare_csr_update(const Context& c, const json& cur, json& next) {
  if (!is_csr(c.resource())) return false;
  const std::string& sub = c.info.subresource;
  json body_status = next.value("status", json::object());
  if (!body_status.is_object()) body_status = json::object();
  if (sub.empty()) {
    // Everything but metadata is immutable here.
    if (cur.contains("spec")) next["spec"] = cur["spec"];
    if (cur.contains("status"))
      next["status"] = cur["status"];
    else
      next.erase("status");
    return true;
  }
  const json cur_status = section(cur, "status");
  const json body_conditions = body_status.value("conditions", json());
  next = cur;
  json& status = object_at(next, "status");
  if (sub == "approval") {
    // Only the conditions change here.
    if (body_conditions.is_null())
      status.erase("conditions");
    else
      status["conditions"] = body_conditions;
  } else if (sub == "status") {
    // The signer's write: the certificate and conditions other than the
    // approval ones, which stay as stored.
    status = body_status;
    json merged = json::array();
    for (const json& cond : cur_status.value("conditions", json::array()))
      if (is_approval_type(cond)) merged.push_back(cond);
    if (body_conditions.is_array())
      for (const json& cond : body_conditions)
        if (!is_approval_type(cond)) merged.push_back(cond);
    if (merged.empty())
      status.erase("conditions");
    else
      status["conditions"] = std::move(merged);
  }
  default_conditions(next, cur);
  return true;
}

std::optional<ApiError> admit_csr(Context& c, const json& obj, const json* old) {
  if (!is_csr(c.resource())) return std::nullopt;
  const std::string name = str_at(obj.value("metadata", json::object()), "name");
  FieldErrors errs;
  validate_csr(obj, old, old ? c.info.subresource : "", errs);
  if (!errs.empty()) return invalid(c.resource(), name, errs);
  if (old == nullptr) return restrict_subject(c, obj);
  // Checked against the stored signer, so a write cannot dodge it by
  // naming another.
  const std::string signer = str_at(section(*old, "spec"), "signerName");
  if (c.info.subresource == "approval" && !authorized_for_signer(c, "approve", signer))
    return csr_forbidden(
        c, name, "user not permitted to approve requests with signerName \"" + signer + "\"");
  if (c.info.subresource == "status") {
    const json& before = section(*old, "status");
    const json& after = section(obj, "status");
    const bool changes =
        before.value("certificate", json()) != after.value("certificate", json()) ||
        before.value("conditions", json()) != after.value("conditions", json());
    if (changes && !authorized_for_signer(c, "sign", signer))
      return csr_forbidden(
          c, name, "user not permitted to sign requests with signerName \"" + signer + "\"");
  }
  return std::nullopt;
}

}  // namespace vkube::apiserver
