// Field management on every write: the manager's name, its validation, and
// the Update operation recorded in metadata.managedFields.
#include "field_manager.h"

#include <cstdio>

#include "managed_fields.h"
#include "object.h"

namespace vkube::apiserver {

namespace {

constexpr size_t kFieldManagerMaxLength = 128;

struct Rune {
  uint32_t cp;
  size_t offset, size;
};

// The code points of `s`; a byte that starts no valid sequence is U+FFFD.
std::vector<Rune> runes(std::string_view s) {
  std::vector<Rune> out;
  for (size_t i = 0; i < s.size();) {
    auto b = static_cast<unsigned char>(s[i]);
    size_t n = b < 0x80 ? 1 : (b >> 5) == 0x6 ? 2 : (b >> 4) == 0xe ? 3 : (b >> 3) == 0x1e ? 4 : 0;
    uint32_t cp = n == 1 ? b : n == 2 ? b & 0x1f : n == 3 ? b & 0x0f : b & 0x07;
    bool ok = n != 0 && i + n <= s.size();
    for (size_t k = 1; ok && k < n; ++k) {
      auto c = static_cast<unsigned char>(s[i + k]);
      if ((c & 0xc0) != 0x80) ok = false;
      cp = (cp << 6) | (c & 0x3f);
    }
    if (!ok) {
      out.push_back({0xfffd, i, 1});
      ++i;
      continue;
    }
    out.push_back({cp, i, n});
    i += n;
  }
  return out;
}

// Go's unicode.IsPrint, for what clients send: controls and spaces other
// than U+0020 are not printable.
bool printable(uint32_t cp) {
  if (cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp < 0xa0)) return false;
  if (cp == 0xa0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200a) || cp == 0x2028 ||
      cp == 0x2029 || cp == 0x202f || cp == 0x205f || cp == 0x3000 || cp == 0xad)
    return false;
  return true;
}

std::string code_point(uint32_t cp) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "U+%04X", cp);
  return buf;
}

}  // namespace

std::string field_manager(const Context& c) {
  if (auto p = c.param("fieldManager"); p && !p->empty()) return *p;
  std::string_view ua = c.req.header("User-Agent");
  ua = ua.substr(0, ua.find('/'));
  std::string out;
  for (const Rune& r : runes(ua)) {
    if (!printable(r.cp)) continue;
    if (out.size() + r.size > kFieldManagerMaxLength) break;
    out += ua.substr(r.offset, r.size);
  }
  return out;
}

std::optional<ApiError> check_write_options(const Context& c, std::string_view options_kind,
                                            bool apply) {
  FieldErrors errs;
  std::string manager = c.param("fieldManager").value_or("");
  if (c.info.verb == "patch") {
    if (!apply && c.param("force"))
      errs.push_back(
          {FieldError::Type::kForbidden, "force", "may not be specified for non-apply patch", {}});
    if (apply && manager.empty())
      errs.push_back(
          {FieldError::Type::kRequired, "fieldManager", "is required for apply patch", {}});
  }
  if (manager.size() > kFieldManagerMaxLength)
    errs.push_back({FieldError::Type::kTooLong,
                    "fieldManager",
                    "may not be more than " + std::to_string(kFieldManagerMaxLength) + " bytes",
                    {}});
  for (const Rune& r : runes(manager))
    if (!printable(r.cp))
      errs.push_back({FieldError::Type::kInvalid, "fieldManager",
                      "invalid character " + code_point(r.cp) + " (at position " +
                          std::to_string(r.offset) + ")",
                      manager});
  if (auto d = c.param("dryRun"); d && *d != "All")
    errs.push_back({FieldError::Type::kNotSupported, "dryRun", "supported values: \"All\"",
                    json::array({*d})});
  if (errs.empty()) return std::nullopt;

  std::string msg = std::string(options_kind) + ".meta.k8s.io \"\" is invalid: ";
  json causes = json::array();
  for (size_t i = 0; i < errs.size(); ++i) {
    std::string m = errs[i].to_string();
    if (errs.size() > 1) msg += (i ? ", " : "[");
    msg += m;
    causes.push_back(
        {{"reason", errs[i].type == FieldError::Type::kRequired    ? "FieldValueRequired"
                    : errs[i].type == FieldError::Type::kForbidden ? "FieldValueForbidden"
                    : errs[i].type == FieldError::Type::kTooLong   ? "FieldValueTooLong"
                    : errs[i].type == FieldError::Type::kNotSupported ? "FieldValueNotSupported"
                                                                   : "FieldValueInvalid"},
         {"message", m.substr(std::min(m.size(), errs[i].field.size() + 2))},
         {"field", errs[i].field}});
  }
  if (errs.size() > 1) msg += "]";
  return ApiError(
      Status::invalid(msg),
      {{"group", "meta.k8s.io"}, {"kind", std::string(options_kind)}, {"causes", causes}});
}

apply::Type object_type_of(const Context& c) {
  const api::Resource& r = c.resource();
  if (r.is_custom) return apply::object_type(nullptr);
  return apply::object_type(schema::Registry::get().find_kind(r.gv.group, r.gv.version, r.kind));
}

apply::Scope scope_of(const Context& c) {
  if (c.info.subresource == "status")
    return c.kind.strategy.prepare_status_update ? apply::Scope::kNoSpec
                                                 : apply::Scope::kStatusOnly;
  return c.resource().status_subresource ? apply::Scope::kNoStatus : apply::Scope::kAll;
}

void track_fields(Context& c, const json* old, json& next) {
  apply::Writer w{field_manager(c), c.resource().gv.api_version(), c.info.subresource,
                  now_rfc3339()};
  apply::track_update(old, next, object_type_of(c), scope_of(c), w);
}

}  // namespace vkube::apiserver
