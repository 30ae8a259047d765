// Validation of CertificateSigningRequests, worded as kube's
// pkg/apis/certificates/validation: the PEM request and its signature, the
// signer name, usages, expirationSeconds, conditions, and what an update
// through each subresource may change.
#include <algorithm>
#include <set>

#include "builtin/kind_util.h"
#include "certificates.h"
#include "vkube/api/validation.h"
#include "vkube/common/base64.h"
#include "vkube/pki/csr.h"

namespace vkube::apiserver {

namespace {

namespace util = builtin::util;
using builtin::util::duplicate;
using builtin::util::forbidden;
using builtin::util::not_supported;
using builtin::util::required;

const std::vector<std::string>& valid_usages() {
  // Sorted, as kube lists the supported values.
  static const std::vector<std::string> kUsages = {"any",
                                                   "cert sign",
                                                   "client auth",
                                                   "code signing",
                                                   "content commitment",
                                                   "crl sign",
                                                   "data encipherment",
                                                   "decipher only",
                                                   "digital signature",
                                                   "email protection",
                                                   "encipher only",
                                                   "ipsec end system",
                                                   "ipsec tunnel",
                                                   "ipsec user",
                                                   "key agreement",
                                                   "key encipherment",
                                                   "microsoft sgc",
                                                   "netscape sgc",
                                                   "ocsp signing",
                                                   "s/mime",
                                                   "server auth",
                                                   "signing",
                                                   "timestamping"};
  return kUsages;
}

const json& at(const json& obj, const char* key) {
  static const json kNull;
  if (!obj.is_object()) return kNull;
  auto it = obj.find(key);
  return it == obj.end() ? kNull : *it;
}

std::string text(const json& v) {
  return v.is_string() ? v.get<std::string>() : std::string();
}

// kube's ValidateSignerName.
void validate_signer_name(const std::string& signer, FieldErrors& errs) {
  const std::string f = "spec.signerName";
  if (signer.empty()) return required(errs, f);
  const size_t slash = signer.find('/');
  if (slash == std::string::npos || signer.find('/', slash + 1) != std::string::npos)
    return util::invalid(errs, f, signer,
                         "must be a fully qualified domain and path of the form "
                         "'example.com/signer-name'");
  const std::string domain = signer.substr(0, slash), path = signer.substr(slash + 1);
  if (domain.size() > 253) util::too_long(errs, f, 253);
  size_t labels = 0;
  for (size_t i = 0;; ++labels) {
    size_t dot = domain.find('.', i);
    std::string label = domain.substr(i, dot == std::string::npos ? std::string::npos : dot - i);
    auto problems = api::validate_dns1123_label(label);
    for (const auto& p : problems)
      util::invalid(errs, f, domain, "validating label \"" + label + "\": " + p);
    if (!problems.empty()) {
      labels = 2;  // kube stops at the first bad label and skips the count check
      break;
    }
    if (dot == std::string::npos) {
      ++labels;
      break;
    }
    i = dot + 1;
  }
  if (labels < 2)
    util::invalid(errs, f, domain,
                  "should be a domain with at least two segments separated by dots");
  for (size_t i = 0;;) {
    size_t dot = path.find('.', i);
    std::string label = path.substr(i, dot == std::string::npos ? std::string::npos : dot - i);
    auto problems = api::validate_dns1123_subdomain(label);
    for (const auto& p : problems)
      util::invalid(errs, f, path, "validating label \"" + label + "\": " + p);
    if (!problems.empty() || dot == std::string::npos) break;
    i = dot + 1;
  }
  if (signer.size() > 253 + 253 + 63 + 2) util::too_long(errs, f, 253 + 253 + 63 + 2);
}

// The decoded PEM of a base64 bytes field; nullopt (with an error) when the
// field is not base64.
std::optional<std::string> decoded(const json& v, const std::string& field, FieldErrors& errs) {
  if (v.is_null()) return std::string();
  if (!v.is_string()) {
    util::invalid(errs, field, v, "must be base64-encoded bytes");
    return std::nullopt;
  }
  auto bytes = vkube::base64_decode(v.get<std::string>());
  if (!bytes) util::invalid(errs, field, v, "illegal base64 data");
  return bytes;
}

std::vector<json> conditions_of(const json& csr, const std::string& type) {
  std::vector<json> out;
  const json& list = at(at(csr, "status"), "conditions");
  if (!list.is_array()) return out;
  for (const json& c : list)
    if (text(at(c, "type")) == type) out.push_back(c);
  return out;
}

void validate_conditions(const json& csr, const json* old, FieldErrors& errs) {
  const json& list = at(at(csr, "status"), "conditions");
  if (!list.is_null() && !list.is_array())
    util::invalid(errs, "status.conditions", list, "must be a list of conditions");
  if (!list.is_array()) return;
  // Problems already stored are tolerated on update, as kube tolerates them.
  const bool both_before =
      old && !conditions_of(*old, "Approved").empty() && !conditions_of(*old, "Denied").empty();
  std::set<std::string> seen;
  bool approved = false, denied = false;
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string base = "status.conditions[" + std::to_string(i) + "]";
    const std::string type = text(at(list[i], "type"));
    const json& status_value = at(list[i], "status");
    const std::string status = text(status_value);
    if (type.empty()) required(errs, base + ".type");
    const bool true_only = type == "Approved" || type == "Denied" || type == "Failed";
    if (status_value.is_null() || (status_value.is_string() && status.empty())) {
      required(errs, base + ".status");
    } else if (!status_value.is_string() ||
               (true_only ? status != "True"
                          : status != "True" && status != "False" && status != "Unknown")) {
      not_supported(errs, base + ".status", status_value,
                    true_only ? std::vector<std::string>{"True"}
                              : std::vector<std::string>{"False", "True", "Unknown"});
    }
    if (!both_before) {
      if ((type == "Approved" && denied) || (type == "Denied" && approved))
        util::invalid(errs, base + ".type", type,
                      "Approved and Denied conditions are mutually exclusive");
      approved = approved || type == "Approved";
      denied = denied || type == "Denied";
    }
    if (!seen.insert(type).second) duplicate(errs, base + ".type", type);
  }
}

// What an update may change, by subresource (kube's validateCertificateSigningRequestUpdate).
void validate_update(const json& csr, const json& old, const std::string& sub, FieldErrors& errs) {
  for (const char* t : {"Approved", "Denied", "Failed"})
    if (conditions_of(csr, t).size() < conditions_of(old, t).size())
      forbidden(errs, "status.conditions",
                std::string("updates may not remove a condition of type \"") + t + "\"");
  if (sub != "approval") {
    for (const char* t : {"Approved", "Denied"}) {
      auto now = conditions_of(csr, t), before = conditions_of(old, t);
      if (now.size() > before.size())
        forbidden(errs, "status.conditions",
                  std::string("updates may not add a condition of type \"") + t + "\"");
      else if (now.size() == before.size() && now != before)
        forbidden(errs, "status.conditions",
                  std::string("updates may not modify a condition of type \"") + t + "\"");
    }
  }
  const json& cert = at(at(csr, "status"), "certificate");
  const json& old_cert = at(at(old, "status"), "certificate");
  if (cert != old_cert && !(cert.is_null() && text(old_cert).empty())) {
    if (sub != "status")
      forbidden(errs, "status.certificate", "updates may not set certificate content");
    else if (!text(old_cert).empty())
      forbidden(errs, "status.certificate", "updates may not modify existing certificate content");
  }
}

}  // namespace

void validate_csr(const json& obj, const json* old, const std::string& sub, FieldErrors& errs) {
  const json& spec = at(obj, "spec");
  if (auto pem = decoded(at(spec, "request"), "spec.request", errs)) {
    auto parsed = pki::parse_csr(*pem);
    if (!parsed.is_ok())
      util::invalid(errs, "spec.request", at(spec, "request"), parsed.status().message());
  }
  const json& usages = at(spec, "usages");
  // An update keeps the stored spec (prepare_csr_update): what is already
  // stored is tolerated, as kube tolerates it.
  const bool stored = old != nullptr;
  if (!usages.is_array() || usages.empty()) {
    required(errs, "spec.usages");
  } else if (!stored) {
    std::set<std::string> seen;
    for (size_t i = 0; i < usages.size(); ++i) {
      const std::string u = text(usages[i]);
      const std::string f = "spec.usages[" + std::to_string(i) + "]";
      if (!std::binary_search(valid_usages().begin(), valid_usages().end(), u))
        not_supported(errs, f, usages[i], valid_usages());
      if (!seen.insert(u).second) duplicate(errs, f, usages[i]);
    }
  }
  const std::string signer = text(at(spec, "signerName"));
  if (signer == "kubernetes.io/legacy-unknown" &&
      !(old && text(at(at(*old, "spec"), "signerName")) == signer))
    util::invalid(errs, "spec.signerName", signer,
                  "the legacy signerName is not allowed via this API version");
  else
    validate_signer_name(signer, errs);
  const json& expiration = at(spec, "expirationSeconds");
  if (!expiration.is_null() && !expiration.is_number_integer())
    util::invalid(errs, "spec.expirationSeconds", expiration, "must be an integer");
  else if (expiration.is_number_integer() && expiration.get<int64_t>() < 600)
    util::invalid(errs, "spec.expirationSeconds", expiration,
                  "may not specify a duration less than 600 seconds (10 minutes)");
  validate_conditions(obj, old, errs);
  const json& cert = at(at(obj, "status"), "certificate");
  const bool cert_unchanged = old && cert == at(at(*old, "status"), "certificate");
  if (!cert_unchanged) {
    if (auto pem = decoded(cert, "status.certificate", errs)) {
      Status s = pki::check_certificate_pem(*pem);
      if (!s.is_ok()) util::invalid(errs, "status.certificate", "<certificate data>", s.message());
    }
  }
  if (old) validate_update(obj, *old, sub, errs);
}

}  // namespace vkube::apiserver
