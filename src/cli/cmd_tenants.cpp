// vkube create / list / delete / connect: tenants as objects of a host
// cluster (a real one through its kubeconfig or the in-cluster account, or
// `vkube host`). A tenant is a host namespace vkube-<name> holding the
// objects of manifests/vkube-tenant.yaml: its StatefulSet runs `vkube serve`,
// which writes its admin kubeconfig into the Secret vkube-kubeconfig there.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <thread>
#include <tuple>

#include "command.h"
#include "host_connect.h"
#include "kinds.h"
#include "tenant_queues.h"
#include "tenant_sync.h"
#include "vkube/apiserver/apiserver.h"
#include "vkube/cli/manifests.h"
#include "vkube/common/base64.h"
#include "vkube/gpu/books.h"
#include "vkube/gpu/quota.h"
#include "vkube/gpu/resources.h"
#include "vkube/gpu/share.h"
#include "vkube/hostclient/client.h"
#include "vkube/syncer/host_policy.h"

namespace vkube::cli {

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using hostclient::Client;

constexpr const char* kSecret = "vkube-kubeconfig";
constexpr const char* kControlPlane = "vkube.io/component=control-plane";

std::string str_at(const json& v, std::initializer_list<const char*> path) {
  const json* p = &v;
  for (const char* k : path) {
    if (!p->is_object() || !p->contains(k)) return {};
    p = &(*p)[k];
  }
  return p->is_string() ? p->get<std::string>() : std::string();
}

// The collection URL of a built-in kind's object ("" for an unknown kind).
std::string path_of(const json& obj) {
  const std::string api = obj.value("apiVersion", "");
  const std::string kind = obj.value("kind", "");
  for (const auto& k : apiserver::builtin::builtin_kinds()) {
    const api::Resource& r = k.resource;
    if (r.kind != kind || r.gv.api_version() != api) continue;
    std::string path = r.gv.group.empty() ? "/api/" + api : "/apis/" + api;
    if (r.namespaced) path += "/namespaces/" + str_at(obj, {"metadata", "namespace"});
    return path + "/" + r.plural;
  }
  return {};
}

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// The tenant's control-plane pod, or null.
json control_plane_pod(Client& host, const std::string& ns) {
  auto r = host.call("GET", "/api/v1/namespaces/" + ns + "/pods?labelSelector=" + kControlPlane);
  if (!r.ok() || !r.body.contains("items") || r.body["items"].empty()) return nullptr;
  return r.body["items"][0];
}

// Where this machine reaches the tenant's API: --server; the pod's own
// address when `vkube host` runs it locally (loopback); the Service's load
// balancer; else the in-cluster address the Secret names.
std::string choose_server(Client& host, const std::string& ns, const std::string& flag,
                          const std::string& in_secret, std::string* note) {
  if (!flag.empty()) return flag;
  json pod = control_plane_pod(host, ns);
  std::string ip = str_at(pod, {"status", "podIP"});
  if (ip.rfind("127.", 0) == 0) {
    int port = 6443;
    if (pod.is_object())
      for (const json& c : pod["spec"].value("containers", json::array()))
        for (const json& p : c.value("ports", json::array()))
          if (p.value("name", "") == "https" && p.contains("containerPort"))
            port = p["containerPort"].get<int>();
    return "https://" + ip + ":" + std::to_string(port);
  }
  auto svc = host.call("GET", "/api/v1/namespaces/" + ns + "/services/vkube");
  if (svc.ok() && svc.body.is_object()) {
    const json ingress = svc.body["status"]["loadBalancer"].value("ingress", json::array());
    if (!ingress.empty()) {
      std::string addr = ingress[0].value("ip", ingress[0].value("hostname", ""));
      if (!addr.empty()) return "https://" + addr + ":443";
    }
  }
  if (note)
    *note =
        "the kubeconfig names the tenant's in-cluster address; from outside the cluster run\n"
        "  kubectl port-forward -n " +
        ns +
        " svc/vkube 8443:443\n"
        "and use --server https://127.0.0.1:8443";
  return in_secret;
}

std::string server_of(const std::string& kubeconfig) {
  auto at = kubeconfig.find("server:");
  if (at == std::string::npos) return {};
  auto end = kubeconfig.find('\n', at);
  std::string v =
      kubeconfig.substr(at + 7, end == std::string::npos ? std::string::npos : end - at - 7);
  v.erase(0, v.find_first_not_of(" \""));
  while (!v.empty() && (v.back() == '"' || v.back() == ' ' || v.back() == '\r')) v.pop_back();
  return v;
}

// The tenant's kubeconfig from its Secret; kNotFound until it is written.
Result<std::string> read_kubeconfig(Client& host, const std::string& ns) {
  auto r = host.call("GET", "/api/v1/namespaces/" + ns + "/secrets/" + kSecret);
  if (r.code == 404) return Status::not_found("the tenant has not written its kubeconfig yet");
  if (!r.ok()) return Status::unavailable("reading " + ns + "/" + kSecret + ": " + r.message());
  auto config = base64_decode(str_at(r.body, {"data", "config"}));
  if (!config || config->empty()) return Status::not_found("the kubeconfig Secret is empty");
  return *config;
}

Status write_private(const std::string& path, const std::string& text) {
  std::error_code ec;
  fs::path p(path);
  if (p.has_parent_path()) fs::create_directories(p.parent_path(), ec);
  std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    if (!out) return Status::unavailable("cannot write " + path);
    out << text;
  }
  fs::permissions(tmp, fs::perms::owner_read | fs::perms::owner_write, ec);
  fs::rename(tmp, path, ec);
  if (ec) return Status::unavailable("cannot write " + path + ": " + ec.message());
  return Status::ok();
}

// A client of the tenant whose kubeconfig is at `kubeconfig_path` that
// fails at once rather than retrying (the caller polls); null on error.
std::unique_ptr<Client> tenant_client(const std::string& kubeconfig_path) {
  auto config = hostclient::from_kubeconfig(kubeconfig_path);
  if (!config.is_ok()) return nullptr;
  hostclient::Options o;
  o.user_agent = "vkube-cli";
  o.retry_for = std::chrono::milliseconds(0);
  o.request_timeout = std::chrono::seconds(2);
  auto client = Client::create(std::move(config).value(), o);
  return client.is_ok() ? std::move(client).value() : nullptr;
}

// Why the control plane is not up yet, from its pod's status.
std::string pod_state(Client& host, const std::string& ns) {
  json pod = control_plane_pod(host, ns);
  if (pod.is_null()) return "no control-plane pod yet";
  std::string s =
      "pod " + str_at(pod, {"metadata", "name"}) + " " + str_at(pod, {"status", "phase"});
  for (const json& c : pod["status"].value("containerStatuses", json::array())) {
    std::string reason = str_at(c, {"state", "waiting", "reason"});
    std::string message = str_at(c, {"state", "waiting", "message"});
    if (!reason.empty()) s += ", " + reason;
    if (!message.empty()) s += ": " + message;
  }
  for (const json& c : pod["status"].value("conditions", json::array()))
    if (c.value("type", "") == "PodScheduled" && c.value("status", "") == "False")
      s += ", unschedulable: " + c.value("message", "");
  return s;
}

// Why the control plane will not answer when its process keeps exiting (a
// crash loop: its address taken, its data unreadable): its restarts, last
// exit code and the end of its previous run's log. "" otherwise.
std::string crash_loop(Client& host, const std::string& ns) {
  constexpr int kRestarts = 3;  // the restart back-off makes them ~7 s apart by then
  json pod = control_plane_pod(host, ns);
  if (!pod.is_object()) return "";
  for (const json& c : pod["status"].value("containerStatuses", json::array())) {
    const int restarts = c.value("restartCount", 0);
    const int code = c.value("lastState", json::object())
                         .value("terminated", json::object())
                         .value("exitCode", 0);
    if (restarts < kRestarts || code == 0) continue;
    std::string why = "its control plane keeps exiting (" + std::to_string(restarts) +
                      " restarts, last exit code " + std::to_string(code) + ")";
    auto log = host.call(
        "GET", "/api/v1/namespaces/" + ns + "/pods/" + str_at(pod, {"metadata", "name"}) +
                   "/log?container=" + c.value("name", "") + "&previous=true&tailLines=1");
    std::string last = log.ok() ? log.message() : "";
    while (!last.empty() && (last.back() == '\n' || last.back() == '\r')) last.pop_back();
    return last.empty() ? why : why + ": " + last;
  }
  return "";
}

// Waits for the Secret and for /readyz, writing the kubeconfig to `out`.
// The Secret and the tenant's address are read again every half second
// while it does not answer (a restarted pod may have a new address).
Status await_tenant(Client& host, const std::string& ns, const std::string& server_flag,
                    const std::string& out, Clock::time_point deadline, std::string* note) {
  std::unique_ptr<Client> tenant;  // from the kubeconfig written to `out`
  Clock::time_point written;
  for (;;) {
    if (!tenant || Clock::now() - written > std::chrono::milliseconds(500)) {
      auto config = read_kubeconfig(host, ns);
      if (config.is_ok()) {
        std::string server = choose_server(host, ns, server_flag, server_of(*config), note);
        VKUBE_RETURN_IF_ERROR(write_private(out, with_server(*config, server)));
        tenant = tenant_client(out);
        written = Clock::now();
      } else if (config.status().code() != Code::kNotFound) {
        return config.status();
      }
      // Fails at once rather than at the deadline when it cannot come up.
      if (std::string why = crash_loop(host, ns); !why.empty())
        return Status::unavailable("the tenant cannot start: " + why + "; see kubectl -n " + ns +
                                   " logs vkube-0 --previous");
    }
    if (tenant && tenant->call("GET", "/readyz").code == 200) return Status::ok();
    if (Clock::now() >= deadline)
      return Status::unavailable("the tenant did not answer in time (" + pod_state(host, ns) +
                                 "); see kubectl -n " + ns + " describe pod");
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

std::string default_out(const Host& h, const std::string& name) {
  if (!h.data_dir.empty()) return h.data_dir + "/tenants/" + name + "/admin.kubeconfig";
  return name + ".kubeconfig";
}

// kubectl's AGE of an RFC 3339 timestamp.
std::string age(const std::string& rfc3339) {
  std::tm tm{};
  if (strptime(rfc3339.c_str(), "%Y-%m-%dT%H:%M:%S", &tm) == nullptr) return "<unknown>";
  return apiserver::builtin::human_duration(
      std::max<int64_t>(0, static_cast<int64_t>(std::time(nullptr) - timegm(&tm))));
}

// Prints `table` as kubectl does: columns as wide as their widest cell, three
// spaces apart.
void print_table(const std::vector<std::vector<std::string>>& table) {
  std::vector<size_t> width;
  for (const auto& row : table)
    for (size_t i = 0; i < row.size(); ++i) {
      if (width.size() <= i) width.push_back(0);
      width[i] = std::max(width[i], row[i].size());
    }
  for (const auto& row : table) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i)
      line += i + 1 < row.size() ? row[i] + std::string(width[i] + 3 - row[i].size(), ' ') : row[i];
    std::printf("%s\n", line.c_str());
  }
}

// kNotFound when tenant `name` has no host namespace, kInvalid when its
// namespace is not labelled as the tenant's (not vkube's to touch).
Status check_tenant_namespace(Client& c, const std::string& name) {
  const std::string ns = tenant_host_namespace(name);
  auto got = c.call("GET", "/api/v1/namespaces/" + ns);
  if (got.code == 404)
    return Status::not_found("tenant \"" + name + "\" not found (no namespace " + ns + ")");
  if (!got.ok()) return Status::unavailable("reading namespace " + ns + ": " + got.message());
  if (str_at(got.body, {"metadata", "labels", "vkube.io/tenant"}) != name)
    return Status::invalid("namespace " + ns + " is not labelled vkube.io/tenant=" + name);
  return Status::ok();
}

// Parses a NAME command's flags into `name`: -1 to go on, else the exit code.
int parse_named(FlagSet& flags, const LogFlags& log_flags, const Args& args, const char* command,
                std::string* name) {
  if (int rc = parse_or_exit(flags, log_flags, args); rc >= 0) return rc;
  if (flags.positional().size() != 1)
    return fail(std::string("usage: vkube ") + command + " NAME [flags]");
  *name = flags.positional()[0];
  if (Status s = validate_tenant_name(*name); !s.is_ok()) return fail(s.message());
  return -1;
}

// The tenant's namespace and the manifest's objects, made for `spec`.
// kAlreadyExists when the namespace exists.
Status create_tenant(Client& c, const TenantSpec& spec) {
  auto objects = tenant_objects(tenant_manifest(), spec);
  if (!objects.is_ok()) return objects.status();
  auto ns = c.call("POST", "/api/v1/namespaces", tenant_namespace(spec));
  if (ns.code == 409)
    return Status::already_exists("tenant \"" + spec.name + "\" already exists (namespace " +
                                  spec.ns + ")");
  if (!ns.ok()) return Status::unavailable("creating namespace " + spec.ns + ": " + ns.message());
  for (const json& obj : *objects) {
    std::string path = path_of(obj);
    if (path.empty())
      return Status::invalid("manifest: no API path for kind " + obj.value("kind", ""));
    auto r = c.call("POST", path, obj);
    if (r.code == 409 && obj.value("kind", "").rfind("Cluster", 0) == 0) {
      // Left by an earlier tenant of this name: replace it.
      c.call("DELETE", path + "/" + str_at(obj, {"metadata", "name"}));
      r = c.call("POST", path, obj);
    }
    if (!r.ok())
      return Status::unavailable("creating " + obj.value("kind", "") + " " +
                                 str_at(obj, {"metadata", "name"}) + ": " + r.message());
  }
  return Status::ok();
}

// The RBAC objects of an existing tenant made as the manifest makes them now:
// a tenant made by an older vkube lacks what newer features need (the
// metrics.k8s.io rules of `kubectl top`), and `vkube up` reuses its tenant.
Status refresh_rbac(Client& c, const TenantSpec& spec) {
  auto objects = tenant_objects(tenant_manifest(), spec);
  if (!objects.is_ok()) return objects.status();
  for (json obj : *objects) {
    const std::string kind = obj.value("kind", "");
    if (kind != "Role" && kind != "ClusterRole") continue;
    const std::string path = path_of(obj) + "/" + str_at(obj, {"metadata", "name"});
    auto got = c.call("GET", path);
    if (got.code == 404) {
      got = c.call("POST", path_of(obj), obj);
    } else if (got.ok() && got.body.value("rules", json::array()) != obj["rules"]) {
      obj["metadata"]["resourceVersion"] = str_at(got.body, {"metadata", "resourceVersion"});
      got = c.call("PUT", path, obj);
    }
    if (!got.ok())
      return Status::unavailable("updating " + kind + " " + str_at(obj, {"metadata", "name"}) +
                                 ": " + got.message());
  }
  return Status::ok();
}

}  // namespace

Result<std::string> ensure_tenant(const std::string& host_kubeconfig, const std::string& name,
                                  const std::string& out, std::chrono::seconds timeout) {
  const auto deadline = Clock::now() + timeout;
  std::string path = host_kubeconfig, context, data_dir;
  HostFlags hf{&path, &context, &data_dir};
  auto host = connect_host(hf);
  if (!host.is_ok()) return host.status();
  Client& c = *host->client;
  TenantSpec spec;
  spec.name = name;
  spec.ns = tenant_host_namespace(name);
  // `vkube up` makes it on its own embedded host, whose load balancers give loopback
  // addresses of the host's pool: charts with a LoadBalancer Service install there.
  spec.allowed_service_types = "ClusterIP,LoadBalancer";
  auto got = c.call("GET", "/api/v1/namespaces/" + spec.ns);
  if (got.code == 404) {
    VKUBE_RETURN_IF_ERROR(create_tenant(c, spec));
  } else if (!got.ok()) {
    return Status::unavailable("reading namespace " + spec.ns + ": " + got.message());
  } else {
    VKUBE_RETURN_IF_ERROR(refresh_rbac(c, spec));
  }
  VKUBE_RETURN_IF_ERROR(await_tenant(c, spec.ns, "", out, deadline, nullptr));
  std::ifstream in(out);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return server_of(text);
}

int run_create(const Args& args) {
  FlagSet flags(
      "create",
      "Create a tenant on the host cluster: its namespace vkube-NAME with the objects\n"
      "of manifests/vkube-tenant.yaml (ServiceAccount, syncer Role, quotas, Service,\n"
      "StatefulSet running `vkube serve`), wait until it answers, and write its kubeconfig.",
      "NAME");
  auto log_flags = add_log_flags(flags);
  HostFlags hf = add_host_flags(flags);
  std::string& out_flag = flags.add_string(
      "out", "",
      "where to write the tenant's kubeconfig (default: DATA-DIR/tenants/NAME/admin.kubeconfig "
      "on the `vkube up` host, else ./NAME.kubeconfig)");
  std::string& server =
      flags.add_string("server", "", "the tenant's URL as seen from here (default: found)");
  std::string& gpu_quota = flags.add_string(
      "gpu-quota", "",
      "the tenant's GPU quota: gpus=N, milli=N, model:<product>=N, comma-separated");
  std::string& gpu_share = flags.add_string(
      "gpu-share", "",
      "the tenant's share of the host's GPU pool: deserved=N (guaranteed), limit=N (never more), "
      "weight=W (its part of idle GPUs), preemptible=false, model:<product>=N; `vkube share` "
      "changes it later");
  std::string& pod_security = flags.add_string(
      "pod-security", "baseline", "Pod Security level: privileged, baseline or restricted");
  std::string& sharing = flags.add_string(
      "gpu-sharing", "milli",
      "how GPU shares reach the host: milli (vkube host), time-slicing, hami or kai");
  std::string& host_queues = flags.add_string(
      "host-gpu-sharing", "vkube",
      "which scheduler holds the tenant to its --gpu-share: vkube (`vkube host`'s own), kai (a "
      "KAI Queue under vkube-pool) or kueue (a Kueue ClusterQueue in cohort vkube-pool)");
  std::string& tolerations = flags.add_string(
      "allowed-tolerations", "",
      "the host policy: taints the tenant's pods may tolerate, key[=value][:effect],... or none");
  std::string& node_keys = flags.add_string(
      "allowed-node-selector-keys", "",
      "the host policy: node labels the tenant's pods may select, key or prefix*,... or none");
  std::string& runtime_classes = flags.add_string(
      "allowed-runtime-classes", "", "the host policy: runtimeClassNames the tenant may use");
  std::string& service_types =
      flags.add_string("allowed-service-types", "",
                       "the host policy: Service types copied to the host (default ClusterIP)");
  std::string& node_selector = flags.add_string(
      "node-selector", "",
      "the host policy: the tenant's slice of host nodes, key=value,...; every pod of the tenant "
      "runs only on nodes with these labels (its own selector may only narrow it)");
  std::string& service_cidr = flags.add_string(
      "service-cluster-ip-range", "",
      "the tenant's Service range, an IPv4 CIDR as kube-apiserver's flag (default 10.96.0.0/12)");
  std::string& image = flags.add_string("image", "", "the vkube image (default: the manifest's)");
  bool& unsandboxed = flags.add_bool(
      "unsandboxed-local-pods", false,
      "on `vkube host` only: the tenant's pods of the vkube image run as processes of the "
      "machine, NOT SANDBOXED (as the host's user); for tests of logs, exec and port-forward");
  int64_t& timeout =
      flags.add_int("timeout-seconds", 120, "how long to wait for the tenant to answer");
  bool& wait =
      flags.add_bool("wait", true,
                     "wait until the tenant answers and write its kubeconfig (false: return once "
                     "its objects exist; `vkube connect NAME` gets the kubeconfig later)");
  std::string name;
  if (int rc = parse_named(flags, log_flags, args, "create", &name); rc >= 0) return rc;
  if (pod_security != "privileged" && pod_security != "baseline" && pod_security != "restricted")
    return fail("--pod-security must be privileged, baseline or restricted, got '" + pod_security +
                "'");
  if (sharing != "milli" && sharing != "time-slicing" && sharing != "hami" && sharing != "kai")
    return fail("--gpu-sharing must be milli, time-slicing, hami or kai, got '" + sharing + "'");
  if (auto q = gpu::parse_gpu_quota(gpu_quota); !q.is_ok())
    return fail("--gpu-quota: " + q.status().message());
  auto share = gpu::parse_gpu_share(gpu_share);
  if (!share.is_ok()) return fail("--gpu-share: " + share.status().message());
  if (!service_cidr.empty())
    if (auto r = apiserver::parse_service_cidr(service_cidr); !r.is_ok())
      return fail(r.status().message());
  // Checked here as `vkube serve` will check them, so a typo fails now.
  if (auto t = syncer::parse_toleration_rules(tolerations); !t.is_ok())
    return fail("--allowed-tolerations: " + t.status().message());
  for (auto [flag, text, parse] :
       {std::tuple{"allowed-node-selector-keys", &node_keys, &syncer::parse_node_label_keys},
        std::tuple{"allowed-runtime-classes", &runtime_classes, &syncer::parse_runtime_classes},
        std::tuple{"allowed-service-types", &service_types, &syncer::parse_service_types}})
    if (auto v = parse(*text); !v.is_ok())
      return fail(std::string("--") + flag + ": " + v.status().message());
  auto slice = syncer::parse_node_selector(node_selector);
  if (!slice.is_ok()) return fail("--node-selector: " + slice.status().message());

  auto queue_mode = gpu::parse_host_queue_mode(host_queues);
  if (!queue_mode.is_ok()) return fail(queue_mode.status().message());

  const auto t0 = Clock::now();
  auto host = connect_host(hf);
  if (!host.is_ok()) return fail(host.status().message());
  Client& c = *host->client;
  TenantSpec spec;
  spec.name = name;
  spec.ns = tenant_host_namespace(name);
  spec.image = image;
  spec.pod_security = pod_security;
  spec.gpu_sharing = sharing;
  spec.gpu_quota = gpu_quota;
  if (!gpu_share.empty()) spec.gpu_share = share->to_string();
  spec.service_cidr = service_cidr;
  spec.allowed_tolerations = tolerations;
  spec.allowed_node_selector_keys = node_keys;
  spec.allowed_runtime_classes = runtime_classes;
  spec.allowed_service_types = service_types;
  spec.host_node_selector = syncer::node_selector_text(*slice);
  spec.unsandboxed_local_pods = unsandboxed;
  if (Status st = prepare_tenant_queues(c, *queue_mode, spec); !st.is_ok())
    return fail(st.message());
  if (Status st = create_tenant(c, spec); !st.is_ok()) return fail(st.message());
  std::vector<std::string> queue_notes;
  if (Status st = apply_tenant_queues(c, *queue_mode, spec, &queue_notes); !st.is_ok())
    return fail("tenant " + name + " is created but not its queues: " + st.message() +
                "; `vkube delete " + name + "` removes it");
  for (const std::string& n : queue_notes) std::printf("note: %s\n", n.c_str());
  const double applied_ms = ms_since(t0);
  if (!wait) {
    std::printf(
        "tenant %s created in %.0f ms on %s (not waiting; `vkube connect %s` once it is up)\n",
        name.c_str(), applied_ms, c.config().server.c_str(), name.c_str());
    return 0;
  }
  const std::string out = out_flag.empty() ? default_out(*host, name) : out_flag;
  std::string note;
  Status s = await_tenant(c, spec.ns, server, out, t0 + std::chrono::seconds(timeout), &note);
  if (!s.is_ok()) return fail(s.message());
  std::printf(
      "tenant %s is ready in %.0f ms (objects applied in %.0f ms) on %s\n"
      "  export KUBECONFIG=%s\n  kubectl get namespaces\n",
      name.c_str(), ms_since(t0), applied_ms, c.config().server.c_str(), out.c_str());
  if (!note.empty()) std::printf("  note: %s\n", note.c_str());
  return 0;
}

int run_connect(const Args& args) {
  FlagSet flags("connect",
                "Print a tenant's kubeconfig (from the Secret vkube-kubeconfig of its host\n"
                "namespace), or write it with --out.",
                "NAME");
  auto log_flags = add_log_flags(flags);
  HostFlags hf = add_host_flags(flags);
  std::string& out =
      flags.add_string("out", "", "write the kubeconfig to this file instead of printing it");
  std::string& server =
      flags.add_string("server", "", "the tenant's URL as seen from here (default: found)");
  std::string name;
  if (int rc = parse_named(flags, log_flags, args, "connect", &name); rc >= 0) return rc;
  auto host = connect_host(hf);
  if (!host.is_ok()) return fail(host.status().message());
  const std::string ns = tenant_host_namespace(name);
  auto nsr = host->client->call("GET", "/api/v1/namespaces/" + ns);
  if (nsr.code == 404) return fail("tenant \"" + name + "\" not found (no namespace " + ns + ")");
  auto config = read_kubeconfig(*host->client, ns);
  if (!config.is_ok()) return fail(config.status().message());
  std::string note;
  std::string text =
      with_server(*config, choose_server(*host->client, ns, server, server_of(*config), &note));
  if (out.empty()) {
    std::fwrite(text.data(), 1, text.size(), stdout);
  } else {
    if (Status s = write_private(out, text); !s.is_ok()) return fail(s.message());
    std::printf("export KUBECONFIG=%s\n", out.c_str());
  }
  if (!note.empty()) std::fprintf(stderr, "note: %s\n", note.c_str());
  return 0;
}

int run_delete(const Args& args) {
  FlagSet flags("delete",
                "Delete a tenant: its host namespace (with its pods, volumes and everything\n"
                "synced there) and its cluster-wide role binding.",
                "NAME");
  auto log_flags = add_log_flags(flags);
  HostFlags hf = add_host_flags(flags);
  bool& wait = flags.add_bool("wait", true, "wait until the namespace is gone");
  int64_t& timeout = flags.add_int("timeout-seconds", 120, "how long to wait");
  std::string name;
  if (int rc = parse_named(flags, log_flags, args, "delete", &name); rc >= 0) return rc;
  auto host = connect_host(hf);
  if (!host.is_ok()) return fail(host.status().message());
  Client& c = *host->client;
  const auto t0 = Clock::now();
  const std::string ns = tenant_host_namespace(name);
  if (Status s = check_tenant_namespace(c, name); !s.is_ok())
    return fail(s.message() + (s.code() == Code::kInvalid ? "; not deleting it" : ""));
  auto r = c.call("DELETE", "/api/v1/namespaces/" + ns);
  if (!r.ok() && r.code != 404) return fail("deleting namespace " + ns + ": " + r.message());
  if (Status st = delete_tenant_queues(c, name); !st.is_ok()) return fail(st.message());
  for (const char* kind : {"clusterrolebindings", "clusterroles"}) {
    auto d = c.call(
        "DELETE", std::string("/apis/rbac.authorization.k8s.io/v1/") + kind + "/vkube-nodes-" + ns);
    if (!d.ok() && d.code != 404)
      return fail(std::string("deleting ") + kind + " vkube-nodes-" + ns + ": " + d.message());
  }
  if (!host->data_dir.empty()) {
    std::error_code ec;
    fs::remove_all(host->data_dir + "/tenants/" + name, ec);
  }
  if (wait) {
    const auto deadline = t0 + std::chrono::seconds(timeout);
    while (c.call("GET", "/api/v1/namespaces/" + ns).code != 404) {
      if (Clock::now() >= deadline) return fail("namespace " + ns + " is still terminating");
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  std::printf("tenant %s deleted in %.0f ms\n", name.c_str(), ms_since(t0));
  return 0;
}

int run_share(const Args& args) {
  FlagSet flags(
      "share",
      "Set a tenant's share of the host's GPU pool: the annotation vkube.io/gpu-share of its\n"
      "host namespace, which the host's scheduler reads. SPEC as `vkube create --gpu-share`:\n"
      "deserved=N,limit=N,weight=W,preemptible=false,model:<product>=N. With --clear the\n"
      "annotation goes, and the share the tenant was made with (its --gpu-share) holds again.",
      "NAME [SPEC]");
  auto log_flags = add_log_flags(flags);
  HostFlags hf = add_host_flags(flags);
  bool& clear = flags.add_bool("clear", false, "remove the annotation instead of setting it");
  if (int rc = parse_or_exit(flags, log_flags, args); rc >= 0) return rc;
  const auto& pos = flags.positional();
  if (pos.size() != (clear ? 1u : 2u))
    return fail(clear ? "usage: vkube share NAME --clear" : "usage: vkube share NAME SPEC");
  const std::string& name = pos[0];
  if (Status s = validate_tenant_name(name); !s.is_ok()) return fail(s.message());
  auto share = gpu::parse_gpu_share(clear ? "" : pos[1]);
  if (!share.is_ok()) return fail(share.status().message());
  auto host = connect_host(hf);
  if (!host.is_ok()) return fail(host.status().message());
  Client& c = *host->client;
  const std::string ns = tenant_host_namespace(name);
  if (Status s = check_tenant_namespace(c, name); !s.is_ok()) return fail(s.message());
  const std::string key(gpu::kShareAnnotation);
  json patch = {{"metadata", {{"annotations", {{key, nullptr}}}}}};
  if (!clear) patch["metadata"]["annotations"][key] = share->to_string();
  auto r = c.call("PATCH", "/api/v1/namespaces/" + ns, patch, "application/merge-patch+json");
  if (!r.ok()) return fail("annotating namespace " + ns + ": " + r.message());
  if (!clear) {
    std::printf("tenant %s: GPU share %s\n", name.c_str(), share->to_string().c_str());
    if (Status st = refresh_tenant_queues(c, name, *share); !st.is_ok()) return fail(st.message());
    return 0;
  }
  // What holds now: the control plane's flag, if it has one.
  auto sts = c.call("GET", "/apis/apps/v1/namespaces/" + ns + "/statefulsets/vkube");
  auto now = gpu::host_share(r.body, sts.ok() ? sts.body : json());
  std::printf("tenant %s: GPU share annotation removed; its share is %s\n", name.c_str(),
              now.is_ok() ? now->to_string().c_str() : now.status().message().c_str());
  if (now.is_ok())
    if (Status st = refresh_tenant_queues(c, name, *now); !st.is_ok()) return fail(st.message());
  return 0;
}

int run_list(const Args& args) {
  FlagSet flags("list",
                "List the tenants on the host cluster (made by `vkube create` or by the Helm\n"
                "chart), with their state and GPU use.");
  auto log_flags = add_log_flags(flags);
  HostFlags hf = add_host_flags(flags);
  if (int rc = parse_or_exit(flags, log_flags, args); rc >= 0) return rc;
  auto host = connect_host(hf);
  if (!host.is_ok()) return fail(host.status().message());
  Client& c = *host->client;
  // A tenant is a labelled namespace (vkube create) or a control-plane
  // StatefulSet (either way, so a Helm release counts too).
  auto nss = c.call("GET", "/api/v1/namespaces?labelSelector=vkube.io%2Ftenant");
  if (!nss.ok()) return fail("listing namespaces: " + nss.message());
  auto sets =
      c.call("GET",
             "/apis/apps/v1/"
             "statefulsets?labelSelector=app.kubernetes.io%2Fname%3Dvkube%2Cvkube.io%2Ftenant");
  if (!sets.ok()) return fail("listing statefulsets: " + sets.message());
  auto pods = c.call("GET", "/api/v1/pods?labelSelector=vkube.io%2Ftenant");
  if (!pods.ok()) return fail("listing pods: " + pods.message());
  // The pool's size; without it the books still say who holds what.
  auto nodes = c.call("GET", "/api/v1/nodes");
  if (!nodes.ok()) std::fprintf(stderr, "note: listing nodes: %s\n", nodes.message().c_str());
  struct Row {
    std::string name, status = "Pending", created, quota;
    bool terminating = false;
    int pods = 0;
    double gpus = 0;
    int mig = 0;
  };
  std::map<std::string, Row> rows;  // by namespace
  for (const json& n : nss.body.value("items", json::array())) {
    Row& row = rows[str_at(n, {"metadata", "name"})];
    row.name = str_at(n, {"metadata", "labels", "vkube.io/tenant"});
    row.created = str_at(n, {"metadata", "creationTimestamp"});
    row.terminating = str_at(n, {"status", "phase"}) == "Terminating";
  }
  for (const json& s : sets.body.value("items", json::array())) {
    Row& row = rows[str_at(s, {"metadata", "namespace"})];
    if (row.name.empty()) row.name = str_at(s, {"metadata", "labels", "vkube.io/tenant"});
    if (row.created.empty()) row.created = str_at(s, {"metadata", "creationTimestamp"});
    for (const json& ctr : s["spec"]["template"]["spec"].value("containers", json::array()))
      for (const json& a : ctr.value("args", json::array()))
        if (a.is_string() && a.get<std::string>().rfind("--gpu-quota=", 0) == 0)
          row.quota = a.get<std::string>().substr(12);
  }
  for (const json& p : pods.body.value("items", json::array())) {
    auto it = rows.find(str_at(p, {"metadata", "namespace"}));
    if (it == rows.end()) continue;
    Row& row = it->second;
    if (str_at(p, {"metadata", "labels", "vkube.io/component"}) == "control-plane") {
      bool ready = false;
      for (const json& cond : p["status"].value("conditions", json::array()))
        if (cond.value("type", "") == "Ready" && cond.value("status", "") == "True") ready = true;
      row.status = ready ? "Ready" : "Starting";
      continue;
    }
    const std::string phase = str_at(p, {"status", "phase"});
    if (phase == "Succeeded" || phase == "Failed") continue;
    ++row.pods;
    if (auto g = gpu::request_of(p); g.is_ok()) {
      row.gpus += g->whole + g->milli / 1000.0;
      for (auto& [profile, n] : g->mig) row.mig += n;
    }
  }
  const gpu::PoolBooks books =
      gpu::pool_books(nss.body, sets.body, pods.body, nodes.ok() ? nodes.body : json::object());
  std::map<std::string, const gpu::TenantBooks*> books_of;
  for (const gpu::TenantBooks& b : books.tenants) books_of[b.ns] = &b;
  for (const auto& [ns, why] : books.bad_shares)
    std::fprintf(stderr, "warning: tenant namespace %s: %s (counted as deserved 0)\n", ns.c_str(),
                 why.c_str());
  std::vector<std::vector<std::string>> table = {{"NAME", "NAMESPACE", "STATUS", "PODS", "GPUS",
                                                  "GPU-QUOTA", "DESERVED", "LIMIT", "ALLOCATED",
                                                  "BORROWED", "LENT", "PENDING", "AGE"}};
  for (const auto& [ns, row] : rows) {
    char gpus[32];
    std::snprintf(gpus, sizeof gpus, "%g", row.gpus);
    std::string g = gpus;
    if (row.mig > 0) g += "+" + std::to_string(row.mig) + "mig";
    const gpu::TenantBooks empty;
    const gpu::TenantBooks& b = books_of.contains(ns) ? *books_of[ns] : empty;
    table.push_back({row.name, ns, row.terminating ? "Terminating" : row.status,
                     std::to_string(row.pods), g, row.quota.empty() ? "<none>" : row.quota,
                     gpu::format_gpus(b.share.deserved_milli),
                     b.share.limit_milli ? gpu::format_gpus(*b.share.limit_milli) : "<none>",
                     gpu::format_gpus(b.allocated), gpu::format_gpus(b.borrowed),
                     gpu::format_gpus(b.lent), gpu::format_gpus(b.pending), age(row.created)});
  }
  print_table(table);
  return 0;
}

}  // namespace vkube::cli
