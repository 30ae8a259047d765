// Helpers of the Table printer tests (tables_test.cpp, tables_workloads_test.cpp).
#pragma once

#include <catch2/catch.hpp>

#include <map>
#include <string>
#include <vector>

#include "kinds.h"

namespace vkube::apiserver::builtin::table_testing {

using json = nlohmann::json;

constexpr int64_t kNow = 1796220000;  // 2026-12-02T14:00:00Z
constexpr const char* kFiveMinutesAgo = "2026-12-02T13:55:00Z";
constexpr const char* kOneHourAgo = "2026-12-02T13:00:00Z";
constexpr const char* kTwoDaysAgo = "2026-11-30T14:00:00Z";

inline const api::Resource& resource(const std::string& group, const std::string& plural) {
  for (const Kind& k : builtin_kinds()) {
    if (k.resource.gv.group == group && k.resource.plural == plural) return k.resource;
  }
  FAIL("no built-in resource " << group << "/" << plural);
  throw;  // unreachable
}

inline std::vector<std::string> column_names(const std::string& group, const std::string& plural) {
  std::vector<std::string> names;
  for (const api::Column& c : table_columns(resource(group, plural))) names.push_back(c.name);
  return names;
}

// Cells by column name.
inline std::map<std::string, json> row(const std::string& group, const std::string& plural,
                                       const json& obj) {
  const api::Resource& r = resource(group, plural);
  const std::vector<api::Column> cols = table_columns(r);
  const json cells = table_cells(r, obj, kNow);
  REQUIRE(cells.is_array());
  REQUIRE(cells.size() == cols.size());
  std::map<std::string, json> out;
  for (std::size_t i = 0; i < cols.size(); ++i) out[cols[i].name] = cells[i];
  return out;
}

inline json meta(const std::string& name, const char* created = kTwoDaysAgo) {
  return {{"name", name}, {"namespace", "default"}, {"creationTimestamp", created}};
}

}  // namespace vkube::apiserver::builtin::table_testing
