// /openapi/v2 as protobuf: the Swagger 2.0 document in the wire form of gnostic's
// openapi.v2.Document (application/com.github.proto-openapi.spec.v2@v1.0+protobuf), which is
// the only form kubectl asks for. kubectl reads it to validate objects whose kind its OpenAPI v3
// check cannot place (create-only kinds such as TokenReview), so `kubectl create -f` works for
// every kind with default validation. Field numbers are those of gnostic's OpenAPIv2.proto; only
// what vkube's documents hold is written (paths, operations, parameters, responses, definitions
// and their schemas, vendor extensions as YAML, which JSON is).
#include "openapi_v2_proto.h"

#include <cstdint>
#include <cstring>

namespace vkube::apiserver {

namespace {

// A protobuf message being written: fields appended in any order.
class Msg {
 public:
  void varint_field(uint32_t number, uint64_t v) {
    varint((static_cast<uint64_t>(number) << 3) | 0);
    varint(v);
  }
  void boolean(uint32_t number, bool v) {
    if (v) varint_field(number, 1);
  }
  void str(uint32_t number, std::string_view s) {
    varint((static_cast<uint64_t>(number) << 3) | 2);
    varint(s.size());
    out_.append(s);
  }
  void msg(uint32_t number, const Msg& m) { str(number, m.out_); }
  void dbl(uint32_t number, double d) {
    varint((static_cast<uint64_t>(number) << 3) | 1);
    char b[8];
    std::memcpy(b, &d, 8);
    out_.append(b, 8);
  }
  std::string take() { return std::move(out_); }

 private:
  void varint(uint64_t v) {
    for (; v >= 0x80; v >>= 7) out_.push_back(static_cast<char>((v & 0x7f) | 0x80));
    out_.push_back(static_cast<char>(v));
  }
  std::string out_;
};

std::string text_of(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// openapi.v2.Any: the value as YAML (JSON is YAML).
Msg any_of(const json& v) {
  Msg m;
  m.str(2, v.dump());
  return m;
}

// Vendor extensions ("x-..." keys) as NamedAny entries of field `number`.
void extensions(Msg& m, uint32_t number, const json& obj) {
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    if (!it.key().starts_with("x-")) continue;
    Msg named;
    named.str(1, it.key());
    named.msg(2, any_of(it.value()));
    m.msg(number, named);
  }
}

Msg schema_of(const json& s);

void strings(Msg& m, uint32_t number, const json& v) {
  if (v.is_string()) m.str(number, v.get<std::string>());
  if (!v.is_array()) return;
  for (const json& e : v)
    if (e.is_string()) m.str(number, e.get<std::string>());
}

Msg named_schemas(const json& obj) {  // Properties and Definitions: repeated NamedSchema = 1
  Msg m;
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    if (!it->is_object()) continue;
    Msg named;
    named.str(1, it.key());
    named.msg(2, schema_of(it.value()));
    m.msg(1, named);
  }
  return m;
}

// openapi.v2.Schema.
Msg schema_of(const json& s) {
  Msg m;
  if (!s.is_object()) return m;
  if (auto v = text_of(s, "$ref"); !v.empty()) m.str(1, v);
  if (auto v = text_of(s, "format"); !v.empty()) m.str(2, v);
  if (auto v = text_of(s, "title"); !v.empty()) m.str(3, v);
  if (auto v = text_of(s, "description"); !v.empty()) m.str(4, v);
  if (s.contains("default")) m.msg(5, any_of(s["default"]));
  const std::pair<const char*, uint32_t> doubles[] = {
      {"multipleOf", 6}, {"maximum", 7}, {"minimum", 9}};
  for (const auto& [key, number] : doubles)
    if (s.contains(key) && s[key].is_number()) m.dbl(number, s[key].get<double>());
  const std::pair<const char*, uint32_t> flags[] = {
      {"exclusiveMaximum", 8}, {"exclusiveMinimum", 10}, {"uniqueItems", 16}, {"readOnly", 27}};
  for (const auto& [key, number] : flags)
    if (s.contains(key) && s[key].is_boolean()) m.boolean(number, s[key].get<bool>());
  const std::pair<const char*, uint32_t> ints[] = {{"maxLength", 11},     {"minLength", 12},
                                                   {"maxItems", 14},      {"minItems", 15},
                                                   {"maxProperties", 17}, {"minProperties", 18}};
  for (const auto& [key, number] : ints)
    if (s.contains(key) && s[key].is_number_integer())
      m.varint_field(number, static_cast<uint64_t>(s[key].get<int64_t>()));
  if (auto v = text_of(s, "pattern"); !v.empty()) m.str(13, v);
  if (s.contains("required")) strings(m, 19, s["required"]);
  if (s.contains("enum") && s["enum"].is_array())
    for (const json& e : s["enum"]) m.msg(20, any_of(e));
  if (s.contains("additionalProperties")) {
    Msg ap;
    const json& a = s["additionalProperties"];
    if (a.is_boolean()) ap.boolean(2, a.get<bool>());
    else ap.msg(1, schema_of(a));
    m.msg(21, ap);
  }
  if (s.contains("type")) {
    Msg type;
    strings(type, 1, s["type"]);
    m.msg(22, type);
  }
  if (s.contains("items")) {
    Msg items;
    if (s["items"].is_array()) {
      for (const json& i : s["items"]) items.msg(1, schema_of(i));
    } else {
      items.msg(1, schema_of(s["items"]));
    }
    m.msg(23, items);
  }
  if (s.contains("allOf") && s["allOf"].is_array())
    for (const json& a : s["allOf"]) m.msg(24, schema_of(a));
  if (s.contains("properties") && s["properties"].is_object())
    m.msg(25, named_schemas(s["properties"]));
  if (auto v = text_of(s, "discriminator"); !v.empty()) m.str(26, v);
  if (s.contains("example")) m.msg(30, any_of(s["example"]));
  extensions(m, 31, s);
  return m;
}

// openapi.v2.Parameter of one parameter object.
Msg parameter_msg(const json& p) {
  const std::string in = text_of(p, "in");
  Msg param;
  if (in == "body") {
    Msg body;
    if (auto v = text_of(p, "description"); !v.empty()) body.str(1, v);
    body.str(2, text_of(p, "name"));
    body.str(3, in);
    body.boolean(4, p.value("required", false));
    if (p.contains("schema")) body.msg(5, schema_of(p["schema"]));
    extensions(body, 6, p);
    param.msg(1, body);
  } else {
    // Query and form parameters number their fields one way, path and header ones another
    // (they have no allowEmptyValue).
    const bool query_like = in == "query" || in == "formData";
    Msg sub;
    sub.boolean(1, p.value("required", false));
    sub.str(2, in);
    if (auto v = text_of(p, "description"); !v.empty()) sub.str(3, v);
    sub.str(4, text_of(p, "name"));
    if (query_like && p.value("allowEmptyValue", false)) sub.boolean(5, true);
    const uint32_t base = query_like ? 6 : 5;
    if (auto v = text_of(p, "type"); !v.empty()) sub.str(base, v);
    if (auto v = text_of(p, "format"); !v.empty()) sub.str(base + 1, v);
    if (p.contains("uniqueItems") && p["uniqueItems"].is_boolean())
      sub.boolean(query_like ? 20 : 19, p["uniqueItems"].get<bool>());
    extensions(sub, query_like ? 23 : 22, p);
    Msg non_body;
    const uint32_t which = in == "header" ? 1 : in == "formData" ? 2 : in == "query" ? 3 : 4;
    non_body.msg(which, sub);
    param.msg(2, non_body);
  }
  return param;
}

// openapi.v2.ParametersItem of one parameter object: the parameter, or a
// JsonReference to a shared one.
Msg parameter_of(const json& p) {
  Msg item;
  if (auto ref = text_of(p, "$ref"); !ref.empty()) {
    Msg r;
    r.str(1, ref);
    item.msg(2, r);
    return item;
  }
  item.msg(1, parameter_msg(p));
  return item;
}

Msg operation_of(const json& op) {
  Msg m;
  if (op.contains("tags")) strings(m, 1, op["tags"]);
  if (auto v = text_of(op, "summary"); !v.empty()) m.str(2, v);
  if (auto v = text_of(op, "description"); !v.empty()) m.str(3, v);
  if (auto v = text_of(op, "operationId"); !v.empty()) m.str(5, v);
  if (op.contains("produces")) strings(m, 6, op["produces"]);
  if (op.contains("consumes")) strings(m, 7, op["consumes"]);
  if (op.contains("parameters") && op["parameters"].is_array())
    for (const json& p : op["parameters"])
      if (p.is_object()) m.msg(8, parameter_of(p));
  if (op.contains("responses") && op["responses"].is_object()) {
    Msg responses;
    for (auto it = op["responses"].begin(); it != op["responses"].end(); ++it) {
      if (!it->is_object()) continue;
      Msg response;
      response.str(1, text_of(it.value(), "description"));
      if (it->contains("schema")) {
        Msg item;
        item.msg(1, schema_of((*it)["schema"]));
        response.msg(2, item);
      }
      Msg value;
      value.msg(1, response);
      Msg named;
      named.str(1, it.key());
      named.msg(2, value);
      responses.msg(1, named);
    }
    m.msg(9, responses);
  }
  if (op.contains("schemes")) strings(m, 10, op["schemes"]);
  if (op.value("deprecated", false)) m.boolean(11, true);
  extensions(m, 13, op);
  return m;
}

Msg path_item_of(const json& item) {
  Msg m;
  const std::pair<const char*, uint32_t> methods[] = {{"get", 2},     {"put", 3},  {"post", 4},
                                                      {"delete", 5},  {"options", 6},
                                                      {"head", 7},    {"patch", 8}};
  for (const auto& [method, number] : methods)
    if (item.contains(method) && item[method].is_object())
      m.msg(number, operation_of(item[method]));
  if (item.contains("parameters") && item["parameters"].is_array())
    for (const json& p : item["parameters"])
      if (p.is_object()) m.msg(9, parameter_of(p));
  extensions(m, 10, item);
  return m;
}

}  // namespace

std::string openapi_v2_protobuf(const json& doc) {
  Msg d;
  d.str(1, text_of(doc, "swagger"));
  if (doc.contains("info") && doc["info"].is_object()) {
    Msg info;
    info.str(1, text_of(doc["info"], "title"));
    info.str(2, text_of(doc["info"], "version"));
    d.msg(2, info);
  }
  if (doc.contains("paths") && doc["paths"].is_object()) {
    Msg paths;
    for (auto it = doc["paths"].begin(); it != doc["paths"].end(); ++it) {
      if (!it->is_object()) continue;
      Msg named;
      named.str(1, it.key());
      named.msg(2, path_item_of(it.value()));
      paths.msg(2, named);
    }
    d.msg(8, paths);
  }
  if (doc.contains("definitions") && doc["definitions"].is_object())
    d.msg(9, named_schemas(doc["definitions"]));
  if (doc.contains("parameters") && doc["parameters"].is_object()) {
    Msg shared;  // openapi.v2.ParameterDefinitions
    for (auto it = doc["parameters"].begin(); it != doc["parameters"].end(); ++it) {
      if (!it->is_object()) continue;
      Msg named;
      named.str(1, it.key());
      named.msg(2, parameter_msg(it.value()));
      shared.msg(1, named);
    }
    d.msg(10, shared);
  }
  return d.take();
}

}  // namespace vkube::apiserver
