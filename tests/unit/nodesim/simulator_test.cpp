// The node simulator over a real API server and controller manager: nodes
// and their Leases appear and are renewed, pods bound to a simulated node
// start, complete after their duration, stop on deletion after their
// termination time, and a restart with fewer nodes removes the others.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "sim_cluster.h"
#include "support/temp_dir.h"

namespace vkube::nodesim {
namespace {

using namespace sim_testing;

const std::string kLeases = "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases";

json pod(const std::string& name, const std::string& node, json annotations = json::object(),
         const std::string& restart_policy = "Always") {
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", {{"name", name}, {"annotations", annotations}}},
          {"spec",
           {{"nodeName", node},
            {"restartPolicy", restart_policy},
            {"containers", json::array({{{"name", "main"}, {"image", "busybox:1.36"}}})}}}};
}

json condition(const json& pod, const std::string& type) {
  for (const json& c : pod["status"].value("conditions", json::array()))
    if (c["type"] == type) return c;
  return nullptr;
}

std::string phase(const json& pod) {
  return pod["status"].value("phase", "");
}

bool ready(const json& p) {
  json c = condition(p, "Ready");
  return c.is_object() && c["status"] == "True";
}

TEST_CASE("nodesim: nodes register with their Leases, which are renewed", "[nodesim]") {
  Cluster c(small_pool(3, 200ms));
  json node = c.cp.get("/api/v1/nodes/sim-1");
  CHECK(node["metadata"]["labels"]["vkube.io/simulated"] == "true");
  CHECK(node["metadata"]["labels"]["nvidia.com/gpu.product"] == "NVIDIA-A100-SXM4-80GB");
  CHECK(node["status"]["allocatable"]["nvidia.com/gpu"] == "2");
  CHECK(condition(node, "Ready")["status"] == "True");
  CHECK_FALSE(node["spec"].value("podCIDR", "").empty());
  CHECK(c.cp.items("/api/v1/nodes").size() == 3);

  json lease = c.cp.get(kLeases + "/sim-1");
  CHECK(lease["spec"]["holderIdentity"] == "sim-1");
  CHECK(lease["spec"]["leaseDurationSeconds"] == 40);
  const std::string first = lease["spec"]["renewTime"];
  CHECK_THAT(first, Catch::Matches(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z)"));
  CHECK(lease["metadata"]["ownerReferences"][0]["uid"] == node["metadata"]["uid"]);

  CHECK(ControlPlane::eventually(
      [&] { return c.cp.get(kLeases + "/sim-1")["spec"]["renewTime"] != first; }, 3s));
  // The garbage collector sees the owner: the Lease stays.
  REQUIRE(c.cp.manager->wait_idle(5s));
  CHECK(c.cp.call("GET", kLeases + "/sim-1").code == 200);
}

TEST_CASE("nodesim: renewals are spread to the rate limit", "[nodesim]") {
  // 3 nodes at one renewal a second: a round takes 3 s, sim-0 first.
  Cluster c(small_pool(3, 100ms, 1));
  auto renew_time = [&](const std::string& n) {
    return c.cp.get(kLeases + "/" + n)["spec"]["renewTime"].get<std::string>();
  };
  const std::string first0 = renew_time("sim-0"), first2 = renew_time("sim-2");
  std::this_thread::sleep_for(500ms);
  CHECK(renew_time("sim-0") == first0);  // a 100 ms heartbeat would have renewed it 4 times
  REQUIRE(ControlPlane::eventually([&] { return renew_time("sim-0") != first0; }, 5s));
  CHECK(renew_time("sim-2") == first2);
}

TEST_CASE("nodesim: a bound pod runs with an address of its node", "[nodesim]") {
  Cluster c(small_pool(2));
  json node = c.cp.get("/api/v1/nodes/sim-1");
  const std::string cidr = node["spec"]["podCIDR"];
  const std::string prefix = cidr.substr(0, cidr.rfind('.') + 1);  // "10.244.2."
  c.cp.create(kPods, pod("web", "sim-1"));
  c.cp.create(kPods, pod("web2", "sim-1"));
  REQUIRE(ControlPlane::eventually([&] { return ready(c.pod("web")) && ready(c.pod("web2")); }));

  json p = c.pod("web");
  CHECK(phase(p) == "Running");
  const std::string ip = p["status"]["podIP"];
  CHECK(ip.starts_with(prefix));
  const int last = std::stoi(ip.substr(prefix.size()));
  CHECK(last >= 2);
  CHECK(last <= 254);
  CHECK(p["status"]["podIPs"] == json::array({{{"ip", ip}}}));
  CHECK(p["status"]["hostIP"] == node["status"]["addresses"][0]["address"]);
  CHECK(c.pod("web2")["status"]["podIP"] != ip);
  for (const char* type :
       {"PodReadyToStartContainers", "Initialized", "ContainersReady", "PodScheduled"})
    CHECK(condition(p, type)["status"] == "True");
  const json& cs = p["status"]["containerStatuses"][0];
  CHECK(cs["name"] == "main");
  CHECK(cs["ready"] == true);
  CHECK(cs["started"] == true);
  CHECK(cs["restartCount"] == 0);
  CHECK(cs["imageID"] == "sim://busybox:1.36");
  CHECK(cs["containerID"] == "sim://" + p["metadata"]["uid"].get<std::string>() + "-main");
  CHECK(cs["state"]["running"].contains("startedAt"));
  CHECK(p["status"]["qosClass"] == "BestEffort");
  CHECK(p["status"].contains("startTime"));

  // A pod of another node is left alone.
  c.cp.create(kPods, pod("elsewhere", "real-node"));
  REQUIRE(c.sim->wait_idle(5s));
  CHECK(phase(c.pod("elsewhere")) == "Pending");
}

TEST_CASE("nodesim: start delay, duration, exit codes and restarts", "[nodesim]") {
  Cluster c(small_pool(1));
  c.cp.create(kPods, pod("slow", "sim-0", {{"sim.vkube.io/start-delay", "800ms"}}));
  c.cp.create(kPods, pod("ok", "sim-0", {{"sim.vkube.io/duration", "300ms"}}, "Never"));
  c.cp.create(
      kPods, pod("bad", "sim-0",
                 {{"sim.vkube.io/duration", "0.3"}, {"sim.vkube.io/exit-code", "3"}}, "OnFailure"));
  c.cp.create(kPods,
              pod("fails", "sim-0",
                  {{"sim.vkube.io/duration", "300ms"}, {"sim.vkube.io/exit-code", "2"}}, "Never"));
  c.cp.create(kPods, pod("loop", "sim-0", {{"sim.vkube.io/duration", "300ms"}}));

  REQUIRE(ControlPlane::eventually([&] {
    return c.pod("slow")["status"].value("containerStatuses", json::array()).size() == 1;
  }));
  json slow = c.pod("slow");
  CHECK(phase(slow) == "Pending");
  CHECK(slow["status"]["containerStatuses"][0]["state"]["waiting"]["reason"] ==
        "ContainerCreating");
  CHECK(condition(slow, "Ready")["status"] == "False");

  REQUIRE(ControlPlane::eventually([&] { return phase(c.pod("ok")) == "Succeeded"; }));
  json ok = c.pod("ok");
  const json& t = ok["status"]["containerStatuses"][0]["state"]["terminated"];
  CHECK(t["exitCode"] == 0);
  CHECK(t["reason"] == "Completed");
  CHECK(ok["status"]["containerStatuses"][0]["ready"] == false);
  CHECK(condition(ok, "Ready")["reason"] == "PodCompleted");
  CHECK(condition(ok, "ContainersReady")["status"] == "False");

  REQUIRE(ControlPlane::eventually([&] { return phase(c.pod("fails")) == "Failed"; }));
  json fails = c.pod("fails");
  CHECK(fails["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 2);
  CHECK(fails["status"]["containerStatuses"][0]["state"]["terminated"]["reason"] == "Error");

  // OnFailure after a failure and Always after any exit: the container restarts.
  for (const char* name : {"bad", "loop"}) {
    REQUIRE(ControlPlane::eventually([&] {
      return c.pod(name)["status"]["containerStatuses"][0].value("restartCount", 0) >= 2;
    }));
    json p = c.pod(name);
    CHECK(phase(p) == "Running");
    CHECK(p["status"]["containerStatuses"][0]["lastState"].contains("terminated"));
  }
  CHECK(c.pod("bad")["status"]["containerStatuses"][0]["lastState"]["terminated"]["exitCode"] == 3);

  REQUIRE(ControlPlane::eventually([&] { return ready(c.pod("slow")); }));
  CHECK(c.pod("slow")["status"]["containerStatuses"][0]["state"].contains("running"));
}

TEST_CASE("nodesim: deleted pods stop and disappear", "[nodesim]") {
  Cluster c(small_pool(1));
  c.cp.create(kPods, pod("quick", "sim-0"));
  c.cp.create(kPods, pod("lingers", "sim-0", {{"sim.vkube.io/termination-seconds", "1"}}));
  c.cp.create(kPods, pod("done", "sim-0", {{"sim.vkube.io/duration", "100ms"}}, "Never"));
  REQUIRE(
      ControlPlane::eventually([&] { return ready(c.pod("quick")) && ready(c.pod("lingers")); }));
  REQUIRE(ControlPlane::eventually([&] { return phase(c.pod("done")) == "Succeeded"; }));

  auto begin = std::chrono::steady_clock::now();
  CHECK(c.cp.call("DELETE", kPods + "/quick").code == 200);
  CHECK(c.cp.call("DELETE", kPods + "/lingers").code == 200);
  CHECK(c.cp.call("DELETE", kPods + "/done").code == 200);  // nothing runs: gone at once
  CHECK(c.gone("done"));
  REQUIRE(ControlPlane::eventually([&] { return c.gone("quick"); }, 3s));
  // Terminating for its termination time, then gone.
  json lingering = c.pod("lingers");
  CHECK(lingering["metadata"].contains("deletionTimestamp"));
  REQUIRE(ControlPlane::eventually([&] { return c.gone("lingers"); }, 5s));
  CHECK(std::chrono::steady_clock::now() - begin >= 900ms);

  // A pod deleted with a grace period shorter than its termination time is killed.
  c.cp.create(kPods, pod("stubborn", "sim-0", {{"sim.vkube.io/termination-seconds", "60"}}));
  REQUIRE(ControlPlane::eventually([&] { return ready(c.pod("stubborn")); }));
  CHECK(c.cp.call("DELETE", kPods + "/stubborn?gracePeriodSeconds=1").code == 200);
  REQUIRE(ControlPlane::eventually([&] { return c.gone("stubborn"); }, 4s));
}

TEST_CASE("nodesim: a restart with fewer nodes removes the others", "[nodesim]") {
  Cluster c(small_pool(3));
  c.cp.create(kPods, pod("on-0", "sim-0"));
  c.cp.create(kPods, pod("on-2", "sim-2"));
  REQUIRE(ControlPlane::eventually([&] { return ready(c.pod("on-0")) && ready(c.pod("on-2")); }));
  const std::string ip0 = c.pod("on-0")["status"]["podIP"];
  const std::string uid0 = c.cp.get("/api/v1/nodes/sim-0")["metadata"]["uid"];

  c.restart(small_pool(2));
  CHECK(c.cp.call("GET", "/api/v1/nodes/sim-2").code == 404);
  CHECK(c.cp.call("GET", kLeases + "/sim-2").code == 404);
  CHECK(c.gone("on-2"));
  // The nodes that stay are the same objects, and their pods keep running
  // with their addresses: a new pod gets another one.
  CHECK(c.cp.get("/api/v1/nodes/sim-0")["metadata"]["uid"] == uid0);
  CHECK(c.cp.items("/api/v1/nodes").size() == 2);
  c.cp.create(kPods, pod("new-0", "sim-0"));
  REQUIRE(ControlPlane::eventually([&] { return ready(c.pod("new-0")); }));
  CHECK(c.pod("new-0")["status"]["podIP"] != ip0);
  CHECK(c.pod("on-0")["status"]["podIP"] == ip0);
}

}  // namespace
}  // namespace vkube::nodesim

namespace vkube::nodesim {
namespace {

// One node whose pods of the image "tool" run as local processes of
// /bin/sh (standing in for the vkube binary), with their folders in `dir`.
Options local_pool(const std::string& dir) {
  Options o = small_pool(1);
  o.local_images = {"tool"};
  o.local_binary = "/bin/sh";
  o.local_state_dir = dir;
  o.api_url = [] { return std::string("https://127.0.0.1:6443"); };
  return o;
}

// The operator's opt-in: pods of namespace w that use a local image run as
// processes whatever made them (vkube create --unsandboxed-local-pods).
void unsandbox_namespace_w(Cluster& c) {
  const json ns = {
      {"apiVersion", "v1"},
      {"kind", "Namespace"},
      {"metadata", {{"name", "w"}, {"labels", {{"vkube.io/unsandboxed-local-pods", "true"}}}}}};
  auto r = c.cp.call("POST", "/api/v1/namespaces", ns);
  if (r.code == 409)
    r = c.cp.call("PATCH", "/api/v1/namespaces/w", {{"metadata", ns["metadata"]}},
                  "application/merge-patch+json");
  REQUIRE(r.code < 300);
}

// A pod of a local image runs as a real process (here /bin/sh standing in
// for the vkube binary): a loopback pod IP, its env with the downward API
// and $(VAR) expansion in args, its mount path mapped to a folder; deleting
// the pod stops the process.
TEST_CASE("nodesim: pods of a local image run as local processes", "[nodesim]") {
  testing::TempDir dir;
  Cluster c(local_pool(dir.path()));
  unsandbox_namespace_w(c);
  json p = pod("runner", "sim-0");
  p["spec"]["automountServiceAccountToken"] = false;
  p["spec"]["terminationGracePeriodSeconds"] = 5;
  p["spec"]["volumes"] = json::array({{{"name", "data"}, {"emptyDir", json::object()}}});
  p["spec"]["containers"][0] = {
      {"name", "main"},
      {"image", "registry.example:5000/team/tool:1.0"},
      {"args",
       json::array({"-c", "echo \"$(GREETING) $(MY_IP)\" '$$(KEPT)' > \"$0\"; exec sleep 60",
                    "/data/out"})},
      {"env", json::array({{{"name", "WHO"}, {"value", "world"}},
                           {{"name", "GREETING"}, {"value", "hello-$(WHO)"}},
                           {{"name", "MY_IP"},
                            {"valueFrom", {{"fieldRef", {{"fieldPath", "status.podIP"}}}}}}})},
      {"volumeMounts", json::array({{{"name", "data"}, {"mountPath", "/data"}}})}};
  json other = pod("plain", "sim-0");  // busybox: simulated as before
  c.cp.create(kPods, p);
  c.cp.create(kPods, other);
  REQUIRE(
      ControlPlane::eventually([&] { return ready(c.pod("runner")) && ready(c.pod("plain")); }));
  const std::string ip = c.pod("runner")["status"]["podIP"];
  CHECK(ip.rfind("127.", 0) == 0);
  CHECK(c.pod("plain")["status"]["podIP"].get<std::string>().rfind("127.", 0) != 0);

  // The process wrote through its mount into the pod's folder.
  const std::string uid = c.pod("runner")["metadata"]["uid"];
  const std::string out = dir.path() + "/pods/w_runner_" + uid + "/volumes/data/out";
  std::string text;
  REQUIRE(ControlPlane::eventually([&] {
    std::ifstream in(out);
    std::getline(in, text);
    return !text.empty();
  }));
  CHECK(text == "hello-world " + ip + " $(KEPT)");

  // Deleting the pod terminates the process, then the pod is gone.
  auto started = std::chrono::steady_clock::now();
  REQUIRE(c.cp.call("DELETE", kPods + "/runner").code == 200);
  REQUIRE(ControlPlane::eventually([&] { return c.gone("runner"); }));
  // sh exits on SIGTERM, before the grace period ends.
  CHECK(std::chrono::steady_clock::now() - started < 4s);
}

// A local pod's persistentVolumeClaim is the folder of the volume the local
// provisioner binds it to: the pod waits while its claim is missing or not
// bound, then its process writes through the mount into the volume's folder.
TEST_CASE("nodesim: a local pod mounts its claim's provisioned volume", "[nodesim]") {
  testing::TempDir dir;
  Cluster c(local_pool(dir.path()));
  unsandbox_namespace_w(c);
  json p = pod("stateful", "sim-0");
  p["spec"]["automountServiceAccountToken"] = false;
  p["spec"]["volumes"] =
      json::array({{{"name", "state"}, {"persistentVolumeClaim", {{"claimName", "state"}}}}});
  p["spec"]["containers"][0] = {
      {"name", "main"},
      {"image", "tool:1.0"},
      {"args", json::array({"-c", "echo written > \"$0\"; exec sleep 60", "/var/lib/app/out"})},
      {"volumeMounts", json::array({{{"name", "state"}, {"mountPath", "/var/lib/app"}}})}};
  c.cp.create(kPods, p);

  // No claim yet: the pod waits, saying why.
  auto waiting = [&] {
    const json s = c.pod("stateful")["status"];
    if (!s.contains("containerStatuses")) return std::string();
    return s["containerStatuses"][0]["state"]["waiting"].value("message", "");
  };
  REQUIRE(ControlPlane::eventually(
      [&] { return waiting() == "persistentvolumeclaim \"state\" is not bound"; }));
  CHECK(phase(c.pod("stateful")) == "Pending");
  // Trying again (every 200 ms) writes nothing while nothing changes.
  const std::string version = c.pod("stateful")["metadata"]["resourceVersion"];
  std::this_thread::sleep_for(600ms);
  CHECK(c.pod("stateful")["metadata"]["resourceVersion"] == version);

  const json claim = {{"apiVersion", "v1"},
                      {"kind", "PersistentVolumeClaim"},
                      {"metadata", {{"name", "state"}}},
                      {"spec",
                       {{"accessModes", json::array({"ReadWriteOnce"})},
                        {"resources", {{"requests", {{"storage", "1Gi"}}}}}}}};
  const std::string uid =
      c.cp.create("/api/v1/namespaces/w/persistentvolumeclaims", claim)["metadata"]["uid"];
  REQUIRE(ControlPlane::eventually([&] { return ready(c.pod("stateful")); }, 5s));

  json volume = c.cp.get("/api/v1/persistentvolumes/pvc-" + uid);
  const std::string folder = volume["spec"]["hostPath"]["path"];
  CHECK(folder == dir.path() + "/volumes/w/state-" + uid.substr(0, 8));
  std::string text;
  REQUIRE(ControlPlane::eventually([&] {
    std::ifstream in(folder + "/out");
    std::getline(in, text);
    return !text.empty();
  }));
  CHECK(text == "written");
}

// Without the operator's opt-in only a tenant's control plane (a pod a
// StatefulSet controls, not made by the syncer) runs as a process: a
// tenant's pod of the same image is simulated, whatever it claims to be.
TEST_CASE("nodesim: only control planes run locally unless the namespace opted in", "[nodesim]") {
  testing::TempDir dir;
  Cluster c(local_pool(dir.path()));
  auto local_pod = [](const std::string& name) {
    json p = pod(name, "sim-0");
    p["spec"]["automountServiceAccountToken"] = false;
    p["spec"]["containers"][0] = {
        {"name", "main"}, {"image", "tool:1.0"}, {"args", json::array({"-c", "exec sleep 60"})}};
    return p;
  };
  // A real owner, or the garbage collector removes the pods (no StatefulSet
  // controller runs here to make pods of its own).
  const json sts = c.cp.create(
      "/apis/apps/v1/namespaces/w/statefulsets",
      {{"apiVersion", "apps/v1"},
       {"kind", "StatefulSet"},
       {"metadata", {{"name", "vkube"}}},
       {"spec",
        {{"selector", {{"matchLabels", {{"app", "vkube"}}}}},
         {"serviceName", "vkube"},
         {"template",
          {{"metadata", {{"labels", {{"app", "vkube"}}}}},
           {"spec", {{"containers", json::array({{{"name", "m"}, {"image", "tool"}}})}}}}}}}});
  const json sts_owner = {{"apiVersion", "apps/v1"}, {"kind", "StatefulSet"},
                          {"name", "vkube"},         {"uid", sts["metadata"]["uid"]},
                          {"controller", true},      {"blockOwnerDeletion", true}};
  json plane = local_pod("vkube-0");
  plane["metadata"]["ownerReferences"] = json::array({sts_owner});
  json tenant = local_pod("lp");  // a tenant's pod, as the syncer writes it
  tenant["metadata"]["labels"] = {{"vkube.io/tenant", "t"}, {"vkube.io/tenant-namespace", "d"}};
  tenant["metadata"]["annotations"] = {{"vkube.io/tenant-uid", "u-1"}};
  json forged = tenant;  // the syncer's marks with a StatefulSet owner
  forged["metadata"]["name"] = "forged";
  forged["metadata"]["ownerReferences"] = json::array({sts_owner});
  for (const json& p : {plane, tenant, forged}) c.cp.create(kPods, p);
  REQUIRE(ControlPlane::eventually(
      [&] { return ready(c.pod("vkube-0")) && ready(c.pod("lp")) && ready(c.pod("forged")); }));
  auto loopback = [&](const std::string& name) {
    return c.pod(name)["status"]["podIP"].get<std::string>().rfind("127.", 0) == 0;
  };
  CHECK(loopback("vkube-0"));
  CHECK_FALSE(loopback("lp"));
  CHECK_FALSE(loopback("forged"));
  CHECK_FALSE(std::filesystem::exists(dir.path() + "/pods/w_lp_" +
                                      c.pod("lp")["metadata"]["uid"].get<std::string>()));
}

}  // namespace
}  // namespace vkube::nodesim
