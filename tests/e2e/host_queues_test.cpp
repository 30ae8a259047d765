// `vkube create --host-gpu-sharing kai|kueue` on a host with KAI's or
// Kueue's CRDs (schema-less stand-ins for the real operators, which this
// machine cannot run): the queue objects written from --gpu-share, the host
// copies of tenant pods carrying the queue label (and KAI's scheduler
// name), `vkube delete` removing the cluster-scoped queues, and the refusal
// on a host without the CRDs. Real kubectl against `vkube host`.
#include <algorithm>
#include <sstream>

#include "fixture.h"

namespace vkube::e2e {
namespace {

using json = nlohmann::json;

std::string crd(const std::string& group, const std::string& version, const std::string& kind,
                const std::string& plural, const std::string& scope) {
  return "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  "
         "name: " +
         plural + "." + group + "\nspec:\n  group: " + group + "\n  scope: " + scope +
         "\n  names: {kind: " + kind + ", plural: " + plural +
         ", singular: " + std::string(plural.substr(0, plural.size() - 1)) + ", listKind: " + kind +
         "List}\n  versions:\n  - name: " + version +
         "\n    served: true\n    storage: true\n    schema:\n      openAPIV3Schema:\n"
         "        type: object\n        x-kubernetes-preserve-unknown-fields: true\n";
}

void install_crds(Cluster& host) {
  std::string yaml = crd("scheduling.run.ai", "v2", "Queue", "queues", "Cluster");
  for (auto [kind, plural, scope] : {std::tuple{"ResourceFlavor", "resourceflavors", "Cluster"},
                                     std::tuple{"ClusterQueue", "clusterqueues", "Cluster"},
                                     std::tuple{"LocalQueue", "localqueues", "Namespaced"}})
    yaml += "---\n" + crd("kueue.x-k8s.io", "v1beta1", kind, plural, scope);
  host.file("crds.yaml", yaml);
  REQUIRE_THAT(host.kubectl({"apply", "-f", host.dir() + "/crds.yaml"}), Succeeded());
  REQUIRE_THAT(
      host.kubectl({"wait", "--for=condition=Established", "--timeout=20s",
                    "crd/queues.scheduling.run.ai", "crd/clusterqueues.kueue.x-k8s.io",
                    "crd/localqueues.kueue.x-k8s.io", "crd/resourceflavors.kueue.x-k8s.io"}),
      Succeeded());
}

bool has_arg(Cluster& host, const std::string& ns, const std::string& arg) {
  json sts = host.get_json({"statefulset", "vkube", "-n", ns});
  json args = sts["spec"]["template"]["spec"]["containers"][0]["args"];
  return std::find(args.begin(), args.end(), json(arg)) != args.end();
}

// The host copy of a tenant pod run with the kubeconfig `out`, found by
// the queue label the syncer gave it.
json host_pod(Cluster& host, const std::string& out, const std::string& ns,
              const std::string& selector) {
  REQUIRE_THAT(host.run({kubectl_path(), "--kubeconfig", out, "run", "train", "--image=busybox"},
                        seconds(30)),
               Succeeded());
  json found;
  CHECK(eventually(
      [&] {
        json list = host.get_json({"pods", "-n", ns, "-l", selector});
        if (list["items"].empty()) return false;
        found = list["items"][0];
        return true;
      },
      seconds(30)));
  return found;
}

// The chart's object of `kind` for tenant `tenant` with gpu.hostQueues
// `mode` and gpu.share `share`, as kubectl reads it: the chart renders what
// `vkube create` writes.
json chart_object(Cluster& host, const std::string& tenant, const std::string& mode,
                  const std::string& share, const std::string& kind) {
  const std::string values = host.file(
      tenant + "-values.yaml", "gpu:\n  hostQueues: " + mode + "\n  share: \"" + share + "\"\n");
  Result rendered = helm(
      host, {"template", tenant, std::string(VKUBE_SOURCE_DIR) + "/manifests/vkube-tenant", "-n",
             "vkube-" + tenant, "-f", values, "--show-only", "templates/host-queues.yaml"});
  REQUIRE_THAT(rendered, Succeeded());
  const std::string path = host.file(tenant + "-chart.yaml", rendered.out);
  Result read = host.kubectl({"create", "--dry-run=client", "-o", "json", "-f", path});
  REQUIRE_THAT(read, Succeeded());
  // One JSON object after another.
  std::istringstream in(read.out);
  while ((in >> std::ws).peek() != EOF) {
    json obj;
    in >> obj;
    if (obj.value("kind", "") == kind) return obj;
  }
  FAIL("the chart rendered no " << kind);
  return nullptr;
}

TEST_CASE("vkube create --host-gpu-sharing kai|kueue writes the tenant's queues on the host",
          "[e2e][host-queues]") {
  Cluster host(Cluster::Host{});

  // Without the CRDs, nothing is made and the message names the CRD.
  CHECK_THAT(vkube_at(host, {"create", "early", "--host-gpu-sharing", "kueue", "--gpu-share",
                             "deserved=2", "--wait=false"}),
             FailedWith("the host has no CustomResourceDefinition resourceflavors.kueue.x-k8s.io"));
  CHECK_THAT(vkube_at(host, {"create", "early", "--host-gpu-sharing", "kai", "--wait=false"}),
             FailedWith("no CustomResourceDefinition queues.scheduling.run.ai"));
  CHECK_THAT(host.kubectl({"get", "namespace", "vkube-early"}), FailedWith("not found"));
  CHECK_THAT(vkube_at(host, {"create", "early", "--host-gpu-sharing", "volcano"}),
             FailedWith("--host-gpu-sharing must be vkube, kai or kueue, got 'volcano'"));

  install_crds(host);

  SECTION("kai: a Queue under vkube-pool, pods for kai-scheduler in it") {
    const std::string out = host.dir() + "/ka.kubeconfig";
    Result created = vkube_at(host, {"create", "ka", "--host-gpu-sharing", "kai", "--gpu-share",
                                     "deserved=8,limit=24,weight=2,model:H100=4", "--out", out});
    REQUIRE_THAT(created, Succeeded());
    CHECK(created.out.find("note: KAI queues have no per-model quota: model:H100=4") !=
          std::string::npos);
    json q = host.get_json({"queues.scheduling.run.ai", "vkube-ka"});
    CHECK(q["metadata"]["labels"]["vkube.io/tenant"] == "ka");
    CHECK(q["spec"]["parentQueue"] == "vkube-pool");
    CHECK(q["spec"]["resources"]["gpu"] ==
          json({{"quota", 8}, {"limit", 24}, {"overQuotaWeight", 2}}));
    CHECK(host.get_json({"queues.scheduling.run.ai",
                         "vkube-pool"})["spec"]["resources"]["gpu"]["quota"] == 8);
    CHECK(has_arg(host, "vkube-ka", "--host-gpu-sharing=kai"));
    CHECK(has_arg(host, "vkube-ka", "--host-scheduler-name=kai-scheduler"));
    CHECK(has_arg(host, "vkube-ka", "--host-pod-labels=kai.scheduler/queue=vkube-ka"));
    CHECK(chart_object(host, "ka", "kai", "deserved=8,limit=24,weight=2,model:H100=4",
                       "Queue")["spec"] == q["spec"]);
    json pod = host_pod(host, out, "vkube-ka", "kai.scheduler/queue=vkube-ka");
    CHECK(pod["spec"]["schedulerName"] == "kai-scheduler");

    // A second tenant raises the pool's guarantee; deleting it lowers it
    // again and removes its Queue.
    REQUIRE_THAT(vkube_at(host, {"create", "kb", "--host-gpu-sharing", "kai", "--gpu-share",
                                 "deserved=2.5,preemptible=false", "--wait=false"}),
                 Succeeded());
    json kb = host.get_json({"queues.scheduling.run.ai", "vkube-kb"});
    CHECK(kb["spec"]["resources"]["gpu"]["quota"] == 2.5);
    CHECK(kb["spec"]["resources"]["gpu"]["limit"] == 2.5);
    CHECK(has_arg(host, "vkube-kb",
                  "--host-pod-labels=kai.scheduler/preemptibility=non-preemptible,"
                  "kai.scheduler/queue=vkube-kb"));
    CHECK(host.get_json({"queues.scheduling.run.ai",
                         "vkube-pool"})["spec"]["resources"]["gpu"]["quota"] == 10.5);
    // `vkube share` rewrites the queue and the pool's guarantee.
    Result shared = vkube_at(host, {"share", "kb", "deserved=1.5,limit=3"});
    REQUIRE_THAT(shared, Succeeded());
    CHECK(shared.out.find("KAI Queue vkube-kb updated") != std::string::npos);
    CHECK(host.get_json({"queues.scheduling.run.ai", "vkube-kb"})["spec"]["resources"]["gpu"] ==
          json({{"quota", 1.5}, {"limit", 3}, {"overQuotaWeight", 1}}));
    CHECK(host.get_json({"queues.scheduling.run.ai",
                         "vkube-pool"})["spec"]["resources"]["gpu"]["quota"] == 9.5);
    REQUIRE_THAT(vkube_at(host, {"delete", "kb"}), Succeeded());
    CHECK_THAT(host.kubectl({"get", "queues.scheduling.run.ai", "vkube-kb"}),
               FailedWith("not found"));
    CHECK(host.get_json({"queues.scheduling.run.ai",
                         "vkube-pool"})["spec"]["resources"]["gpu"]["quota"] == 8);
  }

  SECTION("kueue: a ClusterQueue in cohort vkube-pool, a LocalQueue, pods labelled for it") {
    const std::string out = host.dir() + "/qa.kubeconfig";
    Result created = vkube_at(host, {"create", "qa", "--host-gpu-sharing", "kueue", "--gpu-share",
                                     "deserved=4,limit=6,weight=3", "--out", out});
    REQUIRE_THAT(created, Succeeded());
    json cq = host.get_json({"clusterqueues.kueue.x-k8s.io", "vkube-qa"});
    CHECK(cq["spec"]["cohort"] == "vkube-pool");
    CHECK(cq["spec"]["namespaceSelector"]["matchLabels"]["kubernetes.io/metadata.name"] ==
          "vkube-qa");
    CHECK(cq["spec"]["fairSharing"]["weight"] == "3");
    CHECK(cq["spec"]["preemption"]["reclaimWithinCohort"] == "Any");
    json gpu = cq["spec"]["resourceGroups"][1];
    CHECK(gpu["coveredResources"] == json({"nvidia.com/gpu"}));
    CHECK(gpu["flavors"][0]["name"] == "vkube-gpu");
    CHECK(gpu["flavors"][0]["resources"][0] ==
          json({{"name", "nvidia.com/gpu"}, {"nominalQuota", "4"}, {"borrowingLimit", "2"}}));
    json lq = host.get_json({"localqueues.kueue.x-k8s.io", "vkube", "-n", "vkube-qa"});
    CHECK(lq["spec"]["clusterQueue"] == "vkube-qa");
    CHECK_THAT(
        host.kubectl({"get", "resourceflavors.kueue.x-k8s.io", "vkube-gpu", "vkube-default"}),
        Succeeded());
    CHECK(has_arg(host, "vkube-qa", "--host-pod-labels=kueue.x-k8s.io/queue-name=vkube"));
    CHECK(has_arg(host, "vkube-qa", "--host-gpu-sharing=milli"));
    CHECK(chart_object(host, "qa", "kueue", "deserved=4,limit=6,weight=3",
                       "ClusterQueue")["spec"] == cq["spec"]);
    json pod = host_pod(host, out, "vkube-qa", "kueue.x-k8s.io/queue-name=vkube");
    CHECK(pod["spec"].value("schedulerName", "default-scheduler") == "default-scheduler");
    // A gang (an Indexed Job running every index at once) is Kueue's plain-pod group too.
    const std::string job = host.file(
        "pair.yaml",
        "apiVersion: batch/v1\nkind: Job\nmetadata: {name: pair}\nspec:\n  completionMode: "
        "Indexed\n  completions: 2\n  parallelism: 2\n  template:\n    spec:\n      "
        "restartPolicy: Never\n      containers:\n      - {name: rank, image: busybox}\n");
    REQUIRE_THAT(host.run({kubectl_path(), "--kubeconfig", out, "apply", "-f", job}, seconds(30)),
                 Succeeded());
    CHECK(eventually(
        [&] {
          json gang = host.get_json({"pods", "-n", "vkube-qa", "-l",
                                     "kueue.x-k8s.io/pod-group-name=pair-x-default-x-qa"});
          if (gang["items"].size() != 2) return false;
          for (const json& p : gang["items"])
            if (p["metadata"]["annotations"].value("kueue.x-k8s.io/pod-group-total-count", "") !=
                "2")
              return false;
          return true;
        },
        seconds(30)));

    REQUIRE_THAT(vkube_at(host, {"share", "qa", "deserved=2"}), Succeeded());
    json after = host.get_json({"clusterqueues.kueue.x-k8s.io", "vkube-qa"});
    CHECK(after["spec"]["resourceGroups"][1]["flavors"][0]["resources"][0] ==
          json({{"name", "nvidia.com/gpu"}, {"nominalQuota", "2"}}));
    CHECK(after["metadata"]["annotations"]["vkube.io/gpu-share"] == "deserved=2");

    REQUIRE_THAT(vkube_at(host, {"delete", "qa"}), Succeeded());
    CHECK_THAT(host.kubectl({"get", "clusterqueues.kueue.x-k8s.io", "vkube-qa"}),
               FailedWith("not found"));
    // The flavors are the pool's, shared by every tenant: they stay.
    CHECK_THAT(host.kubectl({"get", "resourceflavors.kueue.x-k8s.io", "vkube-gpu"}), Succeeded());
  }
}

}  // namespace
}  // namespace vkube::e2e
