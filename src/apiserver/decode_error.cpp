// A byte-at-a-time JSON scanner that fails where, and with the words, Go's
// encoding/json scanner does (scanner.go's step functions), so a body kube
// would refuse gets kube's message here too.
#include "decode_error.h"

#include <cstdio>
#include <vector>

namespace vkube::apiserver {

namespace {

bool go_space(unsigned char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}
bool digit(unsigned char c) {
  return c >= '0' && c <= '9';
}
bool hex_digit(unsigned char c) {
  return digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

// Go's quoteChar: the byte as a rune in strconv.Quote's spelling, in single quotes.
std::string quote_char(unsigned char c) {
  if (c == '\'') return R"('\'')";
  if (c == '"') return "'\"'";
  char buf[16];
  switch (c) {
    case '\a':
      return R"('\a')";
    case '\b':
      return R"('\b')";
    case '\f':
      return R"('\f')";
    case '\n':
      return R"('\n')";
    case '\r':
      return R"('\r')";
    case '\t':
      return R"('\t')";
    case '\v':
      return R"('\v')";
    case '\\':
      return R"('\\')";
    default:
      break;
  }
  if (c < 0x20 || c == 0x7f) {
    std::snprintf(buf, sizeof buf, "'\\x%02x'", c);
    return buf;
  }
  if (c < 0x80) return std::string("'") + static_cast<char>(c) + "'";
  // A byte >= 0x80 reads as the rune U+0080..U+00FF; Go prints the
  // printable ones (Latin-1 letters) and escapes the rest.
  if (c <= 0xa0 || c == 0xad) {
    std::snprintf(buf, sizeof buf, "'\\u%04x'", c);
    return buf;
  }
  return std::string("'") + static_cast<char>(0xc0 | (c >> 6)) +
         static_cast<char>(0x80 | (c & 0x3f)) + "'";
}

enum class St {
  kBeginValue,
  kBeginValueOrEmpty,
  kBeginStringOrEmpty,
  kBeginString,
  kEndValue,
  kEndTop,
  kInString,
  kInStringEsc,
  kEscU,
  kEscU1,
  kEscU12,
  kEscU123,
  kNeg,
  k1,
  k0,
  kDot,
  kDot0,
  kE,
  kESign,
  kE0,
  kT,
  kTr,
  kTru,
  kF,
  kFa,
  kFal,
  kFals,
  kN,
  kNu,
  kNul,
};
enum class Parse { kObjectKey, kObjectValue, kArrayValue };

class Scanner {
 public:
  // Feeds one byte; false (with error_ set) at the first syntax error.
  bool step(unsigned char c) {
    for (;;) {
      switch (st_) {
        case St::kBeginValueOrEmpty:
          if (go_space(c)) return true;
          if (c == ']') return end_value(c);
          st_ = St::kBeginValue;
          continue;
        case St::kBeginValue:
          return begin_value(c);
        case St::kBeginStringOrEmpty:
          if (go_space(c)) return true;
          if (c == '}') {
            stack_.back() = Parse::kObjectValue;
            return end_value(c);
          }
          st_ = St::kBeginString;
          continue;
        case St::kBeginString:
          if (go_space(c)) return true;
          if (c == '"') return to(St::kInString);
          return fail(c, "looking for beginning of object key string");
        case St::kEndValue:
          return end_value(c);
        case St::kEndTop:
          return go_space(c) ? true : fail(c, "after top-level value");
        case St::kInString:
          if (c == '"') return to(St::kEndValue);
          if (c == '\\') return to(St::kInStringEsc);
          return c < 0x20 ? fail(c, "in string literal") : true;
        case St::kInStringEsc:
          if (c == 'u') return to(St::kEscU);
          for (char e : std::string_view("bfnrt\\/\""))
            if (c == static_cast<unsigned char>(e)) return to(St::kInString);
          return fail(c, "in string escape code");
        case St::kEscU:
          return hex(c, St::kEscU1);
        case St::kEscU1:
          return hex(c, St::kEscU12);
        case St::kEscU12:
          return hex(c, St::kEscU123);
        case St::kEscU123:
          return hex(c, St::kInString);
        case St::kNeg:
          if (c == '0') return to(St::k0);
          if (digit(c) && c != '0') return to(St::k1);
          return fail(c, "in numeric literal");
        case St::k1:
          if (digit(c)) return true;
          st_ = St::k0;
          continue;
        case St::k0:
          if (c == '.') return to(St::kDot);
          if (c == 'e' || c == 'E') return to(St::kE);
          return end_value(c);
        case St::kDot:
          return digit(c) ? to(St::kDot0) : fail(c, "after decimal point in numeric literal");
        case St::kDot0:
          if (digit(c)) return true;
          if (c == 'e' || c == 'E') return to(St::kE);
          return end_value(c);
        case St::kE:
          if (c == '+' || c == '-') return to(St::kESign);
          st_ = St::kESign;
          continue;
        case St::kESign:
          return digit(c) ? to(St::kE0) : fail(c, "in exponent of numeric literal");
        case St::kE0:
          return digit(c) ? true : end_value(c);
        case St::kT:
          return literal(c, 'r', St::kTr, "true");
        case St::kTr:
          return literal(c, 'u', St::kTru, "true");
        case St::kTru:
          return literal(c, 'e', St::kEndValue, "true");
        case St::kF:
          return literal(c, 'a', St::kFa, "false");
        case St::kFa:
          return literal(c, 'l', St::kFal, "false");
        case St::kFal:
          return literal(c, 's', St::kFals, "false");
        case St::kFals:
          return literal(c, 'e', St::kEndValue, "false");
        case St::kN:
          return literal(c, 'u', St::kNu, "null");
        case St::kNu:
          return literal(c, 'l', St::kNul, "null");
        case St::kNul:
          return literal(c, 'l', St::kEndValue, "null");
      }
      return true;
    }
  }

  // Go's eof(): a value left open is "unexpected end of JSON input".
  bool finish() {
    if (st_ == St::kEndTop) return true;
    if (step(' ') && st_ == St::kEndTop) return true;
    if (error_.empty()) error_ = "unexpected end of JSON input";
    return false;
  }

  const std::string& error() const { return error_; }

 private:
  bool to(St s) {
    st_ = s;
    return true;
  }
  bool fail(unsigned char c, const char* context) {
    error_ = "invalid character " + quote_char(c) + " " + context;
    return false;
  }
  bool hex(unsigned char c, St next) {
    return hex_digit(c) ? to(next) : fail(c, "in \\u hexadecimal character escape");
  }
  bool literal(unsigned char c, char want, St next, const char* word) {
    if (c == static_cast<unsigned char>(want)) return to(next);
    return fail(c, (std::string("in literal ") + word + " (expecting '" + want + "')").c_str());
  }
  bool begin_value(unsigned char c) {
    if (go_space(c)) return true;
    switch (c) {
      case '{':
        stack_.push_back(Parse::kObjectKey);
        return to(St::kBeginStringOrEmpty);
      case '[':
        stack_.push_back(Parse::kArrayValue);
        return to(St::kBeginValueOrEmpty);
      case '"':
        return to(St::kInString);
      case '-':
        return to(St::kNeg);
      case '0':
        return to(St::k0);
      case 't':
        return to(St::kT);
      case 'f':
        return to(St::kF);
      case 'n':
        return to(St::kN);
      default:
        break;
    }
    if (digit(c)) return to(St::k1);
    return fail(c, "looking for beginning of value");
  }
  bool end_value(unsigned char c) {
    if (stack_.empty()) {
      st_ = St::kEndTop;
      return go_space(c) ? true : fail(c, "after top-level value");
    }
    if (go_space(c)) return to(St::kEndValue);
    switch (stack_.back()) {
      case Parse::kObjectKey:
        if (c == ':') {
          stack_.back() = Parse::kObjectValue;
          return to(St::kBeginValue);
        }
        return fail(c, "after object key");
      case Parse::kObjectValue:
        if (c == ',') {
          stack_.back() = Parse::kObjectKey;
          return to(St::kBeginString);
        }
        if (c == '}') return pop();
        return fail(c, "after object key:value pair");
      case Parse::kArrayValue:
        if (c == ',') return to(St::kBeginValue);
        if (c == ']') return pop();
        return fail(c, "after array element");
    }
    return true;
  }
  bool pop() {
    stack_.pop_back();
    st_ = stack_.empty() ? St::kEndTop : St::kEndValue;
    return true;
  }

  St st_ = St::kBeginValue;
  std::vector<Parse> stack_;
  std::string error_;
};

// The Go type json.Unmarshal reports when a valid body is not an object:
// kube reads apiVersion and kind into this anonymous struct first.
constexpr std::string_view kFindKind =
    R"(struct { APIVersion string "json:\"apiVersion,omitempty\""; Kind string "json:\"kind,omitempty\"" })";

}  // namespace

std::optional<std::string> go_json_syntax_error(std::string_view data) {
  Scanner s;
  for (char c : data)
    if (!s.step(static_cast<unsigned char>(c))) return s.error();
  if (!s.finish()) return s.error();
  return std::nullopt;
}

std::string summarize_body(std::string_view data, size_t max_length) {
  if (data.empty()) return "<empty>";
  const bool cut = data.size() > max_length;
  std::string_view head = cut ? data.substr(0, max_length) : data;
  std::string out;
  if (data.front() == '{') {
    out = std::string(head);
  } else {
    static constexpr char kHex[] = "0123456789abcdef";
    for (unsigned char c : head) {
      out += kHex[c >> 4];
      out += kHex[c & 0xf];
    }
  }
  return cut ? out + " ..." : out;
}

std::optional<std::string> unrecognized_body_message(std::string_view kind, std::string_view body) {
  std::string detail;
  if (auto syntax = go_json_syntax_error(body)) {
    detail = *syntax;
  } else {
    size_t i = 0;
    while (i < body.size() && go_space(static_cast<unsigned char>(body[i]))) ++i;
    const char first = i < body.size() ? body[i] : '{';
    const char* type = first == '"'                                               ? "string"
                       : first == '['                                             ? "array"
                       : first == 't' || first == 'f'                             ? "bool"
                       : first == '-' || digit(static_cast<unsigned char>(first)) ? "number"
                                                                                  : nullptr;
    if (type == nullptr) return std::nullopt;  // an object, or null
    detail = std::string("json: cannot unmarshal ") + type + " into Go value of type " +
             std::string(kFindKind);
  }
  return "the object provided is unrecognized (must be of type " + std::string(kind) +
         "): couldn't get version/kind; json parse error: " + detail + " (" + summarize_body(body) +
         ")";
}

}  // namespace vkube::apiserver
