// ConfigMaps, Secrets and Services for the host: golden files under golden/
// (VKUBE_UPDATE_GOLDEN=1 rewrites them; review the diff).
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "vkube/syncer/translate_objects.h"

using json = nlohmann::json;
using vkube::syncer::NameMapper;
using vkube::syncer::ObjectContext;

namespace {

std::string golden_path(const std::string& name) {
  return (std::filesystem::path(__FILE__).parent_path() / "golden" / name).string();
}

json read_json(const std::string& path) {
  std::ifstream in(path);
  REQUIRE(in);
  std::stringstream ss;
  ss << in.rdbuf();
  return json::parse(ss.str());
}

}  // namespace

TEST_CASE("config maps, secrets and services become their host objects (golden)", "[syncer]") {
  NameMapper names("team-a");
  ObjectContext ctx{&names,
                    "vkube-team-a",
                    {{"apiVersion", "v1"},
                     {"kind", "ConfigMap"},
                     {"name", "vkube-anchor"},
                     {"uid", "anchor-uid"}}};
  const json in = read_json(golden_path("objects.in.json"));
  json got = json::object();
  for (const char* k : {"configmap", "secret"}) {
    auto r = vkube::syncer::translate_config(in[k], ctx);
    REQUIRE(r.is_ok());
    got[k] = *r;
  }
  for (const char* k : {"service", "headless"}) {
    auto r = vkube::syncer::translate_service(in[k], ctx);
    REQUIRE(r.is_ok());
    got[k] = *r;
  }
  const std::string path = golden_path("objects.out.json");
  if (std::getenv("VKUBE_UPDATE_GOLDEN") != nullptr) std::ofstream(path) << got.dump(2) << "\n";
  INFO("got: " << got.dump(2));
  CHECK(got == read_json(path));
}
