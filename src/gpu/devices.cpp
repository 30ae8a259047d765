// A node's GPUs (from its annotation or its capacity), the allocation
// annotation's format, and per-node bookkeeping of what pods hold.
#include <algorithm>
#include <charconv>

#include "vkube/api/json_path.h"
#include "vkube/api/quantity.h"
#include "vkube/gpu/resources.h"

namespace vkube::gpu {

namespace {

std::string label(const json& node, std::string_view key) {
  const json* labels = api::json_at(node, {"metadata", "labels"});
  if (labels == nullptr || !labels->is_object()) return {};
  auto it = labels->find(std::string(key));
  return it != labels->end() && it->is_string() ? it->get<std::string>() : std::string();
}

int64_t allocatable(const json& node, std::string_view resource) {
  const json* a = api::json_at(node, {"status", "allocatable"});
  if (a == nullptr || !a->is_object()) return 0;
  auto it = a->find(std::string(resource));
  if (it == a->end()) return 0;
  return api::quantity_value(*it).value_or(0);
}

bool parse_int(std::string_view s, int* out) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && p == s.data() + s.size() && *out >= 0;
}

NodeGpus from_annotation(const json& devices) {
  NodeGpus out;
  const json* list = api::json_at(devices, {"gpus"});
  if (list == nullptr || !list->is_array()) return out;
  for (const json& g : *list) {
    if (!g.is_object()) continue;
    Gpu gpu;
    gpu.index = g.value("index", static_cast<int>(out.gpus.size()));
    gpu.model = g.value("model", "");
    gpu.memory_mib = g.value("memoryMiB", int64_t{0});
    if (auto m = g.find("mig"); m != g.end() && m->is_array())
      for (const json& p : *m)
        if (p.is_string()) gpu.mig.push_back(p.get<std::string>());
    out.gpus.push_back(std::move(gpu));
  }
  return out;
}

}  // namespace

json NodeGpus::to_json() const {
  json list = json::array();
  for (const Gpu& g : gpus) {
    json j = {{"index", g.index}, {"model", g.model}, {"memoryMiB", g.memory_mib}};
    if (!g.mig.empty()) j["mig"] = g.mig;
    list.push_back(std::move(j));
  }
  return {{"gpus", std::move(list)}};
}

int NodeGpus::whole_count() const {
  int n = 0;
  for (const Gpu& g : gpus) n += g.mig.empty() ? 1 : 0;
  return n;
}

NodeGpus NodeGpus::of_node(const json& node) {
  NodeGpus out;
  int replicas = 1;
  if (std::string r = label(node, "nvidia.com/gpu.replicas"); !r.empty()) {
    if (!parse_int(r, &replicas) || replicas < 1) replicas = 1;
  }
  const json* annotations = api::json_at(node, {"metadata", "annotations"});
  if (replicas == 1 && annotations != nullptr && annotations->is_object()) {
    auto it = annotations->find(std::string(kDevicesAnnotation));
    if (it != annotations->end() && it->is_string()) {
      json parsed = json::parse(it->get<std::string>(), nullptr, false);
      if (!parsed.is_discarded()) out = from_annotation(parsed);
    }
  }
  if (out.gpus.empty()) {
    std::string model = label(node, kProductLabel);
    int64_t memory = 0;
    if (std::string m = label(node, kMemoryLabel); !m.empty()) memory = std::atoll(m.c_str());
    int64_t n = allocatable(node, kGpuResource);
    for (int64_t i = 0; i < n && i < 4096; ++i)
      out.gpus.push_back({static_cast<int>(i), model, memory, {}});
    // MIG resources without a layout: one pseudo GPU per profile.
    if (const json* a = api::json_at(node, {"status", "allocatable"});
        a != nullptr && a->is_object()) {
      int next = 1000;
      for (auto it = a->begin(); it != a->end(); ++it) {
        if (!it.key().starts_with(kMigResourcePrefix)) continue;
        int64_t count = api::quantity_value(it.value()).value_or(0);
        if (count <= 0) continue;
        Gpu g{next++, model, memory, {}};
        g.mig.assign(static_cast<size_t>(std::min<int64_t>(count, 64)),
                     it.key().substr(kMigResourcePrefix.size()));
        out.gpus.push_back(std::move(g));
      }
    }
  }
  out.shareable = allocatable(node, kGpuMilliResource) > 0;
  return out;
}

std::string Allocation::format() const {
  std::string out;
  for (const Share& s : shares) {
    if (!out.empty()) out += ',';
    out += std::to_string(s.gpu) + "=" + std::to_string(s.milli);
  }
  for (const Slice& s : slices) {
    if (!out.empty()) out += ',';
    out += std::to_string(s.gpu) + "/" + std::to_string(s.slice) + "=" + s.profile;
  }
  return out;
}

Result<Allocation> Allocation::parse(std::string_view text) {
  Allocation a;
  auto bad = [&] {
    return Status::invalid("malformed " + std::string(kAllocationAnnotation) + " \"" +
                           std::string(text) + "\": want entries GPU=MILLI or GPU/SLICE=PROFILE");
  };
  size_t start = 0;
  while (start <= text.size() && !text.empty()) {
    size_t comma = text.find(',', start);
    std::string_view entry =
        text.substr(start, comma == std::string_view::npos ? text.npos : comma - start);
    size_t eq = entry.find('=');
    if (eq == std::string_view::npos) return bad();
    std::string_view left = entry.substr(0, eq), right = entry.substr(eq + 1);
    if (size_t slash = left.find('/'); slash != std::string_view::npos) {
      Slice s;
      if (!parse_int(left.substr(0, slash), &s.gpu) ||
          !parse_int(left.substr(slash + 1), &s.slice) || right.empty())
        return bad();
      s.profile = std::string(right);
      a.slices.push_back(std::move(s));
    } else {
      Share s;
      if (!parse_int(left, &s.gpu) || !parse_int(right, &s.milli) || s.milli < 1 || s.milli > 1000)
        return bad();
      a.shares.push_back(s);
    }
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return a;
}

int64_t Allocation::milli() const {
  int64_t sum = 0;
  for (const Share& s : shares) sum += s.milli;
  return sum;
}

DeviceState::DeviceState(NodeGpus gpus) : gpus_(std::move(gpus)) {
  used_.assign(gpus_.gpus.size(), 0);
  taken_.resize(gpus_.gpus.size());
  for (size_t i = 0; i < gpus_.gpus.size(); ++i) taken_[i].assign(gpus_.gpus[i].mig.size(), false);
}

int DeviceState::position(int gpu_index) const {
  for (size_t i = 0; i < gpus_.gpus.size(); ++i)
    if (gpus_.gpus[i].index == gpu_index) return static_cast<int>(i);
  return -1;
}

int DeviceState::free_milli(size_t i) const {
  return gpus_.gpus[i].mig.empty() ? 1000 - used_[i] : 0;
}

bool DeviceState::slice_free(size_t i, size_t slice) const {
  return slice < taken_[i].size() && !taken_[i][slice];
}

Status DeviceState::take(const Allocation& a) {
  for (const auto& s : a.shares) {
    int p = position(s.gpu);
    if (p < 0 || !gpus_.gpus[p].mig.empty())
      return Status::invalid("the node has no GPU " + std::to_string(s.gpu) + " to share");
    if (used_[p] + s.milli > 1000)
      return Status::conflict("GPU " + std::to_string(s.gpu) + " has only " +
                              std::to_string(1000 - used_[p]) + " thousandths free");
  }
  for (const auto& s : a.slices) {
    int p = position(s.gpu);
    if (p < 0 || s.slice < 0 || static_cast<size_t>(s.slice) >= taken_[p].size() ||
        gpus_.gpus[p].mig[s.slice] != s.profile)
      return Status::invalid("the node has no MIG slice " + std::to_string(s.gpu) + "/" +
                             std::to_string(s.slice) + " of profile " + s.profile);
    if (taken_[p][s.slice])
      return Status::conflict("MIG slice " + std::to_string(s.gpu) + "/" + std::to_string(s.slice) +
                              " is held by another pod");
  }
  for (const auto& s : a.shares) used_[position(s.gpu)] += s.milli;
  for (const auto& s : a.slices) taken_[position(s.gpu)][s.slice] = true;
  return Status::ok();
}

void DeviceState::release(const Allocation& a) {
  for (const auto& s : a.shares)
    if (int p = position(s.gpu); p >= 0) used_[p] = std::max(0, used_[p] - s.milli);
  for (const auto& s : a.slices)
    if (int p = position(s.gpu);
        p >= 0 && s.slice >= 0 && static_cast<size_t>(s.slice) < taken_[p].size())
      taken_[p][s.slice] = false;
}

int64_t DeviceState::capacity_milli() const {
  return 1000LL * gpus_.whole_count();
}

int64_t DeviceState::allocated_milli() const {
  int64_t sum = 0;
  for (size_t i = 0; i < used_.size(); ++i)
    if (gpus_.gpus[i].mig.empty()) sum += used_[i];
  return sum;
}

int DeviceState::whole_free() const {
  int n = 0;
  for (size_t i = 0; i < used_.size(); ++i) n += gpus_.gpus[i].mig.empty() && used_[i] == 0 ? 1 : 0;
  return n;
}

int DeviceState::slices_free(std::string_view profile) const {
  int n = 0;
  for (size_t i = 0; i < taken_.size(); ++i)
    for (size_t s = 0; s < taken_[i].size(); ++s)
      n += !taken_[i][s] && gpus_.gpus[i].mig[s] == profile ? 1 : 0;
  return n;
}

}  // namespace vkube::gpu
