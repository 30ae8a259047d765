// certificates.k8s.io/v1 CertificateSigningRequests: who asked is recorded by
// the server, the spec never changes, approval goes through /approval with
// the signer's `approve` permission, bad requests get kube's 422 wording,
// and the kube-apiserver-client signer issues what was approved.
#include <catch2/catch.hpp>

#include <chrono>
#include <thread>

#include <nlohmann/json.hpp>

#include "pki/pki_files.h"
#include "support/admin_server.h"
#include "vkube/common/base64.h"
#include "vkube/controllers/manager.h"
#include "vkube/pki/pki.h"

namespace vkube::apiserver {
namespace {

using json = nlohmann::json;
using vkube::testing::TempDir;
constexpr const char* kCsrs = "/apis/certificates.k8s.io/v1/certificatesigningrequests";

std::string request_pem(const TempDir& dir, const std::string& subject) {
  auto r = pki::testing::openssl(
      "req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes "
      "-keyout " +
      dir.sub("k.pem") + " -subj '" + subject + "' -out " + dir.sub("r.csr"));
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  return pki::testing::slurp(dir.sub("r.csr"));
}

json csr(const std::string& name, const std::string& pem,
         const std::string& signer = "kubernetes.io/kube-apiserver-client") {
  return {{"apiVersion", "certificates.k8s.io/v1"},
          {"kind", "CertificateSigningRequest"},
          {"metadata", {{"name", name}}},
          {"spec",
           {{"request", base64_encode(pem)},
            {"signerName", signer},
            {"expirationSeconds", 86400},
            {"usages", {"client auth"}},
            {"username", "someone-else"},
            {"groups", {"system:masters"}}}},
          {"status", {{"conditions", {{{"type", "Approved"}, {"status", "True"}}}}}}};
}

json approved(json obj, const std::string& type = "Approved") {
  obj["status"]["conditions"] = {
      {{"type", type},
       {"status", "True"},
       {"reason", "KubectlApprove"},
       {"message", "This CSR was approved by kubectl certificate approve."}}};
  return obj;
}

struct Server : testing::AdminApiServer {
  // A request as `user` in `groups` (not an admin).
  http::Response as(const std::string& user, const std::vector<std::string>& groups,
                    const std::string& method, const std::string& target,
                    const json& body = nullptr) {
    http::Request req = testing::request(method, target);
    req.peer = http::PeerCertificate{user, groups};
    if (!body.is_null()) {
      req.body = body.dump();
      req.headers.push_back({"Content-Type", "application/json"});
    }
    return api->handle(req);
  }
};

}  // namespace

TEST_CASE("a CSR records its requestor and starts pending, whatever the body says",
          "[apiserver][csr]") {
  Server s;
  TempDir dir;
  auto r = s.as("jane", {"devs"}, "POST", kCsrs, csr("j", request_pem(dir, "/CN=jane/O=devs")));
  // RBAC: jane may not create CSRs until granted.
  CHECK(r.status == 403);
  r = s.call("POST", kCsrs, csr("j", request_pem(dir, "/CN=jane/O=devs")));
  INFO(r.body);
  REQUIRE(r.status == 201);
  json got = s.get(std::string(kCsrs) + "/j");
  CHECK(got["spec"]["username"] == "admin");
  CHECK(got["spec"]["groups"] == json{"system:masters", "system:authenticated"});
  CHECK(got["status"] == json::object());

  // kubectl get csr prints the signer, requestor, duration and condition.
  http::Request t = testing::request("GET", std::string(kCsrs) + "/j");
  t.peer = http::PeerCertificate{"admin", {"system:masters"}};
  t.headers.push_back({"Accept", "application/json;as=Table;v=v1;g=meta.k8s.io"});
  json table = json::parse(s.api->handle(t).body);
  std::vector<std::string> names;
  for (const json& c : table["columnDefinitions"]) names.push_back(c["name"].get<std::string>());
  CHECK(names == std::vector<std::string>{"Name", "Age", "SignerName", "Requestor",
                                          "RequestedDuration", "Condition"});
  const json& cells = table["rows"][0]["cells"];
  CHECK(cells[2] == "kubernetes.io/kube-apiserver-client");
  CHECK(cells[3] == "admin");
  CHECK(cells[4] == "24h");
  CHECK(cells[5] == "Pending");

  // The spec is immutable: a PUT of another signer keeps the stored one.
  json changed = got;
  changed["spec"]["signerName"] = "example.com/other";
  changed["metadata"]["labels"] = {{"a", "b"}};
  r = s.call("PUT", std::string(kCsrs) + "/j", changed);
  REQUIRE(r.status == 200);
  json after = json::parse(r.body);
  CHECK(after["spec"]["signerName"] == "kubernetes.io/kube-apiserver-client");
  CHECK(after["metadata"]["labels"]["a"] == "b");
}

TEST_CASE("a CSR is validated as kube validates it", "[apiserver][csr]") {
  Server s;
  TempDir dir;
  const std::string pem = request_pem(dir, "/CN=jane");
  auto message_of = [&](json obj) {
    auto r = s.call("POST", kCsrs, obj);
    CHECK(r.status == 422);
    return testing::message(r);
  };
  json bad = csr("a", "hello");
  CHECK(message_of(bad).find("spec.request: Invalid value: ") != std::string::npos);
  CHECK(message_of(bad).find("PEM block type must be CERTIFICATE REQUEST") != std::string::npos);
  bad = csr("a", pem, "");
  CHECK(message_of(bad).find("spec.signerName: Required value") != std::string::npos);
  bad = csr("a", pem, "no-slash");
  CHECK(message_of(bad).find("must be a fully qualified domain and path of the form "
                             "'example.com/signer-name'") != std::string::npos);
  bad = csr("a", pem);
  bad["spec"]["expirationSeconds"] = 599;
  CHECK_THAT(message_of(bad),
             Catch::EndsWith("\"a\" is invalid: spec.expirationSeconds: Invalid value: 599: may "
                             "not specify a duration less than 600 seconds (10 minutes)"));
  bad = csr("a", pem);
  bad["spec"]["usages"] = json::array();
  CHECK(message_of(bad).find("spec.usages: Required value") != std::string::npos);
  bad["spec"]["usages"] = {"client auth", "flying"};
  CHECK(message_of(bad).find("spec.usages[1]: Unsupported value: \"flying\"") != std::string::npos);
}

TEST_CASE("approving a CSR takes /approval and the signer's approve permission",
          "[apiserver][csr]") {
  Server s;
  TempDir dir;
  REQUIRE(s.call("POST", kCsrs, csr("j", request_pem(dir, "/CN=jane"))).status == 201);
  json cur = s.get(std::string(kCsrs) + "/j");

  // Conditions written through the object or /status do not approve (kube
  // keeps the stored approval conditions there and answers 200).
  auto r = s.call("PUT", std::string(kCsrs) + "/j/status", approved(cur));
  CHECK(r.status == 200);
  CHECK(s.get(std::string(kCsrs) + "/j")["status"] == json::object());
  REQUIRE(s.call("PUT", std::string(kCsrs) + "/j", approved(cur)).status == 200);
  CHECK(s.get(std::string(kCsrs) + "/j")["status"] == json::object());

  // bob may update /approval but has no approve on the signer.
  json role = {
      {"apiVersion", "rbac.authorization.k8s.io/v1"},
      {"kind", "ClusterRole"},
      {"metadata", {{"name", "csr-approver"}}},
      {"rules",
       {{{"apiGroups", {"certificates.k8s.io"}},
         {"resources", {"certificatesigningrequests", "certificatesigningrequests/approval"}},
         {"verbs", {"get", "update"}}}}}};
  REQUIRE(s.call("POST", "/apis/rbac.authorization.k8s.io/v1/clusterroles", role).status == 201);
  json binding = {{"apiVersion", "rbac.authorization.k8s.io/v1"},
                  {"kind", "ClusterRoleBinding"},
                  {"metadata", {{"name", "bob"}}},
                  {"roleRef",
                   {{"apiGroup", "rbac.authorization.k8s.io"},
                    {"kind", "ClusterRole"},
                    {"name", "csr-approver"}}},
                  {"subjects", {{{"kind", "User"}, {"name", "bob"}}}}};
  REQUIRE(
      s.call("POST", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", binding).status ==
      201);
  cur = s.get(std::string(kCsrs) + "/j");
  r = s.as("bob", {}, "PUT", std::string(kCsrs) + "/j/approval", approved(cur));
  CHECK(r.status == 403);
  CHECK(testing::message(r) ==
        "certificatesigningrequests.certificates.k8s.io \"j\" is forbidden: user not permitted "
        "to approve requests with signerName \"kubernetes.io/kube-apiserver-client\"");

  // With approve on "kubernetes.io/*" he may.
  role["rules"].push_back({{"apiGroups", {"certificates.k8s.io"}},
                           {"resources", {"signers"}},
                           {"resourceNames", {"kubernetes.io/*"}},
                           {"verbs", {"approve"}}});
  REQUIRE(
      s.call("PUT", "/apis/rbac.authorization.k8s.io/v1/clusterroles/csr-approver", role).status ==
      200);
  r = s.as("bob", {}, "PUT", std::string(kCsrs) + "/j/approval", approved(cur));
  INFO(r.body);
  REQUIRE(r.status == 200);
  json after = json::parse(r.body);
  REQUIRE(after["status"]["conditions"].size() == 1);
  CHECK(after["status"]["conditions"][0]["type"] == "Approved");
  CHECK(after["status"]["conditions"][0]["lastTransitionTime"].is_string());
  CHECK(after["status"].value("certificate", "").empty());

  // Approved and Denied exclude each other; an approval is never taken back.
  json both = after;
  both["status"]["conditions"].push_back({{"type", "Denied"}, {"status", "True"}});
  r = s.call("PUT", std::string(kCsrs) + "/j/approval", both);
  CHECK(r.status == 422);
  CHECK(testing::message(r).find("Approved and Denied conditions are mutually exclusive") !=
        std::string::npos);
  r = s.call("PUT", std::string(kCsrs) + "/j/approval", approved(after, "Denied"));
  CHECK(testing::message(r).find("updates may not remove a condition of type \"Approved\"") !=
        std::string::npos);
}

TEST_CASE("CSR fields of the wrong JSON type are refused, never a server error",
          "[apiserver][csr]") {
  Server s;
  TempDir dir;
  const std::string pem = request_pem(dir, "/CN=jane");
  for (auto [field, value] :
       std::vector<std::pair<std::string, json>>{{"signerName", 5},
                                                 {"usages", "client auth"},
                                                 {"request", 5},
                                                 {"expirationSeconds", "x"}}) {
    json bad = csr("bad", pem);
    bad["spec"][field] = value;
    auto r = s.call("POST", kCsrs, bad);
    INFO(field << " -> " << r.body);
    CHECK(r.status >= 400);
    CHECK(r.status < 500);
  }
  REQUIRE(s.call("POST", kCsrs, csr("j", pem)).status == 201);
  json cur = s.get(std::string(kCsrs) + "/j");
  for (const json& conditions : {json("x"), json{{{"type", "Approved"}, {"status", 5}}},
                                 json{{{"type", 7}}}, json{json::array()}}) {
    json next = cur;
    next["status"]["conditions"] = conditions;
    auto r = s.call("PUT", std::string(kCsrs) + "/j/approval", next);
    INFO(conditions.dump() << " -> " << r.body);
    CHECK(r.status >= 400);
    CHECK(r.status < 500);
  }
}

TEST_CASE("kube-apiserver-client requests may not ask for system:masters", "[apiserver][csr]") {
  Server s;
  TempDir dir;
  auto r = s.call("POST", kCsrs, csr("m", request_pem(dir, "/CN=eve/O=system:masters")));
  CHECK(r.status == 403);
  CHECK(testing::message(r) ==
        "certificatesigningrequests.certificates.k8s.io \"m\" is forbidden: use of "
        "kubernetes.io/kube-apiserver-client signer with system:masters group is not allowed");
  // Another signer decides for itself.
  CHECK(s.call("POST", kCsrs,
               csr("m", request_pem(dir, "/CN=eve/O=system:masters"), "example.com/signer"))
            .status == 201);
}

TEST_CASE("the kube-apiserver-client signer issues approved requests only", "[apiserver][csr]") {
  Server s;
  TempDir dir;
  pki::PkiOptions po;
  po.dir = dir.sub("pki");
  auto bundle = pki::ensure_pki(po);
  REQUIRE(bundle.is_ok());
  controllers::ManagerOptions o;
  o.controllers = {"csrsigning"};
  o.client_ca_cert_pem = bundle->ca.cert_pem;
  o.client_ca_key_pem = bundle->ca.key_pem;
  auto manager = controllers::ControllerManager::start(*s.api, *s.store, o);
  REQUIRE(manager.is_ok());

  REQUIRE(s.call("POST", kCsrs, csr("jane", request_pem(dir, "/CN=jane/O=devs"))).status == 201);
  REQUIRE(s.call("POST", kCsrs,
                 csr("kubelet", request_pem(dir, "/CN=system:node:n1/O=system:nodes"),
                     "kubernetes.io/kube-apiserver-client-kubelet"))
              .status == 201);
  (*manager)->wait_idle(std::chrono::seconds(5));
  CHECK(s.get(std::string(kCsrs) + "/jane")["status"] == json::object());  // pending: not signed

  for (const char* name : {"jane", "kubelet"})
    REQUIRE(s.call("PUT", std::string(kCsrs) + "/" + name + "/approval",
                   approved(s.get(std::string(kCsrs) + "/" + name)))
                .status == 200);
  REQUIRE((*manager)->wait_idle(std::chrono::seconds(5)));
  json jane = s.get(std::string(kCsrs) + "/jane");
  auto pem = base64_decode(jane["status"].value("certificate", ""));
  REQUIRE(pem);
  pki::testing::spit(dir.sub("jane.crt"), *pem);
  pki::testing::spit(dir.sub("ca.crt"), bundle->ca.cert_pem);
  CHECK(pki::testing::openssl("verify -CAfile " + dir.sub("ca.crt") + " -purpose sslclient " +
                              dir.sub("jane.crt"))
            .exit_code == 0);
  CHECK(pki::testing::openssl("x509 -noout -subject -in " + dir.sub("jane.crt")).output ==
        "subject=CN = jane, O = devs\n");
  // The kubelet signer has no kubelets here: approved, never issued.
  CHECK(s.get(std::string(kCsrs) + "/kubelet")["status"].value("certificate", "").empty());
  (*manager)->stop();
}

}  // namespace vkube::apiserver
