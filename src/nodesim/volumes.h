// The local volume provisioner of `vkube host`, so that a
// PersistentVolumeClaim binds as it would on a real cluster (kind's and
// Rancher's local-path provisioner do the same there): a claim of the class
// "local", or of no class (the default), gets a hostPath PersistentVolume
// pvc-<claim uid> whose folder is STATE_DIR/volumes/<namespace>/<claim>-<the
// uid's first 8 characters>; the volume and the claim are then bound to each
// other, as kube's PV controller binds them. Claims of other classes are left
// to whoever provisions those.
//
// When a claim is gone, a volume provisioned here (reclaim policy Delete) is
// deleted with its folder, once no pod scheduled to a node still uses the
// claim (what kube's pvc-protection finalizer, which vkube does not add,
// would wait for); a volume whose policy is Retain becomes Released.
//
// Local pods (local_pods.h) mount a claim's volume by its hostPath.
#pragma once

#include <chrono>
#include <filesystem>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "client.h"
#include "vkube/controllers/informers.h"
#include "vkube/controllers/work_queue.h"

namespace vkube::nodesim {

inline constexpr std::string_view kLocalStorageClass = "local";
inline constexpr std::string_view kLocalProvisioner = "vkube.io/local";
inline constexpr std::string_view kProvisionedByAnnotation = "pv.kubernetes.io/provisioned-by";

// Creates the StorageClass "local" (the default class, provisioner
// vkube.io/local, reclaim policy Delete, binding Immediate) unless it exists;
// an existing one is left as its owner made it.
Status ensure_storage_class(Client& client);

class Provisioner {
 public:
  // The listers are the informers' caches of claims, volumes and pods; they
  // outlive the provisioner. Folders are made under `state_dir`/volumes.
  Provisioner(Client& client, const controllers::Lister& claims, const controllers::Lister& volumes,
              const controllers::Lister& pods, std::string state_dir);
  ~Provisioner();

  // The informers' handlers: queue what changed. Quick.
  void on_claim(const controllers::ObjectEvent& e);
  void on_volume(const controllers::ObjectEvent& e);

  // Queues every claim and volume already cached (what changed while vkube
  // host was down), then starts `workers` threads.
  void start(int workers);
  // Shuts the queue and joins the workers. Idempotent.
  void stop();
  // Nothing queued or being handled (waiting timers do not count).
  bool idle() { return queue_.idle(); }

 private:
  void work();
  Status reconcile(const std::string& key);
  // Provisions and binds the claim `key` ("ns/name"); `fresh`: read the
  // volume from the API server rather than the cache (after a conflict).
  // kConflict when an object changed under a write.
  Status sync_claim(const json& claim, bool fresh);
  // Releases the volume `name` once its claim is gone: deletes it with its
  // folder, or marks it Released.
  Status sync_volume(const json& volume);
  bool claim_in_use(const std::string& ns, const std::string& claim) const;
  // Removes a provisioned volume's folder; refuses a path outside
  // STATE_DIR/volumes.
  Status remove_folder(const std::string& path) const;
  Status write_volume_status(const json& volume, json status);

  Client& client_;
  const controllers::Lister& claims_;
  const controllers::Lister& volumes_;
  const controllers::Lister& pods_;
  std::filesystem::path root_;  // STATE_DIR/volumes
  // Serializes making and removing folders: removing a namespace's last
  // volume removes the namespace's folder, which another worker may be
  // making a volume in.
  mutable std::mutex folders_mu_;
  controllers::WorkQueue queue_;
  std::vector<std::thread> workers_;
};

}  // namespace vkube::nodesim
