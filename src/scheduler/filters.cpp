#include "filters.h"

#include <algorithm>
#include <cstdlib>

namespace vkube::scheduler {

namespace {

std::vector<Requirement> requirements(const json* list) {
  std::vector<Requirement> out;
  if (list == nullptr || !list->is_array()) return out;
  for (const json& e : *list) {
    if (!e.is_object()) continue;
    Requirement r{e.value("key", ""), e.value("operator", ""), {}};
    if (auto v = e.find("values"); v != e.end() && v->is_array())
      for (const json& s : *v)
        if (s.is_string()) r.values.push_back(s.get<std::string>());
    out.push_back(std::move(r));
  }
  return out;
}

const json* child(const json* j, const char* key) {
  if (j == nullptr || !j->is_object()) return nullptr;
  auto it = j->find(key);
  return it == j->end() ? nullptr : &*it;
}

bool matches(const Requirement& r, const std::string* value) {
  auto in = [&] {
    return value != nullptr &&
           std::find(r.values.begin(), r.values.end(), *value) != r.values.end();
  };
  if (r.op == "In") return in();
  if (r.op == "NotIn") return !in();
  if (r.op == "Exists") return value != nullptr;
  if (r.op == "DoesNotExist") return value == nullptr;
  if (r.op == "Gt" || r.op == "Lt") {
    if (value == nullptr || r.values.size() != 1) return false;
    char* e1 = nullptr;
    char* e2 = nullptr;
    long long have = std::strtoll(value->c_str(), &e1, 10);
    long long want = std::strtoll(r.values[0].c_str(), &e2, 10);
    if (*e1 != '\0' || *e2 != '\0' || value->empty()) return false;
    return r.op == "Gt" ? have > want : have < want;
  }
  return false;
}

bool term_matches(const NodeSelectorTerm& t, const NodeInfo& node) {
  // A term with no requirements matches no node (kube).
  if (t.expressions.empty() && t.fields.empty()) return false;
  for (const Requirement& r : t.expressions)
    if (!matches(r, node.label(r.key))) return false;
  for (const Requirement& r : t.fields) {
    if (r.key != "metadata.name") return false;
    if (!matches(r, &node.name())) return false;
  }
  return true;
}

bool tolerated(const Taint& taint, const std::vector<Toleration>& tolerations) {
  for (const Toleration& t : tolerations) {
    if (!t.effect.empty() && t.effect != taint.effect) continue;
    if (t.key.empty()) {
      if (t.op == "Exists") return true;
      continue;
    }
    if (t.key != taint.key) continue;
    if (t.op == "Exists") return true;
    if ((t.op.empty() || t.op == "Equal") && t.value == taint.value) return true;
  }
  return false;
}

}  // namespace

Constraints constraints_of(const json& pod) {
  Constraints c;
  const json* spec = child(&pod, "spec");
  if (const json* n = child(spec, "nodeName"); n != nullptr && n->is_string())
    c.node_name = n->get<std::string>();
  if (const json* s = child(spec, "nodeSelector"); s != nullptr && s->is_object())
    for (auto it = s->begin(); it != s->end(); ++it)
      if (it.value().is_string())
        c.node_selector.emplace_back(it.key(), it.value().get<std::string>());
  const json* terms = child(child(child(child(spec, "affinity"), "nodeAffinity"),
                                  "requiredDuringSchedulingIgnoredDuringExecution"),
                            "nodeSelectorTerms");
  if (terms != nullptr && terms->is_array())
    for (const json& t : *terms)
      c.required_terms.push_back(
          {requirements(child(&t, "matchExpressions")), requirements(child(&t, "matchFields"))});
  if (const json* ts = child(spec, "tolerations"); ts != nullptr && ts->is_array())
    for (const json& t : *ts)
      if (t.is_object())
        c.tolerations.push_back({t.value("key", ""), t.value("operator", ""), t.value("value", ""),
                                 t.value("effect", "")});
  return c;
}

bool filter_node(const NodeInfo& node, const PodInfo& pod, const Constraints& c,
                 std::vector<std::string>* reasons) {
  if (node.unschedulable()) {
    Taint t{"node.kubernetes.io/unschedulable", "", "NoSchedule"};
    if (!tolerated(t, c.tolerations)) {
      reasons->push_back("node(s) were unschedulable");
      return false;
    }
  }
  if (!c.node_name.empty() && c.node_name != node.name()) {
    reasons->push_back("node(s) didn't match the requested node name");
    return false;
  }
  for (const Taint& t : node.taints()) {
    if (t.effect != "NoSchedule" && t.effect != "NoExecute") continue;
    if (!tolerated(t, c.tolerations)) {
      reasons->push_back("node(s) had untolerated taint {" + t.key + ": " + t.value + "}");
      return false;
    }
  }
  bool selected = true;
  for (const auto& [k, v] : c.node_selector) {
    const std::string* have = node.label(k);
    if (have == nullptr || *have != v) selected = false;
  }
  if (selected && !c.required_terms.empty())
    selected = std::any_of(c.required_terms.begin(), c.required_terms.end(),
                           [&](const NodeSelectorTerm& t) { return term_matches(t, node); });
  if (!selected) {
    reasons->push_back("node(s) didn't match Pod's node affinity/selector");
    return false;
  }
  const Resources& a = node.allocatable();
  const Resources& used = node.requested();
  bool fits = true;
  if (used.pods + 1 > a.pods) {
    reasons->push_back("Too many pods");
    fits = false;
  }
  if (pod.requests.cpu_milli > 0 && used.cpu_milli + pod.requests.cpu_milli > a.cpu_milli) {
    reasons->push_back("Insufficient cpu");
    fits = false;
  }
  if (pod.requests.memory > 0 && used.memory + pod.requests.memory > a.memory) {
    reasons->push_back("Insufficient memory");
    fits = false;
  }
  if (pod.requests.ephemeral > 0 && used.ephemeral + pod.requests.ephemeral > a.ephemeral) {
    reasons->push_back("Insufficient ephemeral-storage");
    fits = false;
  }
  for (const auto& [name, want] : pod.requests.scalar) {
    if (want <= 0) continue;
    auto have = a.scalar.find(name);
    auto held = used.scalar.find(name);
    int64_t free = (have == a.scalar.end() ? 0 : have->second) -
                   (held == used.scalar.end() ? 0 : held->second);
    if (want > free) {
      reasons->push_back("Insufficient " + name);
      fits = false;
    }
  }
  return fits;
}

std::string unschedulable_message(int nodes, const std::map<std::string, int>& reasons) {
  std::vector<std::string> parts;
  for (const auto& [reason, count] : reasons) parts.push_back(std::to_string(count) + " " + reason);
  std::sort(parts.begin(), parts.end());
  std::string out = "0/" + std::to_string(nodes) + " nodes are available";
  if (parts.empty()) return out + ".";
  out += ": ";
  for (size_t i = 0; i < parts.size(); ++i) out += (i ? ", " : "") + parts[i];
  return out + ".";
}

}  // namespace vkube::scheduler
