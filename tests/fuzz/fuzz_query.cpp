// Request targets: the percent-decoding of the path, the query string
// (parse_query and query_param, which every list, watch and write option is
// read with) and RequestInfo, which turns method and path into verb,
// resource, namespace and name. Input: the request target as sent.
#include <string>

#include "fuzz_util.h"
#include "request_info.h"
#include "vkube/http/server.h"
#include "wire.h"

namespace http = vkube::http;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view target = vkube::fuzz::as_text(data, size);
  size_t q = target.find('?');
  http::Request req;
  req.method = size > 0 && (data[0] & 1) ? "POST" : "GET";
  req.target.assign(target);
  http::detail::append_percent_decoded(req.path, target.substr(0, q), false);
  if (req.path.empty()) req.path = "/";
  if (q != std::string_view::npos) req.query.assign(target.substr(q + 1));

  auto params = http::parse_query(req.query);
  // query_param is the first parameter of that name, decoded as parse_query does.
  for (const char* name : {"labelSelector", "watch", "limit", "continue", "fieldManager"}) {
    auto value = http::query_param(req.query, name);
    std::optional<std::string> first;
    for (const auto& [k, v] : params)
      if (k == name) {
        first = v;
        break;
      }
    FUZZ_CHECK(value == first);
  }
  for (const auto& [k, v] : params) {
    auto value = http::query_param(req.query, k);
    FUZZ_CHECK(value.has_value());
  }

  vkube::apiserver::RequestInfo info = vkube::apiserver::parse_request_info(req);
  if (info.is_resource_request) {
    FUZZ_CHECK(!info.verb.empty());
    FUZZ_CHECK(info.api_prefix == "api" || info.api_prefix == "apis");
  }
  return 0;
}
