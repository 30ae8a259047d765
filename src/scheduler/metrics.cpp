#include "metrics.h"

#include <cstdio>

namespace vkube::scheduler {

namespace {

std::string escape(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

std::string number(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

void header(std::string& out, const char* name, const char* type, const char* help) {
  out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
}

}  // namespace

void LatencyHistogram::observe(double seconds) {
  std::lock_guard lock(mu_);
  for (size_t i = 0; i < kBuckets.size(); ++i)
    if (seconds <= kBuckets[i]) ++counts_[i];
  ++count_;
  sum_ += seconds;
}

void LatencyHistogram::render(std::string& out, const std::string& name,
                              const std::string& help) const {
  std::lock_guard lock(mu_);
  header(out, name.c_str(), "histogram", help.c_str());
  for (size_t i = 0; i < kBuckets.size(); ++i)
    out +=
        name + "_bucket{le=\"" + number(kBuckets[i]) + "\"} " + std::to_string(counts_[i]) + "\n";
  out += name + "_bucket{le=\"+Inf\"} " + std::to_string(count_) + "\n";
  out += name + "_sum " + number(sum_) + "\n" + name + "_count " + std::to_string(count_) + "\n";
}

std::string render_metrics(const MetricsSnapshot& s, const LatencyHistogram& latency) {
  std::string out;
  out.reserve(256 + s.nodes.size() * 400);
  header(out, "vkube_node_gpu_capacity", "gauge", "GPUs of the node not in MIG mode.");
  for (const auto& n : s.nodes)
    out += "vkube_node_gpu_capacity{node=\"" + escape(n.node) + "\",model=\"" + escape(n.model) +
           "\"} " + std::to_string(n.gpus) + "\n";
  header(out, "vkube_node_gpu_allocated_milli", "gauge",
         "Thousandths of the node's GPUs held by pods (whole GPUs count 1000).");
  for (const auto& n : s.nodes)
    out += "vkube_node_gpu_allocated_milli{node=\"" + escape(n.node) + "\"} " +
           std::to_string(n.allocated_milli) + "\n";
  header(out, "vkube_node_gpu_capacity_milli", "gauge", "Thousandths of GPU the node offers.");
  for (const auto& n : s.nodes)
    out += "vkube_node_gpu_capacity_milli{node=\"" + escape(n.node) + "\"} " +
           std::to_string(n.capacity_milli) + "\n";
  header(out, "vkube_node_mig_slices", "gauge", "MIG slices of the node by profile.");
  for (const auto& n : s.nodes)
    for (const auto& [profile, v] : n.mig)
      out += "vkube_node_mig_slices{node=\"" + escape(n.node) + "\",profile=\"" + escape(profile) +
             "\"} " + std::to_string(v.first) + "\n";
  header(out, "vkube_node_mig_slices_allocated", "gauge", "MIG slices held by pods, by profile.");
  for (const auto& n : s.nodes)
    for (const auto& [profile, v] : n.mig)
      out += "vkube_node_mig_slices_allocated{node=\"" + escape(n.node) + "\",profile=\"" +
             escape(profile) + "\"} " + std::to_string(v.second) + "\n";
  header(out, "vkube_namespace_gpu_allocated", "gauge",
         "Whole GPUs held by the namespace's pods (on the host: per tenant).");
  for (const auto& [ns, v] : s.namespaces)
    out += "vkube_namespace_gpu_allocated{namespace=\"" + escape(ns) + "\"} " +
           std::to_string(v.first) + "\n";
  header(out, "vkube_namespace_gpu_allocated_milli", "gauge",
         "Thousandths of GPU held by the namespace's pods, shares included.");
  for (const auto& [ns, v] : s.namespaces)
    out += "vkube_namespace_gpu_allocated_milli{namespace=\"" + escape(ns) + "\"} " +
           std::to_string(v.second) + "\n";
  int64_t cap = 0, alloc = 0;
  for (const auto& n : s.nodes) {
    cap += n.capacity_milli;
    alloc += n.allocated_milli;
  }
  header(out, "vkube_cluster_gpu_capacity_milli", "gauge", "Thousandths of GPU in the cluster.");
  out += "vkube_cluster_gpu_capacity_milli " + std::to_string(cap) + "\n";
  header(out, "vkube_cluster_gpu_allocated_milli", "gauge", "Thousandths of GPU held by pods.");
  out += "vkube_cluster_gpu_allocated_milli " + std::to_string(alloc) + "\n";
  header(out, "vkube_cluster_gpu_fragmented_milli", "gauge",
         "Free GPU capacity a typical pending pod could not use (FGD fragmentation).");
  out += "vkube_cluster_gpu_fragmented_milli " + number(s.fragmented_milli) + "\n";
  header(out, "scheduler_pending_pods", "gauge", "Pods waiting to be scheduled, by queue.");
  out += "scheduler_pending_pods{queue=\"active\"} " + std::to_string(s.active) + "\n";
  out += "scheduler_pending_pods{queue=\"backoff\"} " + std::to_string(s.backoff) + "\n";
  out +=
      "scheduler_pending_pods{queue=\"unschedulable\"} " + std::to_string(s.unschedulable) + "\n";
  header(out, "scheduler_schedule_attempts_total", "counter", "Scheduling attempts by result.");
  out += "scheduler_schedule_attempts_total{result=\"scheduled\"} " + std::to_string(s.scheduled) +
         "\n";
  out += "scheduler_schedule_attempts_total{result=\"unschedulable\"} " +
         std::to_string(s.unschedulable_attempts) + "\n";
  out += "scheduler_schedule_attempts_total{result=\"error\"} " + std::to_string(s.errors) + "\n";
  latency.render(out, "scheduler_pod_scheduling_duration_seconds",
                 "Time from a pod entering the queue to its binding.");
  return out;
}

void render_tenant_metrics(std::string& out, const std::vector<gpu::TenantBooks>& tenants,
                           int64_t preemptions) {
  struct Gauge {
    const char* name;
    const char* help;
    int64_t (*value)(const gpu::TenantBooks&);
  };
  static const Gauge kGauges[] = {
      {"vkube_tenant_gpu_deserved_milli", "GPUs guaranteed to the tenant, in thousandths.",
       [](const gpu::TenantBooks& t) { return t.share.deserved_milli; }},
      {"vkube_tenant_gpu_limit_milli", "The tenant's limit in thousandths (-1: the pool).",
       [](const gpu::TenantBooks& t) { return t.share.limit_milli.value_or(-1); }},
      {"vkube_tenant_gpu_allocated_milli", "GPUs the tenant's bound pods hold.",
       [](const gpu::TenantBooks& t) { return t.allocated; }},
      {"vkube_tenant_gpu_borrowed_milli", "GPUs the tenant holds beyond its deserved share.",
       [](const gpu::TenantBooks& t) { return t.borrowed; }},
      {"vkube_tenant_gpu_lent_milli", "Deserved GPUs of the tenant that others borrow.",
       [](const gpu::TenantBooks& t) { return t.lent; }},
      {"vkube_tenant_gpu_pending_milli", "GPUs the tenant's unplaced pods ask for.",
       [](const gpu::TenantBooks& t) { return t.pending; }},
      {"vkube_tenant_gpu_reclaiming_milli", "GPUs of the tenant's pods being preempted.",
       [](const gpu::TenantBooks& t) { return t.reclaiming; }},
      {"vkube_tenant_gpu_fair_share_milli", "What the tenant may hold now (water-filling).",
       [](const gpu::TenantBooks& t) { return t.fair_share; }},
  };
  for (const Gauge& g : kGauges) {
    header(out, g.name, "gauge", g.help);
    for (const auto& t : tenants)
      out += std::string(g.name) + "{tenant=\"" + escape(t.tenant) + "\",namespace=\"" +
             escape(t.ns) + "\"} " + std::to_string(g.value(t)) + "\n";
  }
  header(out, "vkube_scheduler_preemptions_total", "counter",
         "Pods preempted to reclaim GPUs or for higher-priority pods.");
  out += "vkube_scheduler_preemptions_total " + std::to_string(preemptions) + "\n";
}

}  // namespace vkube::scheduler
