// Escalation prevention: whether the rules a user holds cover the rules it
// wants to put in a role or bind (kube's rbac validation.Covers).
#include <algorithm>

#include "policy.h"

namespace vkube::apiserver::rbac {

namespace {

bool has(const std::vector<std::string>& values, std::string_view v) {
  return std::find(values.begin(), values.end(), v) != values.end();
}

// One verb and one group/resource/name, or one verb and one path.
std::vector<PolicyRule> breakdown(const PolicyRule& r) {
  std::vector<PolicyRule> out;
  for (const std::string& g : r.api_groups) {
    for (const std::string& res : r.resources) {
      for (const std::string& verb : r.verbs) {
        if (r.resource_names.empty()) {
          out.push_back({{verb}, {g}, {res}, {}, {}});
        } else {
          for (const std::string& name : r.resource_names)
            out.push_back({{verb}, {g}, {res}, {name}, {}});
        }
      }
    }
  }
  for (const std::string& url : r.non_resource_urls)
    for (const std::string& verb : r.verbs) out.push_back({{verb}, {}, {}, {}, {url}});
  return out;
}

bool resource_covered(const std::vector<std::string>& held, const std::string& wanted) {
  if (has(held, "*") || has(held, wanted)) return true;
  // "*/status" covers the status subresource of everything.
  const size_t slash = wanted.find('/');
  return slash != std::string::npos && has(held, "*" + wanted.substr(slash));
}

bool url_covered(const std::vector<std::string>& held, const std::string& wanted) {
  for (const std::string& u : held) {
    if (u == "*" || u == wanted) return true;
    if (!u.empty() && u.back() == '*' &&
        std::string_view(wanted).starts_with(std::string_view(u).substr(0, u.size() - 1)))
      return true;
  }
  return false;
}

// Whether `held` covers the atomic rule `part`.
bool covers(const PolicyRule& held, const PolicyRule& part) {
  if (!has(held.verbs, "*") && !has(held.verbs, part.verbs[0])) return false;
  if (!part.non_resource_urls.empty())
    return url_covered(held.non_resource_urls, part.non_resource_urls[0]);
  if (!has(held.api_groups, "*") && !has(held.api_groups, part.api_groups[0])) return false;
  if (!resource_covered(held.resources, part.resources[0])) return false;
  if (held.resource_names.empty()) return true;
  return !part.resource_names.empty() && has(held.resource_names, part.resource_names[0]);
}

std::string quoted_list(const std::vector<std::string>& values) {
  std::string out = "[";
  for (size_t i = 0; i < values.size(); ++i) out += (i ? " " : "") + go_quote(values[i]);
  return out + "]";
}

}  // namespace

std::vector<PolicyRule> uncovered_rules(const std::vector<PolicyRule>& held,
                                        const std::vector<PolicyRule>& wanted) {
  std::vector<PolicyRule> missing;
  for (const PolicyRule& rule : wanted) {
    for (PolicyRule& part : breakdown(rule)) {
      const bool ok = std::any_of(held.begin(), held.end(),
                                  [&](const PolicyRule& h) { return covers(h, part); });
      if (ok) continue;
      // Merge with a missing part that differs only in its verb.
      auto same = std::find_if(missing.begin(), missing.end(), [&](const PolicyRule& m) {
        return m.api_groups == part.api_groups && m.resources == part.resources &&
               m.resource_names == part.resource_names &&
               m.non_resource_urls == part.non_resource_urls;
      });
      if (same == missing.end())
        missing.push_back(std::move(part));
      else if (!has(same->verbs, part.verbs[0]))
        same->verbs.push_back(part.verbs[0]);
    }
  }
  return missing;
}

std::string compact_string(const PolicyRule& r) {
  std::vector<std::string> parts;
  if (!r.api_groups.empty()) parts.push_back("APIGroups:" + quoted_list(r.api_groups));
  if (!r.resources.empty()) parts.push_back("Resources:" + quoted_list(r.resources));
  if (!r.non_resource_urls.empty())
    parts.push_back("NonResourceURLs:" + quoted_list(r.non_resource_urls));
  if (!r.resource_names.empty()) parts.push_back("ResourceNames:" + quoted_list(r.resource_names));
  if (!r.verbs.empty()) parts.push_back("Verbs:" + quoted_list(r.verbs));
  std::string out = "{";
  for (size_t i = 0; i < parts.size(); ++i) out += (i ? ", " : "") + parts[i];
  return out + "}";
}

}  // namespace vkube::apiserver::rbac
