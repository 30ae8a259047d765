// JSON request bodies: schema::parse_json (what decode_request_body and PATCH
// run on every JSON body, with duplicate-key detection for
// fieldValidation), the unknown-field walk of fieldValidation=Strict against
// the Pod description, and json_scan, which reads stored objects without
// building a tree.
#include <nlohmann/json.hpp>

#include "fuzz_util.h"
#include "vkube/common/json_scan.h"
#include "vkube/schema/schema.h"
#include "vkube/schema/validation.h"

using nlohmann::json;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text = vkube::fuzz::as_text(data, size);
  std::vector<std::string> duplicates;
  json with_dups = vkube::schema::parse_json(text, &duplicates);
  json plain = vkube::schema::parse_json(text, nullptr);
  // Duplicate detection is a second pass over the same text: it must not
  // change what was parsed.
  FUZZ_CHECK(with_dups.is_discarded() == plain.is_discarded());
  if (plain.is_discarded()) {
    FUZZ_CHECK(duplicates.empty());
    return 0;
  }
  FUZZ_CHECK(with_dups == plain);
  // What the server writes back parses to the same value.
  json again = json::parse(plain.dump(), nullptr, false);
  FUZZ_CHECK(!again.is_discarded() && again == plain);

  // json_scan must walk every object the parser accepts, member by member.
  if (plain.is_object()) {
    size_t members = 0;
    bool walked =
        vkube::json_scan::for_each_member(text, [&](std::string_view, std::string_view v) {
          ++members;
          FUZZ_CHECK(!json::parse(v, nullptr, false).is_discarded());
          return true;
        });
    FUZZ_CHECK(walked);
    FUZZ_CHECK(members >= plain.size());
    // A key the tree holds fewer times than the text is a duplicate.
    if (members > plain.size()) FUZZ_CHECK(!duplicates.empty());
  }

  static const vkube::schema::Message* pod =
      vkube::schema::Registry::get().find_kind("", "v1", "Pod");
  if (pod != nullptr && plain.is_object()) {
    auto unknown = vkube::schema::unknown_fields(*pod, plain);
    json copy = plain;
    auto dropped = vkube::schema::drop_unknown_fields(*pod, copy);
    FUZZ_CHECK(dropped.size() == unknown.size());
    FUZZ_CHECK(vkube::schema::unknown_fields(*pod, copy).empty());
  }
  return 0;
}
