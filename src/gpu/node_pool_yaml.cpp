// pool_from_yaml: a node pool file (format in node_spec.h). Every field is
// checked and an error names the entry, so a typo never becomes a silently
// different cluster.
#include <yaml-cpp/yaml.h>

#include <set>

#include "pool_util.h"
#include "vkube/api/quantity.h"

namespace vkube::gpu {

namespace {

const std::set<std::string, std::less<>> kFields = {
    "name",      "count", "cpu",     "memory",   "pods",   "gpus",  "model",
    "gpuMemory", "mig",   "sharing", "replicas", "labels", "taints"};

std::string scalar(const YAML::Node& n, std::string_view field) {
  if (!n.IsScalar()) throw std::invalid_argument(std::string(field) + ": must be a scalar");
  return n.Scalar();
}

int64_t integer(const YAML::Node& n, std::string_view field, int64_t min, int64_t max) {
  std::string s = scalar(n, field);
  size_t used = 0;
  int64_t v = 0;
  try {
    v = std::stoll(s, &used);
  } catch (...) {
    used = 0;
  }
  if (used == 0 || used != s.size())
    throw std::invalid_argument(std::string(field) + ": \"" + s + "\" is not an integer");
  if (v < min || v > max)
    throw std::invalid_argument(std::string(field) + ": must be between " + std::to_string(min) +
                                " and " + std::to_string(max));
  return v;
}

// Bytes of a quantity ("512Gi", "1Ti", "536870912") in MiB.
int64_t mebibytes(const YAML::Node& n, std::string_view field) {
  std::string s = scalar(n, field);
  auto bytes = api::quantity_value(json(s));
  if (!bytes || *bytes < (1 << 20))
    throw std::invalid_argument(std::string(field) + ": \"" + s +
                                "\" is not a quantity of at least 1Mi");
  return *bytes >> 20;
}

void read_mig(const YAML::Node& mig, NodeSpec& spec) {
  if (!mig.IsMap()) throw std::invalid_argument("mig: must be a map with gpus and layout");
  std::vector<int> gpus;
  std::vector<std::string> layout;
  for (auto it = mig.begin(); it != mig.end(); ++it) {
    std::string key = it->first.Scalar();
    if (key == "gpus") {
      if (!it->second.IsSequence()) throw std::invalid_argument("mig.gpus: must be a list");
      for (const YAML::Node& g : it->second)
        gpus.push_back(static_cast<int>(integer(g, "mig.gpus", 0, 1 << 20)));
    } else if (key == "layout") {
      if (it->second.IsScalar()) {
        layout = split_list(it->second.Scalar());
      } else if (it->second.IsSequence()) {
        for (const YAML::Node& p : it->second) layout.push_back(scalar(p, "mig.layout"));
      } else {
        throw std::invalid_argument("mig.layout: must be a list of profiles");
      }
    } else {
      throw std::invalid_argument("mig: unknown field \"" + key + "\"");
    }
  }
  if (gpus.empty()) throw std::invalid_argument("mig.gpus: required");
  if (Status s = set_mig(spec, gpus, layout); !s.is_ok()) throw std::invalid_argument(s.message());
}

json read_taints(const YAML::Node& taints) {
  if (!taints.IsSequence()) throw std::invalid_argument("taints: must be a list");
  json out = json::array();
  for (const YAML::Node& t : taints) {
    if (!t.IsMap()) throw std::invalid_argument("taints: each taint must be a map");
    json taint = json::object();
    for (auto it = t.begin(); it != t.end(); ++it) {
      std::string key = it->first.Scalar();
      if (key != "key" && key != "value" && key != "effect")
        throw std::invalid_argument("taints: unknown field \"" + key + "\"");
      taint[key] = scalar(it->second, "taints." + key);
    }
    std::string effect = taint.value("effect", "");
    if (taint.value("key", "").empty()) throw std::invalid_argument("taints: key is required");
    if (effect != "NoSchedule" && effect != "PreferNoSchedule" && effect != "NoExecute")
      throw std::invalid_argument("taints: effect \"" + effect +
                                  "\" is not NoSchedule, PreferNoSchedule or NoExecute");
    out.push_back(std::move(taint));
  }
  return out;
}

// One entry of `nodes`: its specs (count of them).
std::vector<NodeSpec> read_entry(const YAML::Node& e) {
  if (!e.IsMap()) throw std::invalid_argument("must be a map");
  for (auto it = e.begin(); it != e.end(); ++it)
    if (!kFields.count(it->first.Scalar()))
      throw std::invalid_argument("unknown field \"" + it->first.Scalar() + "\"");
  if (!e["name"]) throw std::invalid_argument("name: required");
  const PoolFlags defaults;
  NodeSpec s;
  s.cpu_milli = defaults.cpu_milli;
  s.memory_mib = defaults.memory_mib;
  s.gpus = defaults.gpus;
  auto model = find_model(e["model"] ? scalar(e["model"], "model") : defaults.model);
  if (!model.is_ok()) throw std::invalid_argument("model: " + model.status().message());
  s.model = *model;
  if (auto n = e["cpu"]) {
    std::string text = scalar(n, "cpu");
    auto milli = api::quantity_milli(std::string_view(text));
    if (!milli || *milli <= 0)
      throw std::invalid_argument("cpu: \"" + text + "\" is not a CPU quantity");
    s.cpu_milli = *milli;
  }
  if (auto n = e["memory"]) s.memory_mib = mebibytes(n, "memory");
  if (auto n = e["pods"]) s.max_pods = static_cast<int>(integer(n, "pods", 1, 100000));
  if (auto n = e["gpus"]) s.gpus = static_cast<int>(integer(n, "gpus", 0, 64));
  if (auto n = e["gpuMemory"]) {
    std::string text = scalar(n, "gpuMemory");
    // A plain number is MiB (as GFD's gpu.memory label); a quantity is bytes.
    bool plain = !text.empty() && text.find_first_not_of("0123456789") == std::string::npos;
    s.model.memory_mib =
        plain ? integer(n, "gpuMemory", 1, int64_t{1} << 30) : mebibytes(n, "gpuMemory");
  }
  if (auto n = e["sharing"]) {
    auto sharing = parse_sharing(scalar(n, "sharing"));
    if (!sharing.is_ok()) throw std::invalid_argument(sharing.status().message());
    s.sharing = *sharing;
  }
  if (auto n = e["replicas"]) s.replicas = static_cast<int>(integer(n, "replicas", 1, 1024));
  if (auto n = e["mig"]) read_mig(n, s);
  if (auto n = e["labels"]) {
    if (!n.IsMap()) throw std::invalid_argument("labels: must be a map");
    for (auto it = n.begin(); it != n.end(); ++it)
      s.labels[it->first.Scalar()] = scalar(it->second, "labels." + it->first.Scalar());
  }
  if (auto n = e["taints"]) s.taints = read_taints(n);

  const std::string name = scalar(e["name"], "name");
  const int64_t count = e["count"] ? integer(e["count"], "count", 0, 100000) : 1;
  std::vector<NodeSpec> out;
  for (int64_t i = 0; i < count; ++i) {
    NodeSpec one = s;
    one.name = count == 1 ? name : name + "-" + std::to_string(i);
    if (Status st = check_spec(one); !st.is_ok()) throw std::invalid_argument(st.message());
    out.push_back(std::move(one));
  }
  return out;
}

}  // namespace

Result<std::vector<NodeSpec>> pool_from_yaml(std::string_view yaml_text) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yaml_text));
  } catch (const YAML::Exception& e) {
    return Status::invalid("node pool: " + std::string(e.what()));
  }
  if (!root.IsMap() || !root["nodes"] || !root["nodes"].IsSequence())
    return Status::invalid("node pool: expected a map with a list \"nodes\"");
  std::vector<NodeSpec> out;
  size_t i = 0;
  for (const YAML::Node& entry : root["nodes"]) {
    std::string label = "nodes[" + std::to_string(i++) + "]";
    if (entry.IsMap() && entry["name"] && entry["name"].IsScalar())
      label += " (" + entry["name"].Scalar() + ")";
    try {
      for (NodeSpec& s : read_entry(entry)) out.push_back(std::move(s));
    } catch (const std::exception& e) {  // YAML::Exception and our own
      return Status::invalid("node pool: " + label + ": " + e.what());
    }
  }
  if (Status st = check_unique(out); !st.is_ok())
    return Status::invalid("node pool: " + st.message());
  return out;
}

}  // namespace vkube::gpu
