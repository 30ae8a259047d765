// The controllers' client: requests to the tenant's own API server, in
// process (no HTTP hop), through the whole handler chain, as a privileged
// system user.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "vkube/apiserver/apiserver.h"

namespace vkube::controllers {

using json = nlohmann::json;

struct ApiResult {
  int code = 0;
  json body;  // the decoded response (an object, or a Status)
  bool ok() const { return code >= 200 && code < 300; }
};

class LocalClient {
 public:
  // `user_agent` names the field manager of the writes; empty: kube-
  // controller-manager's, as the controllers' writes are recorded.
  LocalClient(apiserver::ApiServer& api, std::string user, std::string user_agent = "")
      : api_(api), user_(std::move(user)), user_agent_(std::move(user_agent)) {}

  // Calls METHOD path (with query) and decodes the JSON answer.
  ApiResult call(std::string_view method, std::string_view target, const json& body = nullptr,
                 std::string_view content_type = "application/json");

 private:
  apiserver::ApiServer& api_;
  std::string user_;
  std::string user_agent_;
};

}  // namespace vkube::controllers
