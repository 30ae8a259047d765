// The GPU models vkube can simulate, named as GPU Feature Discovery labels
// them (nvidia.com/gpu.product is NVML's product name with spaces turned into
// dashes), and the MIG profiles of the models that have MIG.
#include <algorithm>
#include <cctype>
#include <map>

#include "models.h"

namespace vkube::gpu {

namespace {

struct Entry {
  GpuModel model;
  std::vector<std::string_view> aliases;
};

// Memory is the nominal size in MiB (GiB x 1024); drivers report a little
// less, which no simulated workload can tell apart.
const std::vector<Entry>& catalog() {
  static const std::vector<Entry> kCatalog = {
      {{"NVIDIA-A100-SXM4-40GB", 40960, "ampere", true}, {"A100-40GB", "A100-SXM4-40GB"}},
      {{"NVIDIA-A100-SXM4-80GB", 81920, "ampere", true}, {"A100-80GB", "A100-SXM4-80GB", "A100"}},
      {{"NVIDIA-H100-80GB-HBM3", 81920, "hopper", true}, {"H100-80GB", "H100"}},
      {{"NVIDIA-H200", 144384, "hopper", true}, {"H200", "H200-141GB"}},
      {{"NVIDIA-A30", 24576, "ampere", true}, {"A30"}},
      {{"NVIDIA-A10", 24576, "ampere", false}, {"A10"}},
      {{"NVIDIA-L4", 24576, "ada-lovelace", false}, {"L4"}},
      {{"NVIDIA-L40S", 49152, "ada-lovelace", false}, {"L40S"}},
      {{"Tesla-T4", 16384, "turing", false}, {"T4"}},
      {{"Tesla-V100-SXM2-16GB", 16384, "volta", false}, {"V100-16GB", "V100M16", "V100"}},
      {{"Tesla-V100-SXM2-32GB", 32768, "volta", false}, {"V100-32GB", "V100M32"}},
      {{"Tesla-P100-PCIE-16GB", 16384, "pascal", false}, {"P100"}},
      // The Alibaba v2023 trace names two models only by the codes G2 and G3,
      // and neither the trace nor its paper says what they are. They get
      // names of their own rather than a real product's, and a memory size
      // that is a guess: G2 nodes (8 GPUs, 96 cores, 384 GiB) look like
      // V100-32GB-class machines, G3 nodes (8 GPUs, 128 cores, 768 GiB) like
      // A100-80GB-class ones. The trace itself only ever asks for GPU shares.
      {{"Alibaba-G2", 32768, "unknown", false}, {"G2"}},
      {{"Alibaba-G3", 81920, "unknown", false}, {"G3"}},
  };
  return kCatalog;
}

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

// NVIDIA's MIG user guide, "Supported MIG Profiles". Every model splits into
// 7 compute and 8 memory slices except the A30 (4 and 4).
MigGeometry seven_way(std::string_view g1, std::string_view g2, std::string_view g3,
                      std::string_view g4, std::string_view g7) {
  return {7, 8, {{g1, 7, 1, 1}, {g2, 3, 2, 2}, {g3, 2, 3, 4}, {g4, 1, 4, 4}, {g7, 1, 7, 8}}};
}

const std::map<std::string_view, MigGeometry>& geometries() {
  static const std::map<std::string_view, MigGeometry> kGeometries = {
      {"NVIDIA-A100-SXM4-40GB", seven_way("1g.5gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb")},
      {"NVIDIA-A100-SXM4-80GB", seven_way("1g.10gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb")},
      {"NVIDIA-H100-80GB-HBM3", seven_way("1g.10gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb")},
      {"NVIDIA-H200", seven_way("1g.18gb", "2g.35gb", "3g.71gb", "4g.71gb", "7g.141gb")},
      {"NVIDIA-A30", {4, 4, {{"1g.6gb", 4, 1, 1}, {"2g.12gb", 2, 2, 2}, {"4g.24gb", 1, 4, 4}}}},
  };
  return kGeometries;
}

}  // namespace

Result<GpuModel> find_model(std::string_view name) {
  for (const Entry& e : catalog()) {
    if (iequals(name, e.model.product)) return e.model;
    for (std::string_view alias : e.aliases)
      if (iequals(name, alias)) return e.model;
  }
  return Status::not_found("unknown GPU model \"" + std::string(name) +
                           "\" (known: A100-40GB, A100-80GB, H100-80GB, H200, A30, A10, L4, L40S, "
                           "T4, V100-16GB, V100-32GB, P100, G2, G3, or a GFD product name)");
}

const MigGeometry* mig_geometry(const GpuModel& model) {
  if (!model.mig_capable) return nullptr;
  auto it = geometries().find(model.product);
  return it == geometries().end() ? nullptr : &it->second;
}

std::map<std::string, int> mig_profiles(const GpuModel& model) {
  std::map<std::string, int> out;
  if (const MigGeometry* g = mig_geometry(model))
    for (const MigProfile& p : g->profiles) out[std::string(p.name)] = p.max_per_gpu;
  return out;
}

Status check_mig_layout(const GpuModel& model, const std::vector<std::string>& layout) {
  const MigGeometry* g = mig_geometry(model);
  if (g == nullptr) return Status::invalid(model.product + " has no MIG mode");
  std::map<std::string_view, int> used;
  int compute = 0, memory = 0;
  for (const std::string& name : layout) {
    auto p = std::find_if(g->profiles.begin(), g->profiles.end(),
                          [&](const MigProfile& m) { return m.name == name; });
    if (p == g->profiles.end()) {
      std::string known;
      for (const MigProfile& m : g->profiles)
        known += (known.empty() ? "" : ", ") + std::string(m.name);
      return Status::invalid("MIG profile \"" + name + "\" does not exist on " + model.product +
                             " (it offers " + known + ")");
    }
    if (++used[p->name] > p->max_per_gpu)
      return Status::invalid("a " + model.product + " holds at most " +
                             std::to_string(p->max_per_gpu) + " " + name + " slices");
    compute += p->compute;
    memory += p->memory;
  }
  // NVIDIA's placement rules allow a little less than every sum that fits;
  // the sums are what a scheduler needs to be right about.
  if (compute > g->compute)
    return Status::invalid("MIG layout needs " + std::to_string(compute) + " compute slices; a " +
                           model.product + " has " + std::to_string(g->compute));
  if (memory > g->memory)
    return Status::invalid("MIG layout needs " + std::to_string(memory) + " of the " +
                           std::to_string(g->memory) + " memory slices of a " + model.product);
  return Status::ok();
}

}  // namespace vkube::gpu
