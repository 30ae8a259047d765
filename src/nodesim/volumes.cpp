#include "volumes.h"

#include <algorithm>
#include <system_error>

#include "vkube/common/log.h"

namespace vkube::nodesim {

namespace fs = std::filesystem;

namespace {

using std::chrono::milliseconds;

// Retries of a write that lost a race before the key goes back to the queue.
constexpr int kConflictRetries = 4;
// How often a released volume whose claim a pod still uses looks again.
constexpr milliseconds kInUseRetry(500);

// Work-queue keys: claims are namespaced ("claim:ns/name"), volumes not.
constexpr std::string_view kClaimKey = "claim:";
constexpr std::string_view kVolumeKey = "volume:";

constexpr std::string_view kDefaultClassAnnotation = "storageclass.kubernetes.io/is-default-class";
// What kube's PV controller writes on a claim it bound.
constexpr std::string_view kBindCompletedAnnotation = "pv.kubernetes.io/bind-completed";
constexpr std::string_view kBoundByControllerAnnotation = "pv.kubernetes.io/bound-by-controller";
constexpr std::string_view kStorageProvisionerAnnotation =
    "volume.kubernetes.io/storage-provisioner";

const json& field(const json& obj, std::initializer_list<const char*> path) {
  static const json kNull;
  const json* v = &obj;
  for (const char* p : path) {
    if (!v->is_object()) return kNull;
    auto it = v->find(p);
    if (it == v->end()) return kNull;
    v = &*it;
  }
  return *v;
}

std::string str(const json& obj, std::initializer_list<const char*> path) {
  const json& v = field(obj, path);
  return v.is_string() ? v.get<std::string>() : std::string();
}

std::string annotation(const json& obj, std::string_view name) {
  const json& a = field(obj, {"metadata", "annotations"});
  if (!a.is_object()) return {};
  auto it = a.find(std::string(name));
  return it != a.end() && it->is_string() ? it->get<std::string>() : std::string();
}

bool deleting(const json& obj) {
  return field(obj, {"metadata", "deletionTimestamp"}).is_string();
}

// Claims of the class "local" are ours, and so are claims of no class: "local"
// is the default class. Kube reads an explicit "" as "no class, bind to an
// existing volume only", but vkube host has no other volumes such a claim
// could wait for, so it is served the same way.
bool ours(const json& claim) {
  const json& spec = field(claim, {"spec"});
  std::string cls = str(spec, {"storageClassName"});
  // The annotation that preceded the field still wins where set, as in kube.
  if (std::string beta = annotation(claim, "volume.beta.kubernetes.io/storage-class");
      !beta.empty())
    cls = beta;
  return cls.empty() || cls == kLocalStorageClass;
}

// A folder can serve neither a raw block device nor data copied from a
// snapshot or another claim: such claims stay Pending, as they would with a
// provisioner that does not support them.
bool servable(const json& claim) {
  const json& spec = field(claim, {"spec"});
  return str(spec, {"volumeMode"}) != "Block" && !field(spec, {"dataSource"}).is_object() &&
         !field(spec, {"dataSourceRef"}).is_object();
}

// Whether `path` lies strictly inside `root` (both absolute and normal).
bool inside(const fs::path& path, const fs::path& root) {
  fs::path rel = path.lexically_relative(root);
  if (rel.empty() || rel == ".") return false;
  return *rel.begin() != "..";
}

json new_volume(const json& claim, const std::string& name, const std::string& folder) {
  const json& spec = field(claim, {"spec"});
  json capacity = json::object();
  if (const json& storage = field(spec, {"resources", "requests", "storage"}); !storage.is_null())
    capacity["storage"] = storage;
  json volume = {
      {"apiVersion", "v1"},
      {"kind", "PersistentVolume"},
      {"metadata",
       {{"name", name},
        {"annotations",
         {{std::string(kProvisionedByAnnotation), std::string(kLocalProvisioner)}}}}},
      {"spec",
       {{"capacity", std::move(capacity)},
        {"accessModes",
         field(spec, {"accessModes"}).is_array() ? field(spec, {"accessModes"}) : json::array()},
        {"persistentVolumeReclaimPolicy", "Delete"},
        {"storageClassName", std::string(kLocalStorageClass)},
        // Every simulated node is this machine: the folder needs no node affinity.
        {"hostPath", {{"path", folder}, {"type", "DirectoryOrCreate"}}},
        {"claimRef",
         {{"apiVersion", "v1"},
          {"kind", "PersistentVolumeClaim"},
          {"namespace", str(claim, {"metadata", "namespace"})},
          {"name", str(claim, {"metadata", "name"})},
          {"uid", str(claim, {"metadata", "uid"})}}}}}};
  if (std::string mode = str(spec, {"volumeMode"}); !mode.empty())
    volume["spec"]["volumeMode"] = mode;
  return volume;
}

}  // namespace

Status ensure_storage_class(Client& client) {
  json sc = {{"apiVersion", "storage.k8s.io/v1"},
             {"kind", "StorageClass"},
             {"metadata",
              {{"name", std::string(kLocalStorageClass)},
               {"annotations", {{std::string(kDefaultClassAnnotation), "true"}}}}},
             {"provisioner", std::string(kLocalProvisioner)},
             {"reclaimPolicy", "Delete"},
             {"volumeBindingMode", "Immediate"}};
  ApiResult r = client.call("POST", "/apis/storage.k8s.io/v1/storageclasses", sc);
  if (r.ok() || r.code == 409) return Status::ok();
  return Status::internal("creating the StorageClass " + std::string(kLocalStorageClass) + ": " +
                          r.body.dump());
}

Provisioner::Provisioner(Client& client, const controllers::Lister& claims,
                         const controllers::Lister& volumes, const controllers::Lister& pods,
                         std::string state_dir)
    : client_(client),
      claims_(claims),
      volumes_(volumes),
      pods_(pods),
      root_((fs::absolute(state_dir) / "volumes").lexically_normal()) {}

Provisioner::~Provisioner() {
  stop();
}

void Provisioner::on_claim(const controllers::ObjectEvent& e) {
  if (e.type != controllers::EventType::kDeleted) {
    queue_.add(std::string(kClaimKey) + e.key);
    return;
  }
  // The claim is gone: its volume (bound, or provisioned but not yet bound)
  // may go too.
  if (!e.object) return;
  std::string bound = str(*e.object, {"spec", "volumeName"});
  if (!bound.empty()) queue_.add(std::string(kVolumeKey) + bound);
  std::string uid = str(*e.object, {"metadata", "uid"});
  if (!uid.empty() && bound != "pvc-" + uid) queue_.add(std::string(kVolumeKey) + "pvc-" + uid);
}

void Provisioner::on_volume(const controllers::ObjectEvent& e) {
  if (e.type == controllers::EventType::kDeleted || !e.object) return;
  if (!str(*e.object, {"spec", "claimRef", "uid"}).empty())
    queue_.add(std::string(kVolumeKey) + e.key);
}

void Provisioner::start(int workers) {
  for (const controllers::ObjectPtr& c : claims_.list())
    queue_.add(std::string(kClaimKey) + str(*c, {"metadata", "namespace"}) + "/" +
               str(*c, {"metadata", "name"}));
  for (const controllers::ObjectPtr& v : volumes_.list())
    if (!str(*v, {"spec", "claimRef", "uid"}).empty())
      queue_.add(std::string(kVolumeKey) + str(*v, {"metadata", "name"}));
  for (int i = 0; i < std::max(workers, 1); ++i) workers_.emplace_back([this] { work(); });
}

void Provisioner::stop() {
  queue_.shutdown();
  for (auto& w : workers_) w.join();
  workers_.clear();
}

void Provisioner::work() {
  queue_.run([this](const std::string& key) { return reconcile(key); },
             [](const std::string& key, const Status& s) {
               VKUBE_LOG(warn, "local volume provisioner: sync failed", {"key", key},
                         {"error", s.to_string()});
             });
}

Status Provisioner::reconcile(const std::string& key) {
  const bool claim = key.starts_with(kClaimKey);
  const std::string name = key.substr(claim ? kClaimKey.size() : kVolumeKey.size());
  controllers::ObjectPtr cached = claim ? claims_.get(name) : volumes_.get(name);
  // A claim gone from the cache is its volume's business (on_claim queued it).
  if (!cached) return Status::ok();
  json obj = *cached;
  for (int attempt = 0;; ++attempt) {
    Status s = claim ? sync_claim(obj, attempt > 0) : sync_volume(obj);
    if (s.code() != Code::kConflict || attempt + 1 >= kConflictRetries) return s;
    // The cache trails our own writes: read the object as it is now.
    std::string path = volume_path(name);
    if (claim) {
      auto slash = name.find('/');
      path = claim_path(name.substr(0, slash), name.substr(slash + 1));
    }
    ApiResult r = client_.call("GET", path);
    if (r.code == 404) return Status::ok();
    if (!r.ok()) return Status::internal("reading " + key + ": " + r.body.dump());
    obj = std::move(r.body);
  }
}

Status Provisioner::sync_claim(const json& original, bool fresh) {
  if (deleting(original) || !ours(original) || !servable(original)) return Status::ok();
  json claim = original;
  const std::string ns = str(claim, {"metadata", "namespace"});
  const std::string name = str(claim, {"metadata", "name"});
  const std::string uid = str(claim, {"metadata", "uid"});
  if (uid.empty()) return Status::ok();
  const std::string pv_name = "pvc-" + uid;
  const std::string bound_to = str(claim, {"spec", "volumeName"});
  // Pre-bound to a volume someone else made: not ours to bind.
  if (!bound_to.empty() && bound_to != pv_name) return Status::ok();

  // The volume: from the cache, else as stored, else created now.
  json volume;
  controllers::ObjectPtr cached = fresh ? nullptr : volumes_.get(pv_name);
  if (cached) {
    volume = *cached;
  } else {
    ApiResult r = client_.call("GET", volume_path(pv_name));
    if (r.code == 404) {
      const fs::path folder = root_ / ns / (name + "-" + uid.substr(0, 8));
      r = client_.call("POST", volume_path(), new_volume(claim, pv_name, folder.string()));
      if (r.code == 409) return Status::conflict("volume " + pv_name + " exists");
      if (r.ok())
        VKUBE_LOG(info, "local volume provisioner: provisioned a volume",
                  {"claim", ns + "/" + name}, {"volume", pv_name}, {"path", folder.string()});
    }
    if (!r.ok()) return Status::internal("creating volume " + pv_name + ": " + r.body.dump());
    volume = std::move(r.body);
  }
  if (str(volume, {"spec", "claimRef", "uid"}) != uid)
    return Status::internal("volume " + pv_name + " is bound to another claim");
  if (deleting(volume)) return Status::ok();

  // Its folder (made again if someone removed it).
  if (const std::string path = str(volume, {"spec", "hostPath", "path"}); !path.empty()) {
    std::error_code ec;
    std::lock_guard lock(folders_mu_);
    fs::create_directories(path, ec);
    if (ec) return Status::internal("creating " + path + ": " + ec.message());
  }

  // Bound, in the order kube's PV controller binds: the volume's phase, the
  // claim's volumeName, the claim's phase.
  if (str(volume, {"status", "phase"}) != "Bound") {
    json status = field(volume, {"status"}).is_object() ? volume["status"] : json::object();
    status["phase"] = "Bound";
    status.erase("message");
    status.erase("reason");
    VKUBE_RETURN_IF_ERROR(write_volume_status(volume, std::move(status)));
  }

  bool changed = false;
  auto set = [&](json& holder, const std::string& key, const json& value) {
    if (holder.is_object() && holder.contains(key) && holder[key] == value) return;
    holder[key] = value;
    changed = true;
  };
  json& spec = claim["spec"];
  set(spec, "volumeName", pv_name);
  // A claim of no class takes the default one, as kube's PV controller
  // gives it retroactively (kube's admission does at creation; vkube's
  // API server has no DefaultStorageClass admission).
  if (!field(spec, {"storageClassName"}).is_string())
    set(spec, "storageClassName", std::string(kLocalStorageClass));
  json& annotations = claim["metadata"]["annotations"];
  if (!annotations.is_object()) annotations = json::object();
  set(annotations, std::string(kBindCompletedAnnotation), "yes");
  set(annotations, std::string(kBoundByControllerAnnotation), "yes");
  set(annotations, std::string(kStorageProvisionerAnnotation), std::string(kLocalProvisioner));
  if (changed) {
    ApiResult r = client_.call("PUT", claim_path(ns, name), claim);
    if (r.code == 404) return Status::ok();  // deleted meanwhile: its volume's key cleans up
    if (r.code == 409) return Status::conflict("claim " + ns + "/" + name + " changed");
    if (!r.ok()) return Status::internal("binding claim " + ns + "/" + name + ": " + r.body.dump());
    claim = std::move(r.body);
  }

  json status = field(claim, {"status"}).is_object() ? claim["status"] : json::object();
  const json before = status;
  status["phase"] = "Bound";
  status["accessModes"] = field(volume, {"spec", "accessModes"});
  status["capacity"] = field(volume, {"spec", "capacity"});
  if (status == before) return Status::ok();
  claim["status"] = std::move(status);
  ApiResult r = client_.call("PUT", claim_path(ns, name, "status"), claim);
  if (r.code == 404) return Status::ok();
  if (r.code == 409) return Status::conflict("claim " + ns + "/" + name + " changed");
  if (!r.ok()) return Status::internal("status of claim " + ns + "/" + name + ": " + r.body.dump());
  return Status::ok();
}

Status Provisioner::sync_volume(const json& volume) {
  const std::string name = str(volume, {"metadata", "name"});
  const json& ref = field(volume, {"spec", "claimRef"});
  const std::string uid = str(ref, {"uid"});
  const std::string ns = str(ref, {"namespace"});
  const std::string claim = str(ref, {"name"});
  if (uid.empty() || deleting(volume)) return Status::ok();
  if (controllers::ObjectPtr c = claims_.get(ns, claim); c && str(*c, {"metadata", "uid"}) == uid)
    return Status::ok();
  // The cache may trail the API server (a claim just created): ask it
  // before letting the volume go, as kube's PV controller does.
  ApiResult r = client_.call("GET", claim_path(ns, claim));
  if (r.ok() && str(r.body, {"metadata", "uid"}) == uid) return Status::ok();
  if (!r.ok() && r.code != 404)
    return Status::internal("reading claim " + ns + "/" + claim + ": " + r.body.dump());

  // The claim is gone. A volume provisioned here goes with it; any other
  // waits for its owner, Released.
  const std::string phase = str(volume, {"status", "phase"});
  if (annotation(volume, kProvisionedByAnnotation) != kLocalProvisioner ||
      str(volume, {"spec", "persistentVolumeReclaimPolicy"}) != "Delete") {
    if (phase == "Released" || phase == "Failed") return Status::ok();
    json status = field(volume, {"status"}).is_object() ? volume["status"] : json::object();
    status["phase"] = "Released";
    return write_volume_status(volume, std::move(status));
  }
  if (claim_in_use(ns, claim)) {
    queue_.add_after(std::string(kVolumeKey) + name, kInUseRetry);
    return Status::ok();
  }
  if (Status s = remove_folder(str(volume, {"spec", "hostPath", "path"})); !s.is_ok()) {
    // As a failing deleter in kube: the volume shows why, and stays.
    json status = field(volume, {"status"}).is_object() ? volume["status"] : json::object();
    status["phase"] = "Failed";
    status["message"] = s.message();
    if (status != field(volume, {"status"}))
      VKUBE_LOG(warn, "local volume provisioner: cannot delete a volume", {"volume", name},
                {"error", s.message()});
    VKUBE_RETURN_IF_ERROR(write_volume_status(volume, std::move(status)));
    // A folder outside the volumes is refused for good; anything else is retried.
    return s.code() == Code::kInvalid ? Status::ok() : s;
  }
  json options = {{"apiVersion", "v1"},
                  {"kind", "DeleteOptions"},
                  {"preconditions", {{"uid", str(volume, {"metadata", "uid"})}}}};
  r = client_.call("DELETE", volume_path(name), options);
  // 409: the precondition failed, the name now holds another volume.
  if (!r.ok() && r.code != 404 && r.code != 409)
    return Status::internal("deleting volume " + name + ": " + r.body.dump());
  VKUBE_LOG(info, "local volume provisioner: deleted a volume", {"volume", name},
            {"claim", ns + "/" + claim});
  return Status::ok();
}

// A pod on a node that has not terminated still has the claim mounted (the
// pods kube's pvc-protection controller waits for). A new claim of the same
// name used by a new pod also delays the old volume's deletion, harmlessly.
bool Provisioner::claim_in_use(const std::string& ns, const std::string& claim) const {
  for (const controllers::ObjectPtr& p : pods_.list(ns)) {
    if (str(*p, {"spec", "nodeName"}).empty()) continue;
    const std::string phase = str(*p, {"status", "phase"});
    if (phase == "Succeeded" || phase == "Failed") continue;
    for (const json& v : field(*p, {"spec", "volumes"}))
      if (str(v, {"persistentVolumeClaim", "claimName"}) == claim) return true;
  }
  return false;
}

Status Provisioner::remove_folder(const std::string& path) const {
  if (path.empty()) return Status::ok();
  // Lexically inside STATE_DIR/volumes, and still inside once the links of
  // its parents are followed: nothing else is ever removed. The folder
  // itself, were it a link, is removed as a link.
  const fs::path p = fs::path(path).lexically_normal();
  std::error_code ec;
  const fs::path real_root = fs::weakly_canonical(root_, ec);
  const fs::path real_parent = ec ? fs::path() : fs::weakly_canonical(p.parent_path(), ec);
  if (!p.is_absolute() || !inside(p, root_) || ec ||
      (real_parent != real_root && !inside(real_parent, real_root)))
    return Status::invalid("the folder " + path + " is not under " + root_.string());
  std::lock_guard lock(folders_mu_);
  fs::remove_all(p, ec);
  if (ec) return Status::internal("removing " + path + ": " + ec.message());
  // The namespace's folder goes with its last volume (remove() leaves a
  // folder that is not empty).
  if (p.parent_path() != root_) fs::remove(p.parent_path(), ec);
  return Status::ok();
}

Status Provisioner::write_volume_status(const json& volume, json status) {
  if (field(volume, {"status"}) == status) return Status::ok();
  json body = volume;
  body["status"] = std::move(status);
  const std::string name = str(volume, {"metadata", "name"});
  ApiResult r = client_.call("PUT", volume_path(name, "status"), body);
  if (r.ok() || r.code == 404) return Status::ok();
  if (r.code == 409) return Status::conflict("volume " + name + " changed");
  return Status::internal("status of volume " + name + ": " + r.body.dump());
}

}  // namespace vkube::nodesim
