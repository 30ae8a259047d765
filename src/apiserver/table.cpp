#include "table.h"

#include "custom_resources.h"
#include "object.h"

namespace vkube::apiserver {

bool wants_table(std::string_view accept) {
  // kubectl: "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;..."
  auto first = accept.substr(0, accept.find(','));
  return first.find("as=Table") != std::string_view::npos &&
         first.find("g=meta.k8s.io") != std::string_view::npos;
}

IncludeObject parse_include_object(std::string_view v) {
  if (v == "None") return IncludeObject::kNone;
  if (v == "Object") return IncludeObject::kObject;
  return IncludeObject::kMetadata;
}

json make_table(const Kind& kind, const std::vector<json>& objects, IncludeObject include,
                json list_meta) {
  const api::Resource& r = kind.resource;
  json columns = json::array();
  for (const api::Column& c : r.columns) {
    json col = {{"name", c.name}, {"type", c.type}, {"format", c.format},
                {"description", c.description}, {"priority", c.priority}};
    columns.push_back(std::move(col));
  }
  json rows = json::array();
  const int64_t now = now_unix();
  for (const json& obj : objects) {
    json row = {{"cells", r.is_custom ? custom_table_cells(kind, obj, now)
                                      : builtin::table_cells(r, obj, now)}};
    if (include == IncludeObject::kMetadata) {
      json meta = obj.value("metadata", json::object());
      row["object"] = {{"kind", "PartialObjectMetadata"},
                       {"apiVersion", "meta.k8s.io/v1"},
                       {"metadata", std::move(meta)}};
    } else if (include == IncludeObject::kObject) {
      json full = obj;
      full["kind"] = r.kind;
      full["apiVersion"] = r.gv.api_version();
      row["object"] = std::move(full);
    }
    rows.push_back(std::move(row));
  }
  return {{"kind", "Table"},
          {"apiVersion", "meta.k8s.io/v1"},
          {"metadata", std::move(list_meta)},
          {"columnDefinitions", std::move(columns)},
          {"rows", std::move(rows)}};
}

}  // namespace vkube::apiserver
