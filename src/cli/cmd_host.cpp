// vkube host: the same binary as the host cluster, for one machine. A tenant
// API server (certificates, kubeconfig, controllers) plus the GPU-aware
// scheduler and simulated GPU nodes that run no containers.
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>

#include "command.h"
#include "tenant.h"
#include "vkube/apiserver/apiserver.h"
#include "vkube/common/dial_policy.h"
#include "vkube/common/log.h"
#include "vkube/common/memory.h"
#include "vkube/dashboard/dashboard.h"
#include "vkube/gpu/node_spec.h"
#include "vkube/nodesim/simulator.h"
#include "vkube/scheduler/scheduler.h"

namespace vkube::cli {

namespace {

struct NodeFlags {
  int64_t* count;
  std::string* prefix;
  int64_t* cpus;
  std::string* memory;
  int64_t* gpus;
  std::string* model;
  int64_t* mig_gpus;
  std::string* mig_layout;
  std::string* sharing;
  int64_t* replicas;
  std::string* config;
  std::string* trace;
  int64_t* trace_limit;
};

// "512Gi", "64G", "1024Mi" or plain MiB -> MiB.
Result<int64_t> memory_mib(const std::string& text) {
  char* end = nullptr;
  long long v = std::strtoll(text.c_str(), &end, 10);
  std::string unit = end ? end : "";
  if (end == text.c_str() || v <= 0)
    return Status::invalid("--node-memory: bad value '" + text + "'");
  if (unit.empty() || unit == "Mi") return v;
  if (unit == "Gi") return v * 1024;
  if (unit == "Ti") return v * 1024 * 1024;
  return Status::invalid("--node-memory: unit must be Mi, Gi or Ti, got '" + text + "'");
}

Result<std::vector<gpu::NodeSpec>> node_specs(const FlagSet& flags, const NodeFlags& f) {
  int sources =
      (flags.was_set("nodes") ? 1 : 0) + (f.config->empty() ? 0 : 1) + (f.trace->empty() ? 0 : 1);
  if (sources > 1)
    return Status::invalid(
        "give nodes by flags (--nodes ...), --node-config or --nodes-from-trace, not several");
  Result<std::vector<gpu::NodeSpec>> specs = Status::ok();
  if (!f.config->empty()) {
    std::FILE* in = std::fopen(f.config->c_str(), "rb");
    if (in == nullptr) return Status::invalid("--node-config: cannot read " + *f.config);
    std::string text;
    char buf[65536];
    for (size_t n; (n = std::fread(buf, 1, sizeof buf, in)) > 0;) text.append(buf, n);
    std::fclose(in);
    specs = gpu::pool_from_yaml(text);
  } else if (!f.trace->empty()) {
    specs =
        gpu::pool_from_trace(*f.trace, static_cast<size_t>(std::max<int64_t>(0, *f.trace_limit)));
  } else if (flags.was_set("nodes")) {
    gpu::PoolFlags p;
    p.count = static_cast<int>(*f.count);
    p.prefix = *f.prefix;
    p.cpu_milli = *f.cpus * 1000;
    auto mem = memory_mib(*f.memory);
    if (!mem.is_ok()) return mem.status();
    p.memory_mib = *mem;
    p.gpus = static_cast<int>(*f.gpus);
    p.model = *f.model;
    p.mig_gpus = static_cast<int>(*f.mig_gpus);
    p.mig_layout = *f.mig_layout;
    p.sharing = *f.sharing;
    p.replicas = p.sharing == "time-slicing" ? static_cast<int>(*f.replicas) : 1;
    specs = gpu::pool_from_flags(p);
  } else {
    specs = gpu::default_pool();
  }
  if (!specs.is_ok()) return specs.status();
  gpu::assign_addresses(*specs);
  return specs;
}

}  // namespace

int run_host(const Args& args) {
  FlagSet flags(
      "host",
      "Run the host cluster on this machine: a Kubernetes API (as `vkube serve`), a\n"
      "GPU-aware scheduler, and simulated GPU nodes (they run no containers and say so).\n"
      "With no node flags: 4 nodes of 8 GPUs each, one of them with MIG slices.");
  auto log_flags = add_log_flags(flags);
  std::string& data_dir =
      flags.add_string("data-dir", "", "state directory (store, certificates, kubeconfig)");
  std::string& listen =
      flags.add_string("listen", "127.0.0.1:6443", "HOST:PORT to serve on (port 0: any free port)");
  std::string& sans =
      flags.add_string("tls-san", "", "extra serving certificate names, comma-separated");
  std::string& name =
      flags.add_string("name", "vkube-host", "cluster name (kubeconfig cluster and context)");
  std::string& token_file =
      flags.add_string("token-auth-file", "", "static bearer tokens (as kube-apiserver)");
  std::string& sa_alg = flags.add_string("service-account-signing-alg", "ES256",
                                         "JWS algorithm of service-account tokens: ES256 or RS256");
  std::string& policy_name = flags.add_string(
      "policy", "binpack", "GPU placement: binpack, spread or fragmentation (FGD, ATC '23)");
  std::string& scheduler_names =
      flags.add_string("scheduler-name", "default-scheduler,vkube-scheduler",
                       "pods naming one of these are scheduled");
  bool& durable =
      flags.add_bool("durable", true, "sync every write to disk (false: faster, for benchmarks)");
  std::string& local_images = flags.add_string(
      "local-images", "vkube",
      "image repositories whose pods run as local processes of this binary (how `vkube create` "
      "runs tenants here), comma-separated; empty: none");
  int64_t& heartbeat =
      flags.add_int("heartbeat-seconds", 10, "how often each node renews its Lease");
  std::string& job_duration = flags.add_string(
      "sim-job-duration", "2s",
      "how long the pods of Jobs run before they complete, as on kwok (the pod annotation "
      "sim.vkube.io/duration wins; 0: until deleted)");
  std::string& lb_pool = flags.add_string(
      "load-balancer-pool", "",
      "addresses given to LoadBalancer Services, a.b.c.d/n (default: 127.254.S.0/24, S this "
      "host's loopback slot: nothing listens there, and a client that dials it stays on the "
      "machine)");
  NodeFlags nf{
      &flags.add_int("nodes", 4, "simulated nodes of one shape (with the --node-*/--gpu-* flags)"),
      &flags.add_string("node-prefix", "gpu-node", "node names: PREFIX-0 .. PREFIX-N-1"),
      &flags.add_int("node-cpus", 64, "CPU cores per node"),
      &flags.add_string("node-memory", "512Gi", "memory per node (Mi, Gi or Ti)"),
      &flags.add_int("gpus-per-node", 8, "GPUs per node"),
      &flags.add_string(
          "gpu-model", "A100-80GB",
          "GPU model (A100-80GB, A100-40GB, H100, H200, A30, L4, L40S, T4, V100, ...)"),
      &flags.add_int("mig-gpus", 0,
                     "how many of each node's GPUs are MIG-partitioned (the last ones)"),
      &flags.add_string("mig-layout", "",
                        "MIG profiles of a partitioned GPU, e.g. 3g.40gb,2g.20gb,1g.10gb,1g.10gb"),
      &flags.add_string("gpu-sharing", "fraction",
                        "exclusive, fraction (vkube.io/gpu-milli) or time-slicing"),
      &flags.add_int("gpu-replicas", 4, "time-slicing replicas per GPU"),
      &flags.add_string("node-config", "", "YAML file of node shapes (see docs)"),
      &flags.add_string("nodes-from-trace", "", "a node list CSV of the Alibaba GPU trace v2023"),
      &flags.add_int("trace-nodes", 0, "with --nodes-from-trace: keep the first N nodes (0: all)"),
  };
  std::string& service_cidr = add_service_cidr_flag(flags);
  if (int rc = parse_or_exit(flags, log_flags, args); rc >= 0) return rc;
  if (data_dir.empty()) return fail("--data-dir is required");
  if (auto r = apiserver::parse_service_cidr(service_cidr); !r.is_ok())
    return fail(r.status().message());
  auto policy = gpu::parse_policy(policy_name);
  if (!policy.is_ok()) return fail("--policy: " + policy.status().message());
  auto specs = node_specs(flags, nf);
  if (!specs.is_ok()) return fail(specs.status().message());
  if (heartbeat <= 0) return fail("--heartbeat-seconds must be positive");
  auto job_run = nodesim::parse_sim_duration(job_duration);
  if (!job_run) return fail("--sim-job-duration: not a duration: \"" + job_duration + "\"");
  // Local pods of this host get addresses no other embedded host on the
  // machine hands out; asked before anything starts, so a clash fails now.
  auto slot = nodesim::claim_loopback_slot(data_dir);
  if (!slot.is_ok()) return fail(slot.status().message());
  // Every address the simulation makes up routes off the machine: never dialled.
  for (const std::string& net : nodesim::simulated_networks(*specs))
    (void)dial_policy::note_simulated_network(net);
  (void)dial_policy::note_simulated_network(service_cidr);

  block_signals();
  const auto t0 = std::chrono::steady_clock::now();
  TenantOptions o;
  o.data_dir = data_dir;
  o.listen = listen;
  o.name = name;
  o.token_auth_file = token_file;
  o.service_account_signing_alg = sa_alg;
  o.sync = durable;
  o.pod_security = "privileged";  // the host runs what its operators and the syncer put there
  o.tls_sans = split_list(sans);
  o.service_cidr = service_cidr;
  o.metrics_api = true;  // the node agent measures (nodesim::Simulator)

  std::unique_ptr<scheduler::Scheduler> sched;
  std::unique_ptr<nodesim::Simulator> sim;
  scheduler::Options so;
  so.policy = *policy;
  so.scheduler_names = split_list(scheduler_names);
  nodesim::Options no;
  no.nodes = std::move(specs).value();
  no.heartbeat = std::chrono::seconds(heartbeat);
  no.local_images = split_list(local_images);
  no.loopback_slot = *slot;
  no.job_duration = *job_run;
  no.load_balancer_pool = lb_pool.empty() ? nodesim::default_load_balancer_pool(*slot) : lb_pool;
  // Absolute: local pods run in folders of their own.
  const std::string abs_dir = std::filesystem::absolute(data_dir).lexically_normal().string();
  no.local_state_dir = abs_dir;
  no.ca_file = abs_dir + "/pki/ca.crt";
  auto url = std::make_shared<std::string>();
  no.api_url = [url] { return *url; };
  const size_t node_count = no.nodes.size();
  o.components.push_back({"scheduler", nullptr,
                          [&](apiserver::ApiServer& api, controllers::Informers& inf) {
                            sched = scheduler::Scheduler::create(api, inf, so);
                            scheduler::Scheduler* s = sched.get();
                            api.add_metrics_source([s] { return s->metrics(); });
                          },
                          [&] { return sched->start(); }, [&] { sched->stop(); }});
  o.components.push_back({"simulated-nodes", [url](const std::string& u) { *url = u; },
                          [&](apiserver::ApiServer& api, controllers::Informers& inf) {
                            sim = nodesim::Simulator::create(api, inf, std::move(no));
                          },
                          [&] { return sim->start(); }, [&] { sim->stop(); }});
  // The GPU-pool page at /dashboard/, behind the API's authentication and RBAC.
  apiserver::ApiServer* api_server = nullptr;
  o.components.push_back({"dashboard", nullptr,
                          [&](apiserver::ApiServer& api, controllers::Informers&) {
                            dashboard::serve(api);
                            api_server = &api;
                          },
                          [&] { return dashboard::ensure_viewer_policy(*api_server); }, nullptr});
  auto tenant = Tenant::start(o);
  if (!tenant.is_ok()) return fail(tenant.status().message());
  double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  VKUBE_LOG(info, "host serving", {"url", (*tenant)->url()},
            {"kubeconfig", (*tenant)->kubeconfig_path()}, {"nodes", node_count},
            {"policy", gpu::policy_name(*policy)}, {"allocator", heap_allocator()},
            {"startup_ms", ms});
  std::printf(
      "vkube is serving %s\n  host mode: %zu simulated GPU nodes, placement policy %s\n"
      "  export KUBECONFIG=%s\n  kubectl get nodes -L "
      "nvidia.com/gpu.product,nvidia.com/gpu.count\n",
      (*tenant)->url().c_str(), node_count, std::string(gpu::policy_name(*policy)).c_str(),
      (*tenant)->kubeconfig_path().c_str());
  std::fflush(stdout);
  wait_for_signal();
  (*tenant)->stop(std::chrono::seconds(5));
  return 0;
}

}  // namespace vkube::cli
