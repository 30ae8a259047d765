// How the tenant commands and `vkube dashboard` find the host cluster: the
// --kubeconfig/--context/--data-dir flags and the defaults behind them.
#pragma once

#include <memory>
#include <string>

#include "flags.h"
#include "vkube/common/status.h"
#include "vkube/hostclient/client.h"

namespace vkube::cli {

struct HostFlags {
  std::string* kubeconfig;
  std::string* context;
  std::string* data_dir;
};

HostFlags add_host_flags(FlagSet& f);

struct Host {
  std::unique_ptr<hostclient::Client> client;
  std::string source;    // where its configuration came from
  std::string data_dir;  // the `vkube up` directory it belongs to, if any
};

// A client of the host: --kubeconfig, else $VKUBE_HOST_KUBECONFIG, else
// DATA-DIR/host/admin.kubeconfig of `vkube up`, else $KUBECONFIG's first
// file, else the in-cluster account, else ~/.kube/config. kInvalid when
// none is there or the configuration is malformed.
Result<Host> connect_host(const HostFlags& f);

}  // namespace vkube::cli
