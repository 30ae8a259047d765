// Where simulated node specs come from: the default pool, command-line flags
// and the Alibaba trace's node list (the YAML reader is node_pool_yaml.cpp),
// and the addresses each node gets.
#include <algorithm>
#include <cctype>
#include <charconv>
#include <fstream>
#include <set>
#include <sstream>

#include "models.h"
#include "pool_util.h"
#include "vkube/api/validation.h"

namespace vkube::gpu {

namespace {

// Enough for an 8-GPU machine with 8 GPUs in MIG mode and then some.
constexpr int kMaxGpus = 64;

std::string join(const std::vector<std::string>& problems) {
  std::string out;
  for (const std::string& p : problems) out += (out.empty() ? "" : "; ") + p;
  return out;
}

NodeSpec base_spec(std::string name, const GpuModel& model) {
  NodeSpec s;
  s.name = std::move(name);
  s.model = model;
  return s;
}

std::optional<int64_t> parse_int(std::string_view s) {
  int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

// The ranges pod CIDRs are cut from, in order: kube's customary 10.244/14
// first, then the rest of 10/8 except the default service range
// 10.96.0.0/12, then 100.64.0.0/10 for the largest pools.
struct Range {
  uint32_t first;   // network address of the first /24
  uint32_t blocks;  // /24s in the range
};
constexpr uint32_t ip(uint32_t a, uint32_t b, uint32_t c, uint32_t d) {
  return a << 24 | b << 16 | c << 8 | d;
}
constexpr Range kPodRanges[] = {{ip(10, 244, 0, 0), 12 * 256},
                                {ip(10, 0, 0, 0), 96 * 256},
                                {ip(10, 112, 0, 0), 132 * 256},
                                {ip(100, 64, 0, 0), 64 * 256}};

std::string format_ip(uint32_t a) {
  return std::to_string(a >> 24) + "." + std::to_string(a >> 16 & 255) + "." +
         std::to_string(a >> 8 & 255) + "." + std::to_string(a & 255);
}

// The n-th /24 of kPodRanges; nullopt past the last.
std::optional<uint32_t> pod_block(uint64_t n) {
  for (const Range& r : kPodRanges) {
    if (n < r.blocks) return r.first + static_cast<uint32_t>(n) * 256;
    n -= r.blocks;
  }
  return std::nullopt;
}

}  // namespace

Result<Sharing> parse_sharing(std::string_view text) {
  if (text == "exclusive") return Sharing::kExclusive;
  if (text == "fraction") return Sharing::kFraction;
  if (text == "time-slicing") return Sharing::kTimeSlicing;
  return Status::invalid("sharing: unknown mode \"" + std::string(text) +
                         "\" (exclusive, fraction or time-slicing)");
}

std::vector<std::string> split_list(std::string_view text) {
  std::vector<std::string> out;
  std::string item;
  std::istringstream in{std::string(text)};
  while (std::getline(in, item, ',')) {
    item.erase(
        std::remove_if(item.begin(), item.end(), [](unsigned char c) { return std::isspace(c); }),
        item.end());
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

Status set_mig(NodeSpec& spec, const std::vector<int>& gpus,
               const std::vector<std::string>& layout) {
  if (gpus.empty()) return Status::ok();
  if (layout.empty()) return Status::invalid("mig: a layout is required for the MIG GPUs");
  if (Status s = check_mig_layout(spec.model, layout); !s.is_ok())
    return Status::invalid("mig: " + s.message());
  if (spec.mig.size() < static_cast<size_t>(spec.gpus)) spec.mig.resize(spec.gpus);
  for (int g : gpus) {
    if (g < 0 || g >= spec.gpus)
      return Status::invalid("mig: GPU " + std::to_string(g) + " does not exist (the node has " +
                             std::to_string(spec.gpus) + ")");
    if (!spec.mig[g].empty())
      return Status::invalid("mig: GPU " + std::to_string(g) + " is listed twice");
    spec.mig[g] = layout;
  }
  return Status::ok();
}

Status check_spec(const NodeSpec& spec) {
  if (auto p = api::validate_dns1123_subdomain(spec.name); !p.empty())
    return Status::invalid("name \"" + spec.name + "\": " + join(p));
  if (spec.cpu_milli <= 0) return Status::invalid("cpu: must be greater than 0");
  if (spec.memory_mib <= 0) return Status::invalid("memory: must be at least 1Mi");
  if (spec.max_pods <= 0) return Status::invalid("pods: must be greater than 0");
  if (spec.gpus < 0 || spec.gpus > kMaxGpus)
    return Status::invalid("gpus: must be between 0 and " + std::to_string(kMaxGpus));
  if (spec.gpus > 0 && spec.model.product.empty()) return Status::invalid("model: required");
  if (spec.gpus > 0 && spec.model.memory_mib <= 0)
    return Status::invalid("gpuMemory: must be greater than 0");
  if (spec.replicas < 1) return Status::invalid("replicas: must be at least 1");
  if (spec.replicas > 1 && spec.sharing != Sharing::kTimeSlicing)
    return Status::invalid("replicas: only with sharing: time-slicing");
  for (const auto& [k, v] : spec.labels) {
    if (auto p = api::validate_qualified_name(k); !p.empty())
      return Status::invalid("labels: key \"" + k + "\": " + join(p));
    if (auto p = api::validate_label_value(v); !p.empty())
      return Status::invalid("labels: value \"" + v + "\" of " + k + ": " + join(p));
  }
  return Status::ok();
}

Status check_unique(const std::vector<NodeSpec>& specs) {
  std::set<std::string_view> seen;
  for (const NodeSpec& s : specs)
    if (!seen.insert(s.name).second)
      return Status::invalid("node name \"" + s.name + "\" is used twice");
  return Status::ok();
}

std::vector<NodeSpec> default_pool() {
  const GpuModel a100 = *find_model("A100-80GB");
  const GpuModel h100 = *find_model("H100-80GB");
  std::vector<NodeSpec> out;
  for (int i = 0; i < 3; ++i) out.push_back(base_spec("gpu-a100-" + std::to_string(i), a100));
  NodeSpec h = base_spec("gpu-h100-0", h100);
  // One GPU cut for mixed inference, one into seven small slices.
  h.mig.resize(h.gpus);
  h.mig[6] = {"3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"};
  h.mig[7] = std::vector<std::string>(7, "1g.10gb");
  out.push_back(std::move(h));
  for (NodeSpec& s : out) {
    s.cpu_milli = 64000;
    s.memory_mib = 524288;
  }
  return out;
}

Result<std::vector<NodeSpec>> pool_from_flags(const PoolFlags& flags) {
  if (flags.count < 0) return Status::invalid("node count: must not be negative");
  auto model = find_model(flags.model);
  if (!model.is_ok()) return Status::invalid("model: " + model.status().message());
  auto sharing = parse_sharing(flags.sharing);
  if (!sharing.is_ok()) return sharing.status();
  if (flags.mig_gpus < 0 || flags.mig_gpus > flags.gpus)
    return Status::invalid("MIG GPUs: must be between 0 and the GPUs per node (" +
                           std::to_string(flags.gpus) + ")");
  if (flags.mig_gpus == 0 && !flags.mig_layout.empty())
    return Status::invalid("a MIG layout needs a number of MIG GPUs to apply it to");
  std::vector<int> mig_gpus;
  for (int g = flags.gpus - flags.mig_gpus; g < flags.gpus; ++g) mig_gpus.push_back(g);

  std::vector<NodeSpec> out;
  out.reserve(flags.count);
  for (int i = 0; i < flags.count; ++i) {
    NodeSpec s = base_spec(flags.prefix + "-" + std::to_string(i), *model);
    s.cpu_milli = flags.cpu_milli;
    s.memory_mib = flags.memory_mib;
    s.gpus = flags.gpus;
    s.sharing = *sharing;
    s.replicas = flags.replicas;
    if (Status st = set_mig(s, mig_gpus, split_list(flags.mig_layout)); !st.is_ok()) return st;
    if (Status st = check_spec(s); !st.is_ok()) return st;
    out.push_back(std::move(s));
  }
  return out;
}

Result<std::vector<NodeSpec>> pool_from_trace(const std::string& csv_path, size_t limit) {
  std::ifstream in(csv_path);
  if (!in) return Status::unavailable("cannot read the trace node list " + csv_path);
  std::vector<NodeSpec> out;
  std::string line;
  size_t line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    if (line_no == 1 && line.starts_with("sn,")) continue;  // the header
    std::vector<std::string_view> f;
    std::string_view rest = line;
    for (size_t c; (c = rest.find(',')) != std::string_view::npos; rest.remove_prefix(c + 1))
      f.push_back(rest.substr(0, c));
    f.push_back(rest);
    auto where = [&] { return csv_path + ":" + std::to_string(line_no) + ": "; };
    if (f.size() != 5)
      return Status::invalid(where() + "expected sn,cpu_milli,memory_mib,gpu,model");
    auto cpu = parse_int(f[1]);
    auto mem = parse_int(f[2]);
    auto gpus = parse_int(f[3]);
    if (!cpu || !mem || !gpus)
      return Status::invalid(where() + "cpu_milli, memory_mib and gpu must be integers");
    auto model = find_model(f[4]);
    if (!model.is_ok()) return Status::invalid(where() + model.status().message());
    NodeSpec s = base_spec(std::string(f[0]), *model);
    s.cpu_milli = *cpu;
    s.memory_mib = *mem;
    s.gpus = static_cast<int>(*gpus);
    // The trace's workload asks for GPU shares (gpu_milli).
    s.sharing = Sharing::kFraction;
    if (Status st = check_spec(s); !st.is_ok()) return Status::invalid(where() + st.message());
    out.push_back(std::move(s));
    if (limit > 0 && out.size() >= limit) break;
  }
  if (Status st = check_unique(out); !st.is_ok())
    return Status::invalid(csv_path + ": " + st.message());
  return out;
}

void assign_addresses(std::vector<NodeSpec>& specs) {
  std::set<std::string> taken_cidrs, taken_ips;
  for (const NodeSpec& s : specs) {
    if (!s.pod_cidr.empty()) taken_cidrs.insert(s.pod_cidr);
    if (!s.internal_ip.empty()) taken_ips.insert(s.internal_ip);
  }
  uint64_t block = 0;
  uint32_t host = 0;
  for (NodeSpec& s : specs) {
    while (s.pod_cidr.empty()) {
      auto b = pod_block(block++);
      if (!b) break;  // more nodes than /24s: the rest get no pod range
      std::string cidr = format_ip(*b) + "/24";
      if (!taken_cidrs.count(cidr)) s.pod_cidr = std::move(cidr);
    }
    // Node addresses from 172.16.0.0/12, skipping .0 and .255 of each /24.
    while (s.internal_ip.empty() && host < 4096 * 254) {
      std::string addr = format_ip(ip(172, 16, 0, 0) + (host / 254) * 256 + host % 254 + 1);
      ++host;
      if (!taken_ips.count(addr)) s.internal_ip = std::move(addr);
    }
  }
}

}  // namespace vkube::gpu
