#include "apply.h"

#include <algorithm>
#include <map>

#include "vkube/api/limits.h"

namespace vkube::apiserver::apply {

namespace {

const json* managed_fields_of(const json& obj) {
  auto m = obj.find("metadata");
  if (m == obj.end() || !m->is_object()) return nullptr;
  auto f = m->find("managedFields");
  return f == m->end() || f->is_null() ? nullptr : &*f;
}

const json* last_applied_of(const json& obj) {
  auto m = obj.find("metadata");
  if (m == obj.end() || !m->is_object()) return nullptr;
  auto a = m->find("annotations");
  if (a == m->end() || !a->is_object()) return nullptr;
  auto v = a->find(kLastAppliedAnnotation);
  if (v == a->end() || !v->is_string() || v->get_ref<const std::string&>().empty()) return nullptr;
  return &*v;
}

bool contains_path(const FieldSet& s, const FieldSet::Path& path) {
  const FieldSet* n = &s;
  for (std::string_view pe : path) {
    n = n->find(pe);
    if (n == nullptr) return false;
  }
  return n->member();
}

// The fields the last-applied annotation shows client-side apply set, and
// that still have the values it set: conflicts on them do not stop the
// "kubectl" applier taking over from client-side apply.
bool allowed_from_last_applied(const ApplyRequest& r, FieldSet* allowed) {
  const json* annotation = last_applied_of(*r.live);
  if (annotation == nullptr) return false;
  json last = json::parse(annotation->get_ref<const std::string&>(), nullptr, false);
  // A string holds it, so no request depth check saw it: measured before walking it.
  if (!last.is_object() || last.value("apiVersion", json()) != r.writer.api_version ||
      !api::within_nesting_limit(last))
    return false;
  auto set = fields_of(last, r.type, r.scope);
  if (!set.is_ok()) return false;
  Comparison c = compare(&last, *r.live, r.type, r.scope);
  *allowed = std::move(set).value();
  allowed->subtract(c.changed);
  allowed->subtract(c.removed);
  return true;
}

// kube keeps the annotation of an object still carrying one in step with
// what "kubectl" applies server-side, so that client-side apply can resume.
void update_last_applied(json& merged, const json& config) {
  if (last_applied_of(merged) == nullptr) return;
  json cfg = config;
  if (cfg.contains("metadata") && cfg["metadata"].is_object() &&
      cfg["metadata"].contains("annotations") && cfg["metadata"]["annotations"].is_object())
    cfg["metadata"]["annotations"].erase(kLastAppliedAnnotation);
  merged["metadata"]["annotations"][kLastAppliedAnnotation] =
      cfg.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
}

}  // namespace

Result<ApplyResult> run_apply(const ApplyRequest& r) {
  const Writer& w = r.writer;
  // Every walk below recurses once per level of these: bounded here.
  if (!api::within_nesting_limit(*r.config))
    return Status::bad_request(
        "error decoding YAML: the applied configuration nests objects or arrays deeper than " +
        std::to_string(api::kMaxNestingDepth) + " levels");
  if (r.live != nullptr && !api::within_object_limit(*r.live))
    return Status::invalid("the object nests objects or arrays deeper than " +
                           std::to_string(api::kMaxObjectNestingDepth) + " levels");
  ManagedFields entries;
  if (r.live != nullptr) {
    if (const json* mf = managed_fields_of(*r.live)) {
      auto d = decode_managed_fields(*mf);
      if (!d.is_ok())
        return Status::internal("failed to decode managed fields: " + d.status().message());
      entries = std::move(d).value();
    }
    if (entries.empty()) {
      // Someone made what is there; it becomes theirs, so that it can conflict.
      record_update(entries, compare(nullptr, *r.live, r.type, r.scope),
                    Writer{"before-first-apply", w.api_version, w.subresource, w.now});
    }
  }
  auto applied = fields_of(*r.config, r.type, r.scope);
  if (!applied.is_ok())
    return Status::internal("failed to create typed patch object (" + r.object_ref +
                            "): " + applied.status().message());
  json merged = merge(r.live, *r.config, r.type);

  const ManagedEntry key{w.manager, kOperationApply, w.api_version, w.subresource, w.now, {}};
  auto it = std::find_if(entries.begin(), entries.end(),
                         [&](const ManagedEntry& e) { return e.same_manager(key); });
  FieldSet last;
  if (it == entries.end()) {
    entries.push_back(key);
    it = entries.end() - 1;
  } else {
    last = std::move(it->fields);
    it->api_version = w.api_version;
    it->time = w.now;
  }
  it->fields = std::move(applied).value();
  const size_t me = static_cast<size_t>(it - entries.begin());

  if (r.live != nullptr && !last.empty()) {
    FieldSet keep;
    for (const auto& e : entries) keep.unite(e.fields);
    prune(merged, last, keep, r.type);
  }
  if (r.live != nullptr) {
    Comparison c = compare(r.live, merged, r.type, r.scope);
    std::vector<FieldSet> taken(entries.size());
    bool any = false;
    for (size_t i = 0; i < entries.size(); ++i) {
      if (i == me || c.changed.empty()) continue;
      taken[i] = entries[i].fields.intersect(c.changed);
      any = any || !taken[i].empty();
    }
    if (any && !r.force) {
      FieldSet allowed;
      bool have_allowed = w.manager == "kubectl" && allowed_from_last_applied(r, &allowed);
      std::vector<Conflict> conflicts;
      for (size_t i = 0; i < entries.size(); ++i) {
        taken[i].for_each([&](const FieldSet::Path& p) {
          if (!have_allowed || !contains_path(allowed, p))
            conflicts.push_back({entries[i].describe(), path_string(p)});
        });
      }
      if (!conflicts.empty()) {
        std::stable_sort(
            conflicts.begin(), conflicts.end(),
            [](const Conflict& a, const Conflict& b) { return a.manager < b.manager; });
        return ApplyResult{json(), std::move(conflicts)};
      }
    }
    for (size_t i = 0; i < entries.size(); ++i) {
      if (i == me) continue;
      entries[i].fields.subtract(taken[i]);
      entries[i].fields.subtract(c.removed);
    }
  }
  if (w.manager == "kubectl" && r.live != nullptr) update_last_applied(merged, *r.config);
  json list = encode_managed_fields(std::move(entries));
  if (!merged["metadata"].is_object()) merged["metadata"] = json::object();
  if (list.empty())
    merged["metadata"].erase("managedFields");
  else
    merged["metadata"]["managedFields"] = std::move(list);
  return ApplyResult{std::move(merged), {}};
}

std::string conflict_message(const std::vector<Conflict>& conflicts) {
  if (conflicts.size() == 1)
    return "Apply failed with 1 conflict: conflict with " + conflicts[0].manager + ": " +
           conflicts[0].path;
  std::map<std::string, std::vector<std::string>> by_manager;
  for (const auto& c : conflicts) by_manager[c.manager].push_back(c.path);
  std::string msg;
  for (const auto& [manager, paths] : by_manager) {
    if (!msg.empty()) msg += "\n";
    msg += "conflicts with " + manager + ":";
    for (const auto& p : paths) msg += "\n- " + p;
  }
  return "Apply failed with " + std::to_string(conflicts.size()) + " conflicts: " + msg;
}

}  // namespace vkube::apiserver::apply
