#include "list_common.h"

#include <charconv>

#include "object.h"
#include "vkube/common/base64.h"
#include "vkube/common/json_scan.h"

namespace vkube::apiserver {

namespace {

// A field's value as a field selector compares it ("" when absent).
std::optional<std::string> field_value(const json& obj, std::string_view path) {
  if (path == "source") path = "source.component";  // events
  const json* cur = &obj;
  size_t start = 0;
  while (start <= path.size()) {
    size_t dot = path.find('.', start);
    std::string part(
        path.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start));
    if (!cur->is_object()) return std::nullopt;
    auto it = cur->find(part);
    if (it == cur->end()) return std::string();
    cur = &*it;
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  if (cur->is_string()) return cur->get<std::string>();
  if (cur->is_boolean()) return cur->get<bool>() ? "true" : "false";
  if (cur->is_number()) return cur->dump();
  if (cur->is_null()) return std::string();
  return std::nullopt;
}

}  // namespace

Status check_field_selector(const api::Resource& r, const api::FieldSelector& f) {
  for (const auto& req : f.requirements()) {
    if (req.field == "metadata.name" || req.field == "metadata.namespace") continue;
    bool ok = false;
    for (const auto& s : r.selectable_fields) ok |= s == req.field;
    if (!ok) return Status::bad_request("field label not supported: " + req.field);
  }
  return Status::ok();
}

ListQuery ListQuery::from_context(Context& c, bool paged) {
  ListQuery q;
  if (auto l = c.param("labelSelector")) {
    auto sel = api::LabelSelector::parse(*l);
    if (!sel.is_ok())
      q.error = sel.status();
    else
      q.labels = std::move(sel).value();
  }
  if (auto f = c.param("fieldSelector")) {
    auto sel = api::FieldSelector::parse(*f);
    if (!sel.is_ok())
      q.error = sel.status();
    else
      q.fields = std::move(sel).value();
  }
  if (paged) {
    if (auto l = c.param("limit")) {
      try {
        q.limit = std::stoll(*l);
      } catch (...) {
        q.error = Status::bad_request("limit must be an integer");
      }
    }
    q.continue_token = c.param("continue").value_or("");
  }
  q.resource_version = c.param("resourceVersion").value_or("");
  q.resource_version_match = c.param("resourceVersionMatch").value_or("");
  return q;
}

bool matches(const ListQuery& q, const json& obj) {
  if (!q.labels.empty()) {
    auto meta = obj.find("metadata");
    const json* labels = nullptr;
    if (meta != obj.end() && meta->is_object()) {
      auto it = meta->find("labels");
      if (it != meta->end()) labels = &*it;
    }
    if (!q.labels.matches(labels ? *labels : json())) return false;
  }
  if (!q.fields.empty()) {
    return q.fields.matches([&](std::string_view f) { return field_value(obj, f); });
  }
  return true;
}

namespace {

// The offset just past `"metadata":{` of the top-level metadata object, found
// by a scan that skips nested values and strings; npos when there is none.
size_t metadata_body_offset(std::string_view s) {
  int depth = 0;
  bool expect_key = false;
  for (size_t i = 0; i < s.size(); ++i) {
    switch (s[i]) {
      case '"': {
        const size_t end = json_scan::string_end(s, i);
        if (end == std::string_view::npos) return end;
        // A top-level key "metadata" whose value is an object.
        if (depth == 1 && expect_key && s.substr(i, end - i) == "\"metadata\"" &&
            s.substr(end, 2) == ":{")
          return end + 2;
        expect_key = false;
        i = end - 1;
        break;
      }
      case '{':
        ++depth;
        expect_key = depth == 1;
        break;
      case '[':
        ++depth;
        break;
      case '}':
      case ']':
        --depth;
        break;
      case ',':
        expect_key = depth == 1;
        break;
      default:
        break;
    }
  }
  return std::string_view::npos;
}

}  // namespace

bool append_with_resource_version(std::string& out, std::string_view s, storage::Revision rv) {
  const size_t at = metadata_body_offset(s);
  if (at == std::string_view::npos) return false;
  char digits[24];
  auto [end, ec] = std::to_chars(digits, digits + sizeof digits, rv);
  out.append(s.substr(0, at));
  out += "\"resourceVersion\":\"";
  out.append(digits, end);
  out += '"';
  if (at < s.size() && s[at] != '}') out += ',';
  out.append(s.substr(at));
  return true;
}

std::optional<std::string> splice_resource_version(std::string_view s, storage::Revision rv) {
  std::string out;
  out.reserve(s.size() + 32);
  if (!append_with_resource_version(out, s, rv)) return std::nullopt;
  return out;
}

Result<ListOutput> list_objects(Context& c, const ListQuery& q, bool raw) {
  VKUBE_RETURN_IF_ERROR(q.error);
  VKUBE_RETURN_IF_ERROR(check_field_selector(c.resource(), q.fields));
  storage::Backend& b = c.server.backend();
  std::string prefix = Registry::storage_prefix(c.kind);
  if (c.resource().namespaced && !c.info.namespace_.empty()) prefix += c.info.namespace_ + "/";

  storage::ListOptions o;
  o.prefix = prefix;
  if (!q.continue_token.empty()) {
    if (!q.resource_version.empty() && q.resource_version != "0")
      return Status::bad_request("specifying resource version is not allowed when using continue");
    auto token = base64_decode(q.continue_token);
    if (!token) return Status::bad_request("continue key is not valid: illegal base64 data");
    o.continue_token = *token;
  } else if (!q.resource_version.empty()) {
    auto rv = parse_resource_version(q.resource_version);
    if (!rv.is_ok()) return rv.status();
    if (q.resource_version_match == "Exact") {
      if (*rv == 0)
        return Status::bad_request(
            "resourceVersionMatch \"Exact\" is forbidden for resourceVersion \"0\"");
      o.revision = *rv;
    } else if (*rv > b.current_revision()) {
      return Status(Code::kFutureRevision,
                    "Too large resource version: " + q.resource_version +
                        ", current: " + std::to_string(b.current_revision()));
    }
  }

  ListOutput out;
  const bool filtering = !q.labels.empty() || !q.fields.empty();
  // Page through storage until `limit` matching items are found; the token
  // then points just past the last item examined.
  for (;;) {
    if (q.limit > 0)
      o.limit = q.limit - static_cast<int64_t>(out.items.size() + out.raw_items.size());
    // Items shared with the watch cache, not copied: a raw list reads them
    // in place, the others decode them.
    auto page = b.list_shared(o);
    if (!page.is_ok()) {
      if (page.status().code() == Code::kExpired && !o.continue_token.empty())
        return Status::expired(
            "The provided continue parameter is too old to display a consistent list result. You "
            "can start a new list without the continue parameter.");
      return page.status();
    }
    out.revision = page->revision;
    for (const storage::KeyValuePtr& kv : page->items) {
      // A kind converted between versions is decoded to show each item converted.
      if (raw && !filtering && !c.kind.strategy.convert) {
        out.raw_items.push_back(kv);
        continue;
      }
      auto obj = decode_stored(*kv);
      if (!obj.is_ok()) return obj.status();
      builtin::convert_to(c.kind.strategy, *obj, c.resource().gv.version);
      if (!filtering || matches(q, *obj)) out.items.push_back(std::move(obj).value());
    }
    if (page->continue_token.empty()) break;
    o.continue_token = page->continue_token;
    o.revision = 0;
    if (q.limit > 0 && static_cast<int64_t>(out.items.size() + out.raw_items.size()) >= q.limit) {
      out.continue_token = base64_encode(page->continue_token);
      break;
    }
  }
  return out;
}

}  // namespace vkube::apiserver
