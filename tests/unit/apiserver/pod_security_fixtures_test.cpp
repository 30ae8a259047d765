// kube's Pod Security fixtures, as a table: per check, the pod shapes that
// must pass and that must fail at the baseline and restricted levels (latest
// version), created through the whole API server in a namespace labelled
// with the level. The shapes follow kubernetes
// staging/src/k8s.io/pod-security-admission/test/fixtures_*.go: a minimal
// valid pod per level, tweaked one way per case.
//
// Also: a run over kube's generated testdata (every level and version), when
// VKUBE_PSA_FIXTURES names the JSON-lines file tools/psa_fixtures.py writes.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "support/admin_server.h"

namespace vkube::apiserver {
namespace {

using json = nlohmann::json;
using Tweak = std::function<void(json&)>;

struct Case {
  std::string name;
  Tweak tweak;
};

// One check's fixtures. A baseline check's cases run at both levels (its pass
// cases at restricted only when no restricted check replaces it); a
// restricted check's only at restricted.
struct Fixture {
  std::string check;
  bool baseline;
  std::vector<Case> pass, fail;
  bool pass_at_restricted = true;
};

json base_pod(bool restricted) {
  json p = {
      {"apiVersion", "v1"},
      {"kind", "Pod"},
      {"metadata", {{"name", "x"}}},
      {"spec",
       {{"initContainers", {{{"name", "initcontainer1"}, {"image", "registry.k8s.io/pause"}}}},
        {"containers", {{{"name", "container1"}, {"image", "registry.k8s.io/pause"}}}}}}};
  if (restricted) {
    p["spec"]["securityContext"] = {{"runAsNonRoot", true},
                                    {"seccompProfile", {{"type", "RuntimeDefault"}}}};
    for (const char* list : {"initContainers", "containers"})
      p["spec"][list][0]["securityContext"] = {{"allowPrivilegeEscalation", false},
                                               {"capabilities", {{"drop", {"ALL"}}}}};
  }
  return p;
}

json& spec(json& p) {
  return p["spec"];
}
json& psc(json& p) {
  return p["spec"]["securityContext"];
}
json& ctr(json& p) {
  return p["spec"]["containers"][0];
}
json& init(json& p) {
  return p["spec"]["initContainers"][0];
}
json& sc(json& p) {
  return ctr(p)["securityContext"];
}
json& isc(json& p) {
  return init(p)["securityContext"];
}
void annotate(json& p, const std::string& k, const std::string& v) {
  p["metadata"]["annotations"][k] = v;
}
const char* const kAppArmor = "container.apparmor.security.beta.kubernetes.io/";
const json kBaselineCaps = {"AUDIT_WRITE", "CHOWN",  "DAC_OVERRIDE",     "FOWNER",  "FSETID",
                            "KILL",        "MKNOD",  "NET_BIND_SERVICE", "SETFCAP", "SETGID",
                            "SETPCAP",     "SETUID", "SYS_CHROOT"};

std::vector<Fixture> baseline_fixtures() {
  std::vector<Fixture> f;
  f.push_back(
      {"appArmorProfile",
       true,
       {{"annotations allowed",
         [](json& p) {
           annotate(p, std::string(kAppArmor) + "container1", "runtime/default");
           annotate(p, std::string(kAppArmor) + "initcontainer1", "localhost/foo");
         }},
        {"fields allowed",
         [](json& p) {
           psc(p)["appArmorProfile"] = {{"type", "RuntimeDefault"}};
           sc(p)["appArmorProfile"] = {{"type", "Localhost"}, {"localhostProfile", "foo"}};
         }}},
       {{"container annotation unconfined",
         [](json& p) { annotate(p, std::string(kAppArmor) + "container1", "unconfined"); }},
        {"init annotation unconfined",
         [](json& p) { annotate(p, std::string(kAppArmor) + "initcontainer1", "unconfined"); }},
        {"pod field unconfined",
         [](json& p) {
           psc(p)["appArmorProfile"] = {{"type", "Unconfined"}};
         }},
        {"container field unconfined", [](json& p) {
           isc(p)["appArmorProfile"] = {{"type", "Unconfined"}};
         }}}});
  f.push_back(
      {"capabilities_baseline",
       true,
       {{"the default set added",
         [](json& p) {
           sc(p)["capabilities"]["add"] = kBaselineCaps;
           isc(p)["capabilities"]["add"] = kBaselineCaps;
         }}},
       {{"container adds NET_RAW", [](json& p) { sc(p)["capabilities"]["add"] = {"NET_RAW"}; }},
        {"init adds NET_RAW", [](json& p) { isc(p)["capabilities"]["add"] = {"NET_RAW"}; }},
        {"lower case", [](json& p) { sc(p)["capabilities"]["add"] = {"chown"}; }},
        {"CAP_ prefix", [](json& p) { sc(p)["capabilities"]["add"] = {"CAP_CHOWN"}; }}},
       false});
  f.push_back({"hostNamespaces",
               true,
               {},
               {{"hostIPC", [](json& p) { spec(p)["hostIPC"] = true; }},
                {"hostNetwork", [](json& p) { spec(p)["hostNetwork"] = true; }},
                {"hostPID", [](json& p) { spec(p)["hostPID"] = true; }}}});
  f.push_back(
      {"hostPathVolumes",
       true,
       {},
       {{"one of two",
         [](json& p) {
           spec(p)["volumes"] = {{{"name", "volume-emptydir"}, {"emptyDir", json::object()}},
                                 {{"name", "volume-hostpath"}, {"hostPath", {{"path", "/a"}}}}};
         }},
        {"two", [](json& p) {
           spec(p)["volumes"] = {{{"name", "volume-hostpath-a"}, {"hostPath", {{"path", "/a"}}}},
                                 {{"name", "volume-hostpath-b"}, {"hostPath", {{"path", "/b"}}}}};
         }}}});
  f.push_back({"hostPorts",
               true,
               {{"container ports only",
                 [](json& p) {
                   ctr(p)["ports"] = {{{"containerPort", 12345}}};
                   init(p)["ports"] = {{{"containerPort", 12346}}};
                 }}},
               {{"container",
                 [](json& p) {
                   ctr(p)["ports"] = {{{"containerPort", 12345}, {"hostPort", 12345}}};
                 }},
                {"init",
                 [](json& p) {
                   init(p)["ports"] = {{{"containerPort", 12346}, {"hostPort", 12346}}};
                 }},
                {"both, among others", [](json& p) {
                   ctr(p)["ports"] = {{{"containerPort", 12345}, {"hostPort", 12345}},
                                      {{"containerPort", 12347}}};
                   init(p)["ports"] = {{{"containerPort", 12346}, {"hostPort", 12346}},
                                       {{"containerPort", 12348}}};
                 }}}});
  f.push_back(
      {"hostProbesAndHostLifecycle",
       true,
       {{"probe without host",
         [](json& p) {
           ctr(p)["livenessProbe"] = {{"httpGet", {{"port", 8080}}}};
         }},
        {"tcp probe without host",
         [](json& p) {
           ctr(p)["readinessProbe"] = {{"tcpSocket", {{"port", 8080}}}};
         }}},
       {{"liveness host",
         [](json& p) {
           ctr(p)["livenessProbe"] = {{"httpGet", {{"host", "bad.host"}, {"port", 8080}}}};
         }},
        {"sidecar readiness host",
         [](json& p) {
           init(p)["restartPolicy"] = "Always";
           init(p)["readinessProbe"] = {{"tcpSocket", {{"host", "8.8.8.8"}, {"port", 8080}}}};
         }},
        {"postStart host",
         [](json& p) {
           ctr(p)["lifecycle"]["postStart"] = {{"httpGet", {{"host", "bad.host"}, {"port", 8080}}}};
         }},
        {"loopback",
         [](json& p) {
           ctr(p)["livenessProbe"] = {{"httpGet", {{"host", "127.0.0.1"}, {"port", 8080}}}};
         }},
        {"ipv6 loopback", [](json& p) {
           ctr(p)["readinessProbe"] = {{"tcpSocket", {{"host", "::1"}, {"port", 8080}}}};
         }}}});
  f.push_back({"privileged",
               true,
               {{"false",
                 [](json& p) {
                   sc(p)["privileged"] = false;
                   isc(p)["privileged"] = false;
                 }}},
               {{"container", [](json& p) { sc(p)["privileged"] = true; }},
                {"init", [](json& p) { isc(p)["privileged"] = true; }}}});
  f.push_back({"procMount",
               true,
               {{"Default",
                 [](json& p) {
                   sc(p)["procMount"] = "Default";
                   isc(p)["procMount"] = "Default";
                   spec(p)["hostUsers"] = false;
                 }}},
               {{"container Unmasked",
                 [](json& p) {
                   sc(p)["procMount"] = "Unmasked";
                   spec(p)["hostUsers"] = true;
                 }},
                {"init Unmasked", [](json& p) {
                   isc(p)["procMount"] = "Unmasked";
                   spec(p)["hostUsers"] = true;
                 }}}});
  // In a user namespace, baseline (not restricted) lets /proc be unmasked.
  f.push_back({"procMount (user namespace)",
               true,
               {{"Unmasked with hostUsers false",
                 [](json& p) {
                   sc(p)["procMount"] = "Unmasked";
                   isc(p)["procMount"] = "Unmasked";
                   spec(p)["hostUsers"] = false;
                 }}},
               {},
               false});
  auto selinux = [](Tweak t) {
    return [t](json& p) {
      psc(p)["seLinuxOptions"] = json::object();
      sc(p)["seLinuxOptions"] = json::object();
      isc(p)["seLinuxOptions"] = json::object();
      t(p);
    };
  };
  f.push_back(
      {"seLinuxOptions",
       true,
       {{"unset or empty", [](json& p) { isc(p)["seLinuxOptions"] = json::object(); }},
        {"allowed types", selinux([](json& p) {
           psc(p)["seLinuxOptions"]["type"] = "container_t";
           sc(p)["seLinuxOptions"] = {{"type", "container_init_t"}, {"level", "somevalue"}};
           isc(p)["seLinuxOptions"]["type"] = "container_kvm_t";
         })},
        {"container_engine_t (v1.31)",
         selinux([](json& p) { sc(p)["seLinuxOptions"]["type"] = "container_engine_t"; })}},
       {{"pod type", selinux([](json& p) { psc(p)["seLinuxOptions"]["type"] = "somevalue"; })},
        {"container type", selinux([](json& p) { sc(p)["seLinuxOptions"]["type"] = "somevalue"; })},
        {"init type", selinux([](json& p) { isc(p)["seLinuxOptions"]["type"] = "somevalue"; })},
        {"pod user", selinux([](json& p) { psc(p)["seLinuxOptions"]["user"] = "somevalue"; })},
        {"pod role", selinux([](json& p) { psc(p)["seLinuxOptions"]["role"] = "somevalue"; })}}});
  f.push_back(
      {"seccompProfile_baseline",
       true,
       {{"RuntimeDefault",
         [](json& p) {
           psc(p)["seccompProfile"] = {{"type", "RuntimeDefault"}};
           sc(p)["seccompProfile"] = {{"type", "RuntimeDefault"}};
         }}},
       {{"pod Unconfined", [](json& p) { psc(p)["seccompProfile"]["type"] = "Unconfined"; }},
        {"container Unconfined",
         [](json& p) {
           sc(p)["seccompProfile"] = {{"type", "Unconfined"}};
         }},
        {"init Unconfined",
         [](json& p) {
           isc(p)["seccompProfile"] = {{"type", "Unconfined"}};
         }}},
       false});
  f.push_back({"sysctls",
               true,
               {{"none", [](json& p) { psc(p)["sysctls"] = json::array(); }},
                {"the v1.0 safe set",
                 [](json& p) {
                   psc(p)["sysctls"] = {
                       {{"name", "kernel.shm_rmid_forced"}, {"value", "0"}},
                       {{"name", "net.ipv4.ip_local_port_range"}, {"value", "1024 65535"}},
                       {{"name", "net.ipv4.tcp_syncookies"}, {"value", "0"}},
                       {{"name", "net.ipv4.ping_group_range"}, {"value", "1 0"}},
                       {{"name", "net.ipv4.ip_unprivileged_port_start"}, {"value", "1024"}}};
                 }},
                {"the v1.27 to v1.32 additions",
                 [](json& p) {
                   psc(p)["sysctls"] = {
                       {{"name", "net.ipv4.ip_local_reserved_ports"}, {"value", "1024-4999"}},
                       {{"name", "net.ipv4.tcp_keepalive_time"}, {"value", "7200"}},
                       {{"name", "net.ipv4.tcp_fin_timeout"}, {"value", "60"}},
                       {{"name", "net.ipv4.tcp_keepalive_intvl"}, {"value", "75"}},
                       {{"name", "net.ipv4.tcp_keepalive_probes"}, {"value", "9"}},
                       {{"name", "net.ipv4.tcp_rmem"}, {"value", "4096 87380 16777216"}},
                       {{"name", "net.ipv4.tcp_wmem"}, {"value", "4096 65536 16777216"}}};
                 }},
                {"the v1.37 additions",
                 [](json& p) {
                   psc(p)["sysctls"] = {
                       {{"name", "net.ipv4.tcp_slow_start_after_idle"}, {"value", "0"}},
                       {{"name", "net.ipv4.tcp_notsent_lowat"}, {"value", "16384"}}};
                 }}},
               {{"othersysctl",
                 [](json& p) {
                   psc(p)["sysctls"] = {{{"name", "othersysctl"}, {"value", "other"}}};
                 }},
                {"kernel.msgmax", [](json& p) {
                   psc(p)["sysctls"] = {{{"name", "kernel.msgmax"}, {"value", "65536"}}};
                 }}}});
  f.push_back({"windowsHostProcess",
               true,
               {},
               {{"pod",
                 [](json& p) {
                   spec(p)["hostNetwork"] = true;
                   psc(p)["windowsOptions"] = {{"hostProcess", true}};
                 }},
                {"containers", [](json& p) {
                   spec(p)["hostNetwork"] = true;
                   sc(p)["windowsOptions"] = {{"hostProcess", true}};
                   isc(p)["windowsOptions"] = {{"hostProcess", true}};
                 }}}});
  return f;
}

std::vector<Fixture> restricted_fixtures() {
  std::vector<Fixture> f;
  f.push_back({"base",
               false,
               {{"linux",
                 [](json& p) {
                   spec(p)["os"] = {{"name", "linux"}};
                 }},
                {"windows",
                 [](json& p) {
                   // Windows pods skip the Linux-only restricted checks since v1.25.
                   spec(p)["os"] = {{"name", "windows"}};
                   psc(p).erase("seccompProfile");
                   sc(p).clear();
                   isc(p).clear();
                 }}},
               {}});
  f.push_back({"allowPrivilegeEscalation",
               false,
               {},
               {{"container true", [](json& p) { sc(p)["allowPrivilegeEscalation"] = true; }},
                {"init true", [](json& p) { isc(p)["allowPrivilegeEscalation"] = true; }},
                {"container unset", [](json& p) { sc(p).erase("allowPrivilegeEscalation"); }},
                {"no security context", [](json& p) { ctr(p).erase("securityContext"); }}}});
  f.push_back(
      {"capabilities_restricted",
       false,
       {{"NET_BIND_SERVICE added",
         [](json& p) {
           sc(p)["capabilities"]["add"] = {"NET_BIND_SERVICE"};
           isc(p)["capabilities"]["add"] = {"NET_BIND_SERVICE"};
         }}},
       {{"container drops nothing", [](json& p) { sc(p)["capabilities"] = json::object(); }},
        {"init drops nothing", [](json& p) { isc(p)["capabilities"] = json::object(); }},
        {"every capability by name but not ALL",
         [](json& p) {
           json every = kBaselineCaps;
           for (const char* c : {"SYS_ADMIN", "NET_RAW", "SYS_PTRACE", "SYS_TIME"})
             every.push_back(c);
           sc(p)["capabilities"]["drop"] = every;
           isc(p)["capabilities"]["drop"] = every;
         }},
        {"the baseline set added", [](json& p) {
           sc(p)["capabilities"]["add"] = kBaselineCaps;
           isc(p)["capabilities"]["add"] = kBaselineCaps;
         }}}});
  f.push_back({"procMount_restricted",
               false,
               {},
               {{"container Unmasked in a user namespace",
                 [](json& p) {
                   sc(p)["procMount"] = "Unmasked";
                   spec(p)["hostUsers"] = false;
                 }},
                {"init Unmasked in a user namespace", [](json& p) {
                   isc(p)["procMount"] = "Unmasked";
                   spec(p)["hostUsers"] = false;
                 }}}});
  Fixture volumes{
      "restrictedVolumes",
      false,
      {{"allowed types",
        [](json& p) {
          spec(p)["volumes"] = {
              {{"name", "volume1"}, {"emptyDir", json::object()}},
              {{"name", "volume2"}, {"secret", {{"secretName", "test"}}}},
              {{"name", "volume3"}, {"persistentVolumeClaim", {{"claimName", "test"}}}},
              {{"name", "volume4"},
               {"downwardAPI",
                {{"items",
                  {{{"path", "labels"}, {"fieldRef", {{"fieldPath", "metadata.labels"}}}}}}}}},
              {{"name", "volume5"}, {"configMap", {{"name", "test"}}}},
              {{"name", "volume6"}, {"projected", {{"sources", json::array()}}}}};
        }}},
      {}};
  const std::vector<std::pair<const char*, json>> restricted_sources = {
      {"gcePersistentDisk", {{"pdName", "test"}}},
      {"awsElasticBlockStore", {{"volumeID", "test"}}},
      {"gitRepo", {{"repository", "github.com/kubernetes/kubernetes"}}},
      {"nfs", {{"server", "test"}, {"path", "/test"}}},
      {"iscsi",
       {{"targetPortal", "test"},
        {"iqn", "iqn.2001-04.com.example:storage.kube.sys1.xyz"},
        {"lun", 0}}},
      {"glusterfs", {{"endpoints", "test"}, {"path", "test"}}},
      {"rbd", {{"monitors", {"test"}}, {"image", "test"}}},
      {"flexVolume", {{"driver", "test"}}},
      {"cinder", {{"volumeID", "test"}}},
      {"cephfs", {{"monitors", {"test"}}}},
      {"flocker", {{"datasetName", "test"}}},
      {"fc", {{"wwids", {"test"}}}},
      {"azureFile", {{"secretName", "test"}, {"shareName", "test"}}},
      {"vsphereVolume", {{"volumePath", "test"}}},
      {"quobyte", {{"registry", "localhost:1234"}, {"volume", "test"}}},
      {"azureDisk",
       {{"diskName", "test"}, {"diskURI", "https://test.blob.core.windows.net/test/test.vhd"}}},
      {"portworxVolume", {{"volumeID", "test"}, {"fsType", "ext4"}}},
      {"scaleIO", {{"gateway", "localhost"}, {"system", "test"}, {"volumeName", "test"}}},
      {"storageos", {{"volumeName", "test"}}},
      {"hostPath", {{"path", "/dev/null"}}}};
  for (const auto& [type, source] : restricted_sources)
    volumes.fail.push_back({type, [type = std::string(type), source = source](json& p) {
                              spec(p)["volumes"] = {{{"name", "volume1"}, {type, source}}};
                            }});
  f.push_back(volumes);
  f.push_back({"runAsNonRoot",
               false,
               {{"containers say true",
                 [](json& p) {
                   psc(p).erase("runAsNonRoot");
                   sc(p)["runAsNonRoot"] = true;
                   isc(p)["runAsNonRoot"] = true;
                 }}},
               {{"unset", [](json& p) { psc(p).erase("runAsNonRoot"); }},
                {"pod false", [](json& p) { psc(p)["runAsNonRoot"] = false; }},
                {"container false", [](json& p) { sc(p)["runAsNonRoot"] = false; }},
                {"init false", [](json& p) { isc(p)["runAsNonRoot"] = false; }}}});
  f.push_back({"runAsUser",
               false,
               {{"1000",
                 [](json& p) {
                   psc(p)["runAsUser"] = 1000;
                   sc(p)["runAsUser"] = 1000;
                   isc(p)["runAsUser"] = 1000;
                 }}},
               {{"pod 0", [](json& p) { psc(p)["runAsUser"] = 0; }},
                {"container 0", [](json& p) { sc(p)["runAsUser"] = 0; }},
                {"init 0", [](json& p) { isc(p)["runAsUser"] = 0; }}}});
  f.push_back(
      {"seccompProfile_restricted",
       false,
       {{"pod Localhost",
         [](json& p) {
           psc(p)["seccompProfile"] = {{"type", "Localhost"}, {"localhostProfile", "testing"}};
         }},
        {"containers set it",
         [](json& p) {
           psc(p).erase("seccompProfile");
           sc(p)["seccompProfile"] = {{"type", "RuntimeDefault"}};
           isc(p)["seccompProfile"] = {{"type", "Localhost"}, {"localhostProfile", "testing"}};
         }}},
       {{"unset", [](json& p) { psc(p).erase("seccompProfile"); }},
        {"pod Unconfined", [](json& p) { psc(p)["seccompProfile"]["type"] = "Unconfined"; }},
        {"init unset",
         [](json& p) {
           psc(p).erase("seccompProfile");
           sc(p)["seccompProfile"] = {{"type", "RuntimeDefault"}};
         }},
        {"container unset",
         [](json& p) {
           psc(p).erase("seccompProfile");
           isc(p)["seccompProfile"] = {{"type", "RuntimeDefault"}};
         }},
        {"init Unconfined", [](json& p) {
           psc(p).erase("seccompProfile");
           sc(p)["seccompProfile"] = {{"type", "RuntimeDefault"}};
           isc(p)["seccompProfile"] = {{"type", "Unconfined"}};
         }}}});
  return f;
}

struct Tenant : testing::AdminApiServer {
  Tenant() : AdminApiServer(options()) {}
  static Options options() {
    Options o;
    o.pod_security = "privileged";
    return o;
  }
  // A namespace enforcing `level` at `version`.
  std::string ns(const std::string& level, const std::string& version) {
    std::string name = level + "-" + version;
    for (auto& ch : name)
      if (ch == '.') ch = '-';
    json labels = {{"pod-security.kubernetes.io/enforce", level},
                   {"pod-security.kubernetes.io/enforce-version", version}};
    auto r =
        call("POST", "/api/v1/namespaces", {{"metadata", {{"name", name}, {"labels", labels}}}});
    REQUIRE((r.status == 201 || r.status == 409));
    return name;
  }
  // Whether the pod was admitted; a refusal must be Pod Security's 403 or a
  // validation 422 (kube refuses some failing shapes as invalid first).
  bool admits(const std::string& namespace_, json pod, int n) {
    pod["metadata"]["name"] = "p" + std::to_string(n);
    auto r = call("POST", "/api/v1/namespaces/" + namespace_ + "/pods", pod);
    if (r.status == 201) return true;
    INFO(r.body);
    CHECK((r.status == 403 || r.status == 422));
    return false;
  }
};

struct Tally {
  int passed = 0, total = 0;
};

void run(Tenant& t, bool restricted, Tally& tally) {
  const std::string ns = t.ns(restricted ? "restricted" : "baseline", "latest");
  std::vector<Fixture> all = baseline_fixtures();
  if (restricted)
    for (auto& f : restricted_fixtures()) all.push_back(std::move(f));
  int n = 0;
  auto judge = [&](const Fixture& f, const Case& c, bool expect_pass) {
    json pod = base_pod(restricted);
    c.tweak(pod);
    INFO((restricted ? "restricted " : "baseline ") << f.check << ": " << c.name);
    const bool admitted = t.admits(ns, pod, n++);
    CHECK(admitted == expect_pass);
    ++tally.total;
    if (admitted == expect_pass) ++tally.passed;
  };
  judge({"base", true, {}, {}}, {"minimal valid pod", [](json&) {}}, true);
  for (const Fixture& f : all) {
    if (f.baseline || restricted)
      for (const Case& c : f.fail) judge(f, c, false);
    if (!restricted || !f.baseline || f.pass_at_restricted)
      for (const Case& c : f.pass) judge(f, c, true);
  }
}

TEST_CASE("kube's Pod Security fixtures: baseline and restricted at latest",
          "[apiserver][pod-security]") {
  Tenant t;
  Tally baseline, restricted;
  run(t, false, baseline);
  run(t, true, restricted);
  WARN("Pod Security fixtures passed: baseline " << baseline.passed << "/" << baseline.total
                                                 << ", restricted " << restricted.passed << "/"
                                                 << restricted.total);
}

// kube's generated testdata, every level and version: run by hand with
// VKUBE_PSA_FIXTURES=<file from tools/psa_fixtures.py>.
TEST_CASE("kube's Pod Security testdata, every version", "[.][pod-security-testdata]") {
  const char* path = std::getenv("VKUBE_PSA_FIXTURES");
  if (!path) return;
  std::ifstream in(path);
  REQUIRE(in.good());
  Tenant t;
  std::map<std::string, Tally> by_level;
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    json c = json::parse(line);
    const std::string ns = t.ns(c["level"].get<std::string>(), c["version"].get<std::string>());
    INFO(c["level"].get<std::string>()
         << " " << c["version"].get<std::string>() << " " << c["file"].get<std::string>());
    const bool admitted = t.admits(ns, c["pod"], n++);
    const bool want = c["expect"] == "pass";
    CHECK(admitted == want);
    Tally& tally = by_level[c["level"].get<std::string>() + " " + c["expect"].get<std::string>()];
    ++tally.total;
    if (admitted == want) ++tally.passed;
  }
  for (const auto& [k, v] : by_level) WARN(k << ": " << v.passed << "/" << v.total);
}

}  // namespace
}  // namespace vkube::apiserver
