// What the syncer puts on the host goes when its tenant object goes, and a
// tenant pod whose host pod is gone does not stay Terminating, however the
// host's answers and watch events interleave.
#include <set>

#include "support/sa_key.h"
#include "syncer_harness.h"

namespace {

using namespace vkube::testing::syncer_harness;
using namespace std::chrono_literals;

json pod(const std::string& name, const std::string& account = "") {
  json p = {{"apiVersion", "v1"},
            {"kind", "Pod"},
            {"metadata", {{"name", name}}},
            {"spec", {{"containers", {{{"name", "c"}, {"image", "busybox"}}}}}}};
  if (!account.empty()) p["spec"]["serviceAccountName"] = account;
  return p;
}

// The names of the host's token Secrets in the tenant's namespace.
std::set<std::string> token_secrets(FlakyHost& host) {
  json r = admin_call(*host.host.api, "GET", "/api/v1/namespaces/vkube-t/secrets");
  std::set<std::string> out;
  for (const json& s : r["body"].value("items", json::array()))
    if (s.value("type", "") == "vkube.io/api-access") out.insert(s["metadata"]["name"]);
  return out;
}

}  // namespace

TEST_CASE("a tenant pod ends when the host finishes its pod before answering the DELETE",
          "[syncer][syncer-life]") {
  FlakyHost host;
  ApiServerOverStore tenant_api;
  make_default_namespace(tenant_api);
  Tenant tenant(tenant_api, host);
  // Bound to a node in the tenant, so its deletion there is graceful.
  json p = pod("web");
  p["spec"]["nodeName"] = "n1";
  REQUIRE(admin_call(*tenant_api.api, "POST", "/api/v1/namespaces/default/pods", p)["code"] == 201);
  REQUIRE(eventually([&] { return host.pods() == 1; }));
  REQUIRE(tenant.syncer->wait_idle(10s));

  // A host whose kubelet is quick: the pod is gone (and the watch says so)
  // before the DELETE's answer, "terminating, 30 s", reaches the syncer.
  std::atomic<int> deletes{0};
  {
    std::lock_guard lock(host.mu);
    host.intercept = [&](vkube::http::Request& r) -> std::optional<vkube::http::Response> {
      if (r.method != "DELETE" || r.path.find("/pods/") == std::string::npos) return std::nullopt;
      ++deletes;
      json before = admin_call(*host.host.api, "GET", r.path)["body"];
      admin_call(*host.host.api, "DELETE", r.path, {{"gracePeriodSeconds", 0}});
      std::this_thread::sleep_for(500ms);
      before["metadata"]["deletionTimestamp"] = "2030-01-01T00:00:00Z";
      before["metadata"]["deletionGracePeriodSeconds"] = 30;
      vkube::http::Response resp;
      resp.status = 200;
      resp.set_header("Content-Type", "application/json");
      resp.body = before.dump();
      return resp;
    };
  }
  REQUIRE(admin_call(*tenant_api.api, "DELETE", "/api/v1/namespaces/default/pods/web",
                     {{"gracePeriodSeconds", 30}})["code"] == 200);
  CHECK(eventually([&] {
    return admin_call(*tenant_api.api, "GET", "/api/v1/namespaces/default/pods/web")["code"] == 404;
  }));
  CHECK(deletes == 1);
  CHECK(host.pods() == 0);
}

TEST_CASE("a service account's host token Secret goes with its last pod, also across a restart",
          "[syncer][syncer-life]") {
  FlakyHost host;
  vkube::apiserver::Options options;
  options.service_account_key = vkube::testing::service_account_key();
  ApiServerOverStore tenant_api(options);
  REQUIRE(admin_call(*tenant_api.api, "POST", "/api/v1/namespaces",
                     {{"metadata", {{"name", "apps"}}}})["code"] == 201);
  for (const char* sa : {"default", "builder"})
    REQUIRE(admin_call(*tenant_api.api, "POST", "/api/v1/namespaces/apps/serviceaccounts",
                       {{"metadata", {{"name", sa}}}})["code"] == 201);
  vkube::syncer::SyncerOptions so = Tenant::defaults();
  so.api_host = "127.0.0.1";  // pods get credentials
  so.tenant_ca_pem = "ca";
  auto create = [&](const std::string& name, const std::string& sa = "") {
    REQUIRE(admin_call(*tenant_api.api, "POST", "/api/v1/namespaces/apps/pods",
                       pod(name, sa))["code"] == 201);
  };
  auto remove = [&](const std::string& name) {
    REQUIRE(admin_call(*tenant_api.api, "DELETE", "/api/v1/namespaces/apps/pods/" + name)["code"] ==
            200);
  };
  const std::string builder = "builder-x-apps-x-t.sa-token";
  const std::string fallback = "default-x-apps-x-t.sa-token";
  // Token Secrets of this tenant's labels: one whose name is not the one of
  // the account it records (not the syncer's: kept), one made before the
  // account annotation (its name says the account: removed once unused).
  auto token = [](const std::string& name, const std::string& account) {
    json s = {{"metadata",
               {{"name", name},
                {"labels",
                 {{"app.kubernetes.io/managed-by", "vkube"},
                  {"vkube.io/tenant", "t"},
                  {"vkube.io/tenant-namespace", "apps"}}}}},
              {"type", "vkube.io/api-access"}};
    if (!account.empty()) s["metadata"]["annotations"]["vkube.io/tenant-serviceaccount"] = account;
    return s;
  };
  const std::string foreign = "gone-x-apps-x-t.sa-token";
  auto host_create = [&](const json& s) {
    REQUIRE(admin_call(*host.host.api, "POST", "/api/v1/namespaces/vkube-t/secrets", s)["code"] ==
            201);
  };
  {
    Tenant first(tenant_api, host, so);
    REQUIRE(eventually([&] { return first.syncer->ready(); }));
    host_create(token(foreign, "nobody"));
    create("b1", "builder");
    create("b2", "builder");
    create("d1");
    REQUIRE(eventually([&] { return host.pods() == 3; }));
    CHECK(token_secrets(host) == std::set<std::string>{builder, fallback, foreign});
    remove("b1");
    REQUIRE(eventually([&] { return host.pods() == 2; }));
    REQUIRE(first.syncer->wait_idle(10s));
    CHECK(token_secrets(host).count(builder) == 1);  // b2 still runs as builder
    remove("b2");
    CHECK(eventually([&] { return token_secrets(host).count(builder) == 0; }));
    CHECK(token_secrets(host).count(fallback) == 1);
  }
  // While the tenant is down its last pod goes: the next start removes the
  // pod's token Secret from the host, and nothing that is not its own.
  remove("d1");
  host_create(token("legacy-x-apps-x-t.sa-token", ""));
  Tenant second(tenant_api, host, so);
  CHECK(eventually([&] { return host.pods() == 0 && token_secrets(host).size() == 1; }));
  REQUIRE(second.syncer->wait_idle(10s));
  CHECK(token_secrets(host) == std::set<std::string>{foreign});
}

TEST_CASE("the periodic resync retries what no event brings back, and writes nothing when in step",
          "[syncer][syncer-life]") {
  FlakyHost host;
  ApiServerOverStore tenant_api;
  make_default_namespace(tenant_api);
  vkube::syncer::SyncerOptions so = Tenant::defaults();
  so.resync_period = 50ms;
  Tenant tenant(tenant_api, host, so);
  REQUIRE(eventually([&] { return tenant.syncer->ready(); }));
  // The host name of the tenant's ConfigMap holds another origin's object:
  // the pod that mounts it is not run (a SyncError), and the object's
  // deletion on the host names that other origin, not the pod.
  json foreign = {{"metadata",
                   {{"name", "cfg-x-default-x-t"},
                    {"labels",
                     {{"app.kubernetes.io/managed-by", "vkube"},
                      {"vkube.io/tenant", "t"},
                      {"vkube.io/tenant-namespace", "default"}}},
                    {"annotations", {{"vkube.io/tenant-name", "other"}}}}}};
  REQUIRE(admin_call(*host.host.api, "POST", "/api/v1/namespaces/vkube-t/configmaps",
                     foreign)["code"] == 201);
  REQUIRE(admin_call(*tenant_api.api, "POST", "/api/v1/namespaces/default/configmaps",
                     {{"metadata", {{"name", "cfg"}}}, {"data", {{"k", "v"}}}})["code"] == 201);
  json p = pod("uses-cfg");
  p["spec"]["volumes"] = {{{"name", "c"}, {"configMap", {{"name", "cfg"}}}}};
  REQUIRE(admin_call(*tenant_api.api, "POST", "/api/v1/namespaces/default/pods", p)["code"] == 201);
  REQUIRE(tenant.syncer->wait_idle(10s));
  REQUIRE(host.pods() == 0);
  REQUIRE(admin_call(*host.host.api, "DELETE",
                     "/api/v1/namespaces/vkube-t/configmaps/cfg-x-default-x-t")["code"] == 200);
  CHECK(eventually([&] { return host.pods() == 1; }));

  // In step, a resync (ten periods) writes nothing on either side.
  REQUIRE(tenant.syncer->wait_idle(10s));
  const auto before = tenant.syncer->stats();
  std::this_thread::sleep_for(500ms);
  REQUIRE(tenant.syncer->wait_idle(10s));
  CHECK(tenant.syncer->stats().host_writes == before.host_writes);
  CHECK(tenant.syncer->stats().tenant_writes == before.tenant_writes);
}
