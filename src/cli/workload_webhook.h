// The admission webhook server of `vkube workload --webhook-listen` (workload_webhook.cpp).
#pragma once

#include <string>

namespace vkube::cli {

// Serves AdmissionReviews over HTTPS on IPv4:PORT with DIR/tls.crt and DIR/tls.key, in the
// background, until the process ends. False (after saying why) when it cannot.
bool start_webhook_server(const std::string& address, const std::string& cert_dir);

}  // namespace vkube::cli
