// /metrics: the server's own metrics, then the text of each metrics source
// another component (the host's scheduler) added.
#include <catch2/catch.hpp>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "support/api_server.h"

namespace vkube::apiserver {
namespace {

http::Response scrape(ApiServer& api) {
  http::Request req = testing::request("GET", "/metrics");
  req.peer = http::PeerCertificate{"admin", {"system:masters"}};
  return api.handle(req);
}

TEST_CASE("/metrics appends each metrics source after the server's own", "[apiserver][metrics]") {
  testing::ApiServerOverStore s;
  int scrapes = 0;
  s.api->add_metrics_source([&scrapes] {
    ++scrapes;
    return std::string(
        "# HELP vkube_gpu_devices GPUs.\n# TYPE vkube_gpu_devices gauge\nvkube_gpu_devices 8\n");
  });
  // Text without a final newline still ends its last line.
  s.api->add_metrics_source([] { return std::string("vkube_gpu_allocated 2"); });
  s.api->add_metrics_source([] { return std::string("vkube_last 1\n"); });

  http::Response r = scrape(*s.api);
  REQUIRE(r.status == 200);
  std::string content_type;
  for (const http::Header& h : r.headers)
    if (h.name == "Content-Type") content_type = h.value;
  CHECK(content_type == "text/plain; version=0.0.4; charset=utf-8");
  const std::string& text = r.body;
  const size_t own = text.find("apiserver_current_inflight_requests ");
  const size_t first = text.find("vkube_gpu_devices 8\n");
  const size_t second = text.find("vkube_gpu_allocated 2\nvkube_last 1\n");
  REQUIRE(own != std::string::npos);
  REQUIRE(first != std::string::npos);
  REQUIRE(second != std::string::npos);
  CHECK(own < first);
  CHECK(first < second);
  CHECK(text.ends_with("vkube_last 1\n"));
  // Rendered on every scrape, not once.
  REQUIRE(scrape(*s.api).status == 200);
  CHECK(scrapes == 2);
}

TEST_CASE("metrics sources may be added while /metrics is scraped", "[apiserver][metrics]") {
  testing::ApiServerOverStore s;
  std::atomic<bool> done{false};
  std::thread scraper([&] {
    while (!done) CHECK(scrape(*s.api).status == 200);
  });
  std::vector<std::thread> adders;
  for (int t = 0; t < 4; ++t) {
    adders.emplace_back([&s, t] {
      for (int i = 0; i < 50; ++i) {
        const std::string line = "vkube_source{thread=\"" + std::to_string(t) + "\",i=\"" +
                                 std::to_string(i) + "\"} 1\n";
        s.api->add_metrics_source([line] { return line; });
      }
    });
  }
  for (auto& a : adders) a.join();
  done = true;
  scraper.join();
  const std::string text = scrape(*s.api).body;
  size_t count = 0;
  for (size_t at = 0; (at = text.find("vkube_source{", at)) != std::string::npos; ++at) ++count;
  CHECK(count == 200);
}

}  // namespace
}  // namespace vkube::apiserver
