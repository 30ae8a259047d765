// The tenant's slice of host nodes: the operator's node selector, its flag
// and file forms, and which host nodes it selects (see host_policy.h).
#include "host_policy_nodes.h"

#include "vkube/api/validation.h"

namespace vkube::syncer {

namespace {

using json = nlohmann::json;

// kube's label checks, worded as kube-apiserver words them.
Status check_entry(const std::string& key, const std::string& value) {
  if (auto e = api::validate_qualified_name(key); !e.empty())
    return Status::invalid("node selector key \"" + key + "\": " + e.front());
  if (auto e = api::validate_label_value(value); !e.empty())
    return Status::invalid("node selector value \"" + value + "\" of " + key + ": " + e.front());
  return Status::ok();
}

Status add_entry(std::map<std::string, std::string>& out, const std::string& key,
                 const std::string& value) {
  VKUBE_RETURN_IF_ERROR(check_entry(key, value));
  auto [it, added] = out.emplace(key, value);
  if (!added && it->second != value)
    return Status::invalid("node selector key \"" + key + "\" is given twice (" + it->second +
                           ", " + value + ")");
  return Status::ok();
}

}  // namespace

bool node_in_slice(const HostPolicy& policy, const json& node) {
  if (policy.node_selector.empty() || !node.is_object()) return false;
  auto meta = node.find("metadata");
  if (meta == node.end() || !meta->is_object()) return false;
  auto labels = meta->find("labels");
  if (labels == meta->end() || !labels->is_object()) return false;
  for (const auto& [k, v] : policy.node_selector) {
    auto it = labels->find(k);
    if (it == labels->end() || !it->is_string() || it->get<std::string>() != v) return false;
  }
  return true;
}

std::string node_selector_text(const std::map<std::string, std::string>& selector) {
  std::string out;
  for (const auto& [k, v] : selector) out += (out.empty() ? "" : ",") + k + "=" + v;
  return out;
}

Result<std::map<std::string, std::string>> parse_node_selector(std::string_view text) {
  std::map<std::string, std::string> out;
  size_t i = 0;
  while (i <= text.size()) {
    size_t j = text.find(',', i);
    if (j == std::string_view::npos) j = text.size();
    std::string item(text.substr(i, j - i));
    i = j + 1;
    if (item.empty()) continue;
    const size_t eq = item.find('=');
    if (eq == std::string::npos)
      return Status::invalid("node selector entry \"" + item + "\": expected key=value");
    VKUBE_RETURN_IF_ERROR(add_entry(out, item.substr(0, eq), item.substr(eq + 1)));
  }
  return out;
}

Status merge_node_selector(const json& value, HostPolicy& policy) {
  if (value.is_null()) return Status::ok();
  if (!value.is_object())
    return Status::invalid("nodeSelector: must be a mapping of node label keys to values");
  std::map<std::string, std::string> out;
  for (auto it = value.begin(); it != value.end(); ++it) {
    if (!it->is_string())
      return Status::invalid("nodeSelector: the value of " + it.key() +
                             " must be a string (quote it)");
    Status s = add_entry(out, it.key(), it->get<std::string>());
    if (!s.is_ok()) return Status::invalid("nodeSelector: " + s.message());
  }
  policy.node_selector = std::move(out);
  return Status::ok();
}

}  // namespace vkube::syncer
