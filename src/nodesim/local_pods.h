// Pods of the vkube image, run by the simulated kubelet as real local
// processes, so that `vkube create` does on `vkube host` what it does on a
// real cluster: the tenant's StatefulSet pod becomes a `vkube serve` process.
//
// What a container would get from its sandbox is emulated, and only that:
//   - its own address: a loopback one (127.x.y.z, the low three bytes of the
//     address the node's range gave it), which is the pod's status.podIP; a
//     wildcard listen (0.0.0.0:P in an argument) binds that address, as it
//     would in the pod's own network namespace;
//   - its volumes: a persistentVolumeClaim is the hostPath folder of the
//     PersistentVolume it is bound to (the local volume provisioner,
//     volumes.h, makes them under DIR/volumes; the pod waits until its
//     claims are bound), an emptyDir a folder per pod; an argument naming a
//     mount path names that folder instead;
//   - its service account: TokenRequest's token, the host's CA and the
//     namespace in a folder given as VKUBE_SERVICE_ACCOUNT_DIR (the
//     in-cluster client's /var/run/secrets/kubernetes.io/serviceaccount),
//     and KUBERNETES_SERVICE_HOST/PORT pointing at this host's API;
//   - its environment: env and envFrom as the kubelet resolves them (values,
//     the downward API's fields, ConfigMap and Secret keys), with $(VAR)
//     expanded in args.
// Output goes to DIR/pods/<namespace>_<name>_<uid>/<container>.log in the
// CRI log format (log_writer.h); the run before keeps its log as
// <container>.log.previous.
// Readiness is the readinessProbe's port accepting connections.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "client.h"
#include "log_writer.h"

namespace vkube::nodesim {

// The namespace label by which the operator lets every pod of a namespace
// that uses a local image run as a process of this machine: not sandboxed,
// as root where the host runs as root. Only for tests that need a tenant's
// pod to run for real; `vkube create --unsandboxed-local-pods` sets it.
inline constexpr std::string_view kUnsandboxedLabel = "vkube.io/unsandboxed-local-pods";

struct LocalOptions {
  // Image repositories (the last path segment, without tag or digest) whose
  // pods may run as local processes; empty: none do. Of those, only a
  // tenant's control plane does (a pod a StatefulSet controls that the
  // syncer did not make), unless `unsandboxed` says its namespace opted in.
  std::vector<std::string> images;
  // Whether namespace `ns` carries kUnsandboxedLabel=true; null: none does.
  std::function<bool(const std::string& ns)> unsandboxed;
  std::string binary = "/proc/self/exe";  // what a local pod's container runs
  std::string state_dir;                  // pods' folders, logs and volumes
  // Where local pods reach this host's API, "https://127.0.0.1:6443"; read
  // when a pod starts.
  std::function<std::string()> api_url;
  std::string ca_file;    // the host's CA certificate (the pods' ca.crt)
  int loopback_slot = 0;  // see loopback_of()
};

// The loopback address a local pod holds for the address `ip` of its
// node's range: 127.S.c.d for ip a.b.c.d, S the host's loopback slot (so two
// embedded hosts on one machine never hand out the same address); slot 0:
// 127.b.c.d. And back (`range_base`: an address of the pod's node range, a
// /24 or smaller, so the low two bytes are all that differ).
uint32_t loopback_of(uint32_t ip, int slot);
uint32_t range_address_of(uint32_t loopback, uint32_t range_base);

// $(VAR) expansion as the kubelet does it: a defined variable is replaced,
// $$ escapes, anything else stays as written.
std::string expand_vars(std::string_view text, const std::map<std::string, std::string>& env);

// An argument with the emulated sandbox applied: mount paths become their
// folders (`mounts`: mount path -> folder), 0.0.0.0 becomes `ip`.
std::string localize_arg(std::string arg,
                         const std::vector<std::pair<std::string, std::string>>& mounts,
                         const std::string& ip);

class LocalPods {
 public:
  enum class State { kNone, kStarting, kReady, kExited };

  // `wake(key)` is called (from a reaper thread) when a pod's process ends.
  LocalPods(Client& client, LocalOptions options, std::function<void(const std::string&)> wake);
  ~LocalPods();

  // Whether `pod` runs here as a process: one of its containers uses a
  // local image, and it is a tenant's control plane or its namespace opted
  // in (LocalOptions::unsandboxed). Every other pod is simulated.
  bool runs(const json& pod) const;
  // A pod a StatefulSet controls that carries none of the syncer's marks:
  // what `vkube create` and the chart run, never a tenant's pod.
  static bool control_plane(const json& pod);
  // The folder of `pod` (its working directory, volumes and logs), and the
  // log file of one of its containers there.
  std::string pod_dir(const json& pod) const;
  static std::string log_file(const std::string& pod_dir, const std::string& container);
  // Starts the pod's process unless it runs. `ip` is its loopback address.
  // kUnavailable: not possible yet, but soon may be (a claim not bound yet,
  // its service account not created yet): worth trying again quickly.
  Status start(const std::string& key, const json& pod, const std::string& ip);
  // The process of `key`: none, started but its readiness port not yet
  // open, ready, or exited (`exit_code` set).
  State state(const std::string& key, int* exit_code = nullptr);
  // SIGTERM to the process group; kill(): SIGKILL.
  void terminate(const std::string& key);
  void kill(const std::string& key);
  // What an exec or a port-forward into the running process of `key`
  // needs: its environment, working directory and address; nullopt when
  // it does not run (never started, or exited).
  struct Sandbox {
    std::vector<std::string> env;  // "K=V"
    std::string cwd;
    std::string ip;
    pid_t pid = 0;  // the container's process, leader of its process group
  };
  std::optional<Sandbox> sandbox(const std::string& key);
  // Whether the process of `key` has a readiness port to wait for.
  bool has_probe(const std::string& key);
  // Drops an exited process's record.
  void forget(const std::string& key);
  // Terminates every process, waits up to `grace`, then kills what is left.
  void stop_all(std::chrono::milliseconds grace);

 private:
  struct Proc {
    pid_t pid = 0;
    bool exited = false;
    bool ready = false;
    int exit_code = 0;
    std::string ip;
    int probe_port = 0;  // 0: ready once started
    std::vector<std::string> env;
    std::string cwd;
  };
  void reap();

  Client& client_;
  LocalOptions o_;
  std::function<void(const std::string&)> wake_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, Proc> procs_;
  int live_ = 0;
  bool stopping_ = false;
  std::thread reaper_;
  LogWriter logs_;  // last: its thread may still write while the rest goes
};

}  // namespace vkube::nodesim
