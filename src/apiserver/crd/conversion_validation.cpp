// Validation of a CRD's spec.conversion, worded as kube-apiserver's
// (apiextensions validateCustomResourceConversion and the webhook URL and Service checks).
// Kube validates its internal type, so the paths say webhookClientConfig where v1 writes
// webhook.clientConfig; clients see those paths, so they are kept.
#include <set>

#include "definition.h"
#include "vkube/api/validation.h"

namespace vkube::apiserver::crd {

namespace {

using Type = FieldError::Type;

const json kAbsent;

const json& at(const json& obj, const char* key) {
  if (!obj.is_object()) return kAbsent;
  auto it = obj.find(key);
  return it == obj.end() ? kAbsent : *it;
}

std::string str(const json& obj, const char* key) {
  const json& v = at(obj, key);
  return v.is_string() ? v.get<std::string>() : "";
}

void check_url(const std::string& url, const std::string& p, FieldErrors& errs) {
  auto invalid = [&](const std::string& why) { errs.push_back({Type::kInvalid, p, why, url}); };
  const auto scheme_end = url.find("://");
  if (scheme_end == std::string::npos) {
    invalid("'https' is the only allowed URL scheme");
    return;
  }
  std::string scheme = url.substr(0, scheme_end);
  for (char& ch : scheme) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  if (scheme != "https") invalid("'https' is the only allowed URL scheme");
  const std::string rest = url.substr(scheme_end + 3);
  const std::string authority = rest.substr(0, rest.find_first_of("/?#"));
  if (authority.find('@') != std::string::npos)
    invalid("user information is not permitted in the URL");
  else if (authority.empty())
    invalid("host must be specified");
  if (rest.find('#') != std::string::npos) invalid("fragments are not permitted in the URL");
  if (rest.find('?') != std::string::npos) invalid("query parameters are not permitted in the URL");
}

void check_service(const json& svc, const std::string& p, FieldErrors& errs) {
  if (str(svc, "name").empty())
    errs.push_back({Type::kRequired, p + ".name", "service name is required", {}});
  if (str(svc, "namespace").empty())
    errs.push_back({Type::kRequired, p + ".namespace", "service namespace is required", {}});
  const json& port = at(svc, "port");
  if (port.is_number_integer() && (port.get<int64_t>() < 1 || port.get<int64_t>() > 65535))
    errs.push_back({Type::kInvalid, p + ".port",
                    "port is not valid: must be between 1 and 65535, inclusive", port});
  const std::string path = str(svc, "path");
  if (path.empty()) return;
  if (path[0] != '/') {
    errs.push_back({Type::kInvalid, p + ".path", "must start with a '/'", path});
    return;
  }
  if (path.find("//") != std::string::npos)
    errs.push_back({Type::kInvalid, p + ".path", "segment[1] may not be empty", path});
}

void check_review_versions(const json& versions, const std::string& p, FieldErrors& errs) {
  if (!versions.is_array() || versions.empty()) {
    errs.push_back({Type::kRequired, p, "", {}});
    return;
  }
  std::set<std::string> seen;
  bool accepted = false;
  for (size_t i = 0; i < versions.size(); ++i) {
    const std::string v = versions[i].is_string() ? versions[i].get<std::string>() : "";
    const std::string item = p + "[" + std::to_string(i) + "]";
    for (const std::string& why : api::validate_dns1035_label(v))
      errs.push_back({Type::kInvalid, item, why, v});
    if (!seen.insert(v).second) errs.push_back({Type::kInvalid, item, "duplicate version", v});
    accepted = accepted || v == "v1" || v == "v1beta1";
  }
  if (!accepted)
    errs.push_back({Type::kInvalid, p, "must include at least one of v1, v1beta1", versions});
}

}  // namespace

void validate_conversion(const json& crd, FieldErrors& errs) {
  const json& spec = at(crd, "spec");
  const json& conversion = at(spec, "conversion");
  const std::string strategy = str(conversion, "strategy");
  const json& webhook = at(conversion, "webhook");
  const json& cc = at(webhook, "clientConfig");
  const std::string p = "spec.conversion";
  if (!strategy.empty() && strategy != "None" && strategy != "Webhook") {
    errs.push_back({Type::kNotSupported, p + ".strategy", "supported values: \"None\", \"Webhook\"",
                    strategy});
    return;
  }
  if (strategy != "Webhook") {
    if (cc.is_object())
      errs.push_back({Type::kForbidden,
                      p + ".webhookClientConfig",
                      "should not be set when strategy is not set to Webhook",
                      {}});
    return;
  }
  if (!cc.is_object()) {
    errs.push_back({Type::kRequired,
                    p + ".webhookClientConfig",
                    "required when strategy is set to Webhook",
                    {}});
  } else {
    const bool url = at(cc, "url").is_string();
    const bool service = at(cc, "service").is_object();
    if (url == service)
      errs.push_back({Type::kRequired,
                      p + ".webhookClientConfig",
                      "exactly one of url or service is required",
                      {}});
    else if (url)
      check_url(str(cc, "url"), p + ".webhookClientConfig.url", errs);
    else
      check_service(cc["service"], p + ".webhookClientConfig.service", errs);
  }
  check_review_versions(at(webhook, "conversionReviewVersions"), p + ".conversionReviewVersions",
                        errs);
  const json& preserve = at(spec, "preserveUnknownFields");
  if (preserve.is_boolean() && preserve.get<bool>())
    errs.push_back({Type::kInvalid, p + ".strategy",
                    "must be None if spec.preserveUnknownFields is true", strategy});
}

}  // namespace vkube::apiserver::crd
