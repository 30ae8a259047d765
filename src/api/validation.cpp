// Kubernetes' name and value rules (k8s.io/apimachinery pkg/util/validation
// and pkg/api/validation/path, 1.32) as hand-written character checks: these
// run for every label of every object written, where a regex engine is slow.
// The messages quote the regexes Kubernetes validates with, because users
// read them in kubectl's errors.
#include "vkube/api/validation.h"

#include <algorithm>
#include <initializer_list>
#include <string>

namespace vkube::api {
namespace {

constexpr std::size_t kDns1123LabelMaxLength = 63;
constexpr std::size_t kDns1123SubdomainMaxLength = 253;
constexpr std::size_t kDns1035LabelMaxLength = 63;
constexpr std::size_t kQualifiedNameMaxLength = 63;
constexpr std::size_t kLabelValueMaxLength = 63;

constexpr std::string_view kDns1123LabelFmt = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
constexpr std::string_view kDns1123LabelErrMsg =
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and "
    "must start and end with an alphanumeric character";
constexpr std::string_view kDns1123SubdomainFmt =
    "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
constexpr std::string_view kDns1123SubdomainErrMsg =
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character";
constexpr std::string_view kDns1035LabelFmt = "[a-z]([-a-z0-9]*[a-z0-9])?";
constexpr std::string_view kDns1035LabelErrMsg =
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
    "alphabetic character, and end with an alphanumeric character";
constexpr std::string_view kQualifiedNameFmt = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
constexpr std::string_view kQualifiedNameErrMsg =
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character";
constexpr std::string_view kLabelValueFmt = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?";
constexpr std::string_view kLabelValueErrMsg =
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
    "'.', and must start and end with an alphanumeric character";
constexpr std::string_view kEnvVarNameFmt = "[-._a-zA-Z][-._a-zA-Z0-9]*";
constexpr std::string_view kEnvVarNameErrMsg =
    "a valid environment variable name must consist of alphabetic characters, digits, '_', '-', "
    "or '.', and must not start with a digit";
constexpr std::string_view kRelaxedEnvVarNameErrMsg =
    "a valid environment variable name must consist only of printable ASCII characters other "
    "than '='";

// Kubernetes' RegexError: "<msg> (e.g. 'a',  or 'b', regex used for
// validation is '<fmt>')". The doubled space before "or" is theirs.
std::string regex_error(std::string_view msg, std::string_view fmt,
                        std::initializer_list<std::string_view> examples) {
  std::string out(msg);
  if (examples.size() == 0) {
    out += " (regex used for validation is '";
  } else {
    out += " (e.g. ";
    bool first = true;
    for (std::string_view example : examples) {
      if (!first) out += " or ";
      first = false;
      out += '\'';
      out += example;
      out += "', ";
    }
    out += "regex used for validation is '";
  }
  out += fmt;
  out += "')";
  return out;
}

std::string max_len_error(std::size_t length) {
  return "must be no more than " + std::to_string(length) + " characters";
}

constexpr std::string_view kEmptyError = "must be non-empty";

bool is_lower_alnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}
bool is_alpha(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}
bool is_alnum(char c) {
  return is_alpha(c) || (c >= '0' && c <= '9');
}

// [a-z0-9]([-a-z0-9]*[a-z0-9])?
bool is_dns1123_label(std::string_view s) {
  if (s.empty() || !is_lower_alnum(s.front()) || !is_lower_alnum(s.back())) return false;
  for (char c : s) {
    if (!is_lower_alnum(c) && c != '-') return false;
  }
  return true;
}

// Labels joined by single dots.
bool is_dns1123_subdomain(std::string_view s) {
  while (true) {
    std::size_t dot = s.find('.');
    if (!is_dns1123_label(s.substr(0, dot))) return false;
    if (dot == std::string_view::npos) return true;
    s.remove_prefix(dot + 1);
  }
}

// [a-z]([-a-z0-9]*[a-z0-9])?
bool is_dns1035_label(std::string_view s) {
  return is_dns1123_label(s) && s.front() >= 'a' && s.front() <= 'z';
}

// ([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]
bool is_qualified_name_part(std::string_view s) {
  if (s.empty() || !is_alnum(s.front()) || !is_alnum(s.back())) return false;
  for (char c : s) {
    if (!is_alnum(c) && c != '-' && c != '_' && c != '.') return false;
  }
  return true;
}

// [-._a-zA-Z][-._a-zA-Z0-9]*
bool is_env_var_name(std::string_view s) {
  if (s.empty() || (s.front() >= '0' && s.front() <= '9')) return false;
  for (char c : s) {
    if (!is_alnum(c) && c != '-' && c != '.' && c != '_') return false;
  }
  return true;
}

}  // namespace

std::vector<std::string> validate_dns1123_label(std::string_view value) {
  std::vector<std::string> errs;
  if (value.size() > kDns1123LabelMaxLength) errs.push_back(max_len_error(kDns1123LabelMaxLength));
  if (!is_dns1123_label(value)) {
    if (is_dns1123_subdomain(value)) {
      // A valid subdomain but not a label: the length was checked, so dots.
      errs.emplace_back("must not contain dots");
    } else {
      errs.push_back(regex_error(kDns1123LabelErrMsg, kDns1123LabelFmt, {"my-name", "123-abc"}));
    }
  }
  return errs;
}

std::vector<std::string> validate_dns1123_subdomain(std::string_view value) {
  std::vector<std::string> errs;
  if (value.size() > kDns1123SubdomainMaxLength) {
    errs.push_back(max_len_error(kDns1123SubdomainMaxLength));
  }
  if (!is_dns1123_subdomain(value)) {
    errs.push_back(regex_error(kDns1123SubdomainErrMsg, kDns1123SubdomainFmt, {"example.com"}));
  }
  return errs;
}

std::vector<std::string> validate_dns1035_label(std::string_view value) {
  std::vector<std::string> errs;
  if (value.size() > kDns1035LabelMaxLength) errs.push_back(max_len_error(kDns1035LabelMaxLength));
  if (!is_dns1035_label(value)) {
    errs.push_back(regex_error(kDns1035LabelErrMsg, kDns1035LabelFmt, {"my-name", "abc-123"}));
  }
  return errs;
}

std::vector<std::string> validate_path_segment_name(std::string_view value) {
  if (value == "." || value == "..") return {"may not be '" + std::string(value) + "'"};
  std::vector<std::string> errs;
  if (value.find('/') != std::string_view::npos) errs.emplace_back("may not contain '/'");
  if (value.find('%') != std::string_view::npos) errs.emplace_back("may not contain '%'");
  return errs;
}

std::vector<std::string> validate_qualified_name(std::string_view value) {
  std::vector<std::string> errs;
  std::string_view name = value;
  std::size_t slash = value.find('/');
  if (slash != std::string_view::npos) {
    if (value.find('/', slash + 1) != std::string_view::npos) {
      errs.push_back(
          "a qualified name " +
          regex_error(kQualifiedNameErrMsg, kQualifiedNameFmt, {"MyName", "my.name", "123-abc"}) +
          " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')");
      return errs;
    }
    std::string_view prefix = value.substr(0, slash);
    name = value.substr(slash + 1);
    if (prefix.empty()) {
      errs.push_back("prefix part " + std::string(kEmptyError));
    } else {
      for (std::string& msg : validate_dns1123_subdomain(prefix)) {
        errs.push_back("prefix part " + msg);
      }
    }
  }
  if (name.empty()) {
    errs.push_back("name part " + std::string(kEmptyError));
  } else if (name.size() > kQualifiedNameMaxLength) {
    errs.push_back("name part " + max_len_error(kQualifiedNameMaxLength));
  }
  if (!is_qualified_name_part(name)) {
    errs.push_back("name part " + regex_error(kQualifiedNameErrMsg, kQualifiedNameFmt,
                                              {"MyName", "my.name", "123-abc"}));
  }
  return errs;
}

std::vector<std::string> validate_label_value(std::string_view value) {
  std::vector<std::string> errs;
  if (value.size() > kLabelValueMaxLength) errs.push_back(max_len_error(kLabelValueMaxLength));
  if (!value.empty() && !is_qualified_name_part(value)) {
    errs.push_back(
        regex_error(kLabelValueErrMsg, kLabelValueFmt, {"MyValue", "my_value", "12345"}));
  }
  return errs;
}

std::vector<std::string> validate_env_var_name(std::string_view value) {
  std::vector<std::string> errs;
  if (!is_env_var_name(value)) {
    errs.push_back(regex_error(kEnvVarNameErrMsg, kEnvVarNameFmt,
                               {"my.env-name", "MY_ENV.NAME", "MyEnvName1"}));
  }
  // Names that would change directory when used as a path.
  if (value == ".") {
    errs.emplace_back("must not be '.'");
  } else if (value == "..") {
    errs.emplace_back("must not be '..'");
  } else if (value.starts_with("..")) {
    errs.emplace_back("must not start with '..'");
  }
  return errs;
}

std::vector<std::string> validate_relaxed_env_var_name(std::string_view value) {
  std::vector<std::string> errs;
  if (value.empty()) errs.push_back("environment variable name " + std::string(kEmptyError));
  for (char c : value) {
    auto u = static_cast<unsigned char>(c);
    // Any byte >= 0x80 is part of a non-ASCII character (or invalid UTF-8).
    if (u < 0x20 || u > 0x7e || c == '=') {
      errs.emplace_back(kRelaxedEnvVarNameErrMsg);
      break;
    }
  }
  return errs;
}

}  // namespace vkube::api

namespace vkube::api {

namespace {

const nlohmann::json& field_of(const nlohmann::json& j, const char* key) {
  static const nlohmann::json kNull;
  if (!j.is_object()) return kNull;
  auto it = j.find(key);
  return it == j.end() ? kNull : *it;
}
std::string string_of(const nlohmann::json& j) {
  return j.is_string() ? j.get<std::string>() : "";
}

bool is_standard_finalizer(const std::string& f) {
  return f == "kubernetes" || f == "orphan" || f == "foregroundDeletion";
}

}  // namespace

std::vector<MetaError> validate_finalizers(const nlohmann::json& finalizers) {
  std::vector<MetaError> errs;
  if (!finalizers.is_array()) return errs;
  bool orphan = false, foreground = false;
  for (const auto& f : finalizers) {
    if (!f.is_string()) continue;
    const std::string& name = f.get_ref<const std::string&>();
    // kube names the list, not the entry, in these errors.
    for (std::string& msg : validate_qualified_name(name))
      errs.push_back({"metadata.finalizers", name, std::move(msg)});
    orphan |= name == "orphan";
    foreground |= name == "foregroundDeletion";
  }
  if (orphan && foreground)
    errs.push_back({"metadata.finalizers", finalizers,
                    "finalizer orphan and foregroundDeletion cannot be both set"});
  return errs;
}

std::vector<MetaError> validate_owner_references(const nlohmann::json& refs) {
  std::vector<MetaError> errs;
  if (!refs.is_array()) return errs;
  const std::string path = "metadata.ownerReferences";
  std::string first_controller;
  for (const auto& ref : refs) {
    if (!ref.is_object()) continue;
    const std::string api_version = string_of(field_of(ref, "apiVersion"));
    const std::string kind = string_of(field_of(ref, "kind"));
    const std::string name = string_of(field_of(ref, "name"));
    const std::string uid = string_of(field_of(ref, "uid"));
    // "group/version" or "version"; "group/" has no version.
    const auto slash = api_version.find('/');
    const std::string version =
        slash == std::string::npos ? api_version : api_version.substr(slash + 1);
    if (version.empty())
      errs.push_back({path + ".apiVersion", api_version, "version must not be empty"});
    if (kind.empty()) errs.push_back({path + ".kind", kind, "must not be empty"});
    if (name.empty()) errs.push_back({path + ".name", name, "must not be empty"});
    if (uid.empty()) errs.push_back({path + ".uid", uid, "must not be empty"});
    if (api_version == "v1" && kind == "Event")
      errs.push_back({path, ref, "/v1, Kind=Event is disallowed from being an owner"});
    const auto& controller = field_of(ref, "controller");
    if (controller.is_boolean() && controller.get<bool>()) {
      const std::string current = kind + "/" + name;
      if (first_controller.empty()) {
        first_controller = current;
      } else {
        errs.push_back({path, refs,
                        "Only one reference can have Controller set to true. Found \"true\" in "
                        "references for " +
                            first_controller + " and " + current});
      }
    }
  }
  return errs;
}

std::vector<std::string> finalizer_warnings(const nlohmann::json& finalizers,
                                            const nlohmann::json* old) {
  std::vector<std::string> out;
  if (!finalizers.is_array()) return out;
  for (const auto& f : finalizers) {
    if (!f.is_string()) continue;
    const std::string& name = f.get_ref<const std::string&>();
    if (name.find('/') != std::string::npos || is_standard_finalizer(name)) continue;
    if (old && old->is_array() && std::find(old->begin(), old->end(), f) != old->end()) continue;
    // A name kube would refuse is reported as an error, not warned about.
    if (!validate_qualified_name(name).empty()) continue;
    out.push_back("metadata.finalizers: \"" + name +
                  "\": prefer a domain-qualified finalizer name including a path (/) to avoid "
                  "accidental conflicts with other finalizer writers");
  }
  return out;
}

}  // namespace vkube::api
