// Informers over a real store: filtered caches keep only the keys they accept,
// and objects nobody caches reach handlers with their metadata only.
#include <catch2/catch.hpp>

#include <mutex>
#include <vector>

#include "support/temp_dir.h"
#include "vkube/controllers/informers.h"
#include "vkube/storage/rocksdb_backend.h"

namespace vkube::controllers {
namespace {

using json = nlohmann::json;

struct Store {
  testing::TempDir dir;
  std::unique_ptr<storage::Backend> backend;
  Store() {
    storage::RocksDbOptions o;
    o.path = dir.sub("db");
    o.sync = false;
    backend = std::move(storage::open_rocksdb(o)).value();
  }
  storage::Revision put(const std::string& ns, const std::string& name) {
    json cm = {{"apiVersion", "v1"},
               {"kind", "ConfigMap"},
               {"metadata",
                {{"name", name},
                 {"namespace", ns},
                 {"uid", "uid-" + name},
                 {"managedFields", json::array({{{"manager", "test"}}})}}},
               {"data", {{"k", "v"}}}};
    auto kv = backend->create("/registry/core/configmaps/" + ns + "/" + name, cm.dump());
    REQUIRE(kv.is_ok());
    return kv->mod_revision;
  }
};

struct Seen {
  std::mutex mu;
  std::vector<ObjectEvent> events;
  void add(const ObjectEvent& e) {
    std::lock_guard lock(mu);
    events.push_back(e);
  }
  const ObjectEvent* find(const std::string& key) {
    std::lock_guard lock(mu);
    for (const ObjectEvent& e : events)
      if (e.key == key) return &e;
    return nullptr;
  }
};

bool only_root_ca(std::string_view key) {
  return key.substr(key.find('/') + 1) == "kube-root-ca.crt";
}

TEST_CASE("a filtered cache keeps only the keys it accepts", "[controllers][informers]") {
  Store s;
  s.put("a", "before");  // listed at start, not only watched
  Informers informers(*s.backend);
  const Lister& cms = informers.cache({"core", "configmaps"}, only_root_ca);
  Seen seen;
  informers.on_event({"core", "configmaps"}, [&](const ObjectEvent& e) { seen.add(e); });
  REQUIRE(informers.start().is_ok());
  s.put("a", "kube-root-ca.crt");
  REQUIRE(informers.wait_for(s.put("a", "app-config")));

  REQUIRE(cms.size() == 1);
  ObjectPtr kept = cms.get("a", "kube-root-ca.crt");
  REQUIRE(kept);
  CHECK((*kept)["data"]["k"] == "v");
  CHECK_FALSE((*kept)["metadata"].contains("managedFields"));
  CHECK(cms.get("a", "app-config") == nullptr);
  CHECK(cms.get("a", "before") == nullptr);

  // The resource's handler still hears of the others, with metadata only.
  for (const char* key : {"a/app-config", "a/before"}) {
    const ObjectEvent* e = seen.find(key);
    REQUIRE(e);
    CHECK(e->type == EventType::kAdded);
    CHECK((*e->object)["metadata"]["uid"] == std::string("uid-") + (key + 2));
    CHECK((*e->object)["kind"] == "ConfigMap");
    CHECK_FALSE(e->object->contains("data"));
    CHECK_FALSE((*e->object)["metadata"].contains("managedFields"));
  }
  informers.stop();
}

TEST_CASE("a cache asked for without a filter keeps everything", "[controllers][informers]") {
  Store s;
  Informers informers(*s.backend);
  const Lister& filtered = informers.cache({"core", "configmaps"}, only_root_ca);
  const Lister& all = informers.cache({"core", "configmaps"});
  REQUIRE(&filtered == &all);
  REQUIRE(informers.start().is_ok());
  REQUIRE(informers.wait_for(s.put("b", "app-config")));
  ObjectPtr got = all.get("b", "app-config");
  REQUIRE(got);
  CHECK((*got)["data"]["k"] == "v");
  informers.stop();
}

TEST_CASE("uncached objects reach any-handlers with metadata, deletes included",
          "[controllers][informers]") {
  Store s;
  Informers informers(*s.backend);
  Seen seen;
  informers.on_any_event([&](const ObjectEvent& e) { seen.add(e); });
  REQUIRE(informers.start().is_ok());
  storage::Revision rev = s.put("c", "settings");
  REQUIRE(informers.wait_for(rev));
  const ObjectEvent* added = seen.find("c/settings");
  REQUIRE(added);
  CHECK((*added->object)["metadata"]["name"] == "settings");
  CHECK((*added->object)["metadata"]["resourceVersion"] == std::to_string(rev));
  CHECK_FALSE(added->object->contains("data"));

  auto gone = s.backend->remove("/registry/core/configmaps/c/settings", 0);
  REQUIRE(gone.is_ok());
  REQUIRE(informers.wait_for(gone->mod_revision));
  std::lock_guard lock(seen.mu);
  REQUIRE(seen.events.size() == 2);
  CHECK(seen.events[1].type == EventType::kDeleted);
  CHECK((*seen.events[1].object)["metadata"]["uid"] == "uid-settings");
  informers.stop();
}

TEST_CASE("uncached objects' updates and deletes carry the state before them",
          "[controllers][informers]") {
  Store s;
  storage::Revision first = s.put("d", "settings");
  Informers informers(*s.backend);
  Seen seen;
  informers.on_any_event([&](const ObjectEvent& e) { seen.add(e); });
  REQUIRE(informers.start().is_ok());
  const std::string key = "/registry/core/configmaps/d/settings";
  json changed = {{"apiVersion", "v1"},
                  {"kind", "ConfigMap"},
                  {"metadata",
                   {{"name", "settings"},
                    {"namespace", "d"},
                    {"uid", "uid-settings"},
                    {"labels", {{"tier", "web"}}}}},
                  {"data", {{"k", "w"}}}};
  auto updated = s.backend->update(key, changed.dump(), first);
  REQUIRE(updated.is_ok());
  auto gone = s.backend->remove(key, updated->mod_revision);
  REQUIRE(gone.is_ok());
  REQUIRE(informers.wait_for(gone->mod_revision));

  std::lock_guard lock(seen.mu);
  REQUIRE(seen.events.size() == 3);
  const ObjectEvent& modified = seen.events[1];
  CHECK(modified.type == EventType::kModified);
  REQUIRE(modified.old);
  CHECK((*modified.old)["metadata"]["resourceVersion"] == std::to_string(first));
  CHECK_FALSE((*modified.old)["metadata"].contains("labels"));
  CHECK((*modified.object)["metadata"]["labels"]["tier"] == "web");
  const ObjectEvent& deleted = seen.events[2];
  CHECK(deleted.type == EventType::kDeleted);
  CHECK((*deleted.object)["metadata"]["uid"] == "uid-settings");
  CHECK((*deleted.object)["metadata"]["labels"]["tier"] == "web");
  CHECK((*deleted.object)["metadata"]["resourceVersion"] == std::to_string(updated->mod_revision));
  CHECK_FALSE(deleted.object->contains("data"));
  informers.stop();
}

}  // namespace
}  // namespace vkube::controllers
