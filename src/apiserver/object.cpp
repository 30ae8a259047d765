#include "object.h"

#include <charconv>
#include <chrono>
#include <ctime>
#include <optional>
#include <random>

namespace vkube::apiserver {

std::string str_at(const json& obj, std::string_view a, std::string_view b) {
  if (!obj.is_object()) return {};
  auto it = obj.find(a);
  if (it == obj.end()) return {};
  if (b.empty()) return it->is_string() ? it->get<std::string>() : std::string();
  if (!it->is_object()) return {};
  auto jt = it->find(b);
  return jt != it->end() && jt->is_string() ? jt->get<std::string>() : std::string();
}

Result<json> decode_stored(const storage::KeyValue& kv) {
  json obj = json::parse(kv.value, nullptr, false);
  if (obj.is_discarded() || !obj.is_object())
    return Status::corruption("stored object " + kv.key + " is not valid JSON");
  obj["metadata"]["resourceVersion"] = std::to_string(kv.mod_revision);
  return obj;
}

std::string encode_for_storage(json& obj) {
  auto m = obj.find("metadata");
  if (m == obj.end() || !m->is_object())
    return obj.dump(-1, ' ', false, json::error_handler_t::replace);
  std::optional<json> version, link;
  auto take = [&](const char* key, std::optional<json>& out) {
    if (auto it = m->find(key); it != m->end()) {
      out = std::move(*it);
      m->erase(it);
    }
  };
  take("resourceVersion", version);
  take("selfLink", link);
  std::string bytes = obj.dump(-1, ' ', false, json::error_handler_t::replace);
  if (version) (*m)["resourceVersion"] = std::move(*version);
  if (link) (*m)["selfLink"] = std::move(*link);
  return bytes;
}

namespace {
std::mt19937_64& rng() {
  thread_local std::mt19937_64 gen{std::random_device{}()};
  return gen;
}
}  // namespace

std::string new_uid() {
  uint64_t a = rng()(), b = rng()();
  a = (a & 0xffffffffffff0fffULL) | 0x0000000000004000ULL;  // version 4
  b = (b & 0x3fffffffffffffffULL) | 0x8000000000000000ULL;  // variant 1
  char buf[40];
  std::snprintf(buf, sizeof buf, "%08x-%04x-%04x-%04x-%012llx", static_cast<unsigned>(a >> 32),
                static_cast<unsigned>((a >> 16) & 0xffff), static_cast<unsigned>(a & 0xffff),
                static_cast<unsigned>(b >> 48),
                static_cast<unsigned long long>(b & 0xffffffffffffULL));
  return buf;
}

int64_t now_unix() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string format_rfc3339(int64_t t) {
  std::time_t tt = static_cast<std::time_t>(t);
  std::tm tm{};
  gmtime_r(&tt, &tm);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02dZ", tm.tm_year + 1900, tm.tm_mon + 1,
                tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
  return buf;
}

std::string now_rfc3339() { return format_rfc3339(now_unix()); }

std::optional<int64_t> parse_rfc3339(std::string_view ts) {
  std::tm tm{};
  int y, mo, d, h, mi, s;
  if (ts.size() < 20 ||
      std::sscanf(std::string(ts.substr(0, 19)).c_str(), "%4d-%2d-%2dT%2d:%2d:%2d", &y, &mo, &d, &h,
                  &mi, &s) != 6)
    return std::nullopt;
  tm.tm_year = y - 1900;
  tm.tm_mon = mo - 1;
  tm.tm_mday = d;
  tm.tm_hour = h;
  tm.tm_min = mi;
  tm.tm_sec = s;
  int64_t t = static_cast<int64_t>(timegm(&tm));
  // Skip fractional seconds; apply a numeric zone offset.
  size_t i = 19;
  if (i < ts.size() && ts[i] == '.')
    while (++i < ts.size() && std::isdigit(static_cast<unsigned char>(ts[i]))) {
    }
  if (i < ts.size() && (ts[i] == '+' || ts[i] == '-') && ts.size() >= i + 6) {
    int oh = std::atoi(std::string(ts.substr(i + 1, 2)).c_str());
    int om = std::atoi(std::string(ts.substr(i + 4, 2)).c_str());
    int64_t off = oh * 3600 + om * 60;
    t += ts[i] == '+' ? -off : off;
  }
  return t;
}

Result<storage::Revision> parse_resource_version(std::string_view rv) {
  if (rv.empty()) return storage::Revision{0};
  storage::Revision v = 0;
  auto [p, ec] = std::from_chars(rv.data(), rv.data() + rv.size(), v);
  if (ec != std::errc() || p != rv.data() + rv.size() || v < 0)
    return Status::bad_request("invalid resource version \"" + std::string(rv) + "\"");
  return v;
}

std::string random_suffix() {
  static constexpr std::string_view kAlphabet = "bcdfghjklmnpqrstvwxz2456789";
  std::string s;
  for (int i = 0; i < 5; ++i) s += kAlphabet[rng()() % kAlphabet.size()];
  return s;
}

}  // namespace vkube::apiserver
