// Reading collections: selectors, paging and resourceVersion semantics,
// shared by list, watch (its initial events) and deletecollection.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "server_impl.h"
#include "vkube/api/selector.h"

namespace vkube::apiserver {

struct ListQuery {
  api::LabelSelector labels;
  api::FieldSelector fields;
  int64_t limit = 0;
  std::string continue_token;  // the API's (base64) form
  std::string resource_version;
  std::string resource_version_match;
  Status error;  // a bad parameter, reported by list_objects

  // Reads the query parameters; `paged` false ignores limit and continue.
  static ListQuery from_context(Context& c, bool paged);
};

struct ListOutput {
  std::vector<json> items;  // decoded, filtered, in key order
  // With `raw` and no selectors: each item as stored, not decoded nor copied
  // (items stays empty); its resourceVersion is its mod_revision, which
  // append_with_resource_version writes in.
  std::vector<storage::KeyValuePtr> raw_items;
  storage::Revision revision = 0;
  std::string continue_token;  // the API's form; empty when complete
};

// `raw`: the caller only re-serialises the items as they are (a JSON list),
// so they are not decoded when no selector needs to look into them.
Result<ListOutput> list_objects(Context& c, const ListQuery& q, bool raw = false);

// A stored object's JSON with "resourceVersion" added to its top-level
// metadata, found by a scan that skips nested values and strings; nullopt
// when the text has no top-level metadata object.
std::optional<std::string> splice_resource_version(std::string_view stored, storage::Revision rv);
// Appends that JSON to `out` without an intermediate copy; false (nothing
// appended) when the text has no top-level metadata object.
bool append_with_resource_version(std::string& out, std::string_view stored, storage::Revision rv);

// Whether obj matches the query's selectors (the watch filter too).
bool matches(const ListQuery& q, const json& obj);

// Checks that every field the selector names can be selected on this kind.
Status check_field_selector(const api::Resource& r, const api::FieldSelector& f);

}  // namespace vkube::apiserver
