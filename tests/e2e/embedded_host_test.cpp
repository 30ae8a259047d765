// The embedded host (`vkube host`, `vkube up`) as a faithful stand-in for a
// cluster: nothing is dialled at a simulated pod, Jobs' pods complete,
// LoadBalancer Services get an address, a missing Secret volume holds its
// pod as a kubelet would, killing `vkube up` takes its processes with it,
// and two embedded hosts on one machine keep apart.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "fixture.h"

namespace vkube::e2e {
namespace {

using json = nlohmann::json;

constexpr const char* kSimulated = "pod runs on a simulated node: nothing listens";

// A Deployment of one pod (simulated), a Service for it and a validating
// webhook served by that Service for ConfigMaps labelled checked=yes.
std::string webhook_objects(const std::string& ns) {
  return R"(apiVersion: apps/v1
kind: Deployment
metadata: {name: hook, namespace: )" +
         ns + R"(}
spec:
  replicas: 1
  selector: {matchLabels: {app: hook}}
  template:
    metadata: {labels: {app: hook}}
    spec:
      containers: [{name: hook, image: example.com/hook:1, ports: [{containerPort: 8443}]}]
---
apiVersion: v1
kind: Service
metadata: {name: hook, namespace: )" +
         ns + R"(}
spec:
  selector: {app: hook}
  ports: [{port: 443, targetPort: 8443}]
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: hook)" +
         ns + R"(}
webhooks:
- name: hook.example.com
  clientConfig:
    service: {name: hook, namespace: )" +
         ns + R"(, path: /validate}
  rules:
  - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [configmaps]}
  objectSelector: {matchLabels: {checked: "yes"}}
  failurePolicy: Fail
  sideEffects: None
  admissionReviewVersions: [v1]
  timeoutSeconds: 5
)";
}

// Creates a checked ConfigMap and returns what kubectl said.
Result create_checked(Cluster& c, const std::string& ns, const std::string& name) {
  const std::string path =
      c.file(name + ".yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name +
                                 "\n  namespace: " + ns + "\n  labels: {checked: \"yes\"}\n");
  return c.kubectl({"create", "-f", path});
}

bool endpoints_ready(Cluster& c, const std::string& ns) {
  Result r = c.kubectl(
      {"get", "endpoints", "hook", "-n", ns, "-o", "jsonpath={.subsets[0].addresses[0].ip}"});
  return r.exit_code == 0 && !r.out.empty();
}

TEST_CASE("a webhook served by a pod on a simulated node is answered locally, never dialled",
          "[e2e][embedded]") {
  Cluster host(Cluster::Host{});
  REQUIRE_THAT(host.kubectl({"create", "namespace", "hooks"}), Succeeded());
  host.setup(webhook_objects("hooks"));
  REQUIRE(eventually([&] { return endpoints_ready(host, "hooks"); }, seconds(20)));
  Result refused = create_checked(host, "hooks", "on-host");
  INFO(refused);
  CHECK_THAT(refused, FailedWith(kSimulated));
  CHECK_THAT(refused, FailedWith("failed calling webhook"));

  // The same through a tenant: its endpoints are the synced host pods' addresses.
  Cluster tenant(Cluster::Serve{{"--name", "hooked", "--host-kubeconfig", host.kubeconfig()}});
  REQUIRE_THAT(tenant.kubectl({"create", "namespace", "apps"}), Succeeded());
  tenant.setup(webhook_objects("apps"));
  REQUIRE(eventually([&] { return endpoints_ready(tenant, "apps"); }, seconds(30)));
  Result from_tenant = create_checked(tenant, "apps", "in-tenant");
  INFO(from_tenant);
  CHECK_THAT(from_tenant, FailedWith(kSimulated));
  // Unchecked objects are not sent to the webhook at all.
  CHECK_THAT(tenant.kubectl({"create", "configmap", "plain", "-n", "apps"}), Succeeded());
}

constexpr const char* kChart = R"(apiVersion: v1
kind: Service
metadata: {name: {{ .Release.Name }}-lb}
spec:
  type: LoadBalancer
  selector: {app: {{ .Release.Name }}}
  ports: [{port: 80, targetPort: 8080}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: {{ .Release.Name }}-web}
spec:
  replicas: 1
  selector: {matchLabels: {app: {{ .Release.Name }}}}
  template:
    metadata: {labels: {app: {{ .Release.Name }}}}
    spec:
      containers: [{name: web, image: nginx:1.27}]
---
apiVersion: batch/v1
kind: Job
metadata:
  name: {{ .Release.Name }}-migrate
  annotations: {helm.sh/hook: post-install}
spec:
  backoffLimit: 0
  template:
    spec:
      restartPolicy: Never
      containers: [{name: migrate, image: busybox:1.36, command: [sh, -c, "echo migrated"]}]
)";

TEST_CASE("helm install --wait of a chart with a hook Job and a LoadBalancer completes in a tenant",
          "[e2e][embedded][helm]") {
  Cluster host(Cluster::Host{});
  // The operator lets its Services be LoadBalancers, as `vkube up` does for its tenant.
  Cluster tenant(Cluster::Serve{{"--name", "charts", "--host-kubeconfig", host.kubeconfig(),
                                 "--allowed-service-types", "ClusterIP,LoadBalancer"}});
  const std::string chart = tenant.dir() + "/shop";
  REQUIRE_THAT(tenant.run({"/bin/mkdir", "-p", chart + "/templates"}), Succeeded());
  tenant.file("shop/Chart.yaml", "apiVersion: v2\nname: shop\nversion: 0.1.0\n");
  tenant.file("shop/templates/all.yaml", kChart);

  Result install = helm(tenant, {"install", "shop", chart, "-n", "shop", "--create-namespace",
                                 "--wait", "--wait-for-jobs", "--timeout", "60s"});
  INFO(install);
  REQUIRE_THAT(install, Succeeded());
  // The hook Job's pod completed by itself (no sim.vkube.io/duration).
  json job = tenant.get_json({"job", "shop-migrate", "-n", "shop"});
  CHECK(job["status"]["succeeded"] == 1);
  // The Service has an address of the host's pool, in the tenant and on the host.
  json svc = tenant.get_json({"service", "shop-lb", "-n", "shop"});
  const std::string ip = svc["status"]["loadBalancer"]["ingress"][0].value("ip", "");
  CHECK(ip.rfind("127.254.", 0) == 0);
  json host_svc = host.get_json({"service", "shop-lb-x-shop-x-charts", "-n", "vkube-charts"});
  CHECK(host_svc["status"]["loadBalancer"]["ingress"][0].value("ip", "") == ip);

  // A Job of the host itself completes too; the annotation still wins.
  REQUIRE_THAT(host.kubectl({"create", "job", "quick", "--image=busybox"}), Succeeded());
  CHECK_THAT(host.kubectl({"wait", "--for=condition=complete", "job/quick", "--timeout=20s"}),
             Succeeded());

  // A LoadBalancer of the host gets another address of the pool.
  REQUIRE_THAT(host.kubectl({"create", "service", "loadbalancer", "edge", "--tcp=80:8080"}),
               Succeeded());
  std::string edge_ip;
  CHECK(eventually([&] {
    json s = host.get_json({"service", "edge"});
    json ingress = s["status"].value("loadBalancer", json::object()).value("ingress", json());
    if (ingress.is_array() && !ingress.empty()) edge_ip = ingress[0].value("ip", "");
    return !edge_ip.empty();
  }));
  CHECK(edge_ip.rfind("127.254.", 0) == 0);
  CHECK(edge_ip != ip);
}

TEST_CASE("a pod whose Secret volume is missing waits in ContainerCreating with FailedMount",
          "[e2e][embedded]") {
  Cluster host(Cluster::Host{});
  host.setup(R"(apiVersion: v1
kind: Pod
metadata: {name: needs-secret}
spec:
  containers: [{name: app, image: nginx, volumeMounts: [{name: creds, mountPath: /creds}]}]
  volumes: [{name: creds, secret: {secretName: db-creds}}]
)");
  REQUIRE(eventually([&] {
    json pod = host.get_json({"pod", "needs-secret"});
    return pod["status"].value("containerStatuses", json::array()).size() == 1;
  }));
  // Held, as a kubelet holds it while the volume cannot be set up.
  std::this_thread::sleep_for(seconds(2));
  json pod = host.get_json({"pod", "needs-secret"});
  CHECK(pod["status"]["phase"] == "Pending");
  CHECK(pod["status"]["containerStatuses"][0]["state"]["waiting"]["reason"] == "ContainerCreating");
  CHECK(pod["status"].value("podIP", "").empty());
  REQUIRE(eventually([&] {
    Result events =
        host.kubectl({"get", "events", "--field-selector", "involvedObject.name=needs-secret", "-o",
                      "jsonpath={range .items[*]}{.reason}: {.message}{\"\\n\"}{end}"});
    return events.out.find(
               "FailedMount: MountVolume.SetUp failed for volume \"creds\" : secret "
               "\"db-creds\" not found") != std::string::npos;
  }));
  Result described = host.kubectl({"describe", "pod", "needs-secret"});
  CHECK(described.out.find("ContainerCreating") != std::string::npos);

  // Once the Secret is there, the pod starts.
  REQUIRE_THAT(host.kubectl({"create", "secret", "generic", "db-creds", "--from-literal=a=b"}),
               Succeeded());
  CHECK_THAT(host.kubectl({"wait", "--for=jsonpath={.status.phase}=Running", "pod/needs-secret",
                           "--timeout=20s"}),
             Succeeded());
}

// `vkube up` in a temporary directory, on free ports.
struct Up {
  std::string dir;
  std::string tenant = "lab";
  std::optional<Process> proc;

  ~Up() {
    proc.reset();  // killed if it still runs
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
    // No Cluster here to check the connection guard: the same check as its destructor's.
    for (const std::string& line : take_connect_guard_findings())
      FAIL_CHECK("a connection outside 127.0.0.0/8 was attempted: " << line);
  }

  static std::string temp() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "vkube-emb-XXXXXX").string();
    REQUIRE(::mkdtemp(tmpl.data()) != nullptr);
    return tmpl;
  }
  void start() {
    Spawn s;
    s.argv = {VKUBE_BINARY,    "up",          "--data-dir", dir + "/state",
              "--host-listen", "127.0.0.1:0", "--tenant",   tenant};
    s.out_path = dir + "/up.out";
    s.err_path = dir + "/up.err";
    proc.emplace(s);
    bool up = proc->wait_for_out("vkube is up", seconds(90));
    INFO(proc->out() << proc->err() << read_file(dir + "/state/logs/host.log"));
    REQUIRE(up);
  }
  Result kubectl(const std::string& who, std::vector<std::string> args) {
    Spawn s;
    s.argv = {kubectl_path()};
    s.argv.insert(s.argv.end(), args.begin(), args.end());
    s.env["KUBECONFIG"] = who == "host" ? dir + "/state/host/admin.kubeconfig"
                                        : dir + "/state/tenants/" + tenant + "/admin.kubeconfig";
    s.out_path = dir + "/kubectl.out";
    s.err_path = dir + "/kubectl.err";
    return run(s, seconds(30));
  }
};

// The children of `pid` (from /proc).
std::vector<pid_t> children(pid_t pid) {
  std::vector<pid_t> out;
  std::error_code ec;
  for (const auto& task :
       std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/task", ec)) {
    std::ifstream in(task.path() / "children");
    for (pid_t c; in >> c;) out.push_back(c);
  }
  return out;
}

// Whether `pid` still runs (a zombie waiting for its reaper does not).
bool alive(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(in, line)) return false;
  auto close = line.rfind(')');
  return close != std::string::npos && close + 2 < line.size() && line[close + 2] != 'Z';
}

TEST_CASE("killing vkube up with SIGKILL takes the host and its tenant with it; logs stay",
          "[e2e][embedded][up]") {
  Up up{Up::temp(), "lab", {}};
  up.start();
  const std::vector<pid_t> hosts = children(up.proc->pid());
  REQUIRE(hosts.size() == 1);
  const std::vector<pid_t> tenants = children(hosts[0]);
  REQUIRE(!tenants.empty());
  Result log = up.kubectl("host", {"logs", "-n", "vkube-lab", "vkube-0"});
  REQUIRE_THAT(log, Succeeded());
  CHECK(log.out.find("vkube is serving") != std::string::npos);

  REQUIRE(::kill(up.proc->pid(), SIGKILL) == 0);
  up.proc->wait_for(seconds(5));
  CHECK(eventually([&] { return !alive(hosts[0]); }, seconds(20)));
  for (pid_t t : tenants) CHECK(eventually([&] { return !alive(t); }, seconds(20)));

  // Started again: the tenant's last log is its previous container's, and the
  // container counts a restart, as after a node's reboot.
  up.start();
  CHECK(up.kubectl("host", {"get", "pod", "-n", "vkube-lab", "vkube-0", "-o",
                            "jsonpath={.status.containerStatuses[0].restartCount} "
                            "{.status.containerStatuses[0].lastState.terminated.reason}"})
            .out == "1 Unknown");
  Result previous = up.kubectl("host", {"logs", "-n", "vkube-lab", "vkube-0", "--previous"});
  INFO(previous);
  CHECK_THAT(previous, Succeeded());
  CHECK(previous.out.find("vkube is serving") != std::string::npos);
  CHECK(up.kubectl("host", {"logs", "-n", "vkube-lab", "vkube-0"}).out.find("vkube is serving") !=
        std::string::npos);
  REQUIRE(::kill(up.proc->pid(), SIGINT) == 0);
  CHECK(up.proc->wait_for(seconds(30)).has_value());
}

TEST_CASE("two vkube up on one machine give their tenants different addresses",
          "[e2e][embedded][up]") {
  Up first{Up::temp(), "one", {}};
  Up second{Up::temp(), "two", {}};
  first.start();
  second.start();
  auto url = [](Up& u) {
    Result r = u.kubectl(
        "tenant", {"config", "view", "--minify", "-o", "jsonpath={.clusters[0].cluster.server}"});
    return r.out;
  };
  const std::string a = url(first), b = url(second);
  INFO(a << " " << b);
  CHECK(!a.empty());
  CHECK(a != b);
  // Each tenant is its own: a namespace made in one is not in the other.
  REQUIRE_THAT(first.kubectl("tenant", {"create", "namespace", "only-in-one"}), Succeeded());
  CHECK_THAT(second.kubectl("tenant", {"get", "namespace", "only-in-one"}), FailedWith("NotFound"));
  for (Up* u : {&first, &second}) {
    ::kill(u->proc->pid(), SIGINT);
    u->proc->wait_for(seconds(30));
  }
}

// The loopback slot the host of `data_dir` holds (its lock file names it); 0: none.
int slot_of(const std::string& data_dir) {
  std::error_code ec;
  for (const auto& f : std::filesystem::directory_iterator("/tmp/vkube-loopback-slots", ec))
    if (read_file(f.path().string()) == data_dir) return std::stoi(f.path().stem().string());
  return 0;
}

// A listener on `ip`:`port` that takes the address from whoever comes next; -1 on failure.
int occupy(const std::string& ip, int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  if (fd < 0 || inet_pton(AF_INET, ip.c_str(), &a.sin_addr) != 1 ||
      ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd, 4) != 0) {
    if (fd >= 0) ::close(fd);
    return -1;
  }
  return fd;
}

TEST_CASE("vkube create fails fast, saying why, when the tenant's process keeps exiting",
          "[e2e][embedded]") {
  Cluster host(Cluster::Host{});
  const int slot = slot_of(host.dir() + "/data");
  REQUIRE(slot > 0);
  // Something else holds the address its control plane would listen on (on any of the 4 nodes).
  std::vector<int> held;
  for (int node = 0; node < 4; ++node) {
    int fd = occupy("127." + std::to_string(slot) + "." + std::to_string(node) + ".2", 6443);
    REQUIRE(fd >= 0);
    held.push_back(fd);
  }
  const auto start = std::chrono::steady_clock::now();
  Result created =
      host.run({VKUBE_BINARY, "create", "blocked", "--kubeconfig", host.kubeconfig()}, seconds(60));
  for (int fd : held) ::close(fd);
  INFO(created);
  CHECK_THAT(created, FailedWith("the tenant cannot start: its control plane keeps exiting"));
  CHECK_THAT(created, FailedWith("address already in use"));
  CHECK(std::chrono::steady_clock::now() - start < seconds(40));  // not the 120 s deadline
}

}  // namespace
}  // namespace vkube::e2e
