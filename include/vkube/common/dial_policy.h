// Which addresses this process may dial. An embedded host (`vkube host`) and
// every tenant whose pods run on its simulated nodes live in a simulation:
// pod IPs, node IPs and cluster IPs there are made up and route off the
// machine, where nothing of theirs listens. Once a simulated network is
// known, every outgoing TCP connection is checked here first and only
// 127.0.0.0/8 and ::1 are dialled; the rest is answered locally with a
// clear error instead of a packet to whatever the made-up address routes to.
//
// The networks come from VKUBE_SIMULATED_NETWORKS (comma-separated CIDRs,
// read once; the embedded host sets it for itself and its local pods) and
// from note_simulated_network() (a tenant's syncer, for the host's simulated
// nodes). With neither, nothing is refused: a tenant on a real cluster dials
// its webhooks' pods as kube does. Thread-safe.
#pragma once

#include <string>
#include <string_view>

#include "vkube/common/status.h"

namespace vkube::dial_policy {

// The environment variable the networks are read from, and handed down in.
inline constexpr const char* kEnvVar = "VKUBE_SIMULATED_NETWORKS";

// Adds "a.b.c.d/n" (a simulated node's pod range, a node address, a service
// range) and turns the policy on. kInvalid for anything else.
Status note_simulated_network(std::string_view cidr);
// The networks known so far, comma-separated (for a child's environment).
std::string simulated_networks();

// Whether `ip` (numeric, v4 or v6, no port) may be dialled. When it may
// not, kUnavailable with a message kube clients show as is:
//   "dial tcp 10.244.0.5:443: pod runs on a simulated node: nothing listens"
// or, for an address outside every simulated network, one saying the
// embedded host reaches only this machine. `port` is for the message.
Status check(std::string_view ip, int port);

}  // namespace vkube::dial_policy
