#include "vkube/schema/validation.h"

#include <set>
#include <type_traits>

#include "vkube/common/json_scan.h"

namespace vkube::schema {

namespace {

using json = nlohmann::json;

std::string join(const std::string& path, const std::string& key) {
  return path.empty() ? key : path + "." + key;
}

// One walk for both uses: J = const json reports unknown fields, J = json
// also removes them. `path` is a buffer: each level appends its segment and
// cuts it off again, so only reported paths are copied.
template <typename J>
void walk(const Message& m, J& v, std::string& path, std::vector<std::string>& out, int depth);

template <typename J>
void walk_value(const Field& f, J& v, std::string& path, std::vector<std::string>& out, int depth) {
  const size_t mark = path.size();
  if (f.is_map) {
    if (f.map_value != Type::kMessage || !v.is_object()) return;
    for (auto it = v.begin(); it != v.end(); ++it) {
      path.append("[").append(it.key()).append("]");
      walk(*f.message, it.value(), path, out, depth + 1);
      path.resize(mark);
    }
    return;
  }
  if (f.type != Type::kMessage) return;
  if (!f.repeated) {
    walk(*f.message, v, path, out, depth + 1);
    return;
  }
  if (!v.is_array()) return;
  for (size_t i = 0; i < v.size(); ++i) {
    path.append("[").append(std::to_string(i)).append("]");
    walk(*f.message, v[i], path, out, depth + 1);
    path.resize(mark);
  }
}

template <typename J>
void walk(const Message& m, J& v, std::string& path, std::vector<std::string>& out, int depth) {
  constexpr bool kRemove = !std::is_const_v<J>;
  if (depth > 100 || !v.is_object()) return;
  switch (m.json_format) {
    case JsonFormat::kObject: break;
    case JsonFormat::kSchemaOrArray:
    case JsonFormat::kSchemaOrBool:
    case JsonFormat::kSchemaOrStringArray:
      // The schema alternative is a JSONSchemaProps object.
      for (const Field& f : m.fields)
        if (f.is_message() && !f.repeated) walk(*f.message, v, path, out, depth + 1);
      return;
    default: return;  // scalars in JSON, or embedded raw JSON
  }
  const size_t mark = path.size();
  for (auto it = v.begin(); it != v.end();) {
    // Every kind's Go type embeds TypeMeta, also where another kind holds it
    // (a StatefulSet's volumeClaimTemplates are full PersistentVolumeClaims);
    // templates that are not kinds (a CronJob's jobTemplate) have none.
    if ((depth == 0 || !m.kind.empty()) && (it.key() == "apiVersion" || it.key() == "kind")) {
      ++it;
      continue;
    }
    if (mark > 0) path.push_back('.');
    path.append(it.key());
    const Field* f = m.field(it.key());
    if (f == nullptr) {
      out.push_back(path);
      path.resize(mark);
      if constexpr (kRemove) it = v.erase(it);
      else ++it;
      continue;
    }
    walk_value(*f, it.value(), path, out, depth);
    path.resize(mark);
    ++it;
  }
}

}  // namespace

std::vector<std::string> unknown_fields(const Message& m, const json& obj) {
  std::vector<std::string> out;
  std::string path;
  walk(m, obj, path, out, 0);
  return out;
}

std::vector<std::string> drop_unknown_fields(const Message& m, json& obj) {
  std::vector<std::string> out;
  std::string path;
  walk(m, obj, path, out, 0);
  return out;
}

namespace {

// The object members a JSON text holds: every ':' outside a string ends a
// key. npos when a string does not end.
size_t members_in_text(std::string_view text) {
  size_t n = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '"') {
      size_t end = json_scan::string_end(text, i);
      if (end == json_scan::npos) return json_scan::npos;
      i = end - 1;
    } else if (text[i] == ':') {
      ++n;
    }
  }
  return n;
}

size_t members_in_tree(const json& j) {
  size_t n = j.is_object() ? j.size() : 0;
  if (j.is_structured()) {
    for (const json& child : j) n += members_in_tree(child);
  }
  return n;
}

}  // namespace

json parse_json(std::string_view text, std::vector<std::string>* duplicates) {
  // nlohmann's lexer reads a NUL byte as the end of the input, so "{}\0junk"
  // would parse; a NUL is never valid JSON (inside a string it must be
  // escaped), and Go's decoder refuses it.
  if (text.find('\0') != std::string_view::npos) return json(json::value_t::discarded);
  json quick = json::parse(text, nullptr, /*allow_exceptions=*/false);
  // A key repeated in an object leaves the tree with fewer members than the
  // text: only then is the text parsed again to name the duplicates.
  if (duplicates == nullptr || quick.is_discarded() ||
      members_in_text(text) == members_in_tree(quick))
    return quick;
  // The parser callback sees keys and container boundaries in order; a stack
  // of (path, keys seen, next array index) follows the nesting.
  struct Level {
    std::string path;
    bool array = false;
    size_t index = 0;
    std::set<std::string> keys;
  };
  std::vector<Level> stack;
  std::string pending_key;
  std::vector<std::string>& out = *duplicates;
  auto child_path = [&]() -> std::string {
    if (stack.empty()) return "";
    Level& top = stack.back();
    if (top.array) return top.path + "[" + std::to_string(top.index++) + "]";
    return join(top.path, pending_key);
  };
  auto cb = [&](int /*depth*/, json::parse_event_t event, json& parsed) -> bool {
    switch (event) {
      case json::parse_event_t::object_start:
      case json::parse_event_t::array_start: {
        Level l;
        l.path = child_path();
        l.array = event == json::parse_event_t::array_start;
        stack.push_back(std::move(l));
        break;
      }
      case json::parse_event_t::object_end:
      case json::parse_event_t::array_end:
        if (!stack.empty()) stack.pop_back();
        break;
      case json::parse_event_t::key: {
        pending_key = parsed.get<std::string>();
        if (!stack.empty() && !stack.back().keys.insert(pending_key).second)
          out.push_back(join(stack.back().path, pending_key));
        break;
      }
      case json::parse_event_t::value:
        if (!stack.empty() && stack.back().array) ++stack.back().index;
        break;
    }
    return true;
  };
  return json::parse(text, cb, /*allow_exceptions=*/false);
}

std::vector<std::string> duplicate_fields(std::string_view json_text) {
  std::vector<std::string> out;
  [[maybe_unused]] json parsed = parse_json(json_text, &out);
  return out;
}

}  // namespace vkube::schema
