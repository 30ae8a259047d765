// A tenant's GPU quota: the flag, what pods count, kube's refusal (quota.h).
#include "vkube/gpu/quota.h"

#include <algorithm>
#include <cstdio>
#include <set>

#include "amounts.h"
#include "models.h"
#include "vkube/api/validation.h"

namespace vkube::gpu {

namespace {

using json = nlohmann::json;

// A share by memory on a GPU of unknown model: the host policy's default.
constexpr int64_t kDefaultMemoryMiB = 81920;
constexpr int kDefaultComputeSlices = 7;

// kube's Quantity.String() of a decimal amount given in thousandths.
std::string quantity(int64_t milli) {
  if (milli % 1000 == 0) return std::to_string(milli / 1000);
  return std::to_string(milli) + "m";
}

Status bad_item(std::string_view item, const std::string& why) {
  return Status::invalid("invalid GPU quota item \"" + std::string(item) + "\": " + why);
}

// A MIG slice's share of its GPU: g of the GPU's compute slices, rounded up.
// A profile name we cannot read counts as a whole GPU.
int64_t slice_milli(const std::string& profile, int compute_slices) {
  int g = 0;
  if (std::sscanf(profile.c_str(), "%dg.", &g) != 1 || g <= 0 || compute_slices <= 0) return 1000;
  return std::min<int64_t>(1000, (g * 1000 + compute_slices - 1) / compute_slices);
}

// The pod's GPU in thousandths, on a GPU of `model` ("" or unknown: the defaults).
int64_t total_milli(const GpuRequest& r, std::string_view model) {
  int64_t memory = kDefaultMemoryMiB;
  int compute = kDefaultComputeSlices;
  if (!model.empty()) {
    if (auto m = find_model(model); m.is_ok()) {
      memory = m->memory_mib > 0 ? m->memory_mib : memory;
      if (const MigGeometry* g = mig_geometry(*m)) compute = g->compute;
    }
  }
  int64_t out = int64_t{r.whole} * 1000;
  if (r.milli > 0)
    out += r.milli;
  else if (r.memory_mib > 0)
    out += std::min<int64_t>(1000, (r.memory_mib * 1000 + memory - 1) / memory);
  for (const auto& [profile, n] : r.mig) out += n * slice_milli(profile, compute);
  return out;
}

// The values of In expressions on the product label in one node selector
// term (intersected); nullopt when the term does not name models.
std::optional<std::set<std::string>> term_models(const json& term) {
  std::optional<std::set<std::string>> out;
  auto exprs = term.find("matchExpressions");
  if (exprs == term.end() || !exprs->is_array()) return out;
  for (const json& e : *exprs) {
    if (!e.is_object() || e.value("key", "") != kProductLabel || e.value("operator", "") != "In")
      continue;
    std::set<std::string> values;
    if (auto v = e.find("values"); v != e.end() && v->is_array())
      for (const json& x : *v)
        if (x.is_string()) values.insert(x.get<std::string>());
    if (!out) {
      out = std::move(values);
    } else {
      std::set<std::string> both;
      std::set_intersection(out->begin(), out->end(), values.begin(), values.end(),
                            std::inserter(both, both.end()));
      out = std::move(both);
    }
  }
  return out;
}

// The models the required node affinity allows; nullopt when it allows any.
std::optional<std::set<std::string>> affinity_models(const json& spec) {
  const json* terms = nullptr;
  if (auto a = spec.find("affinity"); a != spec.end() && a->is_object())
    if (auto na = a->find("nodeAffinity"); na != a->end() && na->is_object())
      if (auto req = na->find("requiredDuringSchedulingIgnoredDuringExecution");
          req != na->end() && req->is_object())
        if (auto t = req->find("nodeSelectorTerms"); t != req->end() && t->is_array()) terms = &*t;
  if (terms == nullptr || terms->empty()) return std::nullopt;
  // Terms are ORed: the pod is pinned only when every term names models.
  std::set<std::string> out;
  for (const json& term : *terms) {
    if (!term.is_object()) return std::nullopt;
    auto m = term_models(term);
    if (!m) return std::nullopt;
    out.insert(m->begin(), m->end());
  }
  return out;
}

}  // namespace

std::string quota_model_resource(std::string_view model) {
  return std::string(kQuotaGpus) + "[model=" + std::string(model) + "]";
}

std::string GpuQuota::to_string() const {
  std::string out;
  auto add = [&](const std::string& item) { out += (out.empty() ? "" : ",") + item; };
  if (gpus) add("gpus=" + std::to_string(*gpus));
  if (milli) add("milli=" + std::to_string(*milli));
  for (const auto& [model, limit] : models) add("model:" + model + "=" + quantity(limit));
  return out;
}

Result<GpuQuota> parse_gpu_quota(std::string_view text) {
  GpuQuota q;
  if (text.empty()) return q;
  size_t at = 0;
  while (at <= text.size()) {
    size_t comma = std::min(text.find(',', at), text.size());
    std::string_view item = text.substr(at, comma - at);
    at = comma + 1;
    if (item.empty())
      return Status::invalid("invalid GPU quota \"" + std::string(text) +
                             "\": empty item (items are separated by single commas)");
    size_t eq = item.find('=');
    if (eq == std::string_view::npos)
      return bad_item(item, "expected gpus=N, milli=N or model:<nvidia.com/gpu.product>=N");
    std::string_view key = item.substr(0, eq), value = item.substr(eq + 1);
    if (key == "gpus" || key == "milli") {
      std::optional<int64_t>& slot = key == "gpus" ? q.gpus : q.milli;
      if (slot) return bad_item(item, std::string(key) + " is given more than once");
      slot = whole_number(value);
      if (!slot)
        return bad_item(item, std::string(key) + " must be a whole number, 0 or more, got \"" +
                                  std::string(value) + "\"");
    } else if (key.starts_with("model:")) {
      std::string model(key.substr(6));
      if (model.empty())
        return bad_item(item, "the model is missing (model:<nvidia.com/gpu.product value>=N)");
      if (auto errs = api::validate_label_value(model); !errs.empty())
        return bad_item(item, "model \"" + model + "\" is not a label value: " + errs.front());
      if (q.models.contains(model))
        return bad_item(item, "model " + model + " is given more than once");
      auto milli = gpu_amount_milli(value);
      if (!milli)
        return bad_item(item,
                        "the limit must be a number of GPUs, 0 or more (\"2\", \"1.5\"), "
                        "got \"" +
                            std::string(value) + "\"");
      q.models[model] = *milli;
    } else {
      return bad_item(item, "unknown limit \"" + std::string(key) +
                                "\" (known: gpus, milli, model:<nvidia.com/gpu.product value>)");
    }
  }
  return q;
}

GpuUsage& GpuUsage::operator+=(const GpuUsage& o) {
  gpus += o.gpus;
  milli += o.milli;
  for (const auto& [m, v] : o.models) models[m] += v;
  return *this;
}

GpuUsage& GpuUsage::operator-=(const GpuUsage& o) {
  gpus -= o.gpus;
  milli -= o.milli;
  for (const auto& [m, v] : o.models)
    if ((models[m] -= v) == 0) models.erase(m);
  return *this;
}

std::vector<std::string> pinned_models(const json& pod) {
  auto spec = pod.find("spec");
  if (spec == pod.end() || !spec->is_object()) return {};
  std::optional<std::set<std::string>> models = affinity_models(*spec);
  if (auto sel = spec->find("nodeSelector"); sel != spec->end() && sel->is_object()) {
    if (auto p = sel->find(std::string(kProductLabel)); p != sel->end() && p->is_string()) {
      std::string v = p->get<std::string>();
      // Both must hold: the selector's model, if the affinity allows it.
      models = !models || models->contains(v) ? std::set<std::string>{v} : std::set<std::string>{};
    }
  }
  if (!models) return {};
  return {models->begin(), models->end()};
}

GpuUsage usage_of(const json& pod, const GpuRequest& request) {
  GpuUsage u;
  if (request.empty()) return u;
  std::vector<std::string> models = pinned_models(pod);
  u.gpus = request.whole;
  u.milli = total_milli(request, models.size() == 1 ? models.front() : "");
  for (const std::string& m : models) u.models[m] = total_milli(request, m);
  return u;
}

namespace {

struct Line {
  int64_t requested = 0, used = 0, hard = 0;  // thousandths of the resource's unit
};

// The quota's resources in the units they are printed in, scaled by 1000.
std::map<std::string, int64_t> amounts(const GpuQuota& quota, const GpuUsage& u) {
  std::map<std::string, int64_t> out;
  if (quota.gpus) out[std::string(kQuotaGpus)] = u.gpus * 1000;
  if (quota.milli) out[std::string(kQuotaMilli)] = u.milli * 1000;
  for (const auto& [model, limit] : quota.models) {
    auto it = u.models.find(model);
    out[quota_model_resource(model)] = it == u.models.end() ? 0 : it->second;
  }
  return out;
}

}  // namespace

std::optional<std::string> check_quota(const GpuQuota& quota, const GpuUsage& used,
                                       const GpuUsage& requested) {
  GpuUsage hard;
  hard.gpus = quota.gpus.value_or(0);
  hard.milli = quota.milli.value_or(0);
  hard.models = quota.models;
  const auto h = amounts(quota, hard), u = amounts(quota, used), r = amounts(quota, requested);
  std::map<std::string, Line> exceeded;  // sorted, as kube prints them
  for (const auto& [name, want] : r) {
    if (want <= 0) continue;
    if (u.at(name) + want > h.at(name)) exceeded[name] = {want, u.at(name), h.at(name)};
  }
  if (exceeded.empty()) return std::nullopt;
  auto list = [&](int64_t Line::*field) {
    std::string out;
    for (const auto& [name, line] : exceeded)
      out += (out.empty() ? "" : ",") + name + "=" + quantity(line.*field);
    return out;
  };
  return "exceeded quota: " + std::string(kGpuQuotaName) +
         ", requested: " + list(&Line::requested) + ", used: " + list(&Line::used) +
         ", limited: " + list(&Line::hard);
}

std::string format_usage(const GpuQuota& quota, const GpuUsage& usage) {
  std::string out;
  for (const auto& [name, amount] : amounts(quota, usage))
    out += (out.empty() ? "" : ",") + name + "=" + quantity(amount);
  return out;
}

json host_resource_quota(const GpuQuota& quota, const HostGpuPolicy& policy, std::string_view name,
                         std::string_view ns) {
  json hard = json::object();
  std::optional<int64_t> whole = quota.gpus;
  if (quota.milli) whole = std::min(whole.value_or(INT64_MAX), *quota.milli / 1000);
  switch (policy.fractions) {
    case FractionMode::kMilli:
      if (quota.milli) hard["requests.vkube.io/gpu-milli"] = std::to_string(*quota.milli);
      break;
    case FractionMode::kTimeSlicing:
      if (quota.milli) hard["requests.nvidia.com/gpu.shared"] = std::to_string(*quota.milli);
      break;
    case FractionMode::kHami:
      // A share is nvidia.com/gpu: 1 there: whole GPUs and shares together
      // are bounded only by the number of thousandths.
      whole = quota.milli;
      break;
    case FractionMode::kKai:
      break;
  }
  if (whole) hard["requests.nvidia.com/gpu"] = std::to_string(*whole);
  if (quota.milli) {
    for (const std::string& profile : policy.host_mig_profiles) {
      // Under kSmallestFit a 1g request may take a larger host profile.
      int64_t cost =
          slice_milli(policy.mig == MigMode::kAsIs ? profile : "1g.", kDefaultComputeSlices);
      hard["requests." + std::string(kMigResourcePrefix) + profile] =
          std::to_string(*quota.milli / cost);
    }
  }
  return {{"apiVersion", "v1"},
          {"kind", "ResourceQuota"},
          {"metadata", {{"name", std::string(name)}, {"namespace", std::string(ns)}}},
          {"spec", {{"hard", std::move(hard)}}}};
}

}  // namespace vkube::gpu
