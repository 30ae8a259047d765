// Config: kubeconfigs as vkube writes them and as users write them, and the
// in-cluster service account, each used against a real HTTPS API server.
#include <catch2/catch.hpp>

#include <stdlib.h>

#include <filesystem>
#include <fstream>

#include "hostclient/host_server.h"
#include "vkube/common/base64.h"

namespace vkube::hostclient {
namespace {

using namespace testing;

void write(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  REQUIRE(out.good());
}

TEST_CASE("from_kubeconfig reads the kubeconfig vkube writes (client certificate)",
          "[hostclient]") {
  HostServer host;
  auto c = from_kubeconfig(host.kubeconfig);
  REQUIRE(c.is_ok());
  CHECK(c->server == host.url());
  CHECK(c->ca_pem == host.bundle.ca.cert_pem);
  CHECK(c->cert_pem == host.bundle.admin.cert_pem);
  CHECK(c->key_pem == host.bundle.admin.key_pem);
  CHECK(c->token.empty());

  auto client = Client::create(*c);
  REQUIRE(client.is_ok());
  Response r = (*client)->call("GET", "/api/v1/namespaces");
  INFO(r.message());
  CHECK(r.code == 200);
  CHECK((*client)->reachable());
}

TEST_CASE("from_kubeconfig: token users, files relative to the kubeconfig, contexts, errors",
          "[hostclient]") {
  HostServer host;
  vkube::testing::TempDir dir;
  std::filesystem::create_directories(dir.sub("certs"));
  write(dir.sub("certs/ca.crt"), host.bundle.ca.cert_pem);
  write(dir.sub("token"), std::string(kNobodyToken) + "\n");
  const std::string path = dir.sub("config");
  write(path, R"(apiVersion: v1
kind: Config
clusters:
- name: host
  cluster:
    server: )" + host.url() +
                  R"(
    certificate-authority: certs/ca.crt
    tls-server-name: localhost
users:
- name: admin
  user:
    token: )" + kAdminToken +
                  R"(
- name: nobody
  user:
    tokenFile: token
- name: plugin
  user:
    exec: {command: get-token}
contexts:
- name: admin
  context: {cluster: host, user: admin, namespace: work}
- name: nobody
  context: {cluster: host, user: nobody}
- name: plugin
  context: {cluster: host, user: plugin}
current-context: admin
)");

  auto admin = from_kubeconfig(path);
  REQUIRE(admin.is_ok());
  CHECK(admin->ca_pem == host.bundle.ca.cert_pem);
  CHECK(admin->token == kAdminToken);
  CHECK(admin->tls_server_name == "localhost");
  CHECK(admin->ns == "work");
  CHECK(admin->cert_pem.empty());
  auto client = Client::create(*admin);
  REQUIRE(client.is_ok());
  CHECK((*client)->call("GET", "/api/v1/namespaces/default/configmaps").code == 200);

  auto nobody = from_kubeconfig(path, "nobody");
  REQUIRE(nobody.is_ok());
  CHECK(nobody->token_file == dir.sub("token"));
  auto weak = Client::create(*nobody);
  REQUIRE(weak.is_ok());
  // Authenticated (not 401) but allowed nothing.
  CHECK((*weak)->call("GET", "/api/v1/namespaces/default/configmaps").code == 403);

  auto plugin = from_kubeconfig(path, "plugin");
  CHECK(plugin.status().code() == Code::kInvalid);
  CHECK(plugin.status().message().find("exec") != std::string::npos);
  CHECK(from_kubeconfig(path, "missing").status().code() == Code::kInvalid);
  CHECK(from_kubeconfig(dir.sub("absent")).status().code() == Code::kUnavailable);
  write(dir.sub("bad"), "clusters: [unclosed");
  CHECK(from_kubeconfig(dir.sub("bad")).status().code() == Code::kInvalid);
  std::filesystem::remove(dir.sub("certs/ca.crt"));
  CHECK(from_kubeconfig(path).status().code() == Code::kUnavailable);
}

TEST_CASE("in_cluster reads the service account and follows a rotated token", "[hostclient]") {
  HostServer host;
  vkube::testing::TempDir account;
  write(account.sub("ca.crt"), host.bundle.ca.cert_pem);
  write(account.sub("token"), kNobodyToken);
  write(account.sub("namespace"), "vkube-system\n");

  ::unsetenv("KUBERNETES_SERVICE_HOST");
  CHECK(in_cluster(account.path()).status().code() == Code::kInvalid);
  ::setenv("KUBERNETES_SERVICE_HOST", "127.0.0.1", 1);
  ::setenv("KUBERNETES_SERVICE_PORT", std::to_string(host.server->port()).c_str(), 1);
  auto c = in_cluster(account.path());
  CHECK(in_cluster(account.sub("absent")).status().code() == Code::kUnavailable);
  ::unsetenv("KUBERNETES_SERVICE_HOST");
  ::unsetenv("KUBERNETES_SERVICE_PORT");
  REQUIRE(c.is_ok());
  CHECK(c->server == host.url());
  CHECK(c->ns == "vkube-system");
  CHECK(c->token_file == account.sub("token"));

  auto client = Client::create(*c);
  REQUIRE(client.is_ok());
  CHECK((*client)->call("GET", "/api/v1/namespaces/default/configmaps").code == 403);
  // The kubelet rotates the projected token; the next request carries it.
  write(account.sub("token"), std::string(kAdminToken) + "\n");
  CHECK((*client)->call("GET", "/api/v1/namespaces/default/configmaps").code == 200);
}

}  // namespace
}  // namespace vkube::hostclient
