// A tenant pod's GPU request in the host GPU stack's terms (see translate.h).
#include "vkube/gpu/translate.h"

#include <algorithm>
#include <cstdio>
#include <optional>

#include "vkube/api/quantity.h"
#include "vkube/gpu/resources.h"

namespace vkube::gpu {

namespace {

using json = nlohmann::json;

constexpr std::string_view kSharedResource = "nvidia.com/gpu.shared";
constexpr std::string_view kHamiMemory = "nvidia.com/gpumem";
constexpr std::string_view kHamiCores = "nvidia.com/gpucores";
constexpr std::string_view kFractionContainer = "gpu-fraction-container-name";

bool host_owned(const std::string& key) {
  // gpu.vkube.io/ is the host scheduler's (allocation, borrowing).
  return key.starts_with("gpu.vkube.io/") || key == "volcano.sh/devices-to-allocate" ||
         key == "runai-gpu-group" || key.starts_with("hami.io/vgpu-");
}

// Sets `name` to `value` in the container's limits and requests (extended
// resources need both equal).
void set_resource(json& container, std::string_view name, const std::string& value) {
  for (const char* part : {"limits", "requests"})
    container["resources"][part][std::string(name)] = value;
}

void erase_resource(json& container, std::string_view name) {
  auto res = container.find("resources");
  if (res == container.end() || !res->is_object()) return;
  for (const char* part : {"limits", "requests"}) {
    auto p = res->find(part);
    if (p != res->end() && p->is_object()) p->erase(std::string(name));
  }
}

bool has_resource(const json& container, std::string_view name) {
  auto res = container.find("resources");
  if (res == container.end() || !res->is_object()) return false;
  for (const char* part : {"limits", "requests"}) {
    auto p = res->find(part);
    if (p != res->end() && p->is_object() && p->contains(std::string(name))) return true;
  }
  return false;
}

// "0.5", "0.25", "0.001": the share as KAI writes it.
std::string fraction_text(int milli) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%.3f", milli / 1000.0);
  std::string s = buf;
  while (s.back() == '0') s.pop_back();
  if (s.back() == '.') s.pop_back();
  return s;
}

// "3g.40gb" -> {3, 40}; nullopt when it is not a MIG profile name.
std::optional<std::pair<int, int>> parse_profile(const std::string& p) {
  int g = 0, gb = 0;
  char tail = 0;
  if (std::sscanf(p.c_str(), "%dg.%dgb%c", &g, &gb, &tail) < 2 || g <= 0 || gb <= 0)
    return std::nullopt;
  return std::make_pair(g, gb);
}

Result<std::string> smallest_fit(const std::string& want, const std::vector<std::string>& offered) {
  auto w = parse_profile(want);
  if (!w) return Status::invalid("\"" + want + "\" is not a MIG profile name (like 1g.10gb)");
  std::optional<std::pair<int, int>> best;
  std::string best_name;
  for (const std::string& o : offered) {
    auto h = parse_profile(o);
    if (!h || h->first < w->first || h->second < w->second) continue;
    if (!best || *h < *best) {
      best = h;
      best_name = o;
    }
  }
  if (!best) {
    std::string list;
    for (const auto& o : offered) list += (list.empty() ? "" : ", ") + o;
    return Status::invalid("no MIG profile on the host holds " + want + " (the host offers " +
                           (list.empty() ? "none" : list) + ")");
  }
  return best_name;
}

Status translate_mig(json& container, const HostGpuPolicy& policy) {
  auto res = container.find("resources");
  if (res == container.end() || !res->is_object()) return Status::ok();
  for (const char* part : {"limits", "requests"}) {
    auto p = res->find(part);
    if (p == res->end() || !p->is_object()) continue;
    json rewritten = json::object();
    for (auto it = p->begin(); it != p->end(); ++it) {
      if (!it.key().starts_with(kMigResourcePrefix)) {
        rewritten[it.key()] = it.value();
        continue;
      }
      auto to = smallest_fit(it.key().substr(kMigResourcePrefix.size()), policy.host_mig_profiles);
      if (!to.is_ok()) return to.status();
      std::string key = std::string(kMigResourcePrefix) + *to;
      int64_t n = api::quantity_value(it.value()).value_or(0);
      if (rewritten.contains(key)) n += api::quantity_value(rewritten[key]).value_or(0);
      rewritten[key] = std::to_string(n);
    }
    *p = std::move(rewritten);
  }
  return Status::ok();
}

}  // namespace

Status translate_for_host(json& pod, const HostGpuPolicy& policy) {
  auto request = request_of(pod);
  if (!request.is_ok()) return request.status();
  json& meta = pod["metadata"];
  json annotations = meta.value("annotations", json::object());
  std::string container_name =
      annotations.is_object() ? annotations.value(std::string(kFractionContainer), "") : "";
  if (annotations.is_object())
    for (auto it = annotations.begin(); it != annotations.end();)
      it = host_owned(it.key()) ? annotations.erase(it) : std::next(it);

  json& containers = pod["spec"]["containers"];
  if (request->shared() && containers.is_array() && !containers.empty()) {
    // The container holding the share: the one with the resource, the one
    // KAI's annotation names, or the first.
    size_t at = 0;
    for (size_t i = 0; i < containers.size(); ++i) {
      if (has_resource(containers[i], kGpuMilliResource) ||
          (!container_name.empty() && containers[i].value("name", "") == container_name)) {
        at = i;
        break;
      }
    }
    json& c = containers[at];
    erase_resource(c, kGpuMilliResource);
    annotations.erase(std::string(kFractionAnnotation));
    annotations.erase(std::string(kGpuMemoryAnnotation));
    annotations.erase(std::string(kFractionContainer));
    const int64_t mem = policy.gpu_memory_mib > 0 ? policy.gpu_memory_mib : 1;
    int milli = request->milli > 0 ? request->milli
                                   : static_cast<int>(std::min<int64_t>(
                                         1000, (request->memory_mib * 1000 + mem - 1) / mem));
    switch (policy.fractions) {
      case FractionMode::kMilli:
        set_resource(c, kGpuMilliResource, std::to_string(milli));
        break;
      case FractionMode::kTimeSlicing:
        set_resource(c, kSharedResource, "1");
        break;
      case FractionMode::kHami: {
        int64_t mib = request->memory_mib > 0 ? request->memory_mib : (milli * mem + 999) / 1000;
        set_resource(c, kGpuResource, "1");
        set_resource(c, kHamiMemory, std::to_string(mib));
        set_resource(c, kHamiCores, std::to_string((milli + 9) / 10));
        break;
      }
      case FractionMode::kKai:
        if (request->memory_mib > 0)
          annotations[std::string(kGpuMemoryAnnotation)] = std::to_string(request->memory_mib);
        else
          annotations[std::string(kFractionAnnotation)] = fraction_text(milli);
        if (containers.size() > 1)
          annotations[std::string(kFractionContainer)] = c.value("name", "");
        break;
    }
  }
  if (policy.mig == MigMode::kSmallestFit && !request->mig.empty()) {
    for (const char* list : {"containers", "initContainers"}) {
      auto cs = pod["spec"].find(list);
      if (cs == pod["spec"].end() || !cs->is_array()) continue;
      for (json& c : *cs) VKUBE_RETURN_IF_ERROR(translate_mig(c, policy));
    }
  }
  if (annotations.empty())
    meta.erase("annotations");
  else
    meta["annotations"] = std::move(annotations);
  return Status::ok();
}

}  // namespace vkube::gpu
