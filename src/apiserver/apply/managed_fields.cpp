#include "managed_fields.h"

#include <algorithm>

namespace vkube::apiserver::apply {

namespace {

std::string quoted(const std::string& s) {
  return json(s).dump(-1, ' ', false, json::error_handler_t::replace);
}

Result<std::string> string_field(const json& e, const char* key, size_t i) {
  auto it = e.find(key);
  if (it == e.end() || it->is_null()) return std::string();
  if (!it->is_string())
    return Status::bad_request("metadata.managedFields[" + std::to_string(i) + "]." + key +
                               " must be a string");
  return it->get<std::string>();
}

// A list holding one empty entry: the way clients reset managedFields.
bool is_reset(const json& v) {
  if (!v.is_array() || v.size() != 1 || !v[0].is_object()) return false;
  for (auto it = v[0].begin(); it != v[0].end(); ++it)
    if (!it->is_null() && !(it->is_string() && it->get_ref<const std::string&>().empty()) &&
        !(it->is_object() && it->empty()))
      return false;
  return true;
}

const json* managed_fields_of(const json& obj) {
  if (!obj.is_object()) return nullptr;
  auto m = obj.find("metadata");
  if (m == obj.end() || !m->is_object()) return nullptr;
  auto f = m->find("managedFields");
  return f == m->end() || f->is_null() ? nullptr : &*f;
}

void set_managed_fields(json& obj, json list) {
  json& meta = obj["metadata"];
  if (list.empty())
    meta.erase("managedFields");
  else
    meta["managedFields"] = std::move(list);
}

}  // namespace

std::string ManagedEntry::describe() const {
  std::string s = quoted(manager);
  if (!subresource.empty()) s += " with subresource " + quoted(subresource);
  if (operation == kOperationUpdate) s += " using " + api_version;
  return s;
}

Result<ManagedFields> decode_managed_fields(const json& v) {
  ManagedFields out;
  if (v.is_null()) return out;
  if (!v.is_array()) return Status::bad_request("metadata.managedFields must be a list");
  out.reserve(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    const json& e = v[i];
    if (!e.is_object())
      return Status::bad_request("metadata.managedFields[" + std::to_string(i) +
                                 "] must be an object");
    ManagedEntry m;
    for (auto [key, dst] : {std::pair{"manager", &m.manager},
                            {"operation", &m.operation},
                            {"apiVersion", &m.api_version},
                            {"subresource", &m.subresource},
                            {"time", &m.time}}) {
      auto s = string_field(e, key, i);
      if (!s.is_ok()) return s.status();
      *dst = std::move(s).value();
    }
    if (m.operation != kOperationApply && m.operation != kOperationUpdate)
      return Status::bad_request("operation must be `Apply` or `Update`");
    if (m.api_version.empty()) return Status::bad_request("apiVersion must not be empty");
    auto type = string_field(e, "fieldsType", i);
    if (!type.is_ok()) return type.status();
    if (*type != "FieldsV1")
      return Status::bad_request(
          (type->empty() ? "missing fieldsType" : "invalid fieldsType \"" + *type + "\"") +
          std::string(" in managed fields entry ") + std::to_string(i));
    auto f = e.find("fieldsV1");
    if (f != e.end() && !f->is_null()) {
      auto set = FieldSet::from_json(*f);
      if (!set.is_ok()) return set.status();
      m.fields = std::move(set).value();
    }
    out.push_back(std::move(m));
  }
  return out;
}

json encode_managed_fields(ManagedFields entries) {
  std::erase_if(entries, [](const ManagedEntry& e) { return e.fields.empty(); });
  std::stable_sort(entries.begin(), entries.end(),
                   [](const ManagedEntry& p, const ManagedEntry& q) {
                     if (p.operation != q.operation) return p.operation < q.operation;
                     if (p.time != q.time) return p.time < q.time;
                     if (p.manager != q.manager) return p.manager < q.manager;
                     if (p.api_version != q.api_version) return p.api_version < q.api_version;
                     return p.subresource < q.subresource;
                   });
  json out(json::value_t::array);
  auto& list = out.get_ref<json::array_t&>();
  list.reserve(entries.size());
  for (auto& e : entries) {
    json j(json::value_t::object);
    auto& o = j.get_ref<json::object_t&>();
    o.emplace("apiVersion", std::move(e.api_version));
    o.emplace("fieldsType", "FieldsV1");
    o.emplace("fieldsV1", e.fields.to_json());
    o.emplace("manager", std::move(e.manager));
    o.emplace("operation", std::move(e.operation));
    if (!e.subresource.empty()) o.emplace("subresource", std::move(e.subresource));
    if (!e.time.empty()) o.emplace("time", std::move(e.time));
    list.push_back(std::move(j));
  }
  return out;
}

void record_update(ManagedFields& entries, const Comparison& c, const Writer& w) {
  if (c.changed.empty() && c.removed.empty()) return;
  for (auto& e : entries) {
    if (!c.changed.empty()) e.fields.subtract(c.changed);
    if (!c.removed.empty()) e.fields.subtract(c.removed);
  }
  if (!c.changed.empty()) {
    ManagedEntry me{w.manager, kOperationUpdate, w.api_version, w.subresource, w.now, {}};
    auto it = std::find_if(entries.begin(), entries.end(),
                           [&](const ManagedEntry& e) { return e.same_manager(me); });
    if (it == entries.end()) {
      me.fields = c.changed;
      entries.push_back(std::move(me));
    } else {
      it->fields.unite(c.changed);
      it->time = w.now;
    }
  }
  std::erase_if(entries, [](const ManagedEntry& e) { return e.fields.empty(); });
}

void track_update(const json* old, json& next, const Type& t, Scope scope, const Writer& w) {
  ManagedFields base;
  bool from_old = true;
  const json* sent = managed_fields_of(next);
  if (w.subresource.empty() && sent != nullptr) {
    if (is_reset(*sent)) {
      from_old = false;
    } else if (auto d = decode_managed_fields(*sent); d.is_ok() && !d->empty()) {
      base = std::move(d).value();
      from_old = false;
    }
  }
  const json* old_list = old ? managed_fields_of(*old) : nullptr;
  if (from_old && old_list != nullptr) {
    if (auto d = decode_managed_fields(*old_list); d.is_ok()) base = std::move(d).value();
  }
  Comparison c = compare(old, next, t, scope);
  if (from_old && c.changed.empty() && c.removed.empty()) {
    set_managed_fields(next, old_list ? *old_list : json::array());
    return;
  }
  record_update(base, c, w);
  set_managed_fields(next, encode_managed_fields(std::move(base)));
}

bool equal_except(const json& a, const json& b, std::initializer_list<std::string_view> skip) {
  if (!a.is_object() || !b.is_object()) return a == b;
  auto skipped = [&](const std::string& k) {
    return std::find(skip.begin(), skip.end(), k) != skip.end();
  };
  size_t kept_a = 0, kept_b = 0;
  for (auto it = a.begin(); it != a.end(); ++it) {
    if (skipped(it.key())) continue;
    ++kept_a;
    auto other = b.find(it.key());
    if (other == b.end() || *other != it.value()) return false;
  }
  for (auto it = b.begin(); it != b.end(); ++it) kept_b += skipped(it.key()) ? 0 : 1;
  return kept_a == kept_b;
}

void keep_times_if_unchanged(const json& old, json& next) {
  const json* om = managed_fields_of(old);
  const json* nm = managed_fields_of(next);
  if (om == nullptr || nm == nullptr || !om->is_array() || !nm->is_array() ||
      om->size() != nm->size() || *om == *nm)
    return;
  // Entry by entry, "time" aside, without copying them (FieldsV1 of a big
  // object is large, and each apply by the same manager gets here).
  for (size_t i = 0; i < om->size(); ++i)
    if (!(*om)[i].is_object() || !equal_except((*om)[i], (*nm)[i], {"time"})) return;
  // The rest compared in place (the resourceVersion is no content): old's
  // list is copied only when it goes back.
  if (!equal_except(next, old, {"metadata"}) ||
      !equal_except(next["metadata"], old["metadata"], {"managedFields", "resourceVersion"}))
    return;
  next["metadata"]["managedFields"] = *om;
}

}  // namespace vkube::apiserver::apply
