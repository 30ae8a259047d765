#include "vkube/controllers/local_client.h"

namespace vkube::controllers {

ApiResult LocalClient::call(std::string_view method, std::string_view target, const json& body,
                            std::string_view content_type) {
  http::Request req;
  req.method = std::string(method);
  req.target = std::string(target);
  auto q = target.find('?');
  req.path = std::string(target.substr(0, q));
  if (q != std::string_view::npos) req.query = std::string(target.substr(q + 1));
  req.peer = http::PeerCertificate{user_, {"system:masters"}};
  req.remote = "in-process";
  // Names the field manager of the controllers' writes, as kube's do.
  req.headers.push_back(
      {"User-Agent", user_agent_.empty()
                         ? "kube-controller-manager/v1.32.0 (linux/amd64) vkube/" + user_
                         : user_agent_});
  if (!body.is_null()) {
    req.body = body.dump();
    req.headers.push_back({"Content-Type", std::string(content_type)});
  }
  http::Response resp = api_.handle(req);
  ApiResult r;
  r.code = resp.status;
  r.body = json::parse(resp.body, nullptr, false);
  if (r.body.is_discarded()) r.body = nullptr;
  return r;
}

}  // namespace vkube::controllers
