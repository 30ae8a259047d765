// The syncer's loop against a host that misbehaves: a real API server
// served over HTTP (the host) whose transport can answer 503 to everything or
// 429 to creates, and a tenant API server in process. What a user would
// notice: readiness while the host is down, every pod on the host exactly
// once, a restart that writes nothing, and orphans of a crash removed.
#include "syncer_harness.h"

namespace {
using namespace vkube::testing::syncer_harness;
using namespace std::chrono_literals;
}  // namespace

TEST_CASE("the syncer waits out a host answering 503, reports it, then syncs each pod once",
          "[syncer]") {
  FlakyHost host;
  host.down = true;
  ApiServerOverStore tenant_api;
  make_default_namespace(tenant_api);
  Tenant tenant(tenant_api, host);
  tenant.create_pod("p1");

  std::this_thread::sleep_for(1500ms);
  CHECK_FALSE(tenant.syncer->ready());
  CHECK(tenant.syncer->metrics().find("vkube_syncer_ready 0") != std::string::npos);

  host.down = false;
  REQUIRE(eventually([&] { return tenant.syncer->ready() && host.pods() == 1; }));
  CHECK(host.creates("p1-x-default-x-t") == 1);
  CHECK(tenant.syncer->metrics().find("vkube_syncer_ready 1") != std::string::npos);
}

TEST_CASE("creates the host throttles (429) are retried and never duplicated", "[syncer]") {
  FlakyHost host;
  ApiServerOverStore tenant_api;
  make_default_namespace(tenant_api);
  Tenant tenant(tenant_api, host);
  REQUIRE(eventually([&] { return tenant.syncer->ready(); }));
  host.throttle_creates = 3;
  for (int i = 0; i < 5; ++i) tenant.create_pod("p" + std::to_string(i));
  REQUIRE(eventually([&] { return host.pods() == 5; }));
  REQUIRE(tenant.syncer->wait_idle(10s));
  CHECK(host.throttle_creates == 0);
  for (int i = 0; i < 5; ++i) CHECK(host.creates("p" + std::to_string(i) + "-x-default-x-t") == 1);
}

TEST_CASE("a restart writes nothing when nothing changed, and removes a crash's orphans",
          "[syncer]") {
  FlakyHost host;
  ApiServerOverStore tenant_api;
  make_default_namespace(tenant_api);
  {
    Tenant first(tenant_api, host);
    for (int i = 0; i < 20; ++i) first.create_pod("p" + std::to_string(i));
    REQUIRE(eventually([&] { return host.pods() == 20; }));
    REQUIRE(first.syncer->wait_idle(10s));
  }
  {
    Tenant second(tenant_api, host);
    REQUIRE(eventually([&] { return second.syncer->ready(); }));
    REQUIRE(second.syncer->wait_idle(10s));
    CHECK(second.syncer->stats().host_writes == 0);
    CHECK(second.syncer->stats().tenant_writes == 0);
  }
  // While vkube is down a pod goes (no syncer saw it): the next start
  // deletes its host pod and writes nothing else.
  REQUIRE(admin_call(*tenant_api.api, "DELETE", "/api/v1/namespaces/default/pods/p7")["code"] ==
          200);
  Tenant third(tenant_api, host);
  REQUIRE(eventually([&] { return host.pods() == 19; }));
  REQUIRE(third.syncer->wait_idle(10s));
  CHECK(third.syncer->stats().host_writes == 1);
  for (int i = 0; i < 20; ++i) CHECK(host.creates("p" + std::to_string(i) + "-x-default-x-t") == 1);
}
