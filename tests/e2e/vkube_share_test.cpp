// The operator's surface of GPU shares (issue 38) through the real binaries:
// `vkube create --gpu-share` writes the host namespace's annotation and the
// control plane's flag, `vkube share` edits it, bad specs fail fast, and
// `vkube list` shows each tenant's books. Real kubectl on `vkube host`.
#include "fixture.h"

namespace vkube::e2e {
namespace {

using json = nlohmann::json;

std::string share_annotation(Cluster& host, const std::string& ns) {
  return host.get_json({"namespace", ns})["metadata"]
      .value("annotations", json::object())
      .value("vkube.io/gpu-share", "<none>");
}

// A host pod of tenant `tenant` asking for `gpus` whole GPUs.
std::string gpu_pod(const std::string& tenant, const std::string& name, int gpus) {
  json pod = {{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata",
               {{"name", name},
                {"namespace", "vkube-" + tenant},
                {"labels", {{"vkube.io/tenant", tenant}}}}},
              {"spec",
               {{"containers",
                 {{{"name", "train"},
                   {"image", "busybox"},
                   {"resources", {{"limits", {{"nvidia.com/gpu", std::to_string(gpus)}}}}}}}}}}};
  return pod.dump();
}

TEST_CASE("vkube create --gpu-share, vkube share and vkube list's GPU books",
          "[e2e][gpu-share-cli]") {
  Cluster host(Cluster::Host{});

  // A bad share fails at once, saying why, and makes nothing.
  CHECK_THAT(vkube_at(host, {"create", "c", "--gpu-share", "deserved=8,limit=4", "--wait=false"}),
             FailedWith("--gpu-share: invalid GPU share \"deserved=8,limit=4\": limit 4 is "
                        "below deserved 8"));
  CHECK_THAT(host.kubectl({"get", "namespace", "vkube-c"}), FailedWith("NotFound"));

  REQUIRE_THAT(vkube_at(host, {"create", "a", "--gpu-share", "limit=4,deserved=2", "--wait=false"}),
               Succeeded());
  REQUIRE_THAT(vkube_at(host, {"create", "b", "--wait=false"}), Succeeded());
  // Written where the host reads it (canonical form), and as the control plane's flag.
  CHECK(share_annotation(host, "vkube-a") == "deserved=2,limit=4");
  CHECK(share_annotation(host, "vkube-b") == "<none>");
  json args = host.get_json({"statefulset", "vkube", "-n",
                             "vkube-a"})["spec"]["template"]["spec"]["containers"][0]["args"];
  CHECK(std::find(args.begin(), args.end(), json("--gpu-share=deserved=2,limit=4")) != args.end());

  // a holds 3 GPUs with 2 deserved: 1 borrowed; b waits for more than the pool has.
  for (int i = 0; i < 3; ++i)
    REQUIRE_THAT(host.kubectl({"create", "-f",
                               host.file("p" + std::to_string(i) + ".json",
                                         gpu_pod("a", "p" + std::to_string(i), 1))}),
                 Succeeded());
  REQUIRE_THAT(host.kubectl({"create", "-f", host.file("big.json", gpu_pod("b", "big", 1000))}),
               Succeeded());
  std::map<std::string, std::string> a;
  CHECK(eventually(
      [&] {
        a = vkube_list_row(host, "a");
        return a["ALLOCATED"] == "3";
      },
      seconds(20)));
  INFO("a: DESERVED " << a["DESERVED"] << " LIMIT " << a["LIMIT"] << " BORROWED " << a["BORROWED"]);
  CHECK(a["DESERVED"] == "2");
  CHECK(a["LIMIT"] == "4");
  CHECK(a["BORROWED"] == "1");
  CHECK(a["PENDING"] == "0");
  auto b = vkube_list_row(host, "b");
  CHECK(b["DESERVED"] == "0");
  CHECK(b["LIMIT"] == "<none>");
  CHECK(b["PENDING"] == "1000");
  CHECK(b["ALLOCATED"] == "0");

  // vkube share changes it; the books follow.
  Result shared = vkube_at(host, {"share", "a", "deserved=3"});
  REQUIRE_THAT(shared, Succeeded());
  CHECK(shared.out.find("tenant a: GPU share deserved=3") != std::string::npos);
  CHECK(share_annotation(host, "vkube-a") == "deserved=3");
  a = vkube_list_row(host, "a");
  CHECK(a["DESERVED"] == "3");
  CHECK(a["LIMIT"] == "<none>");
  CHECK(a["BORROWED"] == "0");

  // Bad specs and unknown tenants fail, and change nothing.
  CHECK_THAT(vkube_at(host, {"share", "a", "weight=x"}),
             FailedWith("invalid GPU share item \"weight=x\": weight must be a whole number"));
  CHECK_THAT(vkube_at(host, {"share", "nobody", "deserved=1"}), FailedWith("not found"));
  CHECK(share_annotation(host, "vkube-a") == "deserved=3");

  // --clear: the share it was created with holds again.
  Result cleared = vkube_at(host, {"share", "a", "--clear"});
  REQUIRE_THAT(cleared, Succeeded());
  CHECK(cleared.out.find("its share is deserved=2,limit=4") != std::string::npos);
  CHECK(share_annotation(host, "vkube-a") == "<none>");
  CHECK(vkube_list_row(host, "a")["DESERVED"] == "2");
}

}  // namespace
}  // namespace vkube::e2e
