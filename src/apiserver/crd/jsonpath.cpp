#include "jsonpath.h"

#include <cctype>

namespace vkube::apiserver::crd {

struct JsonPath::Step {
  enum class Type { kKey, kIndex, kAll, kFilter } type;
  std::string key;    // kKey; kFilter: the compared field path after "@."
  int64_t index = 0;  // kIndex (negative counts from the end)
  bool equal = true;  // kFilter: == or !=
  json literal;       // kFilter: the right-hand side
};

JsonPath::~JsonPath() = default;

namespace {

using Step = JsonPath::Step;

bool ident_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '$';
}

// A quoted string at text[i] ('..' or ".."); advances i past it.
bool quoted(std::string_view text, size_t& i, std::string* out) {
  if (i >= text.size() || (text[i] != '\'' && text[i] != '"')) return false;
  char q = text[i++];
  out->clear();
  while (i < text.size() && text[i] != q) {
    if (text[i] == '\\' && i + 1 < text.size()) ++i;
    out->push_back(text[i++]);
  }
  if (i >= text.size()) return false;
  ++i;
  return true;
}

// "[?(@.a.b == "x")]" starting after "[?(".
bool parse_filter(std::string_view text, size_t& i, Step* step, std::string* error) {
  if (text.substr(i, 2) != "@.") {
    *error = "a filter must compare a field of @";
    return false;
  }
  i += 2;
  size_t start = i;
  while (i < text.size() && (ident_char(text[i]) || text[i] == '.')) ++i;
  step->key = std::string(text.substr(start, i - start));
  while (i < text.size() && text[i] == ' ') ++i;
  if (text.substr(i, 2) == "==")
    step->equal = true;
  else if (text.substr(i, 2) == "!=")
    step->equal = false;
  else {
    *error = "a filter needs == or !=";
    return false;
  }
  i += 2;
  while (i < text.size() && text[i] == ' ') ++i;
  std::string s;
  if (quoted(text, i, &s)) {
    step->literal = s;
  } else {
    size_t b = i;
    while (i < text.size() && text[i] != ')') ++i;
    step->literal = json::parse(text.substr(b, i - b), nullptr, false);
    if (step->literal.is_discarded()) {
      *error = "unsupported filter value";
      return false;
    }
  }
  while (i < text.size() && text[i] == ' ') ++i;
  if (text.substr(i, 2) != ")]") {
    *error = "unterminated filter";
    return false;
  }
  i += 2;
  step->type = Step::Type::kFilter;
  return true;
}

bool parse_bracket(std::string_view text, size_t& i, Step* step, std::string* error) {
  ++i;  // '['
  if (text.substr(i, 2) == "?(") {
    i += 2;
    return parse_filter(text, i, step, error);
  }
  std::string key;
  if (quoted(text, i, &key)) {
    step->type = Step::Type::kKey;
    step->key = std::move(key);
  } else if (i < text.size() && text[i] == '*') {
    ++i;
    step->type = Step::Type::kAll;
  } else {
    size_t b = i;
    if (i < text.size() && text[i] == '-') ++i;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) ++i;
    if (b == i || (i == b + 1 && text[b] == '-')) {
      *error = "unsupported array subscript";
      return false;
    }
    step->type = Step::Type::kIndex;
    step->index = std::stoll(std::string(text.substr(b, i - b)));
  }
  if (i >= text.size() || text[i] != ']') {
    *error = "unterminated [";
    return false;
  }
  ++i;
  return true;
}

const json* child(const json& v, const std::string& dotted) {
  const json* cur = &v;
  size_t start = 0;
  while (start <= dotted.size()) {
    size_t dot = dotted.find('.', start);
    std::string key =
        dotted.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (!cur->is_object()) return nullptr;
    auto it = cur->find(key);
    if (it == cur->end()) return nullptr;
    cur = &*it;
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return cur;
}

void apply(const Step& s, const json* v, std::vector<const json*>& out) {
  switch (s.type) {
    case Step::Type::kKey:
      if (v->is_object()) {
        auto it = v->find(s.key);
        if (it != v->end()) out.push_back(&*it);
      }
      return;
    case Step::Type::kIndex:
      if (v->is_array()) {
        int64_t n = static_cast<int64_t>(v->size());
        int64_t i = s.index < 0 ? n + s.index : s.index;
        if (i >= 0 && i < n) out.push_back(&(*v)[static_cast<size_t>(i)]);
      }
      return;
    case Step::Type::kAll:
      if (v->is_array() || v->is_object())
        for (const json& x : *v) out.push_back(&x);
      return;
    case Step::Type::kFilter:
      if (!v->is_array()) return;
      for (const json& x : *v) {
        const json* f = child(x, s.key);
        bool eq = f != nullptr && *f == s.literal;
        if (eq == s.equal) out.push_back(&x);
      }
      return;
  }
}

}  // namespace

std::unique_ptr<JsonPath> JsonPath::parse(std::string_view text, std::string* error) {
  std::unique_ptr<JsonPath> p(new JsonPath());
  // kube accepts the path with or without the surrounding braces.
  if (text.size() >= 2 && text.front() == '{' && text.back() == '}')
    text = text.substr(1, text.size() - 2);
  if (text.empty() || (text[0] != '.' && text[0] != '[')) {
    *error = "must be a simple json path starting with .";
    return nullptr;
  }
  size_t i = 0;
  while (i < text.size()) {
    Step step;
    if (text[i] == '.') {
      ++i;
      if (i < text.size() && text[i] == '.') {
        *error = "recursive descent (..) is not supported";
        return nullptr;
      }
      size_t b = i;
      while (i < text.size() && ident_char(text[i])) ++i;
      if (b == i) {
        if (i == text.size() && text.size() == 1) break;  // "." alone: the root
        *error = "empty field name";
        return nullptr;
      }
      step.type = Step::Type::kKey;
      step.key = std::string(text.substr(b, i - b));
    } else if (text[i] == '[') {
      if (!parse_bracket(text, i, &step, error)) return nullptr;
    } else {
      *error = "unexpected character '" + std::string(1, text[i]) + "'";
      return nullptr;
    }
    p->steps_.push_back(std::move(step));
  }
  return p;
}

std::vector<const json*> JsonPath::find(const json& root) const {
  std::vector<const json*> cur = {&root};
  for (const Step& s : steps_) {
    std::vector<const json*> next;
    for (const json* v : cur) apply(s, v, next);
    cur = std::move(next);
    if (cur.empty()) break;
  }
  return cur;
}

bool JsonPath::is_simple_field() const {
  if (steps_.empty()) return false;
  for (const Step& s : steps_)
    if (s.type != Step::Type::kKey) return false;
  return true;
}

std::vector<std::string> JsonPath::keys() const {
  std::vector<std::string> out;
  for (const Step& s : steps_) out.push_back(s.key);
  return out;
}

namespace {

std::vector<std::string> split_simple(std::string_view path) {
  std::vector<std::string> keys;
  size_t i = 0;
  while (i < path.size()) {
    if (path[i] == '.') ++i;
    size_t dot = path.find('.', i);
    if (dot == std::string_view::npos) dot = path.size();
    if (dot > i) keys.emplace_back(path.substr(i, dot - i));
    i = dot;
  }
  return keys;
}

}  // namespace

const json* find_field(const json& root, std::string_view simple_path) {
  const json* cur = &root;
  for (const std::string& k : split_simple(simple_path)) {
    if (!cur->is_object()) return nullptr;
    auto it = cur->find(k);
    if (it == cur->end()) return nullptr;
    cur = &*it;
  }
  return cur;
}

void set_field(json& root, std::string_view simple_path, json value) {
  json* cur = &root;
  for (const std::string& k : split_simple(simple_path)) {
    if (!cur->is_object()) *cur = json::object();
    cur = &(*cur)[k];
  }
  *cur = std::move(value);
}

}  // namespace vkube::apiserver::crd
