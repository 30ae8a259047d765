// POST pods/<name>/eviction through the API server's whole chain, with the
// PodDisruptionBudget status written by hand (as the disruption controller
// would): kube's answers for allowed, refused, dry-run and odd evictions.
#include <catch2/catch.hpp>

#include <chrono>
#include <thread>

#include <nlohmann/json.hpp>

#include "support/admin_server.h"

namespace vkube::apiserver {
namespace {

using json = nlohmann::json;

const std::string kPods = "/api/v1/namespaces/w/pods";
const std::string kPdbs = "/apis/policy/v1/namespaces/w/poddisruptionbudgets";

struct Server : testing::AdminApiServer {
  Server() { make_namespace("w"); }

  // A pod with labels app=web in `phase`, Ready when Running.
  void pod(const std::string& name, const std::string& phase = "Running") {
    json p = {{"metadata", {{"name", name}, {"labels", {{"app", "web"}}}}},
              {"spec", {{"containers", {{{"name", "c"}, {"image", "nginx"}}}}}}};
    REQUIRE(call("POST", kPods, p).status == 201);
    json s = get(kPods + "/" + name);
    s["status"] = {
        {"phase", phase},
        {"conditions", {{{"type", "Ready"}, {"status", phase == "Running" ? "True" : "False"}}}}};
    REQUIRE(call("PUT", kPods + "/" + name + "/status", s).status == 200);
  }
  // A budget over app=web whose controller-written status allows `allowed`.
  void budget(const std::string& name, int allowed, int healthy = 2, bool observed = true) {
    json b = {
        {"metadata", {{"name", name}}},
        {"spec",
         {{"minAvailable", healthy - allowed}, {"selector", {{"matchLabels", {{"app", "web"}}}}}}}};
    REQUIRE(call("POST", kPdbs, b).status == 201);
    json s = get(kPdbs + "/" + name);
    s["status"] = {{"observedGeneration", observed ? 1 : 0},
                   {"disruptionsAllowed", allowed},
                   {"currentHealthy", healthy},
                   {"desiredHealthy", healthy - allowed},
                   {"expectedPods", healthy}};
    REQUIRE(call("PUT", kPdbs + "/" + name + "/status", s).status == 200);
  }
  http::Response evict(const std::string& name, const json& delete_options = nullptr,
                       const std::string& query = "",
                       const std::string& api_version = "policy/v1") {
    json e = {{"apiVersion", api_version},
              {"kind", "Eviction"},
              {"metadata", {{"name", name}, {"namespace", "w"}}}};
    if (!delete_options.is_null()) e["deleteOptions"] = delete_options;
    return call("POST", kPods + "/" + name + "/eviction" + query, e);
  }
  bool exists(const std::string& name) { return call("GET", kPods + "/" + name).status == 200; }
};

TEST_CASE("an eviction a budget allows deletes the pod and takes one disruption",
          "[apiserver][eviction]") {
  Server s;
  s.pod("a");
  s.pod("b");
  s.budget("web", 1);

  auto r = s.evict("a");
  INFO(r.body);
  REQUIRE(r.status == 201);
  json status = json::parse(r.body);
  CHECK(status["kind"] == "Status");
  CHECK(status["status"] == "Success");
  CHECK_FALSE(s.exists("a"));
  json pdb = s.get(kPdbs + "/web")["status"];
  CHECK(pdb["disruptionsAllowed"] == 0);
  CHECK(pdb["disruptedPods"].contains("a"));
  CHECK(pdb["conditions"][0]["type"] == "DisruptionAllowed");
  CHECK(pdb["conditions"][0]["status"] == "False");
  CHECK(pdb["conditions"][0]["reason"] == "InsufficientPods");

  // The budget has nothing left: 429, with the budget named in the cause.
  r = s.evict("b");
  REQUIRE(r.status == 429);
  status = json::parse(r.body);
  CHECK(status["reason"] == "TooManyRequests");
  CHECK(status["message"] == "Cannot evict pod as it would violate the pod's disruption budget.");
  CHECK(status["details"]["causes"][0]["reason"] == "DisruptionBudget");
  CHECK(status["details"]["causes"][0]["message"] ==
        "The disruption budget web needs 1 healthy pods and has 2 currently");
  CHECK(s.exists("b"));
}

TEST_CASE("a dry-run eviction judges the budget and changes nothing", "[apiserver][eviction]") {
  Server s;
  s.pod("a");
  s.budget("web", 1);
  const std::string pdb_rv = s.get(kPdbs + "/web")["metadata"]["resourceVersion"];
  const std::string list_rv = s.get(kPods)["metadata"]["resourceVersion"];

  SECTION("dryRun in the Eviction's deleteOptions (kubectl drain --dry-run=server)") {
    CHECK(s.evict("a", {{"dryRun", {"All"}}}).status == 201);
  }
  SECTION("dryRun as a query parameter") {
    CHECK(s.evict("a", nullptr, "?dryRun=All").status == 201);
  }
  SECTION("both, matching") {
    CHECK(s.evict("a", {{"dryRun", {"All"}}}, "?dryRun=All").status == 201);
  }
  CHECK(s.exists("a"));
  CHECK(s.get(kPdbs + "/web")["metadata"]["resourceVersion"] == pdb_rv);
  CHECK(s.get(kPods)["metadata"]["resourceVersion"] == list_rv);
}

TEST_CASE("a dry-run eviction past the budget is still refused", "[apiserver][eviction]") {
  Server s;
  s.pod("a");
  s.budget("web", 0);
  CHECK(s.evict("a", {{"dryRun", {"All"}}}).status == 429);
}

TEST_CASE("terminal and pending pods are evicted without reading budgets",
          "[apiserver][eviction]") {
  Server s;
  s.pod("done", "Succeeded");
  s.pod("waiting", "Pending");
  s.budget("web", 0);
  CHECK(s.evict("done").status == 201);
  CHECK(s.evict("waiting").status == 201);
  CHECK_FALSE(s.exists("done"));
  CHECK_FALSE(s.exists("waiting"));
}

TEST_CASE("an unready pod goes without a disruption while enough others are healthy",
          "[apiserver][eviction]") {
  Server s;
  s.pod("sick", "Running");
  json p = s.get(kPods + "/sick");
  p["status"]["conditions"][0]["status"] = "False";
  REQUIRE(s.call("PUT", kPods + "/sick/status", p).status == 200);
  s.budget("web", 0);  // 2 healthy of 2 desired
  CHECK(s.evict("sick").status == 201);
  CHECK_FALSE(s.exists("sick"));
  CHECK(s.get(kPdbs + "/web")["status"]["disruptionsAllowed"] == 0);
}

TEST_CASE("eviction errors are kube's", "[apiserver][eviction]") {
  Server s;
  s.pod("a");

  SECTION("two budgets select the pod: 500") {
    s.budget("one", 1);
    s.budget("two", 1);
    auto r = s.evict("a");
    REQUIRE(r.status == 500);
    CHECK(json::parse(r.body)["message"] ==
          "This pod has more than one PodDisruptionBudget, which the eviction subresource does "
          "not support.");
    CHECK(s.exists("a"));
  }
  SECTION("a budget the controller has not seen yet: 429, retry after 10 s") {
    s.budget("web", 1, 2, /*observed=*/false);
    auto r = s.evict("a");
    REQUIRE(r.status == 429);
    json status = json::parse(r.body);
    CHECK(status["details"]["retryAfterSeconds"] == 10);
    CHECK(status["details"]["causes"][0]["message"] ==
          "The disruption budget web is still being processed by the server.");
    bool retry_after = false;
    for (const auto& h : r.headers) retry_after |= h.name == "Retry-After" && h.value == "10";
    CHECK(retry_after);
  }
  SECTION("a missing pod: 404") {
    auto r = s.evict("nope");
    CHECK(r.status == 404);
    CHECK(json::parse(r.body)["message"] == "pods \"nope\" not found");
  }
  SECTION("the name in the body must be the URL's") {
    json e = {{"apiVersion", "policy/v1"}, {"kind", "Eviction"}, {"metadata", {{"name", "b"}}}};
    auto r = s.call("POST", kPods + "/a/eviction", e);
    CHECK(r.status == 400);
    CHECK(json::parse(r.body)["message"] == "name in URL does not match name in Eviction object");
  }
  SECTION("a UID precondition that does not hold: 409") {
    auto r = s.evict("a", {{"preconditions", {{"uid", "other"}}}});
    CHECK(r.status == 409);
    CHECK(s.exists("a"));
  }
  SECTION("mismatched dryRun in query and body: 500 as kube") {
    auto r = s.evict("a", {{"dryRun", {"All"}}}, "?dryRun=Other");
    CHECK(r.status >= 400);
    CHECK(s.exists("a"));
  }
  SECTION("GET is not served") {
    CHECK(s.call("GET", kPods + "/a/eviction").status == 405);
  }
  SECTION("a policy/v1beta1 Eviction is accepted") {
    CHECK(s.evict("a", nullptr, "", "policy/v1beta1").status == 201);
    CHECK_FALSE(s.exists("a"));
  }
}

TEST_CASE("evicting takes create on pods/eviction", "[apiserver][eviction]") {
  Server s;
  s.pod("a");
  auto evict_as = [&](const std::string& user) {
    http::Request req = testing::request("POST", kPods + "/a/eviction");
    req.peer = http::PeerCertificate{user, {}};
    req.body =
        json({{"apiVersion", "policy/v1"}, {"kind", "Eviction"}, {"metadata", {{"name", "a"}}}})
            .dump();
    req.headers.push_back({"Content-Type", "application/json"});
    return s.api->handle(req);
  };
  auto r = evict_as("bob");
  REQUIRE(r.status == 403);
  CHECK(json::parse(r.body)["message"] ==
        "pods \"a\" is forbidden: User \"bob\" cannot create resource \"pods/eviction\" in API "
        "group \"\" in the namespace \"w\"");
  json role = {
      {"metadata", {{"name", "evictor"}}},
      {"rules", {{{"apiGroups", {""}}, {"resources", {"pods/eviction"}}, {"verbs", {"create"}}}}}};
  REQUIRE(s.call("POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/w/roles", role).status ==
          201);
  json binding = {
      {"metadata", {{"name", "evictor"}}},
      {"roleRef",
       {{"apiGroup", "rbac.authorization.k8s.io"}, {"kind", "Role"}, {"name", "evictor"}}},
      {"subjects",
       {{{"kind", "User"}, {"name", "alice"}, {"apiGroup", "rbac.authorization.k8s.io"}}}}};
  REQUIRE(s.call("POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/w/rolebindings", binding)
              .status == 201);
  int status = 0;
  for (int i = 0; i < 100 && status != 201;
       ++i) {  // the authorizer learns of the grant by watching
    status = evict_as("alice").status;
    if (status != 201) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  CHECK(status == 201);
  CHECK_FALSE(s.exists("a"));
}

TEST_CASE("admission sees the Eviction and may refuse it", "[apiserver][eviction]") {
  Server s;
  s.pod("a");
  const std::string api = "/apis/admissionregistration.k8s.io/v1/";
  json rules = {{"resourceRules",
                 {{{"apiGroups", {""}},
                   {"apiVersions", {"v1"}},
                   {"operations", {"CREATE"}},
                   {"resources", {"pods/eviction"}}}}}};
  REQUIRE(s.call("POST", api + "validatingadmissionpolicies",
                 {{"metadata", {{"name", "keep-a"}}},
                  {"spec",
                   {{"matchConstraints", rules},
                    {"validations",
                     {{{"expression", "object.kind == 'Eviction' && object.metadata.name != 'a'"},
                       {"message", "a stays"}}}}}}})
              .status == 201);
  REQUIRE(s.call("POST", api + "validatingadmissionpolicybindings",
                 {{"metadata", {{"name", "keep-a"}}},
                  {"spec", {{"policyName", "keep-a"}, {"validationActions", {"Deny"}}}}})
              .status == 201);
  http::Response r;
  // The policy is loaded by watching; a denial without a reason is Invalid (422), as kube's.
  for (int i = 0; i < 100 && r.status != 422; ++i) {
    r = s.evict("a", {{"dryRun", {"All"}}});
    if (r.status != 422) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  INFO(r.body);
  REQUIRE(r.status == 422);
  CHECK(json::parse(r.body)["message"] ==
        "pods \"a\" is forbidden: ValidatingAdmissionPolicy 'keep-a' with binding 'keep-a' "
        "denied request: a stays");
  CHECK(s.evict("a").status == 422);
  CHECK(s.exists("a"));
}

TEST_CASE("discovery lists pods/eviction as kubectl drain looks for it", "[apiserver][eviction]") {
  Server s;
  bool found = false;
  const json v1 = s.get("/api/v1");
  for (const json& r : v1["resources"])
    if (r["name"] == "pods/eviction") {
      found = true;
      CHECK(r["group"] == "policy");
      CHECK(r["version"] == "v1");
      CHECK(r["kind"] == "Eviction");
      CHECK(r["verbs"] == json::array({"create"}));
    }
  CHECK(found);
}

}  // namespace
}  // namespace vkube::apiserver
