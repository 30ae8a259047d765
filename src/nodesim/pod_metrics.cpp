#include "pod_metrics.h"

#include <dirent.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>

#include "sim_usage.h"
#include "vkube/gpu/node_spec.h"

namespace vkube::nodesim {

namespace {

using json = nlohmann::json;

double seconds_since_boot() {
  timespec ts{};
  clock_gettime(CLOCK_BOOTTIME, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

std::string now_rfc3339() {
  const auto now = std::chrono::system_clock::now();
  const std::time_t t = std::chrono::system_clock::to_time_t(now);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// The fields of /proc/PID/stat after the command (which may hold spaces and
// parentheses): field 3 (state) is fields[0].
bool stat_fields(pid_t pid, std::vector<std::string>& fields) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/stat", static_cast<int>(pid));
  FILE* f = std::fopen(path, "r");
  if (!f) return false;
  char buf[1024];
  size_t n = std::fread(buf, 1, sizeof buf - 1, f);
  std::fclose(f);
  buf[n] = '\0';
  const char* close = std::strrchr(buf, ')');
  if (!close) return false;
  fields.clear();
  for (const char* p = close + 1; *p;) {
    while (*p == ' ') ++p;
    const char* e = p;
    while (*e && *e != ' ' && *e != '\n') ++e;
    if (e > p) fields.emplace_back(p, e);
    if (!*e || *e == '\n') break;
    p = e;
  }
  return fields.size() > 21;
}

std::string cpu_quantity(double cores) {
  // metrics-server's form: nanocores ("1234567n").
  return std::to_string(static_cast<long long>(cores * 1e9 + 0.5)) + "n";
}

std::string memory_quantity(uint64_t bytes) {
  return std::to_string(bytes / 1024) + "Ki";
}

// Marks metrics that vkube made up rather than measured (see sim_usage.h).
void mark_simulated(json& item) {
  item["metadata"]["annotations"] = {
      {std::string(gpu::kSimulatedLabel),
       "simulated usage (vkube host): the pod runs nothing; derived from its requests or its "
       "sim.vkube.io/cpu-usage and sim.vkube.io/memory-usage annotations"}};
}

class LocalMetrics final : public apiserver::MetricsProvider {
 public:
  LocalMetrics(const controllers::Lister& pods, const controllers::Lister& nodes,
               std::function<std::optional<pid_t>(const std::string&)> pid_of)
      : pods_(pods), nodes_(nodes), pid_of_(std::move(pid_of)) {}

  Result<std::vector<json>> node_metrics() override {
    std::map<std::string, std::pair<double, uint64_t>> by_node;  // cores, bytes
    double window = 0;
    for (const Measured& m : measure("")) {
      auto& [cores, bytes] = by_node[m.node];
      for (const Container& c : m.containers) {
        cores += c.cores;
        bytes += c.bytes;
      }
      window = std::max(window, m.window_s);
    }
    std::vector<json> out;
    const std::string now = now_rfc3339();
    for (const auto& node : nodes_.list()) {
      const json& meta = node->value("metadata", json::object());
      const std::string name = meta.value("name", "");
      auto [cores, bytes] = by_node[name];
      const bool simulated =
          meta.value("labels", json::object()).value(std::string(gpu::kSimulatedLabel), "") ==
          "true";
      if (simulated) {  // its kubelet and runtime, which a simulated node has none of
        cores += static_cast<double>(kNodeBaseMillicores) / 1000;
        bytes += kNodeBaseBytes;
      }
      out.push_back({{"metadata", {{"name", name}, {"labels", meta.value("labels", json::object())}}},
                     {"timestamp", now},
                     {"window", window_text(window > 0 ? window : 1)},
                     {"usage", {{"cpu", cpu_quantity(cores)}, {"memory", memory_quantity(bytes)}}}});
      if (simulated) mark_simulated(out.back());
    }
    return out;
  }

  Result<std::vector<json>> pod_metrics(const std::string& ns) override {
    std::vector<json> out;
    const std::string now = now_rfc3339();
    for (const Measured& m : measure(ns)) {
      json containers = json::array();
      for (const Container& c : m.containers)
        containers.push_back({{"name", c.name},
                              {"usage", {{"cpu", cpu_quantity(c.cores)},
                                         {"memory", memory_quantity(c.bytes)}}}});
      out.push_back({{"metadata", {{"name", m.name}, {"namespace", m.ns}, {"labels", m.labels}}},
                     {"timestamp", now},
                     {"window", window_text(m.window_s)},
                     {"containers", std::move(containers)}});
      if (m.simulated) mark_simulated(out.back());
    }
    return out;
  }

 private:
  struct Container {
    std::string name;
    double cores = 0;
    uint64_t bytes = 0;
  };
  struct Measured {
    std::string ns, name, node;
    json labels;
    std::vector<Container> containers;
    double window_s = 0;
    bool simulated = false;
  };
  struct Sample {
    double at = 0;  // seconds since boot
    uint64_t ticks = 0;
  };

  static std::string window_text(double s) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3fs", s);
    std::string t = buf;
    while (t.size() > 2 && t[t.size() - 2] == '0') t.erase(t.size() - 2, 1);
    if (t.size() > 2 && t[t.size() - 2] == '.') t.erase(t.size() - 2, 1);
    return t;
  }

  // Each local pod's CPU rate over the time since its previous measurement
  // (at least a second ago; the first one: since its process started) and
  // its resident memory now; each other running pod's simulated usage.
  std::vector<Measured> measure(const std::string& ns) {
    static const double kHz = static_cast<double>(sysconf(_SC_CLK_TCK));
    std::vector<Measured> out;
    const double now = seconds_since_boot();
    std::lock_guard lock(mu_);
    for (const auto& pod : pods_.list(ns)) {
      const json& meta = pod->value("metadata", json::object());
      const std::string key = meta.value("namespace", "") + "/" + meta.value("name", "");
      std::optional<pid_t> pid = pid_of_(key);
      if (!pid || *pid <= 0) {
        if (auto m = simulate(*pod)) out.push_back(std::move(*m));
        continue;
      }
      std::optional<ProcessUsage> u = process_group_usage(*pid);
      if (!u) continue;
      Sample& prev = samples_[*pid];
      if (prev.at == 0) prev = {u->started_s, 0};
      const double window = now - prev.at;
      double cores = window > 0 ? static_cast<double>(u->cpu_ticks - std::min(u->cpu_ticks, prev.ticks)) / kHz / window : 0;
      if (window >= 10.0) prev = {now, u->cpu_ticks};  // windows of 10 s and more, as metrics-server
      const json& spec = pod->value("spec", json::object());
      const json& containers = spec.value("containers", json::array());
      Measured m;
      m.ns = meta.value("namespace", "");
      m.name = meta.value("name", "");
      m.node = spec.value("nodeName", "");
      m.containers.push_back({containers.empty() ? "" : containers[0].value("name", ""), cores,
                              u->rss_bytes});
      m.labels = meta.value("labels", json::object());
      m.window_s = window > 0 ? window : 1;
      out.push_back(std::move(m));
    }
    return out;
  }

  // A running pod that runs no process here, with its simulated usage.
  static std::optional<Measured> simulate(const json& pod) {
    auto usage = simulated_usage(pod);
    if (!usage) return std::nullopt;
    const json& meta = pod.value("metadata", json::object());
    const json& spec = pod.value("spec", json::object());
    const json& containers = spec.value("containers", json::array());
    Measured m;
    m.ns = meta.value("namespace", "");
    m.name = meta.value("name", "");
    m.node = spec.value("nodeName", "");
    m.labels = meta.value("labels", json::object());
    for (size_t i = 0; i < usage->size(); ++i)
      m.containers.push_back({containers[i].is_object() ? containers[i].value("name", "") : "",
                              static_cast<double>((*usage)[i].millicores) / 1000,
                              static_cast<uint64_t>((*usage)[i].bytes)});
    m.window_s = 10;  // metrics-server's default resolution
    m.simulated = true;
    return m;
  }

  const controllers::Lister& pods_;
  const controllers::Lister& nodes_;
  const std::function<std::optional<pid_t>(const std::string&)> pid_of_;
  std::mutex mu_;
  std::map<pid_t, Sample> samples_;  // guarded by mu_
};

}  // namespace

std::optional<ProcessUsage> process_group_usage(pid_t pgid) {
  static const uint64_t kPage = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  static const double kHz = static_cast<double>(sysconf(_SC_CLK_TCK));
  DIR* dir = opendir("/proc");
  if (!dir) return std::nullopt;
  ProcessUsage u;
  bool any = false;
  std::vector<std::string> f;
  while (dirent* e = readdir(dir)) {
    char* end = nullptr;
    long pid = std::strtol(e->d_name, &end, 10);
    if (end == e->d_name || *end != '\0' || pid <= 0) continue;
    // fields[0] is field 3 of stat(5): pgrp is 5, utime 14, stime 15,
    // starttime 22, rss 24.
    if (!stat_fields(static_cast<pid_t>(pid), f) || std::atol(f[2].c_str()) != pgid) continue;
    if (f[0] == "Z") continue;
    any = true;
    u.cpu_ticks += std::strtoull(f[11].c_str(), nullptr, 10) + std::strtoull(f[12].c_str(), nullptr, 10);
    u.rss_bytes += std::strtoull(f[21].c_str(), nullptr, 10) * kPage;
    if (pid == pgid) u.started_s = static_cast<double>(std::strtoull(f[19].c_str(), nullptr, 10)) / kHz;
  }
  closedir(dir);
  if (!any) return std::nullopt;
  return u;
}

std::shared_ptr<apiserver::MetricsProvider> make_metrics_provider(
    const controllers::Lister& pods, const controllers::Lister& nodes,
    std::function<std::optional<pid_t>(const std::string& key)> pid_of) {
  return std::make_shared<LocalMetrics>(pods, nodes, std::move(pid_of));
}

}  // namespace vkube::nodesim
