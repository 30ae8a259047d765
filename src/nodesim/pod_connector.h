// The simulated kubelet's side of pods/log, exec, attach and portforward
// (the API server's PodConnector): pods the node agent runs as local
// processes serve their containers' logs from the CRI log files
// (log_writer.h); every other pod runs no container, and its requests are
// refused with a message that names its node as simulated.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "local_pods.h"
#include "vkube/apiserver/apiserver.h"

namespace vkube::nodesim {

// What the connector asks the node agent.
struct NodePods {
  // Whether the agent runs `pod` as a local process.
  std::function<bool(const nlohmann::json& pod)> runs_locally;
  // The pod's folder (LocalPods::pod_dir).
  std::function<std::string(const nlohmann::json& pod)> pod_dir;
  // Whether the process of the pod "namespace/name" still runs (a follow
  // ends once it has ended and its log is read).
  std::function<bool(const std::string& key)> running;
  // The running process's sandbox (exec, port-forward); nullopt when it
  // does not run.
  std::function<std::optional<LocalPods::Sandbox>(const std::string& key)> sandbox;
};

std::shared_ptr<apiserver::PodConnector> make_pod_connector(NodePods pods);

// pods/log's query (kube's PodLogOptions), checked with kube's messages.
struct LogOptions {
  bool follow = false;
  bool previous = false;
  bool timestamps = false;
  int64_t tail_lines = -1;   // -1: all
  int64_t limit_bytes = -1;  // -1: no limit
  std::string since;         // cri_timestamp() form; lines before it are left out; "": all
};
Result<LogOptions> parse_log_options(const std::string& query, int64_t now_nanos);

// What a read of `data` (whole CRI log lines) gives the client: the lines at
// or after options.since, their text with the timestamp first when asked.
// `budget` (limitBytes left; -1 none) is lowered by what is returned.
std::string render_log_lines(std::string_view data, const LogOptions& options, int64_t& budget);

// The offset in `file` where its last `lines` lines start (0 for fewer).
size_t tail_offset(int fd, int64_t lines);

}  // namespace vkube::nodesim
