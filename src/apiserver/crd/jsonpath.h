// The JSONPath subset CRDs use for additionalPrinterColumns, selectable
// fields and the scale subresource (kube's client-go jsonpath without the
// braces): `.spec.replicas`, `.spec.items[0].name`, `.metadata.labels['a.b/c']`,
// `.spec.list[*].name`, `.status.conditions[?(@.type=="Ready")].status`.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace vkube::apiserver::crd {

using json = nlohmann::json;

class JsonPath {
 public:
  // Parses `text`; on failure returns nullptr and sets *error (kube's CRD
  // validation reports it under the column's jsonPath).
  static std::unique_ptr<JsonPath> parse(std::string_view text, std::string* error);

  // The values `text` selects in `root`, in document order (pointers into
  // root; empty when nothing matches).
  std::vector<const json*> find(const json& root) const;

  // True when the path names exactly one field by plain keys (what the
  // scale subresource and selectable fields accept): ".spec.replicas".
  bool is_simple_field() const;
  // The keys of a simple field path, in order.
  std::vector<std::string> keys() const;

  struct Step;
  ~JsonPath();

 private:
  JsonPath() = default;
  std::vector<Step> steps_;
};

// Reads the value at a simple ".a.b" path; nullptr when absent.
const json* find_field(const json& root, std::string_view simple_path);
// Sets the value at a simple ".a.b" path, creating objects on the way.
void set_field(json& root, std::string_view simple_path, json value);

}  // namespace vkube::apiserver::crd
