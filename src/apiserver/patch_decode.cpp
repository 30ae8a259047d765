// A patched object read back into kube's Go types: where a value's JSON
// type cannot fill its field, kube's decoders refuse the patch (422) in
// their own words, which tools match (kubectl's test-cmd looks for "cannot
// restore map from string").
#include "patch_decode.h"

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>

#include "policy.h"
#include "yaml_encode.h"

namespace vkube::apiserver {

namespace {

using schema::Field;
using schema::Message;

struct Mismatch {
  const json* value = nullptr;
  const Field* field = nullptr;
  bool element = false;     // the value is an element of the field's list or map
  std::string struct_name;  // the Go struct holding the field
  std::string path;         // JSON field names from the top, dot-joined
};

std::string go_scalar_type(schema::Type t, const Message* m) {
  switch (t) {
    case schema::Type::kString:
      return "string";
    case schema::Type::kBytes:
      return "[]uint8";
    case schema::Type::kBool:
      return "bool";
    case schema::Type::kInt32:
      return "int32";
    case schema::Type::kInt64:
      return "int64";
    case schema::Type::kUint32:
      return "uint32";
    case schema::Type::kUint64:
      return "uint64";
    case schema::Type::kDouble:
      return "float64";
    case schema::Type::kFloat:
      return "float32";
    case schema::Type::kMessage: {
      if (m == nullptr) return "struct";
      const std::string& pkg = m->package;
      return pkg.substr(pkg.rfind('.') + 1) + "." + m->name;
    }
  }
  return "string";
}

// The Go type of the field (or of one of its elements).
std::string go_type(const Field& f, bool element) {
  std::string value = go_scalar_type(f.is_map ? f.map_value : f.type, f.message);
  if (element) return value;
  if (f.is_map) return "map[string]" + value;
  return f.repeated ? "[]" + value : value;
}

// `v` is an integer; whether Go's integer type for `t` holds it.
bool fits_int_range(schema::Type t, const json& v) {
  const bool neg = v.is_number_integer() && !v.is_number_unsigned() && v.get<int64_t>() < 0;
  switch (t) {
    case schema::Type::kInt32:
      return neg ? v.get<int64_t>() >= INT32_MIN : v.get<uint64_t>() <= INT32_MAX;
    case schema::Type::kInt64:
      return neg || v.get<uint64_t>() <= INT64_MAX;
    case schema::Type::kUint32:
      return !neg && v.get<uint64_t>() <= UINT32_MAX;
    default:
      return !neg;
  }
}

bool fits_scalar(schema::Type t, const json& v, bool exact_ints) {
  switch (t) {
    case schema::Type::kString:
    case schema::Type::kBytes:
      return v.is_string();
    case schema::Type::kBool:
      return v.is_boolean();
    case schema::Type::kDouble:
    case schema::Type::kFloat:
      return v.is_number();
    case schema::Type::kMessage:
      return true;
    default:
      // encoding/json refuses an integer its Go type cannot hold.
      if (v.is_number_integer()) return !exact_ints || fits_int_range(t, v);
      if (!v.is_number_float() || exact_ints) return false;
      return std::trunc(v.get<double>()) == v.get<double>();
  }
}

std::optional<Mismatch> first_mismatch(const Message& m, const json& obj, const std::string& path,
                                       bool exact_ints, int depth);

// One value of field `f` (the whole value, or an element when `element`).
std::optional<Mismatch> check_value(const Field& f, const json& v, bool element,
                                    const Message& holder, const std::string& path, bool exact_ints,
                                    int depth) {
  if (v.is_null()) return std::nullopt;
  Mismatch bad{&v, &f, element, holder.name, path};
  if (!element && f.is_map) {
    if (!v.is_object()) return bad;
    for (auto it = v.begin(); it != v.end(); ++it)
      if (auto e = check_value(f, *it, true, holder, path, exact_ints, depth)) return e;
    return std::nullopt;
  }
  if (!element && f.repeated && f.type != schema::Type::kBytes) {
    if (!v.is_array()) return bad;
    for (const json& e : v)
      if (auto r = check_value(f, e, true, holder, path, exact_ints, depth)) return r;
    return std::nullopt;
  }
  const schema::Type t = f.is_map ? f.map_value : f.type;
  if (t != schema::Type::kMessage) {
    if (fits_scalar(t, v, exact_ints)) return std::nullopt;
    return bad;
  }
  // Quantities, times, int-or-strings and raw JSON read themselves.
  if (f.message == nullptr || f.message->json_format != schema::JsonFormat::kObject)
    return std::nullopt;
  if (!v.is_object()) return bad;
  return first_mismatch(*f.message, v, path, exact_ints, depth + 1);
}

std::optional<Mismatch> first_mismatch(const Message& m, const json& obj, const std::string& path,
                                       bool exact_ints, int depth) {
  if (depth > 64 || !obj.is_object()) return std::nullopt;
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    const Field* f = m.field(it.key());
    if (f == nullptr) continue;  // unknown fields are check_fields' business
    const std::string sub = path.empty() ? it.key() : path + "." + it.key();
    // The struct that declares the field (an inlined one's own name).
    const Message* holder = &m;
    if (!m.by_json.contains(it.key()))
      for (const Field* in : m.inlined)
        if (in->message->field(it.key()) != nullptr) holder = in->message;
    if (auto bad = check_value(*f, *it, false, *holder, sub, exact_ints, depth)) return bad;
  }
  return std::nullopt;
}

// runtime.DefaultUnstructuredConverter's words for a value it cannot restore.
std::string converter_error(const Mismatch& bad) {
  const json& v = *bad.value;
  const Field& f = *bad.field;
  const std::string from = v.is_string()         ? "string"
                           : v.is_boolean()      ? "bool"
                           : v.is_number_float() ? "float64"
                           : v.is_number()       ? "int64"
                           : v.is_array()        ? "slice"
                                                 : "map";
  if (!bad.element && f.is_map) return "cannot restore map from " + from;
  if (!bad.element && f.repeated) return "cannot restore slice from " + from;
  const schema::Type t = f.is_map ? f.map_value : f.type;
  if (t == schema::Type::kMessage) return "cannot restore struct from: " + from;
  const std::string to = go_scalar_type(t, nullptr);
  const bool to_int = t != schema::Type::kString && t != schema::Type::kBytes &&
                      t != schema::Type::kBool && t != schema::Type::kDouble &&
                      t != schema::Type::kFloat;
  if ((from == "int64" && to == "string") || (from == "float64" && to_int))
    return "cannot convert " + from + " to " + to;
  return "unrecognized type: " + to;
}

// encoding/json's UnmarshalTypeError, as kube's JSON decoder reports it.
std::string json_decode_error(const Mismatch& bad) {
  const json& v = *bad.value;
  std::string what = v.is_string()    ? "string"
                     : v.is_boolean() ? "bool"
                     : v.is_array()   ? "array"
                     : v.is_object()  ? "object"
                                      : "number";
  const schema::Type t = bad.field->is_map ? bad.field->map_value : bad.field->type;
  if (v.is_number() && t != schema::Type::kString && t != schema::Type::kBytes &&
      t != schema::Type::kBool)
    what += " " + v.dump();
  return "json: cannot unmarshal " + what + " into Go struct field " + bad.struct_name + "." +
         bad.path + " of type " + go_type(*bad.field, bad.element);
}

// kube's answer to a patch whose result does not decode: 422, the patch (as
// Go printed it) as the invalid value of the field "patch".
Status undecodable_patch(const std::string& shown, const std::string& why) {
  return Status::invalid(" \"\" is invalid: patch: Invalid value: " + rbac::go_quote(shown) + ": " +
                         why);
}

}  // namespace

// fmt's %v of the map the patch was read into: map[key:value ...].
std::string go_value(const json& v) {
  if (v.is_object()) {
    std::string s = "map[";
    bool first = true;
    for (auto it = v.begin(); it != v.end(); ++it) {
      if (!first) s += ' ';
      first = false;
      s += it.key() + ":" + go_value(*it);
    }
    return s + "]";
  }
  if (v.is_array()) {
    std::string s = "[";
    for (size_t i = 0; i < v.size(); ++i) s += (i ? " " : "") + go_value(v[i]);
    return s + "]";
  }
  if (v.is_string()) return v.get<std::string>();
  if (v.is_null()) return "<nil>";
  if (v.is_number_float()) return format_go_float(v.get<double>());
  return v.dump();
}

// kube decodes a strategic merge result with the unstructured converter and
// the others with its JSON decoder; each words the error its own way. A
// mismatch the stored object already had is not the patch's doing.
Status check_decodes(PatchType type, const json& target, const json& patch, const json& out,
                     const Message* m) {
  if (m == nullptr) return Status::ok();
  const bool smp = type == PatchType::kStrategic;
  auto bad = first_mismatch(*m, out, "", /*exact_ints=*/!smp, 0);
  if (!bad) return Status::ok();
  auto before = first_mismatch(*m, target, "", !smp, 0);
  if (before && before->path == bad->path) return Status::ok();
  if (smp) return undecodable_patch(go_value(patch), converter_error(*bad));
  return undecodable_patch(out.dump(-1, ' ', false, json::error_handler_t::replace),
                           json_decode_error(*bad));
}

// A body is read by the same JSON decoder as a JSON patch's result (a YAML or
// protobuf one as the JSON it becomes), so a value of the wrong JSON type is
// refused as undecodable (400) before any validation runs.
Status check_body_decodes(const json& obj, const Message* m, const std::string& kind,
                          const std::string& version) {
  if (m == nullptr) return Status::ok();
  auto bad = first_mismatch(*m, obj, "", /*exact_ints=*/true, 0);
  if (!bad) return Status::ok();
  return Status::bad_request(kind + " in version \"" + version + "\" cannot be handled as a " +
                             kind + ": " + json_decode_error(*bad));
}

}  // namespace vkube::apiserver
