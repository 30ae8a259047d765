#include "util.h"

#include <ctime>

namespace vkube::controllers {

std::string meta(const json& obj, std::string_view field) {
  auto m = obj.find("metadata");
  if (m == obj.end() || !m->is_object()) return {};
  auto f = m->find(field);
  return f != m->end() && f->is_string() ? f->get<std::string>() : std::string();
}

std::pair<std::string, std::string> split_key(std::string_view key) {
  auto slash = key.find('/');
  if (slash == std::string_view::npos) return {"", std::string(key)};
  return {std::string(key.substr(0, slash)), std::string(key.substr(slash + 1))};
}

const json* controller_ref(const json& obj) {
  auto m = obj.find("metadata");
  if (m == obj.end() || !m->is_object()) return nullptr;
  auto refs = m->find("ownerReferences");
  if (refs == m->end() || !refs->is_array()) return nullptr;
  for (const json& r : *refs)
    if (r.is_object() && r.value("controller", false)) return &r;
  return nullptr;
}

bool is_controlled_by(const json& obj, std::string_view owner_uid) {
  const json* r = controller_ref(obj);
  return r != nullptr && r->value("uid", "") == owner_uid;
}

json controller_owner_ref(const json& owner) {
  return {{"apiVersion", owner.value("apiVersion", "")},
          {"kind", owner.value("kind", "")},
          {"name", meta(owner, "name")},
          {"uid", meta(owner, "uid")},
          {"controller", true},
          {"blockOwnerDeletion", true}};
}

bool is_terminating(const json& obj) {
  auto m = obj.find("metadata");
  return m != obj.end() && m->is_object() && m->contains("deletionTimestamp") &&
         !(*m)["deletionTimestamp"].is_null();
}

std::string pod_phase(const json& pod) {
  auto s = pod.find("status");
  if (s == pod.end() || !s->is_object()) return {};
  return s->value("phase", "");
}

namespace {
const json* pod_condition(const json& pod, std::string_view type) {
  auto s = pod.find("status");
  if (s == pod.end() || !s->is_object()) return nullptr;
  auto cs = s->find("conditions");
  if (cs == s->end() || !cs->is_array()) return nullptr;
  for (const json& c : *cs)
    if (c.is_object() && c.value("type", "") == type) return &c;
  return nullptr;
}
}  // namespace

bool pod_condition_true(const json& pod, std::string_view type) {
  const json* c = pod_condition(pod, type);
  return c != nullptr && c->value("status", "") == "True";
}

bool pod_ready(const json& pod) {
  return pod_condition_true(pod, "Ready");
}

bool pod_active(const json& pod) {
  std::string phase = pod_phase(pod);
  return phase != "Succeeded" && phase != "Failed" && !is_terminating(pod);
}

bool pod_available(const json& pod, int64_t min_ready_seconds, TimePoint now) {
  const json* c = pod_condition(pod, "Ready");
  if (c == nullptr || c->value("status", "") != "True") return false;
  if (min_ready_seconds <= 0) return true;
  auto since = parse_rfc3339(c->value("lastTransitionTime", ""));
  if (!since) return false;
  return *since + std::chrono::seconds(min_ready_seconds) <= now;
}

json pod_from_template(const json& pod_template, const json& owner,
                       std::string_view generate_prefix, std::string_view name) {
  json pod = {{"apiVersion", "v1"}, {"kind", "Pod"}, {"metadata", json::object()}};
  json& m = pod["metadata"];
  const json empty = json::object();
  const json& tm = pod_template.contains("metadata") && pod_template["metadata"].is_object()
                       ? pod_template["metadata"]
                       : empty;
  for (const char* f : {"labels", "annotations", "finalizers"})
    if (tm.contains(f) && !tm[f].is_null()) m[f] = tm[f];
  if (!name.empty())
    m["name"] = std::string(name);
  else
    m["generateName"] = std::string(generate_prefix);
  std::string ns = meta(owner, "namespace");
  if (!ns.empty()) m["namespace"] = ns;
  m["ownerReferences"] = json::array({controller_owner_ref(owner)});
  pod["spec"] = pod_template.contains("spec") ? pod_template["spec"] : json::object();
  return pod;
}

std::optional<api::LabelSelector> selector_of(const json& selector) {
  if (selector.is_null() || !selector.is_object()) return std::nullopt;
  auto s = api::LabelSelector::from_json(selector);
  if (!s.is_ok()) return std::nullopt;
  return std::move(s).value();
}

const json& labels_of(const json& obj) {
  static const json empty = json::object();
  auto m = obj.find("metadata");
  if (m == obj.end() || !m->is_object()) return empty;
  auto l = m->find("labels");
  return l != m->end() && l->is_object() ? *l : empty;
}

std::string rfc3339(TimePoint t) {
  std::time_t tt = std::chrono::system_clock::to_time_t(t);
  std::tm tm{};
  gmtime_r(&tt, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::optional<TimePoint> parse_rfc3339(std::string_view s) {
  if (s.size() < 19) return std::nullopt;
  std::tm tm{};
  std::string str(s);
  const char* end = strptime(str.c_str(), "%Y-%m-%dT%H:%M:%S", &tm);
  if (end == nullptr) return std::nullopt;
  // Fractional seconds and a zone: "Z" or "+hh:mm".
  if (*end == '.')
    while (*++end >= '0' && *end <= '9') {
    }
  long offset = 0;
  if (*end == '+' || *end == '-') {
    int h = 0, mi = 0;
    if (std::sscanf(end + 1, "%2d:%2d", &h, &mi) != 2) return std::nullopt;
    offset = (h * 3600L + mi * 60L) * (*end == '+' ? 1 : -1);
  } else if (*end != 'Z' && *end != 'z') {
    return std::nullopt;
  }
  return std::chrono::system_clock::from_time_t(timegm(&tm) - offset);
}

std::string api_path(std::string_view api_version, std::string_view plural, std::string_view ns,
                     std::string_view name, std::string_view subresource) {
  std::string p = api_version.find('/') == std::string_view::npos ? "/api/" : "/apis/";
  p.append(api_version);
  if (!ns.empty()) p.append("/namespaces/").append(ns);
  p.append("/").append(plural);
  if (!name.empty()) p.append("/").append(name);
  if (!subresource.empty()) p.append("/").append(subresource);
  return p;
}

uint32_t fnv32a(std::string_view data) {
  uint32_t h = 2166136261u;
  for (unsigned char c : data) {
    h ^= c;
    h *= 16777619u;
  }
  return h;
}

std::string safe_encode(std::string_view s) {
  static constexpr std::string_view kAlphabet = "bcdfghjklmnpqrstvwxz2456789";
  std::string out(s.size(), ' ');
  for (size_t i = 0; i < s.size(); ++i)
    out[i] = kAlphabet[static_cast<unsigned char>(s[i]) % kAlphabet.size()];
  return out;
}

std::string template_hash(const json& pod_template, std::optional<int64_t> collision_count) {
  json t = pod_template;
  if (t.contains("metadata") && t["metadata"].is_object() && t["metadata"].contains("labels") &&
      t["metadata"]["labels"].is_object()) {
    t["metadata"]["labels"].erase("pod-template-hash");
    if (t["metadata"]["labels"].empty()) t["metadata"].erase("labels");
  }
  std::string data = t.dump();
  if (collision_count) data += "#" + std::to_string(*collision_count);
  return safe_encode(std::to_string(fnv32a(data)));
}

ApiResult update_status(LocalClient& client, const std::string& object_path, const json& obj,
                        const json& status) {
  if (obj.contains("status") && obj["status"] == status) return ApiResult{200, obj};
  json next = obj;
  next["status"] = status;
  return client.call("PUT", object_path + "/status", next);
}

}  // namespace vkube::controllers
