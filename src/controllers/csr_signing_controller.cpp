// The CSR signing controller for kubernetes.io/kube-apiserver-client (kube's
// pkg/controller/certificates/signer, "csrsigning"): an approved request
// for that signer gets a certificate from the tenant's client CA in
// status.certificate, so the API server then authenticates its holder as
// CN (user) and O (groups). Requests for other signers are left alone: the
// kubelet signers have no kubelets to serve here, and unknown signers
// belong to whoever implements them.
#include <algorithm>

#include "controller.h"
#include "util.h"
#include "vkube/common/base64.h"
#include "vkube/common/log.h"
#include "vkube/pki/csr.h"

namespace vkube::controllers {

namespace {

constexpr const char* kSigner = "kubernetes.io/kube-apiserver-client";
const ResourceKey kCsrs{"certificates.k8s.io", "certificatesigningrequests"};
// kube-controller-manager's --cluster-signing-duration default, and the
// least it honours of spec.expirationSeconds.
constexpr std::chrono::seconds kMaxTtl = std::chrono::hours(24 * 365);
constexpr std::chrono::seconds kMinTtl = std::chrono::minutes(10);

// The string at obj[key]; "" when absent or not a string (stored objects
// are well typed, but nothing here may throw on one that is not).
std::string text_at(const json& obj, const char* key) {
  if (!obj.is_object()) return "";
  auto it = obj.find(key);
  return it != obj.end() && it->is_string() ? it->get<std::string>() : "";
}

bool has_true_condition(const json& csr, const std::string& type) {
  const json status = csr.value("status", json::object());
  if (!status.is_object()) return false;
  for (const json& c : status.value("conditions", json::array()))
    if (text_at(c, "type") == type && text_at(c, "status") == "True") return true;
  return false;
}

// kube's validAPIServerClientUsages: client auth required, digital
// signature and key encipherment allowed, nothing else.
std::optional<std::string> usage_problem(const json& usages) {
  bool client_auth = false;
  for (const json& u : usages.is_array() ? usages : json::array()) {
    const std::string s = u.is_string() ? u.get<std::string>() : u.dump();
    if (s == "client auth")
      client_auth = true;
    else if (s != "digital signature" && s != "key encipherment")
      return "invalid usage for client certificate: " + s;
  }
  if (!client_auth)
    return std::string("missing required usage for client certificate: client auth");
  return std::nullopt;
}

std::chrono::seconds ttl_of(const json& spec) {
  auto it = spec.find("expirationSeconds");
  if (it == spec.end() || !it->is_number_integer()) return kMaxTtl;
  return std::clamp(std::chrono::seconds(it->get<int64_t>()), kMinTtl, kMaxTtl);
}

class CsrSigningController final : public Controller {
 public:
  explicit CsrSigningController(Context& ctx)
      : Controller(ctx, "csrsigning-kube-apiserver-client"), csrs_(ctx.informers.cache(kCsrs)) {
    ca_.cert_pem = ctx.options.client_ca_cert_pem;
    ca_.key_pem = ctx.options.client_ca_key_pem;
    ctx.informers.on_event(kCsrs, [this](const ObjectEvent& e) {
      if (e.type != EventType::kDeleted) queue().add(e.key);
    });
  }

 protected:
  Status reconcile(const std::string& name) override {
    ObjectPtr csr = csrs_.get(name);
    if (csr == nullptr || !has_true_condition(*csr, "Approved") ||
        has_true_condition(*csr, "Failed"))
      return Status::ok();
    const json spec = csr->value("spec", json::object());
    if (text_at(spec, "signerName") != kSigner) return Status::ok();
    const json status = csr->value("status", json::object());
    if (!text_at(status, "certificate").empty()) return Status::ok();

    json next = *csr;
    if (!next["status"].is_object()) next["status"] = json::object();
    auto pem = base64_decode(text_at(spec, "request"));
    std::optional<std::string> problem = usage_problem(spec.value("usages", json::array()));
    if (!pem) problem = "unable to parse csr \"" + name + "\": illegal base64 data";
    if (problem) {
      // A request this signer will never issue ends Failed, as kube's does.
      json& conditions = next["status"]["conditions"];
      if (!conditions.is_array()) conditions = json::array();
      conditions.push_back({{"type", "Failed"},
                            {"status", "True"},
                            {"reason", "SignerValidationFailure"},
                            {"message", *problem},
                            {"lastUpdateTime", rfc3339(ctx_.now())}});
    } else {
      pki::SignOptions o;
      for (const json& u : spec.value("usages", json::array()))
        if (u.is_string()) o.usages.push_back(u.get<std::string>());
      o.ttl = ttl_of(spec);
      auto cert = pki::sign_csr(ca_, *pem, o);
      if (!cert.is_ok())
        return Status::internal("error auto signing csr: " + cert.status().message());
      next["status"]["certificate"] = base64_encode(*cert);
    }
    ApiResult r = ctx_.client.call(
        "PUT", api_path("certificates.k8s.io/v1", kCsrs.plural, "", name, "status"), next);
    // A conflict is retried against the newer object; a deleted one is done.
    if (r.code == 404) return Status::ok();
    if (!r.ok()) {
      std::string msg = r.body.is_object() ? r.body.value("message", "") : std::string();
      return Status::internal("error updating signature for csr " + name + ": " +
                              (msg.empty() ? "HTTP " + std::to_string(r.code) : msg));
    }
    ctx_.informers.sync();
    return Status::ok();
  }

 private:
  const Lister& csrs_;
  pki::KeyPair ca_;
};

}  // namespace

std::unique_ptr<Controller> make_csr_signing_controller(Context& ctx) {
  if (ctx.options.client_ca_key_pem.empty()) {
    VKUBE_LOG(info, "no client CA key configured: the csrsigning controller does not run");
    return nullptr;
  }
  return std::make_unique<CsrSigningController>(ctx);
}

}  // namespace vkube::controllers
