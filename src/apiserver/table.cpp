#include "table.h"

#include <array>
#include <charconv>

#include "builtin/tables_util.h"
#include "custom_resources.h"
#include "errors.h"
#include "kinds.h"
#include "object.h"
#include "vkube/common/json_scan.h"

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

namespace {

json column_definitions(const api::Resource& r) {
  json columns = json::array();
  for (const api::Column& c : r.columns) {
    json col = {{"name", c.name},
                {"type", c.type},
                {"format", c.format},
                {"description", c.description},
                {"priority", c.priority}};
    columns.push_back(std::move(col));
  }
  return columns;
}

json cells_of(const Kind& kind, const json& obj, int64_t now) {
  return kind.resource.is_custom ? custom_table_cells(kind, obj, now)
                                 : builtin::table_cells(kind.resource, obj, now);
}

// --- JSON text, read without decoding -------------------------------------

constexpr size_t npos = std::string_view::npos;

// One member of an object: its key as written between the quotes (escapes
// left as they are) and its value, as text or as a decoded value.
struct Member {
  std::string_view key;
  std::string_view text;
  const json* value = nullptr;
};

// The members of the JSON object text `s`, in order; false when `s` is not
// an object.
bool members_of(std::string_view s, std::vector<Member>& out) {
  out.clear();
  return json_scan::for_each_member(s, [&out](std::string_view key, std::string_view value) {
    out.push_back({key, value});
    return true;
  });
}

void json_members(const json& obj, std::vector<Member>& out) {
  out.clear();
  for (auto it = obj.begin(); it != obj.end(); ++it) out.push_back({it.key(), {}, &*it});
}

// A key as a json object holds it (escapes decoded).
std::string unescaped(std::string_view key) {
  if (key.find('\\') == npos) return std::string(key);
  json k = json::parse("\"" + std::string(key) + "\"", nullptr, false);
  return k.is_string() ? k.get<std::string>() : std::string(key);
}

constexpr std::array<std::string_view, 5> kObjectOrder = {"kind", "apiVersion", "metadata", "spec",
                                                          "status"};

template <typename Names>
bool listed(const Names& order, std::string_view key) {
  for (std::string_view k : order)
    if (k == key) return true;
  return false;
}

// True when a key needs no escaping in JSON.
bool plain(std::string_view k) {
  for (char c : k)
    if (c == '"' || c == '\\' || static_cast<unsigned char>(c) < 0x20) return false;
  return true;
}

class Writer {
 public:
  explicit Writer(std::string& out)
      : out_(out),
        dump_(nlohmann::detail::output_adapter<char, std::string>(out), ' ',
              json::error_handler_t::replace) {}

  void value(const Member& m) {
    if (m.value)
      dump_.dump(*m.value, false, false, 0);
    else
      out_.append(m.text);
  }
  void key(std::string_view k, bool& first) {
    if (!first) out_ += ',';
    first = false;
    if (plain(k)) {
      out_ += '"';
      out_ += k;
      out_ += "\":";
    } else {
      dump_.dump(json(k), false, false, 0);
      out_ += ':';
    }
  }
  // A stored member's key is already escaped as JSON writes it.
  void raw_key(const Member& m, bool& first) {
    if (m.value) return key(m.key, first);
    if (!first) out_ += ',';
    first = false;
    out_ += '"';
    out_ += m.key;
    out_ += "\":";
  }

  // An object's members in `order`, then the others as they come (sorted,
  // as stored). resourceVersion, when `rv` is set, replaces any stored one.
  template <typename Names>
  void ordered(const std::vector<Member>& members, const Names& order, const std::string* rv) {
    out_ += '{';
    bool first = true;
    for (std::string_view k : order) {
      if (rv && k == "resourceVersion") {
        key(k, first);
        dump_.dump(json(*rv), false, false, 0);
        continue;
      }
      for (const Member& m : members) {
        if (m.key != k) continue;
        key(k, first);
        value(m);
        break;
      }
    }
    for (const Member& m : members) {
      if (listed(order, m.key)) continue;
      raw_key(m, first);
      value(m);
    }
    out_ += '}';
  }

  std::string& out() { return out_; }

 private:
  std::string& out_;
  nlohmann::detail::serializer<json> dump_;
};

// The row's object: PartialObjectMetadata, or the whole object with its kind
// and apiVersion, as make_table builds it and json_response writes it.
// `metadata` is the object's metadata as JSON in kube's field order.
void write_object(Writer& w, const api::Resource& r, IncludeObject include,
                  const std::vector<Member>& top, std::string_view metadata) {
  std::string& out = w.out();
  if (include == IncludeObject::kMetadata) {
    out += R"(,"object":{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":)";
    out += metadata;
    out += '}';
    return;
  }
  out += ",\"object\":{";
  bool first = true;
  const json kind = r.kind, api_version = r.gv.api_version();
  w.key("kind", first);
  w.value({{}, {}, &kind});
  w.key("apiVersion", first);
  w.value({{}, {}, &api_version});
  w.key("metadata", first);
  out += metadata;
  for (std::string_view k : {std::string_view("spec"), std::string_view("status")}) {
    for (const Member& m : top) {
      if (m.key != k) continue;
      w.key(k, first);
      w.value(m);
    }
  }
  for (const Member& m : top) {
    if (listed(kObjectOrder, m.key)) continue;
    w.raw_key(m, first);
    w.value(m);
  }
  out += '}';
}

// The AGE cell's text (tables::age) of an object created at `created`.
std::string age_text(std::optional<int64_t> created, int64_t now) {
  return created ? builtin::human_duration(now - *created) : "<unknown>";
}

// How far ahead a printer is run a second time to tell the cells that
// depend on the time: any duration kube prints differs over 31 years.
constexpr int64_t kProbeSeconds = 1'000'000'000;

}  // namespace

json make_table(const Kind& kind, const std::vector<json>& objects, IncludeObject include,
                json list_meta, std::optional<int64_t> at) {
  const api::Resource& r = kind.resource;
  json rows = json::array();
  const int64_t now = at.value_or(now_unix());
  for (const json& obj : objects) {
    json row = {{"cells", cells_of(kind, obj, now)}};
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
          {"columnDefinitions", column_definitions(r)},
          {"rows", std::move(rows)}};
}

TableWriter::TableWriter(const Kind& kind, IncludeObject include, const json& list_meta,
                         std::optional<int64_t> now)
    : kind_(kind),
      resource_(kind.resource.gv.group + "/" + kind.resource.gv.version + "/" +
                kind.resource.plural),
      include_(include),
      now_(now.value_or(now_unix())) {
  for (size_t i = 0; i < kind.resource.columns.size(); ++i)
    if (kind.resource.columns[i].name == "Age") age_column_ = static_cast<int>(i);
  // The table without rows, as json_response writes it, cut before the
  // rows' closing bracket.
  json head = {{"kind", "Table"},
               {"apiVersion", "meta.k8s.io/v1"},
               {"metadata", list_meta},
               {"columnDefinitions", column_definitions(kind.resource)},
               {"rows", json::array()}};
  append_json(out_, head);
  out_.resize(out_.size() - 2);  // "]}"
}

void TableWriter::begin_row(const json& cells) {
  if (!first_row_) out_ += ',';
  first_row_ = false;
  out_ += "{\"cells\":";
  append_json(out_, cells);
}

void TableWriter::add(const json& obj) {
  begin_row(cells_of(kind_, obj, now_));
  if (include_ == IncludeObject::kNone) {
    out_ += '}';
    return;
  }
  static const json kEmpty = json::object();
  auto m = obj.find("metadata");
  const json& metadata = m != obj.end() && m->is_object() ? *m : kEmpty;
  std::vector<Member> top, meta;
  json_members(obj, top);
  json_members(metadata, meta);
  std::string ordered_meta;
  Writer(ordered_meta).ordered(meta, object_meta_order(), nullptr);
  Writer w(out_);
  write_object(w, kind_.resource, include_, top, ordered_meta);
  out_ += '}';
}

namespace {

// A pod's spec as the pod printer reads it (builtin/tables_core.cpp: the
// containers' count, the init containers, nodeName, readinessGates): the
// containers, most of a pod's bytes, become empty objects instead of being
// parsed, and fields no column reads are left out. Parsing whole specs made
// a Table LIST of pods cost more than the JSON list.
bool printer_pod_spec(std::string_view text, json& spec) {
  spec = json::object();
  bool ok = true;
  bool walked = json_scan::for_each_member(text, [&](std::string_view key, std::string_view v) {
    if (key == "containers") {
      json& list = spec["containers"];
      list = json::array();
      ok =
          json_scan::for_each_element(v, [&](std::string_view) { list.push_back(json::object()); });
    } else if (key == "initContainers" || key == "nodeName" || key == "readinessGates") {
      json value = json::parse(v, nullptr, false);
      ok = !value.is_discarded();
      spec[std::string(key)] = std::move(value);
    }
    return ok;
  });
  return walked && ok;
}

}  // namespace

std::shared_ptr<TableRow> TableWriter::print_stored(const storage::KeyValue& kv, json& cells,
                                                    bool keep) {
  thread_local std::vector<Member> top, meta;
  if (!members_of(std::string_view(kv.value), top)) return nullptr;
  const bool pod = kind_.resource.gv.group.empty() && kind_.resource.plural == "pods";
  meta.clear();
  // What the printer sees: the object as decoded, less managedFields.
  json obj = json::object();
  for (const Member& m : top) {
    if (m.key == "metadata") {
      if (!members_of(m.text, meta)) return nullptr;
      json& md = obj["metadata"];
      md = json::object();
      for (const Member& f : meta) {
        if (f.key == "managedFields" || f.key == "resourceVersion") continue;
        json v = json::parse(f.text, nullptr, false);
        if (v.is_discarded()) return nullptr;
        md[unescaped(f.key)] = std::move(v);
      }
      continue;
    }
    if (pod && m.key == "spec") {
      if (!printer_pod_spec(m.text, obj["spec"])) return nullptr;
      continue;
    }
    json v = json::parse(m.text, nullptr, false);
    if (v.is_discarded()) return nullptr;
    obj[unescaped(m.key)] = std::move(v);
  }
  const std::string rv = std::to_string(kv.mod_revision);
  obj["metadata"]["resourceVersion"] = rv;
  cells = cells_of(kind_, obj, now_);
  auto row = std::make_shared<TableRow>();
  row->resource = resource_;
  Writer(row->metadata).ordered(meta, object_meta_order(), &rv);
  if (keep) keep_cells(*row, obj, cells);
  return row;
}

void TableWriter::keep_cells(TableRow& row, const json& obj, const json& cells) const {
  row.created =
      builtin::tables::parse_time(builtin::tables::find(obj, {"metadata", "creationTimestamp"}));
  // Cells that differ when printed later depend on the time; only AGE may,
  // and only as printed from creationTimestamp.
  const json later = cells_of(kind_, obj, now_ + kProbeSeconds);
  if (!cells.is_array() || !later.is_array() || later.size() != cells.size()) return;
  for (size_t i = 0; i < cells.size(); ++i) {
    if (static_cast<int>(i) != age_column_) {
      if (cells[i] != later[i]) return;
    } else if (cells[i] != age_text(row.created, now_) ||
               later[i] != age_text(row.created, now_ + kProbeSeconds)) {
      return;
    }
  }
  // The cells' text, cut where AGE goes.
  std::string text = "[";
  size_t age_at = std::string::npos;
  for (size_t i = 0; i < cells.size(); ++i) {
    if (i > 0) text += ',';
    if (static_cast<int>(i) == age_column_) {
      age_at = text.size();
      continue;
    }
    append_json(text, cells[i]);
  }
  text += ']';
  row.has_age = age_at != std::string::npos;
  row.cells_head = text.substr(0, age_at);
  if (row.has_age) row.cells_tail = text.substr(age_at);
  row.cells_kept = true;
}

bool TableWriter::add_stored(const storage::KeyValuePtr& kv) {
  if (kind_.resource.is_custom) {
    auto obj = decode_stored(*kv);
    if (!obj.is_ok()) return false;
    add(*obj);
    return true;
  }
  TableRowCache& cache = TableRowCache::shared();
  std::shared_ptr<const TableRow> row = cache.find(kv, resource_);
  json cells;  // the printer's, for a row without kept cells
  if (!row || !row->cells_kept) {
    std::shared_ptr<TableRow> printed = print_stored(*kv, cells, /*keep=*/!row);
    if (!printed) return false;
    if (!row) cache.put(kv, printed);
    row = std::move(printed);
  }
  if (!first_row_) out_ += ',';
  first_row_ = false;
  out_ += "{\"cells\":";
  if (row->cells_kept) {
    out_ += row->cells_head;
    if (row->has_age) {
      out_ += '"';
      out_ += age_text(row->created, now_);
      out_ += '"';
      out_ += row->cells_tail;
    }
  } else {
    append_json(out_, cells);
  }
  if (include_ == IncludeObject::kMetadata) {
    out_ +=
        R"(,"object":{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":)";
    out_ += row->metadata;
    out_ += '}';
  } else if (include_ == IncludeObject::kObject) {
    thread_local std::vector<Member> top;
    if (!members_of(std::string_view(kv->value), top)) return false;
    Writer w(out_);
    write_object(w, kind_.resource, include_, top, row->metadata);
  }
  out_ += '}';
  return true;
}

std::string TableWriter::finish() {
  out_ += "]}\n";
  return std::move(out_);
}

}  // namespace vkube::apiserver
