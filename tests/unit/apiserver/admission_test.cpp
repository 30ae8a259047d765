// Dynamic admission through the API server's whole chain over a real store: webhooks reached by
// URL at a TLS server of the test's own (its answers chosen per path), and
// ValidatingAdmissionPolicies; plus the rule matching and the CEL environment they use.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <thread>

#include <nlohmann/json.hpp>

#include "apiserver/admission_internal.h"
#include "cel_rules.h"
#include "support/api_server.h"
#include "vkube/common/base64.h"
#include "vkube/http/server.h"
#include "vkube/pki/pki.h"

namespace vkube::apiserver {
namespace {

using json = nlohmann::json;
using Answer = std::function<json(const json& request)>;

// A webhook server on 127.0.0.1 with a certificate of its own CA; `answer(path)` gives the
// response part of the AdmissionReview (uid filled in unless the answer sets one).
struct WebhookServer {
  testing::TempDir dir;
  pki::Bundle pki;
  std::unique_ptr<http::Server> server;
  std::mutex mu;
  std::map<std::string, Answer> answers;
  std::map<std::string, int> calls;

  WebhookServer() {
    pki::PkiOptions o;
    o.dir = dir.path();
    auto b = pki::ensure_pki(o);
    REQUIRE(b.is_ok());
    pki = *b;
    http::ServerOptions so;
    so.tls = http::TlsConfig{pki.serving.cert_pem, pki.serving.key_pem, ""};
    so.worker_threads = 4;
    auto s = http::Server::start(std::move(so), [this](http::Request& req) {
      json review = json::parse(req.body, nullptr, false);
      Answer answer;
      {
        std::lock_guard lock(mu);
        ++calls[req.path];
        answer = answers[req.path];
      }
      json response = answer ? answer(review["request"]) : json{{"allowed", true}};
      if (!response.contains("uid")) response["uid"] = review["request"]["uid"];
      http::Response resp;
      resp.headers.push_back({"Content-Type", "application/json"});
      resp.body = json{{"apiVersion", "admission.k8s.io/v1"},
                       {"kind", "AdmissionReview"},
                       {"response", response}}
                      .dump();
      return resp;
    });
    REQUIRE(s.is_ok());
    server = std::move(s).value();
  }
  ~WebhookServer() { server->shutdown(std::chrono::seconds(1)); }

  void on(const std::string& path, Answer a) {
    std::lock_guard lock(mu);
    answers[path] = std::move(a);
  }
  int called(const std::string& path) {
    std::lock_guard lock(mu);
    return calls[path];
  }
  std::string url(const std::string& path) const {
    return "https://127.0.0.1:" + std::to_string(server->port()) + path;
  }
  std::string ca() const { return base64_encode(pki.ca.cert_pem); }
};

struct Cluster : testing::ApiServerOverStore {
  Cluster() {
    REQUIRE(call("POST", "/api/v1/namespaces", {{"metadata", {{"name", "w"}}}}).status == 201);
  }

  http::Response call(const std::string& method, const std::string& target,
                      const json& body = nullptr,
                      const std::string& content_type = "application/json") {
    return call_as({"admin", {"system:masters"}}, method, target, body, content_type);
  }
  http::Response call_as(http::PeerCertificate user, const std::string& method,
                         const std::string& target, const json& body = nullptr,
                         const std::string& content_type = "application/json") {
    http::Request req = testing::request(method, target);
    req.peer = std::move(user);
    if (!body.is_null()) {
      req.body = body.dump();
      req.headers.push_back({"Content-Type", content_type});
    }
    return api->handle(req);
  }
  http::Response configmap(const std::string& name, const json& labels = json::object(),
                           const std::string& query = "") {
    return call("POST", "/api/v1/namespaces/w/configmaps" + query,
                {{"metadata", {{"name", name}, {"labels", labels}}}, {"data", {{"a", "b"}}}});
  }
};

json webhook(const std::string& name, const std::string& url, const std::string& ca,
             json extra = json::object()) {
  json w = {{"name", name},
            {"clientConfig", {{"url", url}, {"caBundle", ca}}},
            {"rules",
             {{{"operations", {"CREATE", "UPDATE"}},
               {"apiGroups", {""}},
               {"apiVersions", {"v1"}},
               {"resources", {"configmaps"}}}}},
            {"sideEffects", "None"},
            {"admissionReviewVersions", {"v1"}}};
  w.update(extra);
  return w;
}

json configuration(const std::string& name, json hooks) {
  return {{"metadata", {{"name", name}}}, {"webhooks", std::move(hooks)}};
}

std::string message(const http::Response& r) {
  return json::parse(r.body).value("message", "");
}

json patch_of(const json& ops) {
  return {{"allowed", true}, {"patchType", "JSONPatch"}, {"patch", base64_encode(ops.dump())}};
}

const char* kMutating = "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations";
const char* kValidating = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations";

}  // namespace

TEST_CASE("a mutating webhook's JSONPatch is stored, but not its changes to system fields",
          "[apiserver][admission]") {
  WebhookServer hooks;
  Cluster c;
  hooks.on("/m", [](const json& req) {
    CHECK(req["operation"] == "CREATE");
    CHECK(req["kind"] == json{{"group", ""}, {"version", "v1"}, {"kind", "ConfigMap"}});
    CHECK(req["userInfo"]["username"] == "admin");
    CHECK(req["object"]["data"]["a"] == "b");
    CHECK(req["oldObject"].is_null());
    return patch_of(json::array({{{"op", "add"}, {"path", "/data/added"}, {"value", "yes"}},
                                 {{"op", "replace"}, {"path", "/metadata/uid"}, {"value", "x"}}}));
  });
  REQUIRE(c.call("POST", kMutating,
                 configuration("m", {webhook("m.test", hooks.url("/m"), hooks.ca())}))
              .status == 201);
  auto r = c.configmap("a");
  INFO(r.body);
  REQUIRE(r.status == 201);
  json got = json::parse(c.call("GET", "/api/v1/namespaces/w/configmaps/a").body);
  CHECK(got["data"]["added"] == "yes");
  CHECK(got["metadata"]["uid"] != "x");
  CHECK(hooks.called("/m") == 1);

  // Deleting the configuration takes the webhook out of the next write.
  REQUIRE(c.call("DELETE", std::string(kMutating) + "/m").status == 200);
  REQUIRE(c.configmap("b").status == 201);
  CHECK(hooks.called("/m") == 1);
}

TEST_CASE("webhook answers kube refuses, and failurePolicy", "[apiserver][admission]") {
  WebhookServer hooks;
  Cluster c;
  hooks.on("/wrong-uid", [](const json&) { return json{{"uid", "nope"}, {"allowed", true}}; });
  hooks.on("/slow", [](const json&) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    return json{{"allowed", true}};
  });
  hooks.on("/bare-deny", [](const json&) { return json{{"allowed", false}}; });
  auto with = [&](const std::string& value, json extra) {
    json e = {{"objectSelector", {{"matchLabels", {{"case", value}}}}}};
    if (extra.is_object()) e.update(extra);
    return e;
  };
  REQUIRE(c.call("POST", kValidating,
                 configuration("v", {webhook("uid.test", hooks.url("/wrong-uid"), hooks.ca(),
                                             with("uid", {})),
                                     webhook("slow.test", hooks.url("/slow"), hooks.ca(),
                                             with("slow", {{"timeoutSeconds", 1}})),
                                     webhook("slow-ignored.test", hooks.url("/slow"), hooks.ca(),
                                             with("ignored", {{"timeoutSeconds", 1},
                                                              {"failurePolicy", "Ignore"}})),
                                     webhook("deny.test", hooks.url("/bare-deny"), hooks.ca(),
                                             with("deny", {})),
                                     webhook("untrusted.test", hooks.url("/any"),
                                             base64_encode(c.dir.path()), with("ca", {})),
                                     // A v1beta1 webhook: kube checks neither its answer's kind
                                     // nor its uid.
                                     webhook("beta.test", hooks.url("/wrong-uid"), hooks.ca(),
                                             with("beta", {{"admissionReviewVersions",
                                                            {"v1beta1"}}}))}))
              .status == 201);
  CHECK(c.configmap("b", {{"case", "beta"}}).status == 201);

  auto r = c.configmap("u", {{"case", "uid"}});
  CHECK(r.status == 500);
  CHECK(message(r) == "Internal error occurred: failed calling webhook \"uid.test\": received "
                      "invalid webhook response: expected response.uid=\"" +
                          message(r).substr(message(r).find("uid=\"") + 5, 36) +
                          "\", got \"nope\"");

  auto t0 = std::chrono::steady_clock::now();
  r = c.configmap("s", {{"case", "slow"}});
  CHECK(r.status == 500);
  CHECK_THAT(message(r), Catch::EndsWith("/slow?timeout=1s\": context deadline exceeded"));
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::milliseconds(1450));

  r = c.configmap("i", {{"case", "ignored"}});
  CHECK(r.status == 201);

  r = c.configmap("d", {{"case", "deny"}});
  CHECK(r.status == 400);
  CHECK(message(r) == "admission webhook \"deny.test\" denied the request without explanation");

  r = c.configmap("ca", {{"case", "ca"}});
  CHECK(r.status == 500);
  CHECK_THAT(message(r), Catch::StartsWith("Internal error occurred: failed calling webhook "
                                           "\"untrusted.test\": failed to call webhook"));
  // Nothing that failed was stored.
  CHECK(c.call("GET", "/api/v1/namespaces/w/configmaps/u").status == 404);
  CHECK(c.call("GET", "/api/v1/namespaces/w/configmaps/d").status == 404);
  CHECK(c.call("GET", "/api/v1/namespaces/w/configmaps/i").status == 200);
}

TEST_CASE("validating admission policies: params, variables, match conditions, actions",
          "[apiserver][admission]") {
  Cluster c;
  const std::string vap = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies";
  const std::string bindings =
      "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings";
  json rules = {{"resourceRules",
                 {{{"apiGroups", {""}},
                   {"apiVersions", {"v1"}},
                   {"operations", {"CREATE", "UPDATE"}},
                   {"resources", {"configmaps"}}}}}};
  REQUIRE(c.call("POST", vap,
                 {{"metadata", {{"name", "size"}}},
                  {"spec",
                   {{"paramKind", {{"apiVersion", "v1"}, {"kind", "ConfigMap"}}},
                    {"matchConstraints", rules},
                    {"matchConditions",
                     {{{"name", "not-params"}, {"expression", "object.metadata.name != 'limits'"}}}},
                    {"variables", {{{"name", "max"}, {"expression", "int(params.data.max)"}}}},
                    {"validations",
                     {{{"expression", "size(object.data) <= variables.max"},
                       {"messageExpression",
                        "'at most ' + string(variables.max) + ' keys, not ' + "
                        "string(size(object.data))"},
                       {"reason", "Forbidden"}}}}}}})
              .status == 201);
  REQUIRE(c.call("POST", bindings,
                 {{"metadata", {{"name", "size-w"}}},
                  {"spec",
                   {{"policyName", "size"},
                    {"validationActions", {"Deny"}},
                    {"paramRef",
                     {{"name", "limits"}, {"namespace", "w"},
                      {"parameterNotFoundAction", "Allow"}}}}}})
              .status == 201);
  // No params yet, and parameterNotFoundAction Allow.
  CHECK(c.configmap("one").status == 201);
  REQUIRE(c.call("POST", "/api/v1/namespaces/w/configmaps",
                 {{"metadata", {{"name", "limits"}}}, {"data", {{"max", "1"}}}})
              .status == 201);
  auto r = c.call("POST", "/api/v1/namespaces/w/configmaps",
                  {{"metadata", {{"name", "two"}}}, {"data", {{"a", "1"}, {"b", "2"}}}});
  CHECK(r.status == 403);
  json s = json::parse(r.body);
  CHECK(s["reason"] == "Forbidden");
  CHECK(s["message"] == "configmaps \"two\" is forbidden: ValidatingAdmissionPolicy 'size' with "
                        "binding 'size-w' denied request: at most 1 keys, not 2");
  CHECK(s["details"]["causes"][0]["message"] ==
        "ValidatingAdmissionPolicy 'size' with binding 'size-w' denied request: at most 1 keys, "
        "not 2");
  // Updates are checked too; the match condition exempts the params object itself.
  CHECK(c.call("PUT", "/api/v1/namespaces/w/configmaps/limits",
               {{"metadata", {{"name", "limits"}}}, {"data", {{"max", "2"}, {"x", "y"}}}})
            .status == 200);
  CHECK(c.call("POST", "/api/v1/namespaces/w/configmaps",
               {{"metadata", {{"name", "two"}}}, {"data", {{"a", "1"}, {"b", "2"}}}})
            .status == 201);

  // A policy whose expression fails: Fail denies, Ignore lets it pass; Warn only warns.
  REQUIRE(c.call("POST", vap,
                 {{"metadata", {{"name", "broken"}}},
                  {"spec",
                   {{"failurePolicy", "Ignore"},
                    {"matchConstraints", rules},
                    {"validations", {{{"expression", "object.data.missing == 'x'"}}}}}}})
              .status == 201);
  REQUIRE(c.call("POST", bindings,
                 {{"metadata", {{"name", "broken"}}},
                  {"spec", {{"policyName", "broken"}, {"validationActions", {"Deny"}}}}})
              .status == 201);
  CHECK(c.configmap("three").status == 201);
  REQUIRE(c.call("POST", vap,
                 {{"metadata", {{"name", "named"}}},
                  {"spec",
                   {{"matchConstraints", rules},
                    {"validations", {{{"expression", "!object.metadata.name.startsWith('tmp')"},
                                      {"message", "no temporary names"}}}}}}})
              .status == 201);
  REQUIRE(c.call("POST", bindings,
                 {{"metadata", {{"name", "named"}}},
                  {"spec", {{"policyName", "named"}, {"validationActions", {"Warn"}}}}})
              .status == 201);
  r = c.configmap("tmp1");
  CHECK(r.status == 201);
  bool warned = false;
  for (const auto& h : r.headers)
    if (h.name == "Warning" &&
        h.value.find("Validation failed for ValidatingAdmissionPolicy 'named' with binding "
                     "'named': no temporary names") != std::string::npos)
      warned = true;
  CHECK(warned);

  // auditAnnotations: a string or null is recorded (in the log) and the request goes on; any
  // other value fails the policy as an expression that cannot be evaluated does.
  REQUIRE(c.call("POST", vap,
                 {{"metadata", {{"name", "annotated"}}},
                  {"spec",
                   {{"matchConstraints", rules},
                    {"auditAnnotations",
                     {{{"key", "keys"}, {"valueExpression", "'n=' + string(size(object.data))"}},
                      {{"key", "none"}, {"valueExpression", "null"}},
                      {{"key", "odd"},
                       {"valueExpression", "object.metadata.name.startsWith('odd') ? 1 : null"}}}}}}})
              .status == 201);
  REQUIRE(c.call("POST", bindings,
                 {{"metadata", {{"name", "annotated"}}},
                  {"spec", {{"policyName", "annotated"}, {"validationActions", {"Audit"}}}}})
              .status == 201);
  CHECK(c.configmap("plain").status == 201);
  // Audit only: a failure is logged, not refused; Deny refuses it.
  CHECK(c.configmap("odd1").status == 201);
  REQUIRE(c.call("PUT",
                 "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings/annotated",
                 {{"metadata", {{"name", "annotated"}}},
                  {"spec", {{"policyName", "annotated"}, {"validationActions", {"Deny"}}}}})
              .status == 200);
  r = c.call("POST", "/api/v1/namespaces/w/configmaps",
             {{"metadata", {{"name", "odd2"}}}, {"data", {{"a", "b"}}}});
  CHECK(r.status == 422);
  CHECK_THAT(message(r), Catch::Contains("must evaluate to a string or null"));
}

TEST_CASE("matchPolicy Equivalent: a rule for one version of a custom resource sees its others",
          "[apiserver][admission]") {
  WebhookServer hooks;
  Cluster c;
  REQUIRE(c.call("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
                 testing::boxes_crd())
              .status == 201);
  const json v1_rules = {{{"operations", {"CREATE"}},
                          {"apiGroups", {"example.com"}},
                          {"apiVersions", {"v1"}},
                          {"resources", {"boxes"}}}};
  hooks.on("/equivalent", [](const json& req) {
    // Shown at the version its rule names; what was asked for alongside.
    CHECK(req["kind"] == json{{"group", "example.com"}, {"version", "v1"}, {"kind", "Box"}});
    CHECK(req["resource"]["version"] == "v1");
    CHECK(req["requestKind"]["version"] == "v1beta1");
    CHECK(req["requestResource"]["version"] == "v1beta1");
    CHECK(req["object"]["apiVersion"] == "example.com/v1");
    return patch_of(json::array({{{"op", "add"}, {"path", "/spec/seen"}, {"value", "v1"}}}));
  });
  hooks.on("/exact", [](const json&) { return json{{"allowed", false}}; });
  REQUIRE(c.call("POST", kMutating,
                 configuration("m", {webhook("equivalent.test", hooks.url("/equivalent"),
                                             hooks.ca(), {{"rules", v1_rules}}),
                                     webhook("exact.test", hooks.url("/exact"), hooks.ca(),
                                             {{"rules", v1_rules}, {"matchPolicy", "Exact"}})}))
              .status == 201);
  auto r = c.call("POST", "/apis/example.com/v1beta1/namespaces/w/boxes",
                  {{"apiVersion", "example.com/v1beta1"},
                   {"kind", "Box"},
                   {"metadata", {{"name", "b"}}},
                   {"spec", json::object()}});
  INFO(r.body);
  REQUIRE(r.status == 201);
  CHECK(hooks.called("/equivalent") == 1);
  CHECK(hooks.called("/exact") == 0);
  // The webhook's patch is kept, and the answer is in the version asked for.
  json got = json::parse(r.body);
  CHECK(got["apiVersion"] == "example.com/v1beta1");
  CHECK(got["spec"]["seen"] == "v1");

  // A policy's CEL sees the object at the version its matchConstraints name.
  const std::string vap = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies";
  REQUIRE(c.call("POST", vap,
                 {{"metadata", {{"name", "v1-only"}}},
                  {"spec",
                   {{"matchConstraints", {{"resourceRules", v1_rules}}},
                    {"validations",
                     {{{"expression", "object.apiVersion == 'example.com/v1' && "
                                      "request.kind.version == 'v1' && !has(object.spec.deny)"},
                       {"message", "denied at v1"}}}}}}})
              .status == 201);
  REQUIRE(c.call("POST", "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings",
                 {{"metadata", {{"name", "v1-only"}}},
                  {"spec", {{"policyName", "v1-only"}, {"validationActions", {"Deny"}}}}})
              .status == 201);
  auto box = [&](const std::string& name, json spec) {
    return c.call("POST", "/apis/example.com/v1beta1/namespaces/w/boxes",
                  {{"apiVersion", "example.com/v1beta1"},
                   {"kind", "Box"},
                   {"metadata", {{"name", name}}},
                   {"spec", std::move(spec)}});
  };
  CHECK(box("ok", json::object()).status == 201);
  auto denied = box("no", {{"deny", true}});
  CHECK(denied.status == 422);
  CHECK_THAT(message(denied), Catch::Contains("denied at v1"));
}

TEST_CASE("admission rules match resources and subresources as kube's do", "[admission]") {
  using admission::Rule;
  using admission::Target;
  Rule r;
  r.operations = {"CREATE"};
  r.groups = {""};
  r.versions = {"v1"};
  r.resources = {"pods"};
  Target t{"CREATE", "", "v1", "pods", "", "p", true};
  CHECK(admission::rule_matches(r, t));
  Target status = t;
  status.subresource = "status";
  CHECK_FALSE(admission::rule_matches(r, status));
  r.resources = {"pods/*"};
  CHECK(admission::rule_matches(r, status));
  CHECK(admission::rule_matches(r, t));
  r.resources = {"*/status"};
  CHECK(admission::rule_matches(r, status));
  CHECK_FALSE(admission::rule_matches(r, t));
  r.resources = {"*"};
  CHECK(admission::rule_matches(r, t));
  CHECK_FALSE(admission::rule_matches(r, status));
  r.scope = "Cluster";
  CHECK_FALSE(admission::rule_matches(r, t));
  r.scope = "*";
  Target update = t;
  update.operation = "UPDATE";
  CHECK_FALSE(admission::rule_matches(r, update));
  r.operations = {"*"};
  CHECK(admission::rule_matches(r, update));
  Target apps{"CREATE", "apps", "v1", "deployments", "", "d", true};
  CHECK_FALSE(admission::rule_matches(r, apps));
}

TEST_CASE("admission CEL declares object, request and (with a paramKind) params",
          "[admission][cel]") {
  auto e = admission::compile_expression("object.metadata.name == request.name", false);
  REQUIRE(e.program);
  auto v = crd::cel::evaluate(*e.program,
                              {{"object", {{"metadata", {{"name", "x"}}}}},
                               {"request", {{"name", "x"}}}},
                              nullptr);
  REQUIRE(v.ok);
  CHECK(v.value == true);
  CHECK_FALSE(admission::compile_expression("params.max > 1", false).program);
  CHECK(admission::compile_expression("params.max > 1", true).program);
  auto self = admission::compile_expression("self.x", false);
  CHECK_FALSE(self.program);
  CHECK_THAT(self.error, Catch::Contains("undeclared reference to 'self'"));
  CHECK(admission::compile_expression("authorizer.group('').resource('pods')", false).program);
  // CRD rules have no authorizer.
  std::string error;
  CHECK_FALSE(crd::cel::compile("authorizer.path('/x').check('get').allowed()", &error));
  CHECK_THAT(error, Catch::Contains("undeclared reference to 'authorizer'"));
}

TEST_CASE("admission CEL authorizer: what each builder asks, decisions, errors and cost",
          "[admission][cel]") {
  std::vector<crd::cel::AuthzAttributes> asked;
  crd::cel::Authorizer authz;
  authz.user = "alice";
  authz.groups = {"dev", "system:authenticated"};
  authz.group = "apps";
  authz.resource = "deployments";
  authz.subresource = "scale";
  authz.ns = "w";
  authz.name = "web";
  authz.authorize = [&](const crd::cel::AuthzAttributes& a) {
    asked.push_back(a);
    if (a.user == "alice" && a.verb == "get") return crd::cel::AuthzDecision{true, "by rule", ""};
    if (a.verb == "boom") return crd::cel::AuthzDecision{false, "", "store unavailable"};
    return crd::cel::AuthzDecision{false, "", ""};
  };
  crd::cel::EvalOptions options;
  options.authorizer = &authz;
  auto eval = [&](const std::string& expr) {
    auto e = admission::compile_expression(expr, false);
    REQUIRE(e.program);
    return crd::cel::evaluate(*e.program, json::object(), nullptr, options);
  };

  auto v = eval("authorizer.group('').resource('pods').subresource('log').namespace('w')"
                ".name('p').check('get').allowed()");
  REQUIRE(v.ok);
  CHECK(v.value == true);
  REQUIRE(asked.size() == 1);
  CHECK(asked[0].resource_request);
  CHECK(asked[0].user == "alice");
  CHECK(asked[0].groups == std::vector<std::string>{"dev", "system:authenticated"});
  CHECK(asked[0].group.empty());
  CHECK(asked[0].resource == "pods");
  CHECK(asked[0].subresource == "log");
  CHECK(asked[0].ns == "w");
  CHECK(asked[0].name == "p");
  CHECK(asked[0].verb == "get");
  CHECK(eval("authorizer.group('').resource('pods').check('get').reason()").value == "by rule");

  // requestResource is the request's own resource; a path check is a non-resource request.
  asked.clear();
  CHECK(eval("authorizer.requestResource.check('update').allowed()").value == false);
  REQUIRE(asked.size() == 1);
  CHECK(asked[0].group == "apps");
  CHECK(asked[0].resource == "deployments");
  CHECK(asked[0].subresource == "scale");
  CHECK(asked[0].ns == "w");
  CHECK(asked[0].name == "web");
  asked.clear();
  CHECK(eval("authorizer.path('/healthz').check('get').allowed()").value == true);
  REQUIRE(asked.size() == 1);
  CHECK_FALSE(asked[0].resource_request);
  CHECK(asked[0].path == "/healthz");

  // serviceAccount() asks for the account instead, with kube's groups of it.
  asked.clear();
  CHECK(eval("authorizer.serviceAccount('w', 'deployer').group('apps').resource('deployments')"
             ".check('get').allowed()")
            .value == false);
  REQUIRE(asked.size() == 1);
  CHECK(asked[0].user == "system:serviceaccount:w:deployer");
  CHECK(asked[0].groups ==
        std::vector<std::string>{"system:serviceaccounts", "system:serviceaccounts:w"});

  // An authorizer error: errored() and error(), never allowed.
  auto d = "authorizer.group('').resource('pods').check('boom')";
  CHECK(eval(std::string(d) + ".errored()").value == true);
  CHECK(eval(std::string(d) + ".error()").value == "store unavailable");
  CHECK(eval(std::string(d) + ".allowed()").value == false);
  CHECK(eval("authorizer.group('').resource('pods').check('get').errored()").value == false);

  // kube's messages for bad arguments; methods on the wrong receiver have no overload.
  CHECK(eval("authorizer.path(' ').check('get').allowed()").error == "path must not be empty");
  CHECK(eval("authorizer.group('').resource('').check('get').allowed()").error ==
        "resource must not be empty");
  CHECK(eval("authorizer.serviceAccount('w', 'Bad_Name').path('/x')").error ==
        "Invalid service account name");
  CHECK(eval("authorizer.serviceAccount('a.b', 'ok').path('/x')").error ==
        "Invalid service account namespace");
  CHECK(eval("authorizer.group('').check('get')").error == "no such overload");
  CHECK(eval("authorizer.group('').resource('pods').allowed()").error == "no such overload");
  CHECK(eval("type(authorizer.group('')) == type(authorizer.group('x'))").value == true);
  CHECK_THAT(eval("authorizer.path('/x')").error,
             Catch::Contains("kubernetes.authorization.PathCheck"));

  // A check costs as kube's: two fit in one expression, a third does not.
  CHECK(eval("[1, 2].all(i, !authorizer.path('/x').check('put').allowed())").ok);
  auto three = eval("[1, 2, 3].all(i, !authorizer.path('/x').check('put').allowed())");
  CHECK(three.cost_exceeded);

  // Without an authorizer bound the variable is an error, not a crash.
  options.authorizer = nullptr;
  CHECK(eval("authorizer.path('/x').check('get').allowed()").error ==
        "no such attribute: authorizer");
}

TEST_CASE("a policy or webhook configuration whose CEL does not compile is refused when written",
          "[apiserver][admission]") {
  Cluster c;
  const std::string vap = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies";
  auto policy = [](json spec) {
    json rules = {{"resourceRules",
                   {{{"apiGroups", {""}},
                     {"apiVersions", {"v1"}},
                     {"operations", {"CREATE"}},
                     {"resources", {"configmaps"}}}}}};
    spec["matchConstraints"] = rules;
    return json{{"metadata", {{"name", "p"}}}, {"spec", std::move(spec)}};
  };
  auto r = c.call("POST", vap,
                  policy({{"validations",
                           {{{"expression", "object.data.size() >"}},
                            {{"expression", "true"}, {"messageExpression", "authorizer.path('/x')"}},
                            {{"expression", "params.x"}},
                            {{"expression", " "}}}},
                          {"matchConditions", {{{"name", "m"}, {"expression", "nope == 1"}}}}}));
  REQUIRE(r.status == 422);
  const std::string m = message(r);
  CHECK_THAT(m, Catch::Contains("spec.validations[0].expression: Invalid value: \"object.data.size() "
                                ">\": compilation failed: ERROR: <input>:1:21: Syntax error"));
  // messageExpression has no authorizer, an expression no params without a paramKind (kube's).
  CHECK_THAT(m, Catch::Contains("spec.validations[1].messageExpression: Invalid value: "
                                "\"authorizer.path('/x')\": compilation failed: ERROR: <input>:1:1: "
                                "undeclared reference to 'authorizer'"));
  CHECK_THAT(m, Catch::Contains("spec.validations[2].expression: Invalid value: \"params.x\": "
                                "compilation failed: ERROR: <input>:1:1: undeclared reference to "
                                "'params'"));
  CHECK_THAT(m, Catch::Contains("spec.validations[3].expression: Required value: expression is not "
                                "specified"));
  CHECK_THAT(m, Catch::Contains("spec.matchConditions[0].expression: Invalid value: \"nope == 1\""));
  // What vkube's CEL lacks is accepted with a warning; it fails at admission by failurePolicy.
  r = c.call("POST", vap, policy({{"validations", {{{"expression", "isSemver('1.0.0')"}}}}}));
  CHECK(r.status == 201);
  bool warned = false;
  for (const auto& h : r.headers)
    if (h.name == "Warning" &&
        h.value.find("spec.validations[0].expression: vkube cannot evaluate this expression") !=
            std::string::npos)
      warned = true;
  CHECK(warned);

  r = c.call("POST", "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations",
             configuration("bad", {webhook("a.test", "https://127.0.0.1:1/", "",
                                           {{"matchConditions",
                                             {{{"name", "x"}, {"expression", "object.("}}}}})}));
  REQUIRE(r.status == 422);
  CHECK_THAT(message(r), Catch::Contains("webhooks[0].matchConditions[0].expression: Invalid "
                                         "value: \"object.(\": compilation failed: ERROR:"));
}

TEST_CASE("ValidatingAdmissionPolicy authorizer checks the requester's RBAC",
          "[apiserver][admission]") {
  Cluster c;
  auto create = [&](const std::string& path, json body) {
    REQUIRE(c.call("POST", path, std::move(body)).status == 201);
  };
  const std::string rbac = "/apis/rbac.authorization.k8s.io/v1/namespaces/w/";
  create(rbac + "roles", {{"metadata", {{"name", "writer"}}},
                          {"rules",
                           {{{"apiGroups", {""}},
                             {"resources", {"configmaps"}},
                             {"verbs", {"create", "update"}}}}}});
  create(rbac + "roles", {{"metadata", {{"name", "approver"}}},
                          {"rules",
                           {{{"apiGroups", {""}},
                             {"resources", {"configmaps/prod"}},
                             {"verbs", {"approve"}}}}}});
  auto bind = [&](const std::string& name, const std::string& role, json users) {
    json subjects = json::array();
    for (const auto& u : users)
      subjects.push_back(
          {{"kind", "User"}, {"apiGroup", "rbac.authorization.k8s.io"}, {"name", u}});
    create(rbac + "rolebindings",
           {{"metadata", {{"name", name}}},
            {"roleRef", {{"apiGroup", "rbac.authorization.k8s.io"}, {"kind", "Role"}, {"name", role}}},
            {"subjects", subjects}});
  };
  bind("writers", "writer", {"alice", "bob"});
  bind("approvers", "approver", {"bob"});
  create("/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies",
         {{"metadata", {{"name", "prod-approval"}}},
          {"spec",
           {{"matchConstraints",
             {{"resourceRules",
               {{{"apiGroups", {""}},
                 {"apiVersions", {"v1"}},
                 {"operations", {"CREATE", "UPDATE"}},
                 {"resources", {"configmaps"}}}}}}},
            {"variables",
             {{{"name", "prod"},
               {"expression",
                "has(object.metadata.labels) && 'tier' in object.metadata.labels && "
                "object.metadata.labels.tier == 'prod'"}}}},
            {"validations",
             {{{"expression",
                "!variables.prod || authorizer.group('').resource('configmaps')"
                ".subresource('prod').namespace(request.namespace).check('approve').allowed()"},
               {"messageExpression",
                "request.userInfo.username + ' may not approve prod configmaps'"}}}}}}});
  create("/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings",
         {{"metadata", {{"name", "prod-approval"}}},
          {"spec", {{"policyName", "prod-approval"}, {"validationActions", {"Deny"}}}}});

  auto configmap = [&](const std::string& user, const std::string& name, const std::string& tier) {
    return c.call_as({user, {"system:authenticated"}}, "POST", "/api/v1/namespaces/w/configmaps",
                     {{"metadata", {{"name", name}, {"labels", {{"tier", tier}}}}}});
  };
  auto r = configmap("alice", "a1", "prod");
  CHECK(r.status == 422);  // no reason given: Invalid
  CHECK(message(r) == "configmaps \"a1\" is forbidden: ValidatingAdmissionPolicy 'prod-approval' "
                      "with binding 'prod-approval' denied request: alice may not approve prod "
                      "configmaps");
  CHECK(configmap("alice", "a2", "dev").status == 201);
  CHECK(configmap("bob", "b1", "prod").status == 201);
  // system:masters is allowed everything, by the policy's check too.
  CHECK(c.call("POST", "/api/v1/namespaces/w/configmaps",
               {{"metadata", {{"name", "m1"}, {"labels", {{"tier", "prod"}}}}}})
            .status == 201);
  // Granting alice the subresource takes effect at her next request.
  bind("approvers-2", "approver", {"alice"});
  CHECK(configmap("alice", "a1", "prod").status == 201);
}

}  // namespace vkube::apiserver
