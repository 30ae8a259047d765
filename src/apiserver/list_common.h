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
  storage::Revision revision = 0;
  std::string continue_token;  // the API's form; empty when complete
};

Result<ListOutput> list_objects(Context& c, const ListQuery& q);

// Whether obj matches the query's selectors (the watch filter too).
bool matches(const ListQuery& q, const json& obj);

// Checks that every field the selector names can be selected on this kind.
Status check_field_selector(const api::Resource& r, const api::FieldSelector& f);

}  // namespace vkube::apiserver
