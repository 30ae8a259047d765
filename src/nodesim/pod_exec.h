// exec, attach and port-forward into a pod the node agent runs as a local
// process (local_pods.h): what a container runtime would do, emulated with
// the pod's sandbox and nothing more.
//   exec: the command runs as a process of the host with the pod's
//         environment and working directory (its folder), in a session of
//         its own, with a pseudo-terminal when a tty is asked for;
//   attach: the container's output from now on (its stdin is not open);
//   port-forward: a TCP connection to the pod's own address.
#pragma once

#include <string>
#include <vector>

#include "vkube/streaming/streaming.h"

namespace vkube::nodesim {

// Runs `o.command` for `s` until it ends or the client goes (then its
// process group is killed). A command that cannot start ends with 127 (not
// found) or 126 (not executable), its reason on stderr, as a shell does.
streaming::ExitStatus run_exec(const streaming::ExecOptions& o, streaming::Session& s,
                               const std::vector<std::string>& env, const std::string& cwd);

// Streams what the container writes to the CRI log `log_path` from now on
// until `running()` turns false or the client goes.
streaming::ExitStatus run_attach(const streaming::ExecOptions& o, streaming::Session& s,
                                 const std::string& log_path,
                                 const std::function<bool()>& running);

}  // namespace vkube::nodesim
