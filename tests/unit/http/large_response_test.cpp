// Responses far larger than one TLS record or socket buffer arrive whole.
#include <catch2/catch.hpp>

#include "support/run.h"
#include "support/temp_dir.h"
#include "vkube/http/server.h"
#include "vkube/pki/pki.h"

namespace vkube::http {
namespace {

TEST_CASE("large responses arrive whole over plain HTTP and TLS", "[http]") {
  testing::TempDir dir;
  pki::PkiOptions po;
  po.dir = dir.path();
  auto bundle = pki::ensure_pki(po);
  REQUIRE(bundle.is_ok());
  ServerOptions o;
  o.tls = TlsConfig{bundle->serving.cert_pem, bundle->serving.key_pem, bundle->ca.cert_pem};
  o.cleartext_allowed = [](std::string_view, std::string_view) { return true; };
  const std::string body(300 * 1024, 'x');
  auto server = Server::start(o, [&](Request&) {
    Response r;
    r.set_header("Content-Type", "text/plain");
    r.body = body;
    return r;
  });
  REQUIRE(server.is_ok());
  const std::string port = std::to_string((*server)->port());
  auto plain = testing::run("curl -s --max-time 5 -o /dev/null -w '%{size_download}' http://127.0.0.1:" + port + "/x");
  CHECK(plain.output == std::to_string(body.size()));
  auto tls = testing::run("curl -sk --max-time 5 -o /dev/null -w '%{size_download}' https://127.0.0.1:" + port + "/x");
  CHECK(tls.output == std::to_string(body.size()));
}

}  // namespace
}  // namespace vkube::http
