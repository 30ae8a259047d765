// cel-go's strings extension as kube declares it (version 2): "...".format([args]) with the
// %s %d %f %e %b %x %X %o clauses (and .N precision for %f and %e), lists and maps written as
// CEL literals, cel-go's error wording; and strings.quote(s).
#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "cel_internal.h"

namespace vkube::cel::detail {
namespace {

constexpr int kDefaultPrecision = 6;

// An error of formatting one value, or of the format string itself.
struct Failure {
  std::string message;
};

using Formatted = std::variant<std::string, Failure>;

std::string quote(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '\a':
        out += "\\a";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\v':
        out += "\\v";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '"':
        out += "\\\"";
        break;
      default:
        out += c;
    }
  }
  return out + "\"";
}

std::string printf_text(const char* format, double d) {
  char buf[512];
  std::snprintf(buf, sizeof buf, format, d);
  return buf;
}

std::string fixed(double d, int precision) {
  return printf_text(("%." + std::to_string(precision) + "f").c_str(), d);
}

Formatted format_value(const Value& v, int depth);

// A list or map member, written as a CEL literal would be (strings quoted).
Formatted member(const Value& v, int depth) {
  Formatted f;
  if (v.kind == Kind::kDouble) return fixed(v.d, kDefaultPrecision);
  if (v.kind == Kind::kType) return "type(" + std::string(v.str()) + ")";
  f = format_value(v, depth + 1);
  if (auto* s = std::get_if<std::string>(&f)) {
    if (v.kind == Kind::kString) return quote(*s);
    if (v.kind == Kind::kBytes) return "b" + quote(*s);
  }
  return f;
}

// The %s text of a value.
Formatted format_value(const Value& v, int depth) {
  if (depth > kMaxValueDepth) return Failure{"value nesting exceeds the supported depth"};
  switch (v.kind) {
    case Kind::kNull:
      return std::string("null");
    case Kind::kString:
    case Kind::kBytes:
      return std::string(v.str());
    case Kind::kList: {
      std::string out = "[";
      const std::size_t n = list_size(v);
      for (std::size_t i = 0; i < n; ++i) {
        Formatted m = member(list_at(v, i), depth);
        if (auto* e = std::get_if<Failure>(&m)) return *e;
        out += std::get<std::string>(m);
        if (i + 1 < n) out += ", ";
      }
      return out + "]";
    }
    case Kind::kMap: {
      std::vector<std::pair<std::string, std::string>> pairs;
      for (const Value& k : map_keys(v)) {
        if (k.kind != Kind::kString && k.kind != Kind::kBool && k.kind != Kind::kInt &&
            k.kind != Kind::kUint)
          return Failure{"no formatting function for map key of type " +
                         std::string(type_name(k.kind))};
        Formatted key = member(k, depth);
        auto value = map_get(v, k);
        if (!value) return Failure{"could not find key"};
        Formatted val = member(*value, depth);
        if (auto* e = std::get_if<Failure>(&key)) return *e;
        if (auto* e = std::get_if<Failure>(&val)) return *e;
        pairs.emplace_back(std::get<std::string>(key), std::get<std::string>(val));
      }
      std::stable_sort(pairs.begin(), pairs.end(),
                       [](const auto& a, const auto& b) { return a.first < b.first; });
      std::string out = "{";
      for (std::size_t i = 0; i < pairs.size(); ++i) {
        out += pairs[i].first + ":" + pairs[i].second;
        if (i + 1 < pairs.size()) out += ", ";
      }
      return out + "}";
    }
    case Kind::kInt:
    case Kind::kUint:
    case Kind::kDouble:
    case Kind::kBool:
    case Kind::kType: {
      Value s = to_string(v);
      if (s.is_error()) return Failure{std::string(s.str())};
      return std::string(s.str());
    }
    default:
      return Failure{
          "string clause can only be used on strings, bools, bytes, ints, doubles, "
          "maps, lists, types, durations, and timestamps, was given " +
          std::string(type_name(v.kind))};
  }
}

std::string integer_text(const Value& v, char verb) {
  char buf[80];
  if (verb == 'b') {
    uint64_t u = v.kind == Kind::kUint ? v.u
                 : v.i < 0             ? static_cast<uint64_t>(0) - static_cast<uint64_t>(v.i)
                                       : static_cast<uint64_t>(v.i);
    std::string bits;
    do {
      bits.insert(bits.begin(), static_cast<char>('0' + (u & 1)));
      u >>= 1;
    } while (u != 0);
    return (v.kind == Kind::kInt && v.i < 0 ? "-" : "") + bits;
  }
  const char* f = verb == 'd'   ? "%" PRId64
                  : verb == 'o' ? "%" PRIo64
                  : verb == 'x' ? "%" PRIx64
                                : "%" PRIX64;
  const char* fu = verb == 'd'   ? "%" PRIu64
                   : verb == 'o' ? "%" PRIo64
                   : verb == 'x' ? "%" PRIx64
                                 : "%" PRIX64;
  if (v.kind == Kind::kInt && v.i < 0 && verb != 'd') {
    // Go prints a negative number's magnitude with a minus sign in every base.
    std::snprintf(buf, sizeof buf, fu, static_cast<uint64_t>(0) - static_cast<uint64_t>(v.i));
    return std::string("-") + buf;
  }
  if (v.kind == Kind::kInt)
    std::snprintf(buf, sizeof buf, f, v.i);
  else
    std::snprintf(buf, sizeof buf, fu, v.u);
  return buf;
}

// One clause applied to its argument.
Formatted clause(char verb, std::optional<int> precision, const Value& v) {
  const bool integer = v.kind == Kind::kInt || v.kind == Kind::kUint;
  const bool special_string = v.kind == Kind::kString &&
                              (v.str() == "NaN" || v.str() == "Infinity" || v.str() == "-Infinity");
  switch (verb) {
    case 's':
      return format_value(v, 0);
    case 'd':
      if (!integer)
        return Failure{"decimal clause can only be used on integers, was given " +
                       std::string(type_name(v.kind))};
      return integer_text(v, 'd');
    case 'f':
    case 'e': {
      if (v.kind != Kind::kDouble && !special_string)
        return Failure{std::string(verb == 'f' ? "fixed-point" : "scientific") +
                       " clause can only be used on doubles, was given " +
                       std::string(type_name(v.kind))};
      const double d = v.kind == Kind::kDouble ? v.d : to_double(v).d;
      const int p = precision.value_or(kDefaultPrecision);
      return printf_text(("%." + std::to_string(p) + (verb == 'f' ? "f" : "e")).c_str(), d);
    }
    case 'b':
      if (v.kind == Kind::kBool) return std::string(v.b ? "1" : "0");
      if (!integer)
        return Failure{"only integers and bools can be formatted as binary, was given " +
                       std::string(type_name(v.kind))};
      return integer_text(v, 'b');
    case 'o':
      if (!integer)
        return Failure{"octal clause can only be used on integers, was given " +
                       std::string(type_name(v.kind))};
      return integer_text(v, 'o');
    case 'x':
    case 'X': {
      if (v.kind == Kind::kString || v.kind == Kind::kBytes) {
        std::string out;
        char buf[4];
        for (unsigned char c : v.str()) {
          std::snprintf(buf, sizeof buf, verb == 'x' ? "%02x" : "%02X", c);
          out += buf;
        }
        return out;
      }
      if (!integer)
        return Failure{
            "only integers, byte buffers, and strings can be formatted as hex, was "
            "given " +
            std::string(type_name(v.kind))};
      return integer_text(v, verb);
    }
    default:
      return Failure{std::string("unrecognized formatting clause \"") + verb + "\""};
  }
}

Value format(std::string_view f, const Value& args, Ctx& ctx) {
  const std::size_t count = list_size(args);
  std::string out;
  std::size_t next = 0;
  for (std::size_t i = 0; i < f.size();) {
    if (f[i] != '%') {
      out += f[i++];
      continue;
    }
    if (i + 1 < f.size() && f[i + 1] == '%') {
      out += '%';
      i += 2;
      continue;
    }
    if (next >= count) return make_error("index " + std::to_string(next) + " out of range");
    if (i + 1 >= f.size()) return make_error("unexpected end of string");
    std::size_t j = i + 1;
    std::optional<int> precision;
    if (f[j] == '.') {
      ++j;
      std::size_t start = j;
      while (j < f.size() && f[j] >= '0' && f[j] <= '9') ++j;
      if (j >= f.size())
        return make_error(
            "could not parse formatting clause: error while parsing precision: "
            "could not find end of precision specifier");
      if (j == start || j - start > 3)
        return make_error(
            "could not parse formatting clause: error while parsing precision: "
            "error while converting precision to integer");
      precision = std::stoi(std::string(f.substr(start, j - start)));
    }
    const char verb = f[j];
    if (std::string_view("sdfebxXo").find(verb) == std::string_view::npos)
      return make_error(std::string("could not parse formatting clause: unrecognized formatting "
                                    "clause \"") +
                        verb + "\"");
    Formatted text = clause(verb, precision, list_at(args, next++));
    if (auto* e = std::get_if<Failure>(&text))
      return make_error("error during formatting: " + e->message);
    out += std::get<std::string>(text);
    if (!ctx.charge(static_cast<int64_t>(std::get<std::string>(text).size() / 16))) break;
    i = j + 1;
  }
  return make_string(std::move(out));
}

}  // namespace

Value format_function(Fn fn, const std::vector<Value>& a, Ctx& ctx) {
  if (fn == Fn::kStringsQuote) {
    if (a[0].kind != Kind::kString) return no_overload();
    return make_string(quote(a[0].str()));
  }
  if (a[0].kind != Kind::kString || a[1].kind != Kind::kList) return no_overload();
  return format(a[0].str(), a[1], ctx);
}

}  // namespace vkube::cel::detail
