// The volumes a kubelet must set up before a pod's sandbox starts, as far
// as the simulation can miss them: a Secret or ConfigMap volume whose object
// does not exist (and is not optional) holds the pod in ContainerCreating,
// with a FailedMount event, until the object appears.
#pragma once

#include <optional>
#include <string>

#include "client.h"

namespace vkube::nodesim {

struct MissingVolume {
  std::string volume;   // the pod's volume name
  std::string message;  // kubelet's: MountVolume.SetUp failed for volume "x" : secret "y" not found
};

// The first of `pod`'s secret and configMap volumes whose object is missing
// in its namespace; nullopt when all are there (or optional). One GET each.
std::optional<MissingVolume> missing_volume(Client& client, const json& pod);

// Records the kubelet's Warning FailedMount event about `pod` on `node` (one
// per pod and volume: its name is derived from both, so a second call,
// after a restart too, is a no-op).
Status record_failed_mount(Client& client, const json& pod, const MissingVolume& missing,
                           const std::string& node, const std::string& now);

}  // namespace vkube::nodesim
