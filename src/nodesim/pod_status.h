// The pod statuses a kubelet reports, as pure functions of the pod and the
// moment: no I/O, so each step of a simulated pod's life can be checked on
// its own. Each returns the whole new status; fields it does not own
// (qosClass, nominatedNodeName, conditions of other writers) are kept.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace vkube::nodesim {

using json = nlohmann::json;

struct Addresses {
  std::string host_ip;
  std::string pod_ip;  // empty while the sandbox has none
};

// Pending, containers waiting (ContainerCreating; app containers wait on
// PodInitializing when there are init containers), not Ready. `message`,
// when set, says why the sandbox is not up (no address left).
json creating_status(const json& pod, const Addresses& a, std::string_view now,
                     std::string_view message = {});

// Running and Ready: every container running since `now` (or since it
// already was), init containers completed (sidecars running).
json running_status(const json& pod, const Addresses& a, std::string_view now);

// Every app container exited with `exit_code` and was started again
// (restartCount + 1, lastState terminated): restartPolicy Always, or
// OnFailure after a failure.
json restarted_status(const json& pod, int exit_code, std::string_view now);

// Every container terminated with `exit_code`: Succeeded for 0, else
// Failed; not Ready (reason PodCompleted or PodFailed).
json finished_status(const json& pod, int exit_code, std::string_view now);

// "Completed" for exit code 0, else "Error", as the kubelet reports it.
std::string_view exit_reason(int exit_code);

}  // namespace vkube::nodesim
