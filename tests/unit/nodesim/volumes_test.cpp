// The local volume provisioner of `vkube host` over a real API server and
// controller manager: the default StorageClass "local", claims of that class
// (or of none) bound to hostPath volumes in the state folder, claims of other
// classes left Pending, volumes deleted with their folders or Released when
// their claims go, and the claims made while the simulator was down bound
// when it starts again.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <thread>

#include "support/control_plane.h"
#include "support/temp_dir.h"
#include "vkube/nodesim/simulator.h"

namespace vkube::nodesim {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using testing::ControlPlane;
using namespace std::chrono_literals;

const std::string kClaims = "/api/v1/namespaces/w/persistentvolumeclaims";
const std::string kVolumes = "/api/v1/persistentvolumes";

Options with_state(const std::string& dir) {
  gpu::PoolFlags f;
  f.count = 1;
  f.prefix = "sim";
  f.gpus = 1;
  Options o;
  o.nodes = *gpu::pool_from_flags(f);
  o.workers = 2;
  o.local_state_dir = dir;
  return o;
}

// A control plane and a simulator on its informers, which can be restarted
// over the same store (a restart of `vkube host`).
struct Host {
  std::unique_ptr<Simulator> sim;
  ControlPlane cp;
  Options options;

  explicit Host(Options o)
      : cp({"garbage-collector"}, {}, {[this, o](controllers::Informers& informers) {
             sim = Simulator::create(*cp.server.api, informers, o);
           }}),
        options(o) {
    REQUIRE(sim->start().is_ok());
  }
  ~Host() {
    if (sim) sim->stop();
  }

  void stop() {
    sim->stop();
    cp.manager->stop();
  }
  void start() {
    controllers::ManagerOptions mo;
    mo.controllers = {"garbage-collector"};
    mo.attach = {[this](controllers::Informers& informers) {
      sim = Simulator::create(*cp.server.api, informers, options);
    }};
    auto m = controllers::ControllerManager::start(*cp.server.api, *cp.server.store, mo);
    REQUIRE(m.is_ok());
    cp.manager = std::move(m).value();
    REQUIRE(sim->start().is_ok());
  }

  json claim(const std::string& name) { return cp.get(kClaims + "/" + name); }
  bool bound(const std::string& name) {
    return claim(name)["status"].value("phase", "") == "Bound";
  }
};

json claim(const std::string& name, const json& storage_class = nullptr) {
  json c = {{"apiVersion", "v1"},
            {"kind", "PersistentVolumeClaim"},
            {"metadata", {{"name", name}}},
            {"spec",
             {{"accessModes", json::array({"ReadWriteOnce"})},
              {"resources", {{"requests", {{"storage", "1Gi"}}}}}}}};
  if (!storage_class.is_null()) c["spec"]["storageClassName"] = storage_class;
  return c;
}

TEST_CASE("nodesim: the default StorageClass local", "[nodesim]") {
  testing::TempDir dir;
  Host h(with_state(dir.path()));
  json sc = h.cp.get("/apis/storage.k8s.io/v1/storageclasses/local");
  CHECK(sc["metadata"]["annotations"]["storageclass.kubernetes.io/is-default-class"] == "true");
  CHECK(sc["provisioner"] == "vkube.io/local");
  CHECK(sc["reclaimPolicy"] == "Delete");
  CHECK(sc["volumeBindingMode"] == "Immediate");

  // A class its owner changed stays as it is across a restart.
  h.cp.must_patch("/apis/storage.k8s.io/v1/storageclasses/local",
                  {{"metadata", {{"annotations", {{"owner", "me"}}}}}});
  h.stop();
  h.start();
  sc = h.cp.get("/apis/storage.k8s.io/v1/storageclasses/local");
  CHECK(sc["metadata"]["annotations"]["owner"] == "me");
}

TEST_CASE("nodesim: a claim of the default class binds to a provisioned local volume",
          "[nodesim]") {
  testing::TempDir dir;
  Host h(with_state(dir.path()));
  const std::string uid = h.cp.create(kClaims, claim("data"))["metadata"]["uid"];
  h.cp.create(kClaims, claim("named", "local"));
  const std::string other_uid =
      h.cp.create(kClaims, claim("elsewhere", "other"))["metadata"]["uid"];
  REQUIRE(ControlPlane::eventually([&] { return h.bound("data") && h.bound("named"); }));

  json c = h.claim("data");
  const std::string name = "pvc-" + uid;
  CHECK(c["spec"]["volumeName"] == name);
  CHECK(c["spec"]["storageClassName"] == "local");  // the default class, given retroactively
  CHECK(c["metadata"]["annotations"]["pv.kubernetes.io/bind-completed"] == "yes");
  CHECK(c["status"]["capacity"]["storage"] == "1Gi");
  CHECK(c["status"]["accessModes"] == json::array({"ReadWriteOnce"}));

  json v = h.cp.get(kVolumes + "/" + name);
  const std::string folder = dir.path() + "/volumes/w/data-" + uid.substr(0, 8);
  CHECK(v["status"]["phase"] == "Bound");
  CHECK(v["spec"]["capacity"]["storage"] == "1Gi");
  CHECK(v["spec"]["accessModes"] == json::array({"ReadWriteOnce"}));
  CHECK(v["spec"]["persistentVolumeReclaimPolicy"] == "Delete");
  CHECK(v["spec"]["storageClassName"] == "local");
  CHECK(v["spec"]["hostPath"]["path"] == folder);
  CHECK(v["spec"]["hostPath"]["type"] == "DirectoryOrCreate");
  CHECK(v["spec"]["claimRef"]["namespace"] == "w");
  CHECK(v["spec"]["claimRef"]["name"] == "data");
  CHECK(v["spec"]["claimRef"]["uid"] == uid);
  CHECK(v["metadata"]["annotations"]["pv.kubernetes.io/provisioned-by"] == "vkube.io/local");
  CHECK(fs::is_directory(folder));

  // Another class is someone else's to provision: the claim waits.
  REQUIRE(h.sim->wait_idle(5s));
  c = h.claim("elsewhere");
  CHECK(c["status"]["phase"] == "Pending");
  CHECK_FALSE(c["spec"].contains("volumeName"));
  CHECK(h.cp.call("GET", kVolumes + "/pvc-" + other_uid).code == 404);

  // Deleting the claim deletes its volume and the folder.
  std::ofstream(folder + "/state") << "kept until the claim goes";
  REQUIRE(h.cp.call("DELETE", kClaims + "/data").code == 200);
  REQUIRE(ControlPlane::eventually(
      [&] { return h.cp.call("GET", kVolumes + "/" + name).code == 404; }));
  CHECK_FALSE(fs::exists(folder));
  CHECK(fs::is_directory(dir.path() + "/volumes/w"));  // "named" is still there
  CHECK(h.bound("named"));
}

TEST_CASE("nodesim: a retained volume is released with its folder kept; others are never removed",
          "[nodesim]") {
  testing::TempDir dir;
  Host h(with_state(dir.path()));
  const std::string kept = h.cp.create(kClaims, claim("kept"))["metadata"]["uid"];
  const std::string moved = h.cp.create(kClaims, claim("moved"))["metadata"]["uid"];
  REQUIRE(ControlPlane::eventually([&] { return h.bound("kept") && h.bound("moved"); }));
  const std::string kept_folder = dir.path() + "/volumes/w/kept-" + kept.substr(0, 8);
  REQUIRE(fs::is_directory(kept_folder));

  // Retain: the volume stays, Released, and so does its folder.
  h.cp.must_patch(kVolumes + "/pvc-" + kept,
                  {{"spec", {{"persistentVolumeReclaimPolicy", "Retain"}}}});
  // A volume pointed at a folder outside the state folder's volumes: that
  // folder is never removed, the volume shows why it stays.
  const std::string outside = dir.path() + "/elsewhere";
  fs::create_directories(outside);
  h.cp.must_patch(kVolumes + "/pvc-" + moved, {{"spec", {{"hostPath", {{"path", outside}}}}}});
  REQUIRE(h.sim->wait_idle(5s));
  REQUIRE(h.cp.call("DELETE", kClaims + "/kept").code == 200);
  REQUIRE(h.cp.call("DELETE", kClaims + "/moved").code == 200);
  REQUIRE(ControlPlane::eventually([&] {
    return h.cp.get(kVolumes + "/pvc-" + kept)["status"].value("phase", "") == "Released" &&
           h.cp.get(kVolumes + "/pvc-" + moved)["status"].value("phase", "") == "Failed";
  }));
  CHECK(fs::is_directory(kept_folder));
  CHECK(fs::is_directory(outside));
  CHECK_THAT(h.cp.get(kVolumes + "/pvc-" + moved)["status"].value("message", ""),
             Catch::Contains("is not under"));
}

TEST_CASE("nodesim: claims made while the host was down bind when it starts", "[nodesim]") {
  testing::TempDir dir;
  Host h(with_state(dir.path()));
  const std::string gone = h.cp.create(kClaims, claim("gone"))["metadata"]["uid"];
  REQUIRE(ControlPlane::eventually([&] { return h.bound("gone"); }));
  const std::string gone_folder = dir.path() + "/volumes/w/gone-" + gone.substr(0, 8);
  REQUIRE(fs::is_directory(gone_folder));

  h.stop();
  h.cp.create(kClaims, claim("later"));
  REQUIRE(h.cp.call("DELETE", kClaims + "/gone").code == 200);
  std::this_thread::sleep_for(100ms);
  CHECK(h.claim("later")["status"]["phase"] == "Pending");
  CHECK(fs::is_directory(gone_folder));

  h.start();
  REQUIRE(ControlPlane::eventually([&] { return h.bound("later"); }));
  REQUIRE(ControlPlane::eventually(
      [&] { return h.cp.call("GET", kVolumes + "/pvc-" + gone).code == 404; }));
  CHECK_FALSE(fs::exists(gone_folder));
  CHECK(fs::is_directory(dir.path() + "/volumes/w"));  // "later" is there

  // The namespace's folder goes with its last volume.
  REQUIRE(h.cp.call("DELETE", kClaims + "/later").code == 200);
  REQUIRE(ControlPlane::eventually([&] { return !fs::exists(dir.path() + "/volumes/w"); }));
  CHECK(fs::is_directory(dir.path() + "/volumes"));
}

}  // namespace
}  // namespace vkube::nodesim
