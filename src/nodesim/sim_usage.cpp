#include "sim_usage.h"

#include <algorithm>
#include <string>

#include "vkube/api/quantity.h"

namespace vkube::nodesim {

namespace {

using json = nlohmann::json;

constexpr int64_t kMi = 1LL << 20;

// The container's request for `resource`, else its limit, in thousandths;
// nullopt when it sets neither (or writes something unparsable).
std::optional<int64_t> asked_milli(const json& container, const char* resource) {
  const json& res = container.value("resources", json::object());
  for (const char* field : {"requests", "limits"}) {
    const json& m = res.value(field, json::object());
    if (!m.is_object() || !m.contains(resource)) continue;
    if (auto v = api::quantity_milli(m[resource])) return *v;
  }
  return std::nullopt;
}

SimUsage container_usage(const json& container) {
  SimUsage u{5, 16 * kMi};
  if (auto cpu = asked_milli(container, "cpu")) u.millicores = std::max<int64_t>(1, *cpu / 2);
  if (auto mem = asked_milli(container, "memory"))
    u.bytes = std::max<int64_t>(4 * kMi, *mem / 1000 / 2);
  return u;
}

// The annotation's quantity in thousandths; nullopt when absent or malformed
// (the computed usage stands then, as a typo should not hide the pod).
std::optional<int64_t> annotated_milli(const json& annotations, const char* key) {
  if (!annotations.is_object()) return std::nullopt;
  auto it = annotations.find(key);
  if (it == annotations.end() || !it->is_string()) return std::nullopt;
  auto v = api::quantity_milli(std::string_view(it->get_ref<const std::string&>()));
  if (!v || *v < 0) return std::nullopt;
  return v;
}

}  // namespace

std::optional<std::vector<SimUsage>> simulated_usage(const json& pod) {
  if (!pod.is_object()) return std::nullopt;
  const json& status = pod.value("status", json::object());
  if (!status.is_object() || status.value("phase", "") != "Running") return std::nullopt;
  const json& containers = pod.value("spec", json::object()).value("containers", json::array());
  if (!containers.is_array() || containers.empty()) return std::nullopt;
  std::vector<SimUsage> out;
  for (const json& c : containers) out.push_back(c.is_object() ? container_usage(c) : SimUsage{});

  const json& annotations = pod.value("metadata", json::object()).value("annotations", json());
  auto cpu = annotated_milli(annotations, kCpuUsageAnnotation);
  auto mem = annotated_milli(annotations, kMemoryUsageAnnotation);
  if (cpu || mem) {
    for (size_t i = 1; i < out.size(); ++i) {
      if (cpu) out[i].millicores = 0;
      if (mem) out[i].bytes = 0;
    }
    if (cpu) out[0].millicores = *cpu;
    if (mem) out[0].bytes = (*mem + 999) / 1000;
  }
  return out;
}

}  // namespace vkube::nodesim
