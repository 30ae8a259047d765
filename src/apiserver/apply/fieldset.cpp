#include "fieldset.h"

#include <algorithm>

#include "vkube/api/limits.h"

namespace vkube::apiserver::apply {

namespace {

bool less_key(const std::pair<std::string, FieldSet>& c, std::string_view pe) {
  return c.first < pe;
}

// Reads a JSON string of printable ASCII without escapes at s[i] (the
// spelling dump() gives it back in); false for any other.
bool plain_string(std::string_view s, size_t& i, std::string_view* out) {
  if (i >= s.size() || s[i] != '"') return false;
  const size_t start = ++i;
  for (; i < s.size() && s[i] != '"'; ++i)
    if (s[i] < 0x20 || s[i] > 0x7e || s[i] == '\\') return false;
  if (i >= s.size()) return false;
  *out = s.substr(start, i - start);
  ++i;
  return true;
}

// A plain string, an integer without leading zeros, true, false or null.
bool plain_scalar(std::string_view s, size_t& i) {
  std::string_view ignored;
  if (i < s.size() && s[i] == '"') return plain_string(s, i, &ignored);
  for (std::string_view word : {"true", "false", "null"})
    if (s.substr(i).starts_with(word)) {
      i += word.size();
      return true;
    }
  if (i < s.size() && s[i] == '-') ++i;
  const size_t start = i;
  while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i;
  // Past 18 digits the parser may read a float, which dumps otherwise.
  const size_t digits = i - start;
  return digits == 1 || (digits > 1 && digits <= 18 && s[start] != '0');
}

// The text of a "k:" or "v:" path element is already as canonicalize()
// would spell it: compact, scalars only, keys in strictly ascending order.
// FieldsV1 that vkube or kube wrote is; this spares parsing and dumping
// every key of every entry on each write.
bool canonical(std::string_view text, bool keyed) {
  size_t i = 0;
  if (!keyed) return plain_scalar(text, i) && i == text.size() && text != "-0";
  if (text.size() < 2 || text[i++] != '{') return false;
  std::string_view prev;
  bool first = true;
  while (true) {
    std::string_view key;
    if (!plain_string(text, i, &key) || (!first && key <= prev)) return false;
    if (i >= text.size() || text[i++] != ':') return false;
    const size_t value = i;
    if (!plain_scalar(text, i) || text.substr(value, i - value) == "-0") return false;
    prev = key;
    first = false;
    if (i >= text.size()) return false;
    if (text[i] == '}') return i + 1 == text.size();
    if (text[i++] != ',') return false;
  }
}

}  // namespace

FieldSet& FieldSet::child(std::string_view pe) {
  auto it = std::lower_bound(children_.begin(), children_.end(), pe, less_key);
  if (it == children_.end() || it->first != pe)
    it = children_.emplace(it, std::string(pe), FieldSet());
  return it->second;
}

const FieldSet* FieldSet::find(std::string_view pe) const {
  auto it = std::lower_bound(children_.begin(), children_.end(), pe, less_key);
  return it == children_.end() || it->first != pe ? nullptr : &it->second;
}

FieldSet* FieldSet::find(std::string_view pe) {
  auto it = std::lower_bound(children_.begin(), children_.end(), pe, less_key);
  return it == children_.end() || it->first != pe ? nullptr : &it->second;
}

void FieldSet::add_child(std::string pe, FieldSet&& sub) {
  if (sub.empty()) return;
  if (children_.empty() || children_.back().first < pe) {
    children_.emplace_back(std::move(pe), std::move(sub));
    return;
  }
  auto it = std::lower_bound(children_.begin(), children_.end(), pe, less_key);
  if (it != children_.end() && it->first == pe)
    it->second.unite(sub);
  else
    children_.emplace(it, std::move(pe), std::move(sub));
}

void FieldSet::erase(std::string_view pe) {
  auto it = std::lower_bound(children_.begin(), children_.end(), pe, less_key);
  if (it != children_.end() && it->first == pe) children_.erase(it);
}

void FieldSet::insert(const std::vector<std::string>& path) {
  FieldSet* n = this;
  for (const auto& pe : path) n = &n->child(pe);
  n->member_ = true;
}

bool FieldSet::contains(const std::vector<std::string>& path) const {
  const FieldSet* n = this;
  for (const auto& pe : path) {
    n = n->find(pe);
    if (n == nullptr) return false;
  }
  return n->member_;
}

size_t FieldSet::size() const {
  size_t n = member_ ? 1 : 0;
  for (const auto& [pe, c] : children_) n += c.size();
  return n;
}

void FieldSet::unite(const FieldSet& other) {
  member_ = member_ || other.member_;
  if (other.children_.empty()) return;
  if (children_.empty()) {
    children_ = other.children_;
    return;
  }
  Children out;
  out.reserve(children_.size() + other.children_.size());
  auto a = children_.begin();
  auto b = other.children_.begin();
  while (a != children_.end() || b != other.children_.end()) {
    if (b == other.children_.end() || (a != children_.end() && a->first < b->first)) {
      out.push_back(std::move(*a++));
    } else if (a == children_.end() || b->first < a->first) {
      out.push_back(*b++);
    } else {
      a->second.unite(b->second);
      out.push_back(std::move(*a++));
      ++b;
    }
  }
  children_ = std::move(out);
}

void FieldSet::subtract(const FieldSet& other) {
  if (other.member_) member_ = false;
  if (other.children_.empty() || children_.empty()) return;
  auto b = other.children_.begin();
  for (auto& [pe, c] : children_) {
    while (b != other.children_.end() && b->first < pe) ++b;
    if (b == other.children_.end()) break;
    if (b->first == pe) c.subtract(b->second);
  }
  std::erase_if(children_, [](const auto& c) { return c.second.empty(); });
}

FieldSet FieldSet::intersect(const FieldSet& other) const {
  FieldSet out;
  out.member_ = member_ && other.member_;
  auto b = other.children_.begin();
  for (const auto& [pe, c] : children_) {
    while (b != other.children_.end() && b->first < pe) ++b;
    if (b == other.children_.end()) break;
    if (b->first == pe) {
      FieldSet sub = c.intersect(b->second);
      if (!sub.empty()) out.children_.emplace_back(pe, std::move(sub));
    }
  }
  return out;
}

void FieldSet::for_each(const std::function<void(const Path&)>& fn) const {
  Path prefix;
  for_each_at(prefix, fn);
}

void FieldSet::for_each_at(Path& prefix, const std::function<void(const Path&)>& fn) const {
  if (member_) fn(prefix);
  for (const auto& [pe, c] : children_) {
    prefix.push_back(pe);
    c.for_each_at(prefix, fn);
    prefix.pop_back();
  }
}

json FieldSet::to_json() const {
  json out(json::value_t::object);
  auto& o = out.get_ref<json::object_t&>();
  // "." sorts before every path element, and the children are sorted.
  if (member_ && !children_.empty()) o.emplace_hint(o.end(), ".", json(json::value_t::object));
  for (const auto& [pe, c] : children_) o.emplace_hint(o.end(), pe, c.to_json());
  return out;
}

Result<FieldSet> FieldSet::from_json(const json& v) {
  if (!v.is_object()) return Status::bad_request("a FieldsV1 value must be a JSON object");
  FieldSet out;
  for (auto it = v.begin(); it != v.end(); ++it) {
    const std::string& key = it.key();
    if (key == ".") {
      out.member_ = true;
      continue;
    }
    std::string pe = key;
    const bool by_value = key.starts_with("k:") || key.starts_with("v:");
    if (by_value && canonical(std::string_view(key).substr(2), key[0] == 'k')) {
      // Kept as spelled.
    } else if (by_value) {
      json parsed = json::parse(std::string_view(key).substr(2), nullptr, false);
      // The key is a string: its JSON passed no depth check before (dump recurses).
      if (parsed.is_discarded() || (key[0] == 'k' && !parsed.is_object()) ||
          !api::within_nesting_limit(parsed))
        return Status::bad_request("invalid path element \"" + key + "\" in FieldsV1");
      pe = key.substr(0, 2) + parsed.dump();
    } else if (!key.starts_with("f:") && !key.starts_with("i:")) {
      return Status::bad_request("invalid path element \"" + key + "\" in FieldsV1");
    }
    auto sub = from_json(it.value());
    if (!sub.is_ok()) return sub.status();
    if (sub->empty()) sub->member_ = true;  // {} is a member leaf
    out.add_child(std::move(pe), std::move(sub).value());
  }
  return out;
}

namespace {

std::string value_string(const json& v) {
  return v.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace

std::string path_string(const FieldSet::Path& path) {
  std::string out;
  for (std::string_view pe : path) {
    std::string_view rest = pe.size() >= 2 ? pe.substr(2) : std::string_view();
    if (pe.starts_with("f:")) {
      out += '.';
      out += rest;
    } else if (pe.starts_with("k:")) {
      json keys = json::parse(rest, nullptr, false);
      out += '[';
      bool first = true;
      for (auto it = keys.begin(); keys.is_object() && it != keys.end(); ++it) {
        if (!first) out += ',';
        first = false;
        out += it.key() + "=" + value_string(it.value());
      }
      out += ']';
    } else if (pe.starts_with("v:")) {
      json v = json::parse(rest, nullptr, false);
      out += "[=" + (v.is_discarded() ? std::string(rest) : value_string(v)) + "]";
    } else if (pe.starts_with("i:")) {
      out += "[" + std::string(rest) + "]";
    } else {
      out += pe;
    }
  }
  return out;
}

}  // namespace vkube::apiserver::apply
