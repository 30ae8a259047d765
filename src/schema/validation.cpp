#include "vkube/schema/validation.h"

#include <set>

namespace vkube::schema {

namespace {

using json = nlohmann::json;

std::string join(const std::string& path, const std::string& key) {
  return path.empty() ? key : path + "." + key;
}

void walk(const Message& m, const json& v, const std::string& path, std::vector<std::string>& out,
          int depth);

void walk_value(const Field& f, const json& v, const std::string& path,
                std::vector<std::string>& out, int depth) {
  if (f.is_map) {
    if (f.map_value != Type::kMessage || !v.is_object()) return;
    for (auto it = v.begin(); it != v.end(); ++it)
      walk(*f.message, it.value(), path + "[" + it.key() + "]", out, depth + 1);
    return;
  }
  if (f.type != Type::kMessage) return;
  if (f.repeated) {
    if (!v.is_array()) return;
    for (size_t i = 0; i < v.size(); ++i)
      walk(*f.message, v[i], path + "[" + std::to_string(i) + "]", out, depth + 1);
    return;
  }
  walk(*f.message, v, path, out, depth + 1);
}

void walk(const Message& m, const json& v, const std::string& path, std::vector<std::string>& out,
          int depth) {
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
  for (auto it = v.begin(); it != v.end(); ++it) {
    if (depth == 0 && (it.key() == "apiVersion" || it.key() == "kind")) continue;
    const Field* f = m.field(it.key());
    std::string p = join(path, it.key());
    if (f == nullptr) {
      out.push_back(p);
      continue;
    }
    walk_value(*f, it.value(), p, out, depth);
  }
}

void prune(const Message& m, json& v, int depth) {
  if (depth > 100 || !v.is_object()) return;
  if (m.json_format == JsonFormat::kSchemaOrArray || m.json_format == JsonFormat::kSchemaOrBool ||
      m.json_format == JsonFormat::kSchemaOrStringArray) {
    for (const Field& f : m.fields)
      if (f.is_message() && !f.repeated) prune(*f.message, v, depth + 1);
    return;
  }
  if (m.json_format != JsonFormat::kObject) return;
  for (auto it = v.begin(); it != v.end();) {
    if (depth == 0 && (it.key() == "apiVersion" || it.key() == "kind")) {
      ++it;
      continue;
    }
    const Field* f = m.field(it.key());
    if (f == nullptr) {
      it = v.erase(it);
      continue;
    }
    json& val = it.value();
    if (f->is_map && f->map_value == Type::kMessage && val.is_object()) {
      for (auto& e : val) prune(*f->message, e, depth + 1);
    } else if (f->type == Type::kMessage && !f->is_map) {
      if (f->repeated && val.is_array()) {
        for (auto& e : val) prune(*f->message, e, depth + 1);
      } else if (!f->repeated) {
        prune(*f->message, val, depth + 1);
      }
    }
    ++it;
  }
}

}  // namespace

void drop_unknown_fields(const Message& m, json& obj) { prune(m, obj, 0); }

std::vector<std::string> unknown_fields(const Message& m, const json& obj) {
  std::vector<std::string> out;
  walk(m, obj, "", out, 0);
  return out;
}

std::vector<std::string> duplicate_fields(std::string_view json_text) {
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
  std::vector<std::string> out;
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
  [[maybe_unused]] json parsed = json::parse(json_text, cb, /*allow_exceptions=*/false);
  return out;
}

}  // namespace vkube::schema
