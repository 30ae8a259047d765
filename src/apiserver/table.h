// Tables (meta.k8s.io/v1): what `kubectl get` asks for and prints.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "registry.h"
#include "table_rows.h"
#include "vkube/storage/backend.h"

namespace vkube::apiserver {

using json = nlohmann::json;

// True when the Accept header asks for a meta.k8s.io Table first.
bool wants_table(std::string_view accept);

enum class IncludeObject { kNone, kMetadata, kObject };
// The includeObject parameter; Metadata when absent.
IncludeObject parse_include_object(std::string_view value);

// ObjectMeta's fields in the order encode_json writes them (kube's Go type;
// errors.cpp, beside the other shapes).
const std::vector<std::string_view>& object_meta_order();

// One row per object, with the kind's columns. `list_meta` becomes the
// table's metadata (resourceVersion, continue). AGE and other times are
// printed as of `now` (Unix seconds; the clock's when absent).
json make_table(const Kind& kind, const std::vector<json>& objects, IncludeObject include,
                json list_meta, std::optional<int64_t> now = std::nullopt);

// The JSON text of a Table (what json_response writes of make_table's),
// written row by row as a LIST reads its objects: no tree of the whole
// table, and no decoded object outlives its row. A stored object of a
// built-in kind is not decoded whole: its metadata is copied as stored text
// and the printer sees the object without metadata.managedFields, which no
// printer reads (kubectl's LIST of 5,000 pods spent 90 % of its CPU decoding
// and re-encoding every object, and in malloc for their trees). A stored
// item's row is kept (table_rows.h) and written again from text while the
// item is unchanged; only its AGE is printed anew.
class TableWriter {
 public:
  // Times are printed as of `now` (Unix seconds; the clock's when absent).
  TableWriter(const Kind& kind, IncludeObject include, const json& list_meta,
              std::optional<int64_t> now = std::nullopt);

  // A row of a decoded object.
  void add(const json& obj);
  // A row of a stored object (the store's JSON text; its resourceVersion is
  // kv.mod_revision). A custom kind's object is decoded whole (its columns
  // are JSONPaths into it). False, with nothing added, when the text is not
  // a JSON object.
  bool add_stored(const storage::KeyValuePtr& kv);
  // Room for `bytes` more of rows: a LIST of thousands of objects otherwise
  // copies its body again each time the string grows.
  void reserve(size_t bytes) { out_.reserve(out_.size() + bytes); }
  // The finished body (the writer is spent).
  std::string finish();

 private:
  void begin_row(const json& cells);
  // The row of a stored object of a built-in kind, printed; nullptr when
  // its text is not a JSON object. `cells` gets the printer's cells as of
  // now_; with `keep` the row keeps them when only AGE depends on the time.
  std::shared_ptr<TableRow> print_stored(const storage::KeyValue& kv, json& cells, bool keep);
  void keep_cells(TableRow& row, const json& obj, const json& cells) const;

  const Kind& kind_;
  std::string resource_;  // group/version/plural, as rows are kept for
  IncludeObject include_;
  int64_t now_;
  int age_column_ = -1;  // the "Age" column's index, if the kind has one
  std::string out_;
  bool first_row_ = true;
};

}  // namespace vkube::apiserver
