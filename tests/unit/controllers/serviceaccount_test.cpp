// Service accounts: the "default" ServiceAccount and the kube-root-ca.crt
// ConfigMap in every namespace (and back when deleted or changed), and the
// tokens the TokenRequest subresource issues: audience, expiry and binding
// to the account, a pod or a secret are checked when they authenticate.
#include <catch2/catch.hpp>

#include <chrono>

#include "support/control_plane.h"
#include "support/sa_key.h"
#include "vkube/common/base64.h"

namespace vkube::controllers {
namespace {

using json = nlohmann::json;
using testing::ApiServerOverStore;
using testing::ControlPlane;
using namespace std::chrono_literals;

const std::string kCA = "-----BEGIN CERTIFICATE-----\nTEST\n-----END CERTIFICATE-----\n";

bool settle(ControlPlane& cp) {
  return cp.manager->wait_idle(10s);
}

TEST_CASE("every namespace gets a default service account, also after it is deleted",
          "[controllers][serviceaccount]") {
  ControlPlane cp({"serviceaccount"});
  REQUIRE(settle(cp));
  CHECK(cp.call("GET", "/api/v1/namespaces/w/serviceaccounts/default").code == 200);
  cp.create("/api/v1/namespaces", {{"metadata", {{"name", "team"}}}});
  REQUIRE(settle(cp));
  json sa = cp.get("/api/v1/namespaces/team/serviceaccounts/default");
  REQUIRE(cp.call("DELETE", "/api/v1/namespaces/team/serviceaccounts/default").code == 200);
  REQUIRE(settle(cp));
  json again = cp.get("/api/v1/namespaces/team/serviceaccounts/default");
  CHECK(again["metadata"]["uid"] != sa["metadata"]["uid"]);
  // Other accounts are not the controller's business.
  cp.create("/api/v1/namespaces/team/serviceaccounts", {{"metadata", {{"name", "robot"}}}});
  REQUIRE(cp.call("DELETE", "/api/v1/namespaces/team/serviceaccounts/robot").code == 200);
  REQUIRE(settle(cp));
  CHECK(cp.call("GET", "/api/v1/namespaces/team/serviceaccounts/robot").code == 404);
}

TEST_CASE("every namespace gets kube-root-ca.crt, restored when deleted or changed",
          "[controllers][serviceaccount]") {
  ControlPlane cp({"root-ca-cert-publisher"});
  cp.create("/api/v1/namespaces", {{"metadata", {{"name", "team"}}}});
  REQUIRE(settle(cp));
  const std::string path = "/api/v1/namespaces/team/configmaps/kube-root-ca.crt";
  json cm = cp.get(path);
  CHECK(cm["data"] == json{{"ca.crt", kCA}});
  CHECK(cm["metadata"]["annotations"]["kubernetes.io/description"] ==
        "Contains a CA bundle that can be used to verify the kube-apiserver when using internal "
        "endpoints such as the internal service IP or kubernetes.default.svc. No other usage is "
        "guaranteed across distributions of Kubernetes clusters.");
  CHECK(cp.get("/api/v1/namespaces/default/configmaps/kube-root-ca.crt")["data"]["ca.crt"] == kCA);

  REQUIRE(cp.call("PATCH", path, {{"data", {{"ca.crt", "tampered"}, {"extra", "x"}}}},
                  "application/merge-patch+json")
              .code == 200);
  REQUIRE(settle(cp));
  CHECK(cp.get(path)["data"] == json{{"ca.crt", kCA}});
  REQUIRE(cp.call("DELETE", path).code == 200);
  REQUIRE(settle(cp));
  CHECK(cp.get(path)["data"] == json{{"ca.crt", kCA}});
}

// An API server that issues service-account tokens, and a bearer-token client.
struct TokenServer {
  ApiServerOverStore server{[] {
    apiserver::Options o;
    o.service_account_key = testing::service_account_key();
    return o;
  }()};

  TokenServer() { REQUIRE(server.api->ensure_bootstrap_policy().is_ok()); }

  ControlPlane::Answer call(const std::string& method, const std::string& target,
                            const json& body = nullptr, const std::string& token = "") {
    http::Request req = testing::request(method, target);
    if (token.empty())
      req.peer = http::PeerCertificate{"admin", {"system:masters"}};
    else
      req.headers.push_back({"Authorization", "Bearer " + token});
    if (!body.is_null()) {
      req.body = body.dump();
      req.headers.push_back({"Content-Type", "application/json"});
    }
    http::Response resp = server.api->handle(req);
    ControlPlane::Answer a{resp.status, json::parse(resp.body, nullptr, false)};
    if (a.body.is_discarded()) a.body = nullptr;
    return a;
  }
  json create(const std::string& collection, const json& obj) {
    auto a = call("POST", collection, obj);
    INFO(a.body.dump());
    REQUIRE(a.code == 201);
    return a.body;
  }
  // POST serviceaccounts/NAME/token with `spec`; the answer.
  ControlPlane::Answer token(const std::string& account, const json& spec = json::object()) {
    return call(
        "POST", "/api/v1/namespaces/w/serviceaccounts/" + account + "/token",
        {{"apiVersion", "authentication.k8s.io/v1"}, {"kind", "TokenRequest"}, {"spec", spec}});
  }
  std::string token_for(const std::string& account, const json& spec = json::object()) {
    auto a = token(account, spec);
    INFO(a.body.dump());
    REQUIRE(a.code == 201);
    return a.body["status"]["token"];
  }
  // The user a token authenticates as (kubectl auth whoami), or the HTTP code.
  std::string whoami(const std::string& token) {
    auto a =
        call("POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews",
             {{"apiVersion", "authentication.k8s.io/v1"}, {"kind", "SelfSubjectReview"}}, token);
    if (a.code != 201) return std::to_string(a.code);
    return a.body["status"]["userInfo"]["username"];
  }
};

json claims_of(const std::string& token) {
  size_t a = token.find('.'), b = token.find('.', a + 1);
  auto payload = base64_decode(token.substr(a + 1, b - a - 1));
  REQUIRE(payload.has_value());
  return json::parse(*payload);
}

TEST_CASE("service-account tokens carry audience and expiry and die with their account",
          "[controllers][serviceaccount][apiserver]") {
  TokenServer ts;
  ts.create("/api/v1/namespaces", {{"metadata", {{"name", "w"}}}});
  ts.create("/api/v1/namespaces/w/serviceaccounts", {{"metadata", {{"name", "robot"}}}});

  auto answer = ts.token("robot");
  REQUIRE(answer.code == 201);
  CHECK(answer.body["spec"]["audiences"] ==
        json::array({"https://kubernetes.default.svc.cluster.local"}));
  CHECK(answer.body["spec"]["expirationSeconds"] == 3600);
  CHECK(answer.body["status"]["expirationTimestamp"].is_string());
  const std::string token = answer.body["status"]["token"];
  json claims = claims_of(token);
  CHECK(claims["exp"].get<int64_t>() - claims["iat"].get<int64_t>() == 3600);
  CHECK(ts.whoami(token) == "system:serviceaccount:w:robot");

  // Another audience's token is no credential for this server.
  std::string foreign = ts.token_for("robot", {{"audiences", {"vault"}}});
  CHECK(claims_of(foreign)["aud"] == json::array({"vault"}));
  CHECK(ts.whoami(foreign) == "401");
  CHECK(ts.whoami(ts.token_for(
            "robot", {{"audiences", {"vault", "https://kubernetes.default.svc.cluster.local"}}})) ==
        "system:serviceaccount:w:robot");

  // Durations: at least 10 minutes, at most 2^32 seconds.
  auto short_one = ts.token("robot", {{"expirationSeconds", 60}});
  CHECK(short_one.code == 422);
  CHECK(short_one.body["message"].get<std::string>().find(
            "may not specify a duration less than 10 minutes") != std::string::npos);
  CHECK(ts.token("robot", {{"expirationSeconds", (int64_t{1} << 32) + 1}}).code == 422);
  auto day = ts.token("robot", {{"expirationSeconds", 86400}});
  REQUIRE(day.code == 201);
  CHECK(day.body["spec"]["expirationSeconds"] == 86400);

  // Deleting the account revokes its tokens; a new account of that name has
  // another uid, so the old tokens stay revoked.
  REQUIRE(ts.call("DELETE", "/api/v1/namespaces/w/serviceaccounts/robot").code == 200);
  CHECK(ts.whoami(token) == "401");
  ts.create("/api/v1/namespaces/w/serviceaccounts", {{"metadata", {{"name", "robot"}}}});
  CHECK(ts.whoami(token) == "401");
  CHECK(ts.whoami(ts.token_for("robot")) == "system:serviceaccount:w:robot");
}

TEST_CASE("tokens bound to a pod or secret stop working when it is deleted",
          "[controllers][serviceaccount][apiserver]") {
  TokenServer ts;
  ts.create("/api/v1/namespaces", {{"metadata", {{"name", "w"}}}});
  ts.create("/api/v1/namespaces/w/serviceaccounts", {{"metadata", {{"name", "robot"}}}});
  json pod = ts.create("/api/v1/namespaces/w/pods",
                       {{"metadata", {{"name", "p"}}},
                        {"spec", {{"containers", {{{"name", "c"}, {"image", "busybox"}}}}}}});
  ts.create("/api/v1/namespaces/w/secrets", {{"metadata", {{"name", "s"}}}});

  json pod_ref = {{"apiVersion", "v1"}, {"kind", "Pod"}, {"name", "p"}};
  std::string pod_token = ts.token_for("robot", {{"boundObjectRef", pod_ref}});
  CHECK(claims_of(pod_token)["kubernetes.io"]["pod"] ==
        json{{"name", "p"}, {"uid", pod["metadata"]["uid"]}});
  std::string secret_token = ts.token_for(
      "robot", {{"boundObjectRef", {{"apiVersion", "v1"}, {"kind", "Secret"}, {"name", "s"}}}});
  CHECK(ts.whoami(pod_token) == "system:serviceaccount:w:robot");
  CHECK(ts.whoami(secret_token) == "system:serviceaccount:w:robot");

  // Binding needs the object, with the uid given, of a kind that can be bound.
  json wrong_uid = pod_ref;
  wrong_uid["uid"] = "not-the-uid";
  auto conflict = ts.token("robot", {{"boundObjectRef", wrong_uid}});
  CHECK(conflict.code == 409);
  CHECK(ts.token("robot",
                 {{"boundObjectRef", {{"apiVersion", "v1"}, {"kind", "Pod"}, {"name", "gone"}}}})
            .code == 404);
  auto bad = ts.token(
      "robot",
      {{"boundObjectRef", {{"apiVersion", "apps/v1"}, {"kind", "Deployment"}, {"name", "d"}}}});
  CHECK(bad.code == 400);
  CHECK(
      bad.body["message"] ==
      "cannot bind token for serviceaccount \"robot\" to object of type apps/v1, Kind=Deployment");

  REQUIRE(ts.call("DELETE", "/api/v1/namespaces/w/pods/p").code == 200);
  CHECK(ts.whoami(pod_token) == "401");
  CHECK(ts.whoami(secret_token) == "system:serviceaccount:w:robot");
  REQUIRE(ts.call("DELETE", "/api/v1/namespaces/w/secrets/s").code == 200);
  CHECK(ts.whoami(secret_token) == "401");
}

}  // namespace
}  // namespace vkube::controllers
