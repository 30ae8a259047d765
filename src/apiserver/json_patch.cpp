#include "json_patch.h"

#include <charconv>
#include <optional>
#include <string>
#include <vector>

#include "vkube/api/limits.h"

namespace vkube::apiserver {

namespace {

using json = nlohmann::json;
using Tokens = std::vector<std::string>;

// kube answers a patch that does not apply with a generic 422 whose
// message is this sentence; the cause follows it here, as kubectl shows it.
Status rejected(const std::string& cause) {
  return Status::invalid("the server rejected our request due to an error in our request: " +
                         cause);
}

// A JSON pointer's reference tokens, unescaped (~1 is '/', ~0 is '~').
std::optional<Tokens> parse_pointer(const std::string& p) {
  Tokens out;
  if (p.empty()) return out;
  if (p[0] != '/') return std::nullopt;
  std::string tok;
  for (size_t i = 1; i <= p.size(); ++i) {
    if (i == p.size() || p[i] == '/') {
      out.push_back(std::move(tok));
      tok.clear();
    } else if (p[i] != '~') {
      tok += p[i];
    } else if (i + 1 < p.size() && (p[i + 1] == '0' || p[i + 1] == '1')) {
      tok += p[++i] == '0' ? '~' : '/';
    } else {
      return std::nullopt;
    }
  }
  return out;
}

// An array index token as Go's strconv.Atoi reads it; negative indices
// count from the end, as evanphx/json-patch allows by default.
std::optional<long long> parse_index(const std::string& tok) {
  long long v = 0;
  const char* end = tok.data() + tok.size();
  auto [ptr, ec] = std::from_chars(tok.data() + (tok.starts_with('+') ? 1 : 0), end, v);
  if (tok.empty() || ec != std::errc() || ptr != end) return std::nullopt;
  return v;
}

// The element `tok` names in container `c` (an index in [0, size) after
// negative ones are turned around), or nullptr.
json* child(json& c, const std::string& tok) {
  if (c.is_object()) {
    auto it = c.find(tok);
    return it == c.end() ? nullptr : &*it;
  }
  if (!c.is_array()) return nullptr;
  auto i = parse_index(tok);
  if (!i) return nullptr;
  long long n = static_cast<long long>(c.size());
  long long idx = *i < 0 ? *i + n : *i;
  return idx < 0 || idx >= n ? nullptr : &c[static_cast<size_t>(idx)];
}

// The value at the first `n` tokens, or nullptr.
json* locate(json& doc, const Tokens& t, size_t n) {
  json* at = &doc;
  for (size_t i = 0; i < n && at != nullptr; ++i) at = child(*at, t[i]);
  return at;
}

class Patcher {
 public:
  explicit Patcher(json doc) : doc_(std::move(doc)) {}

  Status run(const json& op) {
    std::string kind = str(op, "op");
    if (kind == "add") return add(op);
    if (kind == "remove") return remove(op);
    if (kind == "replace") return replace(op);
    if (kind == "move") return move(op);
    if (kind == "copy") return copy(op);
    if (kind == "test") return test(op);
    return rejected("Unexpected kind: " + (kind.empty() ? std::string("unknown") : kind));
  }

  json take() { return std::move(doc_); }

 private:
  static std::string str(const json& op, const char* key) {
    auto it = op.find(key);
    return it != op.end() && it->is_string() ? it->get<std::string>() : "";
  }

  // The tokens of `key` ("path" or "from"), or the error naming the op.
  Result<Tokens> pointer(const json& op, const char* key, const std::string& kind) {
    auto it = op.find(key);
    if (it == op.end() || !it->is_string())
      return rejected(kind + " operation failed to decode " + key + ": missing value");
    auto t = parse_pointer(it->get<std::string>());
    if (!t)
      return rejected(kind + " operation does not apply: invalid JSON pointer \"" +
                      it->get<std::string>() + "\"");
    return std::move(*t);
  }

  // Inserting `v` at `t` keeps the object within the nesting limit. Each
  // operation is checked before it runs, so the document never passes it.
  static Status check_depth(const Tokens& t, const json& v) {
    if (t.size() + api::json_depth(v) <= api::kMaxNestingDepth) return Status::ok();
    return rejected("the patched object would nest objects or arrays deeper than " +
                    std::to_string(api::kMaxNestingDepth) + " levels");
  }

  // RFC 6902 "add" (and the second half of move and copy).
  Status insert(const Tokens& t, json v, const std::string& kind, const std::string& path) {
    VKUBE_RETURN_IF_ERROR(check_depth(t, v));
    json* parent = t.empty() ? nullptr : locate(doc_, t, t.size() - 1);
    if (parent == nullptr || !parent->is_structured())
      return rejected(kind + " operation does not apply: doc is missing path: \"" + path +
                      "\": missing value");
    const std::string& key = t.back();
    if (parent->is_object()) {
      (*parent)[key] = std::move(v);
      return Status::ok();
    }
    long long n = static_cast<long long>(parent->size());
    if (key == "-") {
      parent->push_back(std::move(v));
      return Status::ok();
    }
    auto i = parse_index(key);
    if (!i)
      return rejected("error in " + kind + " for path: '" + path +
                      "': value was not a proper array index: '" + key + "'");
    long long idx = *i < 0 ? *i + n + 1 : *i;
    if (idx < 0 || idx > n)
      return rejected("error in " + kind + " for path: '" + path +
                      "': Unable to access invalid index: " + key + ": invalid index referenced");
    parent->insert(parent->begin() + idx, std::move(v));
    return Status::ok();
  }

  Status erase(const Tokens& t, const std::string& kind, const std::string& path) {
    json* parent = t.empty() ? nullptr : locate(doc_, t, t.size() - 1);
    if (parent == nullptr || !parent->is_structured())
      return rejected(kind + " operation does not apply: doc is missing path: \"" + path +
                      "\": missing value");
    if (child(*parent, t.back()) == nullptr)
      return rejected("error in " + kind + " for path: '" + path +
                      "': Unable to remove nonexistent key: " + t.back() + ": missing value");
    if (parent->is_object()) {
      parent->erase(t.back());
    } else {
      long long i = *parse_index(t.back());
      if (i < 0) i += static_cast<long long>(parent->size());
      parent->erase(static_cast<size_t>(i));
    }
    return Status::ok();
  }

  Status add(const json& op) {
    auto t = pointer(op, "path", "add");
    if (!t.is_ok()) return t.status();
    return insert(*t, op.value("value", json()), "add", str(op, "path"));
  }

  Status remove(const json& op) {
    auto t = pointer(op, "path", "remove");
    if (!t.is_ok()) return t.status();
    return erase(*t, "remove", str(op, "path"));
  }

  Status replace(const json& op) {
    auto t = pointer(op, "path", "replace");
    if (!t.is_ok()) return t.status();
    json v = op.value("value", json());
    VKUBE_RETURN_IF_ERROR(check_depth(*t, v));
    if (t->empty()) {
      if (!v.is_structured()) return rejected("replace operation value must be object or array");
      doc_ = std::move(v);
      return Status::ok();
    }
    json* parent = locate(doc_, *t, t->size() - 1);
    json* at = parent ? child(*parent, t->back()) : nullptr;
    // evanphx/json-patch replaces a missing key of an object as an add.
    if (parent != nullptr && parent->is_object()) at = &(*parent)[t->back()];
    if (at == nullptr)
      return rejected("replace operation does not apply: doc is missing key: " + str(op, "path") +
                      ": missing value");
    *at = std::move(v);
    return Status::ok();
  }

  // The value at `from`, for move and copy.
  Result<json*> source(const json& op, const std::string& kind) {
    auto f = pointer(op, "from", kind);
    if (!f.is_ok()) return f.status();
    json* v = locate(doc_, *f, f->size());
    if (v == nullptr)
      return rejected(kind + " operation does not apply: doc is missing from path: " +
                      str(op, "from") + ": missing value");
    return v;
  }

  Status move(const json& op) {
    auto v = source(op, "move");
    if (!v.is_ok()) return v.status();
    auto f = parse_pointer(str(op, "from"));
    auto t = pointer(op, "path", "move");
    if (!t.is_ok()) return t.status();
    if (f->empty()) return rejected("move operation does not apply: cannot move the document");
    json value = std::move(**v);
    VKUBE_RETURN_IF_ERROR(erase(*f, "move", str(op, "from")));
    return insert(*t, std::move(value), "move", str(op, "path"));
  }

  Status copy(const json& op) {
    auto v = source(op, "copy");
    if (!v.is_ok()) return v.status();
    auto t = pointer(op, "path", "copy");
    if (!t.is_ok()) return t.status();
    // Counted as evanphx/json-patch counts it: the compact serialized size.
    copied_ += (*v)->dump(-1, ' ', false, json::error_handler_t::replace).size();
    if (copied_ > api::kJsonPatchMaxCopyBytes)
      return rejected("Unable to complete the copy, the accumulated size increase of copy is " +
                      std::to_string(copied_) + ", exceeding the limit " +
                      std::to_string(api::kJsonPatchMaxCopyBytes));
    return insert(*t, **v, "copy", str(op, "path"));
  }

  Status test(const json& op) {
    auto t = pointer(op, "path", "test");
    if (!t.is_ok()) return t.status();
    json* at = locate(doc_, *t, t->size());
    json want = op.value("value", json());
    if ((at == nullptr && want.is_null()) || (at != nullptr && *at == want)) return Status::ok();
    return rejected("testing value " + str(op, "path") + " failed: test failed");
  }

  json doc_;
  size_t copied_ = 0;
};

}  // namespace

Result<json> apply_json_patch(const json& target, const json& ops) {
  if (!ops.is_array()) return Status::bad_request("a JSON patch must be an array of operations");
  for (const json& op : ops)
    if (!op.is_object())
      return Status::bad_request("json: cannot unmarshal " + std::string(op.type_name()) +
                                 " into Go value of type jsonpatch.Operation");
  if (ops.size() > api::kMaxJsonPatchOperations)
    return Status::too_large(
        "Request entity too large: The allowed maximum operations in a JSON "
        "patch is " +
        std::to_string(api::kMaxJsonPatchOperations) + ", got " + std::to_string(ops.size()));
  if (!api::within_object_limit(target))
    return rejected("the object nests objects or arrays deeper than " +
                    std::to_string(api::kMaxObjectNestingDepth) + " levels");
  Patcher p(target);
  for (const json& op : ops) VKUBE_RETURN_IF_ERROR(p.run(op));
  return p.take();
}

}  // namespace vkube::apiserver
