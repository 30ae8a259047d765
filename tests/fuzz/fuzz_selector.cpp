// Label and field selectors (?labelSelector=, ?fieldSelector=, and the
// matchLabels/matchExpressions objects of workloads): parse, print in
// canonical form, parse that again to the same selector, and match.
#include <algorithm>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "fuzz_util.h"
#include "vkube/api/selector.h"

using nlohmann::json;

namespace {

void label_selector(std::string_view text) {
  auto sel = vkube::api::LabelSelector::parse(text);
  if (!sel.is_ok()) {
    FUZZ_CHECK(sel.status().code() == vkube::Code::kBadRequest);
    return;
  }
  std::string printed = sel->to_string();
  auto again = vkube::api::LabelSelector::parse(printed);
  FUZZ_CHECK(again.is_ok());
  FUZZ_CHECK(again->to_string() == printed);
  static const json labels = {{"app", "web"}, {"tier", "1"}, {"a", ""}, {"n", "-7"}};
  FUZZ_CHECK(sel->matches(labels) == again->matches(labels));
  (void)sel->matches(json());
}

void field_selector(std::string_view text) {
  auto sel = vkube::api::FieldSelector::parse(text);
  if (!sel.is_ok()) {
    FUZZ_CHECK(sel.status().code() == vkube::Code::kBadRequest);
    return;
  }
  std::string printed = sel->to_string();
  auto again = vkube::api::FieldSelector::parse(printed);
  FUZZ_CHECK(again.is_ok());
  // The same terms; not always in the same order, as in kube: terms are
  // sorted by their text as written, and "==" prints as "=" ("==a,=b"
  // prints "=a,=b", which sorts the other way round).
  auto terms = [](const vkube::api::FieldSelector& s) {
    std::vector<std::tuple<std::string, bool, std::string>> out;
    for (const auto& r : s.requirements()) out.emplace_back(r.field, r.equals, r.value);
    std::sort(out.begin(), out.end());
    return out;
  };
  FUZZ_CHECK(terms(*again) == terms(*sel));
  auto get = [](std::string_view f) -> std::optional<std::string> {
    if (f == "metadata.name") return "x";
    return std::nullopt;
  };
  FUZZ_CHECK(sel->matches(get) == again->matches(get));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text = vkube::fuzz::as_text(data, size);
  label_selector(text);
  field_selector(text);
  // A metav1.LabelSelector object, when the input is JSON.
  json obj = json::parse(text, nullptr, false);
  if (!obj.is_discarded()) {
    auto sel = vkube::api::LabelSelector::from_json(obj, "spec.selector");
    if (sel.is_ok()) {
      (void)sel->matches(json{{"app", "web"}});
      (void)sel->to_string();
    }
  }
  return 0;
}
