// PATCH bodies: RFC 6902 JSON patch, RFC 7386 merge patch and strategic merge
// patch, applied by apiserver::apply_patch as handle_patch does. The first
// byte picks the patch type and the kind (Pod, Deployment, or a custom
// resource without a description); the rest is "<target>\0<patch>", both
// JSON. Every outcome is a value or a Status: no throw, no unbounded result.
#include <nlohmann/json.hpp>

#include "fuzz_depth.h"
#include "fuzz_util.h"
#include "patch_engine.h"
#include "vkube/schema/schema.h"

using nlohmann::json;
using vkube::apiserver::PatchType;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  static const PatchType kTypes[] = {PatchType::kJson, PatchType::kMerge, PatchType::kStrategic};
  PatchType type = kTypes[data[0] % 3];
  const vkube::schema::Registry& registry = vkube::schema::Registry::get();
  const vkube::schema::Message* kinds[] = {registry.find_kind("", "v1", "Pod"),
                                           registry.find_kind("apps", "v1", "Deployment"), nullptr};
  const vkube::schema::Message* m = kinds[(data[0] / 3) % 3];
  auto [target_text, patch_text] = vkube::fuzz::split2(vkube::fuzz::as_text(data + 1, size - 1));
  json target = json::parse(target_text, nullptr, false);
  json patch = json::parse(patch_text, nullptr, false);
  if (target.is_discarded() || patch.is_discarded()) return 0;
  auto patched = vkube::apiserver::apply_patch(type, target, patch, m);
  if (!patched.is_ok()) {
    FUZZ_CHECK(!patched.status().message().empty());
    return 0;
  }
  FUZZ_CHECK(vkube::fuzz::json_depth(*patched) <= vkube::fuzz::kMaxResultDepth);
  // The server stores what it serializes and reads it back.
  (void)patched->dump();
  return 0;
}
