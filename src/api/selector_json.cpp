// LabelSelector::from_json: a metav1.LabelSelector object, checked as
// Kubernetes' ValidateLabelSelector checks it (same field paths, same
// messages, same order) and turned into requirements as
// metav1.LabelSelectorAsSelector does.
#include <algorithm>
#include <string>
#include <vector>

#include "go_format.h"
#include "vkube/api/selector.h"
#include "vkube/api/validation.h"

namespace vkube::api {
namespace {

using Op = LabelRequirement::Op;

// For values of the wrong JSON type, which Kubernetes rejects while decoding.
std::string type_error(std::string_view path, const json& value, std::string_view expected) {
  return std::string(path) +
         ": Invalid value: " + value.dump(-1, ' ', false, json::error_handler_t::replace) +
         ": must be " + std::string(expected);
}

// A member that may be absent or null, which both read as its zero value.
const json* member(const json& object, const char* name) {
  auto it = object.find(name);
  return it == object.end() || it->is_null() ? nullptr : &*it;
}

// Reads an optional string member; a wrong type is reported and reads as "".
std::string string_member(const json& object, const char* name, const std::string& path,
                          std::vector<std::string>& errs) {
  const json* v = member(object, name);
  if (v == nullptr) return "";
  if (!v->is_string()) {
    errs.push_back(type_error(path, *v, "a string"));
    return "";
  }
  return v->get<std::string>();
}

void match_labels(const json& labels, const std::string& path, std::vector<std::string>& errs,
                  std::vector<LabelRequirement>& reqs) {
  if (!labels.is_object()) {
    errs.push_back(type_error(path, labels, "an object of strings"));
    return;
  }
  for (const auto& [key, value] : labels.items()) {
    for (const std::string& msg : validate_qualified_name(key)) {
      errs.push_back(go::invalid_value(path, key, msg));
    }
    if (!value.is_string()) {
      errs.push_back(type_error(path + "[" + key + "]", value, "a string"));
      continue;
    }
    const std::string& v = value.get_ref<const std::string&>();
    for (const std::string& msg : validate_label_value(v)) {
      errs.push_back(go::invalid_value(path, v, msg));
    }
    reqs.push_back({key, Op::kEquals, {v}});
  }
}

void match_expression(const json& expr, const std::string& path, std::vector<std::string>& errs,
                      std::vector<LabelRequirement>& reqs) {
  if (!expr.is_object()) {
    errs.push_back(type_error(path, expr, "an object"));
    return;
  }
  std::string key = string_member(expr, "key", path + ".key", errs);
  std::string op_name = string_member(expr, "operator", path + ".operator", errs);
  const std::string values_path = path + ".values";
  std::vector<std::string> values;
  if (const json* vs = member(expr, "values"); vs != nullptr && !vs->is_array()) {
    errs.push_back(type_error(values_path, *vs, "an array of strings"));
  } else if (vs != nullptr) {
    for (std::size_t i = 0; i < vs->size(); ++i) {
      if ((*vs)[i].is_string()) {
        values.push_back((*vs)[i].get<std::string>());
      } else {
        errs.push_back(
            type_error(values_path + "[" + std::to_string(i) + "]", (*vs)[i], "a string"));
      }
    }
  }

  std::optional<Op> op;
  if (op_name == "In" || op_name == "NotIn") {
    op = op_name == "In" ? Op::kIn : Op::kNotIn;
    if (values.empty()) {
      errs.push_back(values_path +
                     ": Required value: must be specified when `operator` is 'In' or 'NotIn'");
    }
  } else if (op_name == "Exists" || op_name == "DoesNotExist") {
    op = op_name == "Exists" ? Op::kExists : Op::kDoesNotExist;
    if (!values.empty()) {
      errs.push_back(values_path +
                     ": Forbidden: may not be specified when `operator` is 'Exists' or "
                     "'DoesNotExist'");
    }
  } else {
    errs.push_back(go::invalid_value(path + ".operator", op_name, "not a valid selector operator"));
  }
  for (const std::string& msg : validate_qualified_name(key)) {
    errs.push_back(go::invalid_value(path + ".key", key, msg));
  }
  for (std::size_t i = 0; i < values.size(); ++i) {
    for (const std::string& msg : validate_label_value(values[i])) {
      errs.push_back(
          go::invalid_value(values_path + "[" + std::to_string(i) + "]", values[i], msg));
    }
  }
  if (op) {
    std::sort(values.begin(), values.end());
    reqs.push_back({std::move(key), *op, std::move(values)});
  }
}

}  // namespace

Result<LabelSelector> LabelSelector::from_json(const json& selector, std::string_view field_path) {
  LabelSelector out;
  if (selector.is_null()) return out;
  const std::string root(field_path);
  if (!selector.is_object()) return Status::invalid(type_error(root, selector, "an object"));

  std::vector<std::string> errs;
  std::vector<LabelRequirement> reqs;
  if (const json* labels = member(selector, "matchLabels")) {
    match_labels(*labels, root + ".matchLabels", errs, reqs);
  }
  if (const json* exprs = member(selector, "matchExpressions"); exprs && !exprs->is_array()) {
    errs.push_back(type_error(root + ".matchExpressions", *exprs, "an array"));
  } else if (exprs) {
    for (std::size_t i = 0; i < exprs->size(); ++i) {
      match_expression((*exprs)[i], root + ".matchExpressions[" + std::to_string(i) + "]", errs,
                       reqs);
    }
  }
  if (!errs.empty()) return Status::invalid(go::aggregate(errs));

  // Kubernetes sorts with sort.Sort, which is stable for selectors this small.
  std::stable_sort(
      reqs.begin(), reqs.end(),
      [](const LabelRequirement& a, const LabelRequirement& b) { return a.key < b.key; });
  out.reqs_ = std::move(reqs);
  return out;
}

}  // namespace vkube::api
