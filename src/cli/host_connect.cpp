#include "host_connect.h"

#include <unistd.h>

#include <chrono>
#include <cstdlib>

namespace vkube::cli {

namespace {

bool readable(const std::string& path) {
  return !path.empty() && access(path.c_str(), R_OK) == 0;
}

}  // namespace

HostFlags add_host_flags(FlagSet& f) {
  return {&f.add_string("kubeconfig", "",
                        "the host cluster's kubeconfig (default: $VKUBE_HOST_KUBECONFIG, else "
                        "DATA-DIR/host/admin.kubeconfig of `vkube up`, else $KUBECONFIG, else "
                        "the in-cluster account, else ~/.kube/config)"),
          &f.add_string("context", "", "context in the kubeconfig (default: current)"),
          &f.add_string("data-dir", "vkube-data", "the state directory of `vkube up`")};
}

Result<Host> connect_host(const HostFlags& f) {
  Host h;
  std::string path = *f.kubeconfig;
  const std::string up = *f.data_dir + "/host/admin.kubeconfig";
  if (path.empty() && std::getenv("VKUBE_HOST_KUBECONFIG"))
    path = std::getenv("VKUBE_HOST_KUBECONFIG");
  if (path.empty() && readable(up)) {
    path = up;
    h.data_dir = *f.data_dir;
  }
  if (path.empty() && std::getenv("KUBECONFIG")) {
    path = std::getenv("KUBECONFIG");
    path = path.substr(0, path.find(':'));
  }
  Result<hostclient::Config> config = Status::ok();
  if (path.empty() && std::getenv("KUBERNETES_SERVICE_HOST")) {
    config = hostclient::in_cluster();
    h.source = "the in-cluster service account";
  } else {
    if (path.empty() && std::getenv("HOME"))
      path = std::string(std::getenv("HOME")) + "/.kube/config";
    if (!readable(path))
      return Status::invalid(
          "no host cluster: give --kubeconfig, set KUBECONFIG, or start one with `vkube up`");
    config = hostclient::from_kubeconfig(path, *f.context);
    h.source = path;
  }
  if (!config.is_ok()) return config.status();
  hostclient::Options o;
  o.user_agent = "vkube-cli";
  o.retry_for = std::chrono::seconds(5);
  auto client = hostclient::Client::create(std::move(config).value(), o);
  if (!client.is_ok()) return client.status();
  h.client = std::move(client).value();
  return h;
}

}  // namespace vkube::cli
