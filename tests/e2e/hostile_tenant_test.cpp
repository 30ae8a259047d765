// A hostile tenant against the two ways a tenant meets a host: `vkube
// create` on `vkube host` (what `vkube up` does) and `vkube serve
// --host-kubeconfig`. Each attempt is checked on both sides: what the tenant
// is told (real kubectl against the tenant) and what reaches the host
// (real kubectl against the host). docs/security.md lists the boundaries.
#include <string>

#include "fixture.h"

namespace vkube::e2e {
namespace {

using json = nlohmann::json;

// kubectl against the tenant's kubeconfig, with the host's environment.
Result tk(Cluster& host, const std::string& kubeconfig, std::vector<std::string> args,
          seconds timeout = seconds(30)) {
  args.insert(args.begin(), {kubectl_path(), "--kubeconfig", kubeconfig});
  return host.run(args, timeout);
}

std::string label(const json& obj, const std::string& key) {
  const json labels = obj["metadata"].value("labels", json::object());
  return labels.value(key, "");
}

std::string annotation(const json& obj, const std::string& key) {
  const json a = obj["metadata"].value("annotations", json::object());
  return a.value(key, "");
}

// The host pods of tenant namespace `ns`.
std::vector<json> host_pods(Cluster& host, const std::string& host_ns, const std::string& ns) {
  json list = host.get_json({"pods", "-n", host_ns, "-l", "vkube.io/tenant-namespace=" + ns});
  return list["items"].get<std::vector<json>>();
}

json host_pod_of(Cluster& host, const std::string& host_ns, const std::string& ns,
                 const std::string& name) {
  for (const json& p : host_pods(host, host_ns, ns))
    if (annotation(p, "vkube.io/tenant-name") == name) return p;
  return nullptr;
}

bool running(Cluster& host, const std::string& kc, const std::string& ns, const std::string& pod) {
  return tk(host, kc, {"get", "pod", pod, "-n", ns, "-o", "jsonpath={.status.phase}"}).out ==
         "Running";
}

// A JSON patch whose body is shallow but whose result nests 2^steps levels:
// each step copies the object into the deepest point of itself.
std::string self_copy_patch(int steps) {
  std::string ops = R"([{"op":"add","path":"/metadata/annotations","value":{}},)"
                    R"({"op":"add","path":"/spec/x","value":{}})";
  std::string chain;
  for (int i = 0; i < steps; ++i) {
    ops += R"(,{"op":"copy","from":"/spec/x","path":"/spec/x)" + chain + R"(/a"})";
    chain = chain + "/a" + chain;
  }
  return ops + "]";
}

TEST_CASE("a hostile tenant of vkube create on vkube host stays in its box", "[e2e][security]") {
  Cluster host(Cluster::Host{});
  const std::string kc = host.dir() + "/h.kubeconfig";
  REQUIRE_THAT(
      host.run({VKUBE_BINARY, "create", "h", "--out", kc, "--kubeconfig", host.kubeconfig()},
               seconds(60)),
      Succeeded());
  const std::string hns = "vkube-h";

  // The host namespace carries the operator's Pod Security level.
  json ns = host.get_json({"namespace", hns});
  CHECK(label(ns, "pod-security.kubernetes.io/enforce") == "baseline");
  CHECK(label(ns, "vkube.io/unsandboxed-local-pods").empty());

  SECTION("a pod of the vkube image is simulated, never a process of the machine") {
    REQUIRE_THAT(
        tk(host, kc,
           {"run", "lp", "--image=vkube", "--restart=Never", "--", "workload", "--log-lines", "1"}),
        Succeeded());
    REQUIRE(eventually([&] { return running(host, kc, "default", "lp"); }, seconds(20)));
    json hp = host_pod_of(host, hns, "default", "lp");
    REQUIRE(hp.is_object());
    CHECK(hp["status"]["podIP"].get<std::string>().rfind("127.", 0) != 0);
    Result exec = tk(host, kc, {"exec", "lp", "--", "sh", "-c", "id; ls /"});
    CHECK_THAT(exec, FailedWith("runs no containers"));
    CHECK(exec.output().find("uid=0") == std::string::npos);
    // No process of the machine runs the tenant's command.
    CHECK(
        host.run({"/usr/bin/pgrep", "-f", "--", "workload --log-lines 1"}, seconds(5)).exit_code !=
        0);
  }

  SECTION("names that once met on the host stay apart: no takeover, no foreign secret") {
    for (const char* n : {"b-x-c", "c"})
      REQUIRE_THAT(tk(host, kc, {"create", "namespace", n}), Succeeded());
    REQUIRE_THAT(tk(host, kc,
                    {"create", "secret", "generic", "s", "-n", "b-x-c",
                     "--from-literal=key=secret-of-b-x-c"}),
                 Succeeded());
    // Pod a of b-x-c mounts its Secret s, so s reaches the host.
    const std::string victim = R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"a",
      "namespace":"b-x-c"},"spec":{"containers":[{"name":"m","image":"busybox",
      "volumeMounts":[{"name":"s","mountPath":"/s"}]}],"volumes":[{"name":"s",
      "secret":{"secretName":"s"}}]}})";
    REQUIRE_THAT(tk(host, kc, {"create", "-f", host.file("victim.json", victim)}), Succeeded());
    REQUIRE(eventually([&] { return running(host, kc, "b-x-c", "a"); }, seconds(20)));
    json victim_host = host_pod_of(host, hns, "b-x-c", "a");
    REQUIRE(victim_host.is_object());
    const std::string victim_uid = victim_host["metadata"]["uid"];
    json secrets = host.get_json({"secrets", "-n", hns, "-l", "vkube.io/tenant-namespace=b-x-c"});
    std::string victim_secret;
    for (const json& s : secrets["items"])
      if (annotation(s, "vkube.io/tenant-name") == "s") victim_secret = s["metadata"]["name"];
    REQUIRE_FALSE(victim_secret.empty());

    // From namespace c: pod a-x-b, and a pod mounting Secret s-x-b (which c does not have).
    REQUIRE_THAT(tk(host, kc, {"run", "a-x-b", "-n", "c", "--image=busybox"}), Succeeded());
    const std::string thief = R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"m",
      "namespace":"c"},"spec":{"containers":[{"name":"m","image":"busybox",
      "volumeMounts":[{"name":"s","mountPath":"/s"}]}],"volumes":[{"name":"s",
      "secret":{"secretName":"s-x-b"}}]}})";
    REQUIRE_THAT(tk(host, kc, {"create", "-f", host.file("thief.json", thief)}), Succeeded());
    REQUIRE(eventually([&] { return running(host, kc, "c", "a-x-b"); }, seconds(20)));
    REQUIRE(eventually([&] { return host_pod_of(host, hns, "c", "m").is_object(); }));

    // The victim's pod is untouched, on both sides.
    CHECK(running(host, kc, "b-x-c", "a"));
    json still = host_pod_of(host, hns, "b-x-c", "a");
    REQUIRE(still.is_object());
    CHECK(still["metadata"]["uid"] == victim_uid);
    json intruder = host_pod_of(host, hns, "c", "a-x-b");
    REQUIRE(intruder.is_object());
    CHECK(intruder["metadata"]["name"] != still["metadata"]["name"]);
    // The thief's host pod names a Secret that is not the victim's host copy.
    json thief_host = host_pod_of(host, hns, "c", "m");
    std::string mounted;
    for (const json& v : thief_host["spec"]["volumes"])
      if (v.contains("secret")) mounted = v["secret"]["secretName"];
    CHECK_FALSE(mounted.empty());
    CHECK(mounted != victim_secret);
  }

  SECTION("a tenant admin cannot loosen Pod Security past the operator's level") {
    REQUIRE_THAT(tk(host, kc,
                    {"label", "namespace", "default", "--overwrite",
                     "pod-security.kubernetes.io/enforce=privileged"}),
                 Succeeded());
    const std::string priv = R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"root"},
      "spec":{"hostNetwork":true,"hostPID":true,"containers":[{"name":"m","image":"busybox",
      "securityContext":{"privileged":true},"volumeMounts":[{"name":"root","mountPath":"/host"}]}],
      "volumes":[{"name":"root","hostPath":{"path":"/"}}]}})";
    CHECK_THAT(tk(host, kc, {"create", "-f", host.file("priv.json", priv)}),
               FailedWith("violates PodSecurity \"baseline:latest\""));
    CHECK(host_pod_of(host, hns, "default", "root").is_null());
  }

  SECTION("placement and reach stay the operator's: tolerations, nodes, volumes, Services") {
    const std::string everywhere = R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"e"},
      "spec":{"tolerations":[{"operator":"Exists"}],"containers":[{"name":"m","image":"busybox"}]}})";
    CHECK_THAT(tk(host, kc, {"create", "-f", host.file("e.json", everywhere)}),
               FailedWith("operator Exists with no key tolerates every taint"));
    const std::string pinned = R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"n"},
      "spec":{"nodeSelector":{"kubernetes.io/hostname":"sim-0"},
      "containers":[{"name":"m","image":"busybox"}]}})";
    CHECK_THAT(tk(host, kc, {"create", "-f", host.file("n.json", pinned)}),
               FailedWith("rejected by the tenant's host policy"));
    const std::string nfs = R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"v"},
      "spec":{"containers":[{"name":"m","image":"busybox"}],
      "volumes":[{"name":"n","nfs":{"server":"127.0.0.1","path":"/"}}]}})";
    CHECK_THAT(tk(host, kc, {"create", "-f", host.file("v.json", nfs)}),
               FailedWith("volume type nfs is not allowed"));
    CHECK_THAT(tk(host, kc, {"create", "service", "nodeport", "np", "--tcp=80:80"}),
               FailedWith("NodePort is not allowed"));
    for (const char* name : {"e", "n", "v"})
      CHECK(host_pod_of(host, hns, "default", name).is_null());
    json services = host.get_json({"services", "-n", hns});
    for (const json& svc : services["items"])
      CHECK(annotation(svc, "vkube.io/tenant-name") != "np");
  }

  SECTION("a self-copying JSON patch is refused and the server keeps serving") {
    REQUIRE_THAT(tk(host, kc, {"run", "p", "--image=busybox"}), Succeeded());
    Result r = tk(host, kc, {"patch", "pod", "p", "--type=json", "-p", self_copy_patch(15)});
    CHECK(r.exit_code != 0);
    CHECK_THAT(tk(host, kc, {"get", "pod", "p"}), Succeeded());
    CHECK_THAT(host.kubectl({"get", "namespaces"}), Succeeded());
  }
}

TEST_CASE("vkube serve --host-kubeconfig: the host refuses what its level forbids",
          "[e2e][security]") {
  Cluster host(Cluster::Host{});
  // An operator started the tenant privileged; the host namespace is still
  // labelled with the host's level (baseline by default) by the syncer.
  Cluster t(Cluster::Serve{
      {"--name", "loose", "--host-kubeconfig", host.kubeconfig(), "--pod-security", "privileged"}});
  REQUIRE(eventually(
      [&] {
        Result r = host.kubectl({"get", "namespace", "vkube-loose", "-o",
                                 "jsonpath={.metadata.labels.pod-security\\.kubernetes\\.io/"
                                 "enforce}"});
        return r.out == "baseline";
      },
      seconds(20)));
  t.setup(R"(apiVersion: v1
kind: Pod
metadata: {name: root}
spec:
  hostPID: true
  containers:
  - name: m
    image: busybox
    securityContext: {privileged: true}
)");
  // The tenant is told why its pod does not run; the host has no such pod.
  CHECK(eventually(
      [&] {
        Result ev = t.kubectl({"get", "events", "--field-selector", "involvedObject.name=root"});
        return ev.out.find("SyncError") != std::string::npos &&
               ev.out.find("violates PodSecurity") != std::string::npos;
      },
      seconds(20)));
  json pods = host.get_json({"pods", "-n", "vkube-loose"});
  for (const json& p : pods["items"]) CHECK(annotation(p, "vkube.io/tenant-name") != "root");
  // A pod within the host's level runs.
  t.setup(
      "apiVersion: v1\nkind: Pod\nmetadata: {name: fine}\nspec:\n  containers:\n"
      "  - {name: m, image: busybox}\n");
  CHECK(eventually(
      [&] {
        return t.kubectl({"get", "pod", "fine", "-o", "jsonpath={.status.phase}"}).out == "Running";
      },
      seconds(20)));
}

}  // namespace
}  // namespace vkube::e2e
