// Rule and subject matching, and the wording of denials.
#include <algorithm>
#include <cstdio>

#include "policy.h"

namespace vkube::apiserver::rbac {

namespace {

std::vector<std::string> strings(const json& rule, const char* field) {
  std::vector<std::string> out;
  auto it = rule.find(field);
  if (it == rule.end() || !it->is_array()) return out;
  for (const json& v : *it)
    if (v.is_string()) out.push_back(v.get<std::string>());
  return out;
}

bool contains_or_star(const std::vector<std::string>& values, std::string_view wanted) {
  for (const std::string& v : values)
    if (v == "*" || v == wanted) return true;
  return false;
}

bool resource_matches(const PolicyRule& rule, std::string_view combined,
                      std::string_view subresource) {
  for (const std::string& r : rule.resources) {
    if (r == "*" || r == combined) return true;
    // "*/status" grants the status subresource of every resource.
    if (!subresource.empty() && r.size() == subresource.size() + 2 && r.starts_with("*/") &&
        std::string_view(r).substr(2) == subresource)
      return true;
  }
  return false;
}

bool name_matches(const PolicyRule& rule, std::string_view name) {
  if (rule.resource_names.empty()) return true;
  return std::find(rule.resource_names.begin(), rule.resource_names.end(), name) !=
         rule.resource_names.end();
}

bool url_matches(const PolicyRule& rule, std::string_view path) {
  for (const std::string& u : rule.non_resource_urls) {
    if (u == "*" || u == path) return true;
    // "/apis/*" grants every path below /apis/.
    if (!u.empty() && u.back() == '*' &&
        path.starts_with(std::string_view(u).substr(0, u.size() - 1)))
      return true;
  }
  return false;
}

}  // namespace

PolicyRule PolicyRule::from_json(const json& rule) {
  PolicyRule r;
  if (!rule.is_object()) return r;
  r.verbs = strings(rule, "verbs");
  r.api_groups = strings(rule, "apiGroups");
  r.resources = strings(rule, "resources");
  r.resource_names = strings(rule, "resourceNames");
  r.non_resource_urls = strings(rule, "nonResourceURLs");
  return r;
}

json PolicyRule::to_json() const {
  json r = json::object();
  r["verbs"] = verbs;
  if (!api_groups.empty()) r["apiGroups"] = api_groups;
  if (!resources.empty()) r["resources"] = resources;
  if (!resource_names.empty()) r["resourceNames"] = resource_names;
  if (!non_resource_urls.empty()) r["nonResourceURLs"] = non_resource_urls;
  return r;
}

bool rule_allows(const Attributes& a, const PolicyRule& rule) {
  if (!contains_or_star(rule.verbs, a.verb)) return false;
  if (!a.resource_request) return url_matches(rule, a.path);
  if (!contains_or_star(rule.api_groups, a.api_group)) return false;
  if (a.subresource.empty()) {
    if (!resource_matches(rule, a.resource, "")) return false;
  } else if (!resource_matches(rule, a.resource + "/" + a.subresource, a.subresource)) {
    return false;
  }
  return name_matches(rule, a.name);
}

bool subject_applies(const Subject& s, std::string_view user,
                     const std::vector<std::string>& groups, std::string_view binding_ns) {
  if (s.kind == "User") return s.name == user;
  if (s.kind == "Group") return std::find(groups.begin(), groups.end(), s.name) != groups.end();
  if (s.kind == "ServiceAccount") {
    std::string_view ns = s.ns.empty() ? binding_ns : std::string_view(s.ns);
    if (ns.empty() || !user.starts_with(kServiceAccountPrefix)) return false;
    std::string_view rest = user.substr(kServiceAccountPrefix.size());
    return rest.size() == ns.size() + 1 + s.name.size() && rest.starts_with(ns) &&
           rest[ns.size()] == ':' && rest.substr(ns.size() + 1) == s.name;
  }
  return false;
}

bool is_privileged(const std::vector<std::string>& groups) {
  for (const std::string& g : groups)
    if (g == kMastersGroup) return true;
  return false;
}

std::string go_quote(std::string_view s) {
  std::string out = "\"";
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    switch (ch) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        if (c < 0x20 || c == 0x7f) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\x%02x", c);
          out += buf;
        } else {
          out += ch;
        }
    }
  }
  return out + "\"";
}

std::string forbidden_message(const Attributes& a) {
  std::string msg = "User " + go_quote(a.user) + " cannot " + a.verb;
  if (!a.resource_request) return msg + " path " + go_quote(a.path);
  std::string resource = a.resource;
  if (!a.subresource.empty()) resource += "/" + a.subresource;
  msg += " resource " + go_quote(resource) + " in API group " + go_quote(a.api_group);
  if (!a.ns.empty()) return msg + " in the namespace " + go_quote(a.ns);
  return msg + " at the cluster scope";
}

}  // namespace vkube::apiserver::rbac
