// Server-side apply (PATCH application/apply-patch+yaml): the YAML
// configuration is decoded as handle_apply decodes it and merged into a live
// object by apply::run_apply, with managed fields, conflicts and pruning. The
// first byte picks the kind (Pod, Deployment, or an untyped custom resource)
// and `force`; the rest is "<configuration YAML>\0<live object JSON>" (an
// empty or invalid live object means the apply creates it).
#include <nlohmann/json.hpp>

#include "apply.h"
#include "fuzz_depth.h"
#include "fuzz_util.h"
#include "vkube/schema/schema.h"
#include "yaml_json.h"

using nlohmann::json;
namespace apply = vkube::apiserver::apply;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const vkube::schema::Registry& registry = vkube::schema::Registry::get();
  const vkube::schema::Message* kinds[] = {registry.find_kind("", "v1", "Pod"),
                                           registry.find_kind("apps", "v1", "Deployment"), nullptr};
  const vkube::schema::Message* m = kinds[data[0] % 3];
  auto [config_text, live_text] = vkube::fuzz::split2(vkube::fuzz::as_text(data + 1, size - 1));
  auto config = apply::yaml_to_json(config_text);
  if (!config.is_ok() || !config->is_object()) return 0;
  if (!config->contains("metadata") || (*config)["metadata"].is_null())
    (*config)["metadata"] = json::object();
  if (!(*config)["metadata"].is_object()) return 0;
  json live = json::parse(live_text, nullptr, false);
  bool has_live = live.is_object() && live.contains("metadata") && live["metadata"].is_object();

  apply::ApplyRequest req;
  req.config = &*config;
  req.live = has_live ? &live : nullptr;
  req.type = apply::object_type(m);
  req.scope = (data[0] & 8) ? apply::Scope::kNoStatus : apply::Scope::kAll;
  req.writer = {"fuzz", m == nullptr ? "example.com/v1" : "v1", "", "2024-01-01T00:00:00Z"};
  req.force = (data[0] & 16) != 0;
  req.object_ref = "ns/name; /v1, Kind=Pod";
  auto applied = apply::run_apply(req);
  if (!applied.is_ok()) {
    FUZZ_CHECK(!applied.status().message().empty());
    return 0;
  }
  if (!applied->conflicts.empty()) {
    FUZZ_CHECK(!req.force);
    FUZZ_CHECK(!apply::conflict_message(applied->conflicts).empty());
    return 0;
  }
  FUZZ_CHECK(vkube::fuzz::json_depth(applied->object) <= vkube::fuzz::kMaxResultDepth);
  // The merged object is applied again by the same manager: nothing conflicts.
  apply::ApplyRequest again = req;
  again.live = &applied->object;
  auto second = apply::run_apply(again);
  if (second.is_ok()) FUZZ_CHECK(second->conflicts.empty());
  return 0;
}
