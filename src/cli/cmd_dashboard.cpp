// vkube dashboard: the GPU-pool page on this machine, against any host
// cluster the kubeconfig reaches (`vkube host` serves the same page itself;
// a real cluster where vkube's metrics exist does not).
#include <cstdio>

#include "command.h"
#include "host_connect.h"
#include "vkube/common/log.h"
#include "vkube/dashboard/proxy.h"

namespace vkube::cli {

int run_dashboard(const Args& args) {
  FlagSet flags("dashboard",
                "Serve the GPU-pool dashboard on this machine: a read-only proxy that forwards\n"
                "only the page's reads (nodes, pods, namespaces, /metrics) to the host cluster\n"
                "with the kubeconfig's credentials. Open the printed URL in a browser.");
  auto log_flags = add_log_flags(flags);
  HostFlags hf = add_host_flags(flags);
  std::string& listen = flags.add_string("listen", "127.0.0.1:8001",
                                         "loopback HOST:PORT to serve on (port 0: any free port)");
  if (int rc = parse_or_exit(flags, log_flags, args); rc >= 0) return rc;
  auto address = dashboard::parse_listen(listen);
  if (!address.is_ok()) return fail(address.status().message());
  auto host = connect_host(hf);
  if (!host.is_ok()) return fail(host.status().message());

  block_signals();
  const std::string source = host->source;
  auto proxy = dashboard::Proxy::start(*address, std::move(host->client));
  if (!proxy.is_ok()) return fail("--listen " + listen + ": " + proxy.status().message());
  std::string shown =
      address->host.find(':') != std::string::npos ? "[" + address->host + "]" : address->host;
  VKUBE_LOG(info, "dashboard serving", {"host", source}, {"port", (*proxy)->port()});
  std::printf("dashboard: http://%s:%u/dashboard/\n", shown.c_str(),
              static_cast<unsigned>((*proxy)->port()));
  std::fflush(stdout);
  wait_for_signal();
  (*proxy)->stop();
  return 0;
}

}  // namespace vkube::cli
