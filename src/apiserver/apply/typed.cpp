#include "typed.h"

#include <algorithm>
#include <array>
#include <unordered_map>

#include "schema_walk.h"

namespace vkube::apiserver::apply {

namespace {

using namespace detail;  // NOLINT(google-build-using-namespace): the walks' vocabulary
using schema::Field;
using schema::Message;

const json kEmptyObject = json::object();
const json kNull = nullptr;

// ---------------------------------------------------------------- fields_of

std::string type_name(const json& v) {
  switch (v.type()) {
    case json::value_t::string:
      return "string";
    case json::value_t::boolean:
      return "bool";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
      return "int64";
    case json::value_t::number_float:
      return "float64";
    case json::value_t::object:
      return "map";
    case json::value_t::array:
      return "list";
    default:
      return "null";
  }
}

// A scalar's JSON type against its field's; "" when it fits.
std::string scalar_mismatch(const Field* f, const json& v) {
  if (f == nullptr || v.is_null() || f->repeated || f->is_map) return "";
  switch (f->type) {
    case schema::Type::kString:
    case schema::Type::kBytes:
      return v.is_string() ? "" : "expected string, got " + type_name(v);
    case schema::Type::kBool:
      return v.is_boolean() ? "" : "expected boolean, got " + type_name(v);
    case schema::Type::kMessage:
      if (f->message == nullptr) return "";
      switch (f->message->json_format) {
        case schema::JsonFormat::kQuantity:
        case schema::JsonFormat::kIntOrString:
          return v.is_string() || v.is_number() ? ""
                                                : "expected string or number, got " + type_name(v);
        case schema::JsonFormat::kTime:
        case schema::JsonFormat::kMicroTime:
        case schema::JsonFormat::kDuration:
          return v.is_string() ? "" : "expected string, got " + type_name(v);
        case schema::JsonFormat::kObject:
          return v.is_object() ? "" : "expected map, got " + type_name(v);
        default:
          return "";
      }
    default:
      return v.is_number() ? "" : "expected numeric (int or float), got " + type_name(v);
  }
}

class FieldsOf {
 public:
  explicit FieldsOf(Scope scope) : scope_(scope) {}

  // Fills `out` (the node of `v`'s path) and returns false on a bad value,
  // with `where` the path below this node.
  bool walk(const json& v, const Type& t, const Field* f, Level lv, FieldSet& out,
            std::string& where) {
    Shape s = actual_shape(t, &v, nullptr);
    if (s == Shape::kLeaf) {
      if (t.shape != Shape::kLeaf && t.shape != Shape::kUntyped && !v.is_null()) {
        where = std::string(is_list(t.shape) ? ": expected list, got " : ": expected map, got ") +
                type_name(v);
        return false;
      }
      if (std::string m = scalar_mismatch(f, v); !m.empty()) {
        where = ": " + m;
        return false;
      }
      out.set_member();
      return true;
    }
    if (is_list(s)) {
      if (v.is_null()) {
        out.set_member();
        return true;
      }
      for (size_t i = 0; i < v.size(); ++i) {
        std::string missing;
        auto pe = item_pe(t, v[i], i, &missing);
        if (!pe) {
          where = ": element " + std::to_string(i) +
                  ": associative list with keys has an element "
                  "that omits key field \"" +
                  missing + "\" (and doesn't have default value)";
          return false;
        }
        FieldSet sub;
        if (!walk(v[i], element_type(t), nullptr, Level::kOther, sub, where)) {
          where = path_string({*pe}) + where;
          return false;
        }
        sub.set_member();
        out.add_child(std::move(*pe), std::move(sub));
      }
      return true;
    }
    // Structs and maps.
    if (v.is_null() || v.empty()) {
      out.set_member();
      return true;
    }
    for (auto it = v.begin(); it != v.end(); ++it) {
      if (skipped(lv, it.key(), scope_)) continue;
      Type ct = child_type(t, it.key(), lv);
      const Field* cf = s == Shape::kStruct ? t.message->field(it.key()) : nullptr;
      FieldSet sub;
      if (!walk(it.value(), ct, cf, child_level(lv, it.key()), sub, where)) {
        where = "." + it.key() + where;
        return false;
      }
      // Keys of maps (and of untyped objects) are members; struct fields only
      // when they hold nothing.
      if (s != Shape::kStruct || it.value().is_null() ||
          (it.value().is_object() && it.value().empty()))
        sub.set_member();
      if (lv == Level::kRoot && it.key() == "metadata") sub.set_member(false);
      out.add_child(field_pe(it.key()), std::move(sub));
    }
    return true;
  }

 private:
  Scope scope_;
};

// ---------------------------------------------------------------- compare

class Comparer {
 public:
  explicit Comparer(Scope scope) : scope_(scope) {}

  // `zero`: l is the zero value of a struct (a create), whose fields Go
  // always writes count as present.
  void cmp(const json* l, const json* r, const Type& t, bool zero, Level lv, FieldSet& ch,
           FieldSet& rm) {
    Shape s = actual_shape(t, l, r);
    if (is_mapish(s)) {
      auto empty = [](const json* v) { return v == nullptr || v->is_null() || v->empty(); };
      if (empty(l) && empty(r)) s = Shape::kLeaf;
    }
    if (s == Shape::kLeaf) {
      if (l == nullptr)
        ch.set_member();
      else if (r == nullptr)
        rm.set_member();
      else if (*l != *r)
        ch.set_member();
      return;
    }
    if (is_list(s)) {
      Items li = index_items(t, l), ri = index_items(t, r);
      Type et = element_type(t);
      std::unordered_map<std::string_view, const json*> lmap;
      for (const auto& [pe, v] : li) lmap.emplace(pe, v);
      std::unordered_map<std::string_view, const json*> rmap;
      for (const auto& [pe, v] : ri) rmap.emplace(pe, v);
      for (const auto& [pe, v] : ri) {
        if (rmap[pe] != v) continue;  // a duplicate
        auto lit = lmap.find(pe);
        item(pe, lit == lmap.end() ? nullptr : lit->second, v, et, ch, rm);
      }
      for (const auto& [pe, v] : li)
        if (!rmap.contains(pe) && lmap[pe] == v) item(pe, v, nullptr, et, ch, rm);
    } else {
      static const json kNoObject = json::object();
      const json& lo = (l && l->is_object() && !zero) ? *l : kNoObject;
      const json& ro = (r && r->is_object()) ? *r : kNoObject;
      auto a = lo.begin(), b = ro.begin();
      while (a != lo.end() || b != ro.end()) {
        const json *lc = nullptr, *rc = nullptr;
        const std::string* key;
        if (b == ro.end() || (a != lo.end() && a.key() < b.key())) {
          key = &a.key();
          lc = &*a++;
        } else if (a == lo.end() || b.key() < a.key()) {
          key = &b.key();
          rc = &*b++;
        } else {
          key = &a.key();
          lc = &*a++;
          rc = &*b++;
        }
        if (skipped(lv, *key, scope_)) continue;
        bool czero = false;
        if (zero) lc = zero_value(t, *key, &czero);
        if (lc == nullptr && rc == nullptr) continue;
        FieldSet cch, crm;
        cmp(lc, rc, child_type(t, *key, lv), czero, child_level(lv, *key), cch, crm);
        if (lv == Level::kRoot && *key == "metadata") {
          cch.set_member(false);
          crm.set_member(false);
        }
        ch.add_child(field_pe(*key), std::move(cch));
        rm.add_child(field_pe(*key), std::move(crm));
      }
    }
    if (l == nullptr)
      ch.set_member();
    else if (r == nullptr)
      rm.set_member();
  }

 private:
  void item(std::string_view pe, const json* l, const json* r, const Type& et, FieldSet& ch,
            FieldSet& rm) {
    FieldSet cch, crm;
    cmp(l, r, et, false, Level::kOther, cch, crm);
    ch.add_child(std::string(pe), std::move(cch));
    rm.add_child(std::string(pe), std::move(crm));
  }

  // The zero value Go gives field `key` of struct t: an empty struct for a
  // struct that is not a pointer, null for a required (not omitempty) list or
  // map, absent otherwise. The schema does not say which struct fields are
  // pointers; these are the value structs of the kinds' common shapes.
  static const json* zero_value(const Type& t, const std::string& key, bool* zero) {
    static constexpr std::array<std::string_view, 8> kValueStructs = {
        "metadata",    "spec",     "status",         "template",
        "jobTemplate", "strategy", "updateStrategy", "resources"};
    if (t.shape != Shape::kStruct) return nullptr;
    const Field* f = t.message->field(key);
    if (f == nullptr) return nullptr;
    if ((f->repeated || f->is_map) && f->required) return &kNull;
    if (f->is_message() && !f->repeated && object_message(f->message) &&
        std::find(kValueStructs.begin(), kValueStructs.end(), key) != kValueStructs.end()) {
      *zero = true;
      return &kEmptyObject;
    }
    return nullptr;
  }

  Scope scope_;
};

}  // namespace

Type object_type(const schema::Message* m) {
  return m ? Type{Shape::kStruct, m, nullptr} : Type{};
}

Result<FieldSet> fields_of(const json& obj, const Type& t, Scope scope) {
  FieldsOf w(scope);
  FieldSet out;
  std::string where;
  if (!w.walk(obj, t, nullptr, Level::kRoot, out, where)) {
    if (where.starts_with(": ")) where = where.substr(2);
    return Status::internal(where);
  }
  out.set_member(false);
  return out;
}

Comparison compare(const json* old, const json& next, const Type& t, Scope scope) {
  Comparison out;
  Comparer c(scope);
  if (old == nullptr)
    c.cmp(&kEmptyObject, &next, t, t.shape == Shape::kStruct, Level::kRoot, out.changed,
          out.removed);
  else
    c.cmp(old, &next, t, false, Level::kRoot, out.changed, out.removed);
  out.changed.set_member(false);
  out.removed.set_member(false);
  return out;
}

}  // namespace vkube::apiserver::apply
