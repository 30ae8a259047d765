// Label and field selectors with Kubernetes' syntax and semantics
// (k8s.io/apimachinery pkg/labels and pkg/fields, as of Kubernetes 1.32).
//
// Label selectors: "a=b", "a==b", "a!=b", "a in (x,y)", "a notin (x)", "a",
// "!a", "a>1", "a<1", comma-separated (AND), whitespace between tokens
// ignored. Field selectors: "f=v", "f==v", "f!=v", comma-separated (AND);
// values escape ',', '=' and '\' with '\'.
//
// Parsed selectors are immutable values: safe to share between threads.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "vkube/common/status.h"

namespace vkube::api {

using json = nlohmann::json;

struct LabelRequirement {
  // kGreaterThan/kLessThan compare labels as 64-bit integers ("gt", "lt").
  enum class Op {
    kEquals,
    kNotEquals,
    kIn,
    kNotIn,
    kExists,
    kDoesNotExist,
    kGreaterThan,
    kLessThan
  };
  std::string key;
  Op op;
  // Sorted. Parsed selectors also deduplicate; from_json keeps duplicates,
  // as Kubernetes does (they show in to_string only).
  std::vector<std::string> values;
};

class LabelSelector {
 public:
  // Everything matches an empty selector.
  LabelSelector() = default;

  // Parses the string form (labels.Parse). kBadRequest with Kubernetes'
  // message on bad syntax or an invalid label key/value, e.g.
  // "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt".
  // "" (or only whitespace) is the empty selector.
  static Result<LabelSelector> parse(std::string_view text);
  // From a metav1.LabelSelector object ({matchLabels, matchExpressions} with
  // operators In, NotIn, Exists, DoesNotExist). A null selector is empty (it
  // is the caller's choice whether an absent selector selects nothing, as
  // for most workload kinds in Kubernetes). kInvalid on a malformed object,
  // with Kubernetes' ValidateLabelSelector messages rooted at `field_path`,
  // e.g. "spec.selector.matchExpressions[0].values: Required value: ...";
  // several problems read "[first, second]".
  static Result<LabelSelector> from_json(const json& selector,
                                         std::string_view field_path = "selector");

  // `labels` is a JSON object of string values, or null. `!=` and `notin`
  // match objects without the key; `=`, `in`, `>` and `<` need it.
  bool matches(const json& labels) const;
  bool empty() const { return reqs_.empty(); }
  // Sorted by key (stable), as Kubernetes keeps them.
  const std::vector<LabelRequirement>& requirements() const { return reqs_; }
  // Canonical string form, e.g. "app=web,tier in (a,b)" ("==" prints as "=").
  std::string to_string() const;

 private:
  std::vector<LabelRequirement> reqs_;
};

struct FieldRequirement {
  std::string field;
  bool equals;        // false: !=
  std::string value;  // unescaped
};

class FieldSelector {
 public:
  FieldSelector() = default;
  // fields.ParseSelector: "" is the empty selector; terms are kept sorted by
  // their text. kBadRequest with Kubernetes' message, e.g.
  // "invalid selector: 'a'; can't understand 'a'". Field names are not
  // checked here: which fields a kind supports is the caller's business.
  static Result<FieldSelector> parse(std::string_view text);

  // `get` returns a field's value as a string, or nullopt when the object
  // has no such field, which reads as "" as in Kubernetes (so
  // "spec.nodeName=" matches an unscheduled pod).
  bool matches(const std::function<std::optional<std::string>(std::string_view)>& get) const;
  bool empty() const { return reqs_.empty(); }
  const std::vector<FieldRequirement>& requirements() const { return reqs_; }
  // "a=b,c!=d" with values escaped again.
  std::string to_string() const;

 private:
  std::vector<FieldRequirement> reqs_;
};

}  // namespace vkube::api
