// What a pod asks for: its containers' GPU resources and KAI's fraction
// annotations, folded into one GpuRequest.
#include <cmath>
#include <map>
#include <string>

#include "vkube/api/quantity.h"
#include "vkube/gpu/resources.h"

namespace vkube::gpu {

namespace {

// The resource amounts (in milli) one container asks for: requests, with
// limits standing in where a request is absent (kube defaults requests of
// extended resources to their limits).
std::map<std::string, int64_t> container_amounts(const json& container) {
  std::map<std::string, int64_t> out;
  auto res = container.find("resources");
  if (res == container.end() || !res->is_object()) return out;
  for (const char* part : {"limits", "requests"}) {  // requests override limits
    auto p = res->find(part);
    if (p == res->end() || !p->is_object()) continue;
    for (auto it = p->begin(); it != p->end(); ++it) {
      const std::string& name = it.key();
      if (name != kGpuResource && name != kGpuMilliResource &&
          !name.starts_with(kMigResourcePrefix))
        continue;
      if (auto v = api::quantity_milli(it.value())) out[name] = *v;
    }
  }
  return out;
}

// kube's effective request: the sum over containers, or the largest init
// container's when that is larger.
std::map<std::string, int64_t> pod_amounts(const json& spec) {
  std::map<std::string, int64_t> sum;
  if (auto c = spec.find("containers"); c != spec.end() && c->is_array())
    for (const json& container : *c)
      for (auto& [k, v] : container_amounts(container)) sum[k] += v;
  if (auto c = spec.find("initContainers"); c != spec.end() && c->is_array())
    for (const json& container : *c)
      for (auto& [k, v] : container_amounts(container)) sum[k] = std::max(sum[k], v);
  return sum;
}

std::string annotation(const json& pod, std::string_view key) {
  const json* a = nullptr;
  if (auto m = pod.find("metadata"); m != pod.end())
    if (auto an = m->find("annotations"); an != m->end() && an->is_object()) a = &*an;
  if (a == nullptr) return {};
  auto it = a->find(std::string(key));
  return it != a->end() && it->is_string() ? it->get<std::string>() : std::string();
}

std::string trim_number(double v) {
  std::string s = std::to_string(v);
  while (!s.empty() && s.back() == '0') s.pop_back();
  if (!s.empty() && s.back() == '.') s.pop_back();
  return s;
}

}  // namespace

std::string GpuRequest::describe() const {
  std::string out;
  auto add = [&](const std::string& part) { out += (out.empty() ? "" : ", ") + part; };
  if (whole > 0) add(std::to_string(whole) + (whole == 1 ? " GPU" : " GPUs"));
  if (milli > 0) add(trim_number(milli / 1000.0) + " GPU");
  if (memory_mib > 0) add(std::to_string(memory_mib) + " MiB of one GPU");
  for (const auto& [profile, n] : mig)
    add(std::to_string(n) + " " + std::string(kMigResourcePrefix) + profile);
  return out.empty() ? "no GPU" : out;
}

Result<GpuRequest> request_of(const json& pod) {
  GpuRequest r;
  static const json kEmpty = json::object();
  auto spec_it = pod.find("spec");
  const json& spec = spec_it != pod.end() && spec_it->is_object() ? *spec_it : kEmpty;
  for (const auto& [name, milli] : pod_amounts(spec)) {
    if (milli <= 0) continue;
    if (name == kGpuResource) {
      r.whole = static_cast<int>((milli + 999) / 1000);
    } else if (name == kGpuMilliResource) {
      int64_t share = (milli + 999) / 1000;  // the resource counts thousandths
      if (share > 1000)
        return Status::invalid(std::string(kGpuMilliResource) + " of " + std::to_string(share) +
                               " is more than one GPU (1000); ask for whole GPUs with " +
                               std::string(kGpuResource));
      r.milli = static_cast<int>(share);
    } else {
      r.mig[name.substr(kMigResourcePrefix.size())] = static_cast<int>((milli + 999) / 1000);
    }
  }
  if (std::string f = annotation(pod, kFractionAnnotation); !f.empty()) {
    char* end = nullptr;
    double v = std::strtod(f.c_str(), &end);
    if (end == f.c_str() || *end != '\0' || !(v > 0) || v > 1)
      return Status::invalid("annotation " + std::string(kFractionAnnotation) + ": \"" + f +
                             "\" must be a number greater than 0 and at most 1");
    if (r.milli > 0)
      return Status::invalid("a pod asks for a share of a GPU either with " +
                             std::string(kGpuMilliResource) + " or with the " +
                             std::string(kFractionAnnotation) + " annotation, not both");
    r.milli = std::max(1, static_cast<int>(std::lround(v * 1000)));
  }
  if (std::string m = annotation(pod, kGpuMemoryAnnotation); !m.empty()) {
    char* end = nullptr;
    long long v = std::strtoll(m.c_str(), &end, 10);
    if (end == m.c_str() || *end != '\0' || v <= 0)
      return Status::invalid("annotation " + std::string(kGpuMemoryAnnotation) + ": \"" + m +
                             "\" must be a positive number of MiB");
    if (r.milli > 0)
      return Status::invalid("a pod asks for a share of a GPU by fraction or by memory, not both");
    r.memory_mib = v;
  }
  // A share of all of one GPU is a whole GPU.
  if (r.milli == 1000) {
    r.milli = 0;
    r.whole += 1;
    if (r.whole > 1)
      return Status::invalid("a pod asks for either whole GPUs or a share of one GPU, not both");
  }
  if (r.shared() && r.whole > 0)
    return Status::invalid("a pod asks for either whole GPUs (" + std::string(kGpuResource) +
                           ") or a share of one GPU, not both");
  return r;
}

}  // namespace vkube::gpu
