#include "yaml_json.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <optional>

namespace vkube::apiserver::apply {

namespace {

bool one_of(std::string_view s, std::initializer_list<std::string_view> options) {
  return std::find(options.begin(), options.end(), s) != options.end();
}

// Go's strconv.ParseInt(s, 0, 64) / ParseUint for a plain scalar without '_'.
std::optional<json> parse_integer(const std::string& s) {
  size_t i = 0;
  bool negative = false;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) negative = s[i++] == '-';
  if (i >= s.size()) return std::nullopt;
  int base = 10;
  std::string_view digits(s.data() + i, s.size() - i);
  if (digits.size() > 1 && digits[0] == '0') {
    char p = digits[1];
    if (p == 'x' || p == 'X')
      base = 16, digits.remove_prefix(2);
    else if (p == 'o' || p == 'O')
      base = 8, digits.remove_prefix(2);
    else if (p == 'b' || p == 'B')
      base = 2, digits.remove_prefix(2);
    else
      base = 8, digits.remove_prefix(1);
  }
  if (digits.empty()) return std::nullopt;
  for (char c : digits) {
    int d = std::isdigit(static_cast<unsigned char>(c))    ? c - '0'
            : std::isxdigit(static_cast<unsigned char>(c)) ? std::tolower(c) - 'a' + 10
                                                           : 99;
    if (d >= base) return std::nullopt;
  }
  std::string text(digits);
  errno = 0;
  unsigned long long v = std::strtoull(text.c_str(), nullptr, base);
  if (errno == ERANGE) return std::nullopt;
  if (negative) {
    if (v > 9223372036854775808ull) return std::nullopt;
    return json(v == 9223372036854775808ull ? INT64_MIN : -static_cast<int64_t>(v));
  }
  if (v <= static_cast<unsigned long long>(INT64_MAX)) return json(static_cast<int64_t>(v));
  return json(static_cast<uint64_t>(v));
}

// YAML's float form [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?, matched by hand: a
// std::regex would recurse per character and a long scalar would exhaust the stack.
bool is_float(std::string_view s) {
  size_t i = 0;
  auto digits = [&] {
    size_t start = i;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i;
    return i - start;
  };
  if (i < s.size() && (s[i] == '-' || s[i] == '+')) ++i;
  size_t whole = digits();
  size_t fraction = 0;
  if (i < s.size() && s[i] == '.') {
    ++i;
    fraction = digits();
  }
  if (whole == 0 && fraction == 0) return false;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '-' || s[i] == '+')) ++i;
    if (digits() == 0) return false;
  }
  return i == s.size();
}

json plain_scalar(const std::string& s) {
  if (one_of(s, {"", "~", "null", "Null", "NULL"})) return nullptr;
  if (one_of(s, {"y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON"}))
    return true;
  if (one_of(s, {"n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF"}))
    return false;
  char c = s[0];
  if (!(std::isdigit(static_cast<unsigned char>(c)) || c == '-' || c == '+' || c == '.')) return s;
  std::string plain = s;
  std::erase(plain, '_');
  if (auto i = parse_integer(plain)) return *i;
  if (is_float(plain)) {
    char* end = nullptr;
    double d = std::strtod(plain.c_str(), &end);
    if (end && *end == '\0' && std::isfinite(d)) return d;
  }
  return s;
}

json convert(const YAML::Node& n, int depth) {
  if (depth > 100) throw YAML::Exception(n.Mark(), "the document is nested too deeply");
  switch (n.Type()) {
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined:
      return nullptr;
    case YAML::NodeType::Scalar: {
      const std::string& tag = n.Tag();
      if (tag == "!" || tag == "tag:yaml.org,2002:str" || tag == "tag:yaml.org,2002:binary")
        return n.Scalar();
      return plain_scalar(n.Scalar());
    }
    case YAML::NodeType::Sequence: {
      json out = json::array();
      for (const auto& e : n) out.push_back(convert(e, depth + 1));
      return out;
    }
    case YAML::NodeType::Map: {
      json out = json::object();
      for (const auto& kv : n) {
        std::string key = kv.first.IsScalar() ? kv.first.Scalar() : "";
        out[key] = convert(kv.second, depth + 1);
      }
      return out;
    }
  }
  return nullptr;
}

}  // namespace

Result<json> yaml_to_json(std::string_view text) {
  auto first = text.find_first_not_of(" \t\r\n");
  if (first != std::string_view::npos && text[first] == '{') {
    json j = json::parse(text, nullptr, false);
    if (!j.is_discarded()) return j;
  }
  try {
    return convert(YAML::Load(std::string(text)), 0);
  } catch (const YAML::Exception& e) {
    return Status::bad_request("error decoding YAML: yaml: line " +
                               std::to_string(e.mark.line + 1) + ": " + e.msg);
  } catch (const std::exception& e) {
    return Status::bad_request(std::string("error decoding YAML: ") + e.what());
  }
}

}  // namespace vkube::apiserver::apply
