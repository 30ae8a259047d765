// The kube-openapi value validator behind openapi_validate(), shared by structural_validate.cpp
// (types, combinators, strings, arrays, enums, objects) and structural_validate_number.cpp
// (numeric ranges). Private to the structural-schema library.
#pragma once

#include <array>
#include <string>
#include <string_view>

#include "structural_internal.h"

namespace vkube::apiserver::crd::detail {

// The keywords value validation reads, indexed for one pass over a schema node's keys.
// clang-format off
enum Kw : int {
  kType, kFormat, kNullable, kIntOrString, kEnum, kPattern, kMinLength, kMaxLength, kMinimum,
  kMaximum, kExclusiveMinimum, kExclusiveMaximum, kMultipleOf, kMinItems, kMaxItems,
  kUniqueItems, kItems, kProperties, kAdditionalProperties, kRequired, kMinProperties,
  kMaxProperties, kAllOf, kAnyOf, kOneOf, kNot, kKeywordCount
};

enum TypeBit : unsigned {
  kTNull = 1, kTBoolean = 2, kTInteger = 4, kTNumber = 8, kTString = 16, kTArray = 32,
  kTObject = 64
};
// clang-format on

// The validation keywords of one schema node, gathered in one pass over its keys.
class Keywords {
 public:
  explicit Keywords(const json& s);
  const json* operator[](Kw k) const { return kw_[k]; }
  const json* of(Kw k, json::value_t t) const {
    return kw_[k] != nullptr && kw_[k]->type() == t ? kw_[k] : nullptr;
  }
  bool is_true(Kw k) const {
    return kw_[k] != nullptr && kw_[k]->is_boolean() && kw_[k]->get<bool>();
  }
  std::string_view str(Kw k) const {
    return kw_[k] != nullptr && kw_[k]->is_string()
               ? std::string_view(kw_[k]->get_ref<const std::string&>())
               : std::string_view();
  }

 private:
  std::array<const json*, kKeywordCount> kw_{};
};

// The node's types as kube converts them: x-kubernetes-int-or-string means [integer, string].
struct SchemaType {
  unsigned bits = 0;
  std::string_view single;  // the one type, "" when none or two
  bool int_or_string = false;

  bool present() const { return int_or_string || !single.empty(); }
  std::string joined() const { return int_or_string ? "integer,string" : std::string(single); }
};
SchemaType schema_type(const Keywords& kw);

// Validates values below one base field path, tracking kube-openapi's path of the value.
class Validator {
 public:
  explicit Validator(const std::string& base) : base_(base) {}

  void validate(const json& s, const json& v, FieldErrors& out);

 private:
  // Restores the kube-openapi path when a child's validation is done.
  class Scope {
   public:
    explicit Scope(std::string& path) : path_(path), size_(path.size()) {}
    ~Scope() { path_.resize(size_); }
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    std::string& path_;
    std::size_t size_;
  };

  // apiextensions' conversion: the error's name, less a leading '.', below the base path.
  std::string field_of(std::string_view name) const;
  std::string nil_field() const { return base_.empty() ? "<nil>" : base_; }
  // A kube-openapi Validation error on the current path: "<path> in body <what>".
  void value_error(FieldErrors& out, json value, const std::string& what) const;
  void type_error(FieldErrors& out, std::string_view type, std::string_view got) const;
  // Errors kube-openapi raises without a field name (combinators, number ranges).
  void composite(FieldErrors& out, std::string message) const;

  void check_type(const Keywords& kw, const json& v, Kind k, FieldErrors& out) const;
  void check_any_of(const json& any, const json& v, FieldErrors& out);
  void check_one_of(const json& one, const json& v, FieldErrors& out);
  void check_all_of(const json& all, const json& v, FieldErrors& out);
  void check_combinators(const Keywords& kw, const json& v, FieldErrors& out);
  void check_string(const Keywords& kw, const json& v, FieldErrors& out) const;
  void check_array(const Keywords& kw, const json& v, FieldErrors& out);
  void check_enum(const Keywords& kw, const json& v, FieldErrors& out) const;
  void check_object(const Keywords& kw, const json& v, FieldErrors& out);
  void check_properties(const Keywords& kw, const json& v, FieldErrors& out);

  // structural_validate_number.cpp
  void check_number(const Keywords& kw, const json& v, Kind k, FieldErrors& out) const;
  void check_multiple(const json& factor, const json& v, Kind k, std::string_view type,
                      std::string_view format, FieldErrors& out) const;
  void check_bound(const json& bound, bool is_max, bool exclusive, const json& v, Kind k,
                   std::string_view type, std::string_view format, FieldErrors& out) const;
  std::string range_message(std::string_view prefix, std::string_view type,
                            std::string_view format) const;

  const std::string& base_;
  std::string path_;  // kube-openapi's path of the value being validated ("" at the top)
};

}  // namespace vkube::apiserver::crd::detail
