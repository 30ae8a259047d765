// certificates.k8s.io through kubectl: a tenant admin issues a user
// certificate (openssl req, kubectl create -f, kubectl certificate approve)
// and the user then authenticates with it as CN/O say (kubectl auth whoami);
// a denied request is never issued. And the default/kubernetes Service every
// cluster has, with --service-cluster-ip-range deciding where Services live.
#include <algorithm>

#include "fixture.h"

namespace vkube::e2e {
namespace {

// A key and a request for `user` in `group`, made as a user makes them;
// returns the request's CertificateSigningRequest manifest.
std::string request_manifest(Cluster& c, const std::string& user, const std::string& group) {
  const std::string key = c.dir() + "/" + user + ".key", req = c.dir() + "/" + user + ".csr";
  REQUIRE_THAT(c.run({"/usr/bin/openssl", "genrsa", "-out", key, "2048"}), Succeeded());
  REQUIRE_THAT(c.run({"/usr/bin/openssl", "req", "-new", "-key", key, "-subj",
                      "/CN=" + user + "/O=" + group, "-out", req}),
               Succeeded());
  Result b64 = c.run({"/usr/bin/base64", "-w0", req});
  REQUIRE_THAT(b64, Succeeded());
  return "apiVersion: certificates.k8s.io/v1\nkind: CertificateSigningRequest\nmetadata:\n"
         "  name: " +
         user + "\nspec:\n  request: " + b64.out +
         "\n  signerName: kubernetes.io/kube-apiserver-client\n  expirationSeconds: 86400\n"
         "  usages:\n  - client auth\n";
}

// A kubeconfig for `user` with the issued certificate and the user's key.
std::string user_kubeconfig(Cluster& c, const std::string& user, const std::string& cert_b64) {
  Result key = c.run({"/usr/bin/base64", "-w0", c.dir() + "/" + user + ".key"});
  REQUIRE_THAT(key, Succeeded());
  Result ca = c.run({"/usr/bin/base64", "-w0", c.dir() + "/data/pki/ca.crt"});
  REQUIRE_THAT(ca, Succeeded());
  return c.file(
      user + ".kubeconfig",
      "apiVersion: v1\nkind: Config\nclusters:\n- name: t\n  cluster:\n    server: " + c.url() +
          "\n    certificate-authority-data: " + ca.out + "\nusers:\n- name: " + user +
          "\n  user:\n    client-certificate-data: " + cert_b64 + "\n    client-key-data: " +
          key.out + "\ncontexts:\n- name: t\n  context:\n    cluster: t\n    user: " + user +
          "\ncurrent-context: t\n");
}

// The CONDITION column of `kubectl get csr NAME` ("" when there is no row).
std::string condition_of(Cluster& c, const std::string& name) {
  const auto rows = lines(c.kubectl({"get", "csr", name}).out);
  if (rows.size() != 2) return "";
  const auto cells = columns(rows[1]);
  return cells.size() == 6 ? cells[5] : "";
}

}  // namespace

TEST_CASE("a tenant admin issues a user certificate through a CSR, and the user authenticates",
          "[e2e][csr]") {
  Cluster c;
  const std::string manifest = c.file("jane-csr.yaml", request_manifest(c, "jane", "devs"));
  REQUIRE_THAT(c.kubectl({"create", "-f", manifest}), Succeeded());
  Result pending = c.kubectl({"get", "csr", "jane"});
  REQUIRE_THAT(pending, Succeeded());
  const auto rows = lines(pending.out);
  REQUIRE(rows.size() == 2);
  CHECK(columns(rows[0]) == std::vector<std::string>{"NAME", "AGE", "SIGNERNAME", "REQUESTOR",
                                                     "REQUESTEDDURATION", "CONDITION"});
  const auto cells = columns(rows[1]);
  REQUIRE(cells.size() == 6);
  CHECK(cells[2] == "kubernetes.io/kube-apiserver-client");
  CHECK(cells[3] == "kubernetes-admin");
  CHECK(cells[4] == "24h");
  CHECK(cells[5] == "Pending");

  Result approve = c.kubectl({"certificate", "approve", "jane"});
  REQUIRE_THAT(approve, Succeeded());
  CHECK(approve.out.find("certificatesigningrequest.certificates.k8s.io/jane approved") !=
        std::string::npos);
  std::string cert;
  REQUIRE(eventually([&] {
    cert = c.kubectl({"get", "csr", "jane", "-o", "jsonpath={.status.certificate}"}).out;
    return !cert.empty();
  }));
  CHECK(condition_of(c, "jane") == "Approved,Issued");

  const std::string kubeconfig = user_kubeconfig(c, "jane", cert);
  Result whoami = c.kubectl({"--kubeconfig", kubeconfig, "auth", "whoami", "-o", "json"});
  REQUIRE_THAT(whoami, Succeeded());
  const nlohmann::json info = nlohmann::json::parse(whoami.out)["status"]["userInfo"];
  CHECK(info["username"] == "jane");
  CHECK(std::find(info["groups"].begin(), info["groups"].end(), "devs") != info["groups"].end());
  // jane is authenticated, and has no rights yet.
  CHECK_THAT(c.kubectl({"--kubeconfig", kubeconfig, "get", "pods"}),
             FailedWith("User \"jane\" cannot list resource \"pods\""));
}

TEST_CASE("a denied CSR is never issued, and a request for system:masters is refused",
          "[e2e][csr]") {
  Cluster c;
  REQUIRE_THAT(c.kubectl({"create", "-f", c.file("bob.yaml", request_manifest(c, "bob", "ops"))}),
               Succeeded());
  Result deny = c.kubectl({"certificate", "deny", "bob"});
  REQUIRE_THAT(deny, Succeeded());
  CHECK(deny.out.find("certificatesigningrequest.certificates.k8s.io/bob denied") !=
        std::string::npos);
  CHECK(condition_of(c, "bob") == "Denied");
  // Approving it afterwards is refused (kubectl checks first).
  CHECK_THAT(c.kubectl({"certificate", "approve", "bob"}),
             FailedWith("certificate signing request \"bob\" is already Denied"));
  CHECK(c.kubectl({"get", "csr", "bob", "-o", "jsonpath={.status.certificate}"}).out.empty());

  CHECK_THAT(
      c.kubectl({"create", "-f", c.file("eve.yaml", request_manifest(c, "eve", "system:masters"))}),
      FailedWith("use of kubernetes.io/kube-apiserver-client signer with system:masters group is "
                 "not allowed"));
}

TEST_CASE("every tenant has the kubernetes Service in its service range", "[e2e][csr]") {
  {
    Cluster c;
    nlohmann::json svc = c.get_json({"svc", "kubernetes", "-n", "default"});
    CHECK(svc["spec"]["clusterIP"] == "10.96.0.1");
    CHECK(svc["spec"]["ports"][0]["port"] == 443);
    Result ep = c.kubectl({"get", "endpoints", "kubernetes", "-n", "default"});
    REQUIRE_THAT(ep, Succeeded());
    const std::string port = c.url().substr(c.url().rfind(':') + 1);
    CHECK(ep.out.find("127.0.0.1:" + port) != std::string::npos);
    // Deleted, it is back at once with the same address.
    REQUIRE_THAT(c.kubectl({"delete", "svc", "kubernetes", "-n", "default"}), Succeeded());
    CHECK(eventually([&] {
      Result r = c.kubectl(
          {"get", "svc", "kubernetes", "-n", "default", "-o", "jsonpath={.spec.clusterIP}"});
      return r.exit_code == 0 && r.out == "10.96.0.1";
    }));
  }
  Cluster c(Cluster::Serve{{"--service-cluster-ip-range", "10.100.0.0/16"}});
  CHECK(c.get_json({"svc", "kubernetes", "-n", "default"})["spec"]["clusterIP"] == "10.100.0.1");
  REQUIRE_THAT(c.kubectl({"create", "service", "clusterip", "web", "--tcp=80:8080"}), Succeeded());
  const std::string ip = c.get_json({"svc", "web"})["spec"]["clusterIP"];
  CHECK(ip.rfind("10.100.", 0) == 0);

  Result bad = c.run({VKUBE_BINARY, "serve", "--data-dir", c.dir() + "/bad", "--listen",
                      "127.0.0.1:0", "--service-cluster-ip-range", "10.0.0.0/8"});
  CHECK(bad.exit_code != 0);
  CHECK(bad.output().find("specified --service-cluster-ip-range 10.0.0.0/8 is too large; for "
                          "32-bit addresses, the mask must be >= 12") != std::string::npos);
}

}  // namespace vkube::e2e

namespace vkube::e2e {

TEST_CASE("vkube host has the kubernetes Service too, in the range it was given", "[e2e][csr]") {
  Cluster host(Cluster::Host{{"--nodes", "1", "--service-cluster-ip-range", "10.112.0.0/20"}, {}});
  nlohmann::json svc = host.get_json({"svc", "kubernetes", "-n", "default"});
  CHECK(svc["spec"]["clusterIP"] == "10.112.0.1");
  nlohmann::json slice = host.get_json({"endpointslices", "kubernetes", "-n", "default"});
  const std::string port = host.url().substr(host.url().rfind(':') + 1);
  CHECK(slice["ports"][0]["port"] == std::stoi(port));
  CHECK(slice["endpoints"][0]["addresses"][0] == "127.0.0.1");
}

}  // namespace vkube::e2e
