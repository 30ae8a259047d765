// The pod rules that compare or measure values: tolerations, resource
// quantities, and what an update may change on an existing pod.
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <string>

#include "kind_util.h"
#include "pod_spec.h"
#include "vkube/api/quantity.h"
#include "vkube/api/validation.h"

namespace vkube::apiserver::builtin {

namespace {

using namespace util;

constexpr const char* kQuantityError =
    "quantities must match the regular expression "
    "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";

std::string quantity_text(const json& q) {
  return q.is_string() ? q.get<std::string>() : q.dump();
}

}  // namespace

void validate_resources(const json& res, const std::string& path, FieldErrors& errs) {
  const json* limits = get_object(res, "limits");
  for (const char* k : {"limits", "requests"}) {
    if (!check_object(errs, res, k, path)) continue;
    const json* list = get_object(res, k);
    if (list == nullptr) continue;
    for (const auto& [name, q] : list->items()) {
      std::string qp = key(child(path, k), name);
      std::optional<long double> value = api::quantity_number(q);
      if (!value) {
        invalid(errs, qp, quantity_text(q), kQuantityError);
        continue;
      }
      if (*value < 0) invalid(errs, qp, quantity_text(q), "must be greater than or equal to 0");
      if (std::string(k) != "requests" || limits == nullptr || !limits->contains(name)) continue;
      std::optional<long double> limit = api::quantity_number((*limits)[name]);
      if (limit && *value > *limit) {
        invalid(errs, qp, quantity_text(q),
                "must be less than or equal to " + name + " limit of " +
                    quantity_text((*limits)[name]));
      }
    }
  }
}

void validate_tolerations(const json& list, const std::string& path, FieldErrors& errs) {
  for (size_t i = 0; i < list.size(); ++i) {
    const json& t = list[i];
    std::string tp = index(path, i);
    if (!t.is_object()) {
      invalid(errs, tp, t, "must be of type object");
      continue;
    }
    std::string k = get_string(t, "key");
    std::string op = get_string(t, "operator");
    std::string effect = get_string(t, "effect");
    std::string value = get_string(t, "value");
    if (!k.empty()) add_messages(errs, child(tp, "key"), k, api::validate_qualified_name(k));
    if (k.empty() && op != "Exists") {
      invalid(errs, child(tp, "operator"), op,
              "operator must be Exists when `key` is empty, which means \"match all values and "
              "all keys\"");
    }
    if (get(t, "tolerationSeconds") != nullptr && effect != "NoExecute") {
      invalid(errs, child(tp, "effect"), effect,
              "effect must be 'NoExecute' when `tolerationSeconds` is set");
    }
    if (op.empty() || op == "Equal") {
      std::vector<std::string> msgs = api::validate_label_value(value);
      std::string joined;
      for (const std::string& m : msgs) joined += (joined.empty() ? "" : ";") + m;
      if (!msgs.empty()) invalid(errs, child(tp, "operator"), value, joined);
    } else if (op == "Exists") {
      if (!value.empty()) {
        invalid(errs, child(tp, "operator"), t, "value must be empty when `operator` is 'Exists'");
      }
    } else {
      not_supported(errs, child(tp, "operator"), op, {"Equal", "Exists"});
    }
    if (!effect.empty() && effect != "NoSchedule" && effect != "PreferNoSchedule" &&
        effect != "NoExecute") {
      not_supported(errs, child(tp, "effect"), effect,
                    {"NoSchedule", "PreferNoSchedule", "NoExecute"});
    }
  }
}

namespace {

// validateOnlyAddedTolerations: each old toleration survives, but for its
// tolerationSeconds.
bool only_added_tolerations(const json& now, const json& before) {
  if (!before.is_array()) return true;
  for (json old_t : before) {
    bool found = false;
    for (const json& new_t : now.is_array() ? now : json::array()) {
      if (old_t.is_object() && new_t.is_object()) {
        old_t.erase("tolerationSeconds");
        if (new_t.contains("tolerationSeconds"))
          old_t["tolerationSeconds"] = new_t["tolerationSeconds"];
      }
      if (old_t == new_t) found = true;
    }
    if (!found) return false;
  }
  return true;
}

// The gates of `now` are a subset of `before`'s: gates may only be removed.
bool gates_removed_only(const json* now, const json* before) {
  if (now == nullptr) return true;
  if (!now->is_array()) return false;
  for (const json& g : *now) {
    bool found = false;
    if (before != nullptr && before->is_array()) {
      for (const json& o : *before) found |= o == g;
    }
    if (!found) return false;
  }
  return true;
}

void copy_images(json& spec, const json& old_spec, const char* k) {
  json* list = get_array(spec, k);
  const json* old_list = get_array(old_spec, k);
  if (list == nullptr || old_list == nullptr || list->size() != old_list->size()) return;
  for (size_t i = 0; i < list->size(); ++i) {
    json& c = (*list)[i];
    const json& o = (*old_list)[i];
    if (!c.is_object() || !o.is_object()) continue;
    if (o.contains("image")) {
      c["image"] = o["image"];
    } else {
      c.erase("image");
    }
  }
}

size_t list_size(const json& spec, const char* k) {
  const json* list = get_array(spec, k);
  return list ? list->size() : 0;
}

}  // namespace

void validate_pod_update(const json& pod, const json& old, FieldErrors& errs) {
  const json* spec = get_object(pod, "spec");
  const json* old_spec = get_object(old, "spec");
  if (spec == nullptr || old_spec == nullptr) return;

  std::optional<int64_t> deadline = get_int(*spec, "activeDeadlineSeconds");
  std::optional<int64_t> old_deadline = get_int(*old_spec, "activeDeadlineSeconds");
  if (deadline) {
    if (old_deadline && *deadline > *old_deadline) {
      invalid(errs, "spec.activeDeadlineSeconds", *deadline,
              "must be less than or equal to previous value");
    }
  } else if (old_deadline) {
    invalid(errs, "spec.activeDeadlineSeconds", nullptr,
            "must not update from a positive integer to nil value");
  }

  for (const char* k : {"containers", "initContainers"}) {
    if (list_size(*spec, k) != list_size(*old_spec, k)) {
      forbidden(errs, std::string("spec.") + k, "pod updates may not add or remove containers");
      return;
    }
  }

  const json* tolerations = get(*spec, "tolerations");
  const json* old_tolerations = get(*old_spec, "tolerations");
  if (old_tolerations != nullptr &&
      !only_added_tolerations(tolerations ? *tolerations : json::array(), *old_tolerations)) {
    forbidden(errs, "spec.tolerations",
              "existing toleration can not be modified except its tolerationSeconds");
  }

  // Everything but the mutable fields must equal the old spec.
  json munged = *spec;
  copy_images(munged, *old_spec, "containers");
  copy_images(munged, *old_spec, "initContainers");
  for (const char* k : {"activeDeadlineSeconds", "tolerations"}) {
    if (old_spec->contains(k)) {
      munged[k] = (*old_spec)[k];
    } else {
      munged.erase(k);
    }
  }
  std::optional<int64_t> grace = get_int(*spec, "terminationGracePeriodSeconds");
  std::optional<int64_t> old_grace = get_int(*old_spec, "terminationGracePeriodSeconds");
  if (grace && old_grace && *old_grace < 0 && *grace == 1) {
    munged["terminationGracePeriodSeconds"] = *old_grace;
  }
  if (gates_removed_only(get(*spec, "schedulingGates"), get(*old_spec, "schedulingGates"))) {
    if (old_spec->contains("schedulingGates")) {
      munged["schedulingGates"] = (*old_spec)["schedulingGates"];
    } else {
      munged.erase("schedulingGates");
    }
  }
  json before = *old_spec;
  for (json* s : {&munged, &before}) {
    for (auto it = s->begin(); it != s->end();) {
      it = it->is_null() ? s->erase(it) : std::next(it);
    }
  }
  if (munged != before) {
    forbidden(errs, "spec",
              "pod updates may not change fields other than `spec.containers[*].image`,"
              "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` "
              "(only additions to existing tolerations),`spec.terminationGracePeriodSeconds` "
              "(allow it to be set to 1 if it was previously negative)");
  }
}

}  // namespace vkube::apiserver::builtin
