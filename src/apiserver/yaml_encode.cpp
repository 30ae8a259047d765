#include "yaml_encode.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace vkube::apiserver {

using json = nlohmann::json;

// kube encodes a JSON document as YAML the way sigs.k8s.io/yaml does (JSONToYAML, i.e. go-yaml v2):
// keys in go-yaml's order, 2-space indentation, sequences not indented under their key, strings
// quoted only where plain text would read as something else, long lines folded at 80 columns,
// multi-line strings as literal blocks.

namespace {

bool yaml_letter(unsigned char c) {
  return std::isalpha(c) || c >= 0x80;
}
bool yaml_digit(unsigned char c) {
  return c >= '0' && c <= '9';
}

// go-yaml v2's keyList.Less: runs of digits compare as numbers, and other
// characters sort before letters.
bool yaml_key_less(std::string_view a, std::string_view b) {
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    const auto ac = static_cast<unsigned char>(a[i]);
    const auto bc = static_cast<unsigned char>(b[i]);
    if (ac == bc) continue;
    const bool al = yaml_letter(ac), bl = yaml_letter(bc);
    if (al && bl) return ac < bc;
    if (al || bl) return bl;
    uint64_t an = 0, bn = 0;
    if (ac == '0' || bc == '0') {
      for (size_t j = i; j-- > 0 && yaml_digit(a[j]);)
        if (a[j] != '0') {
          an = bn = 1;
          break;
        }
    }
    size_t ai = i, bi = i;
    for (; ai < a.size() && yaml_digit(a[ai]); ++ai) an = an * 10 + (a[ai] - '0');
    for (; bi < b.size() && yaml_digit(b[bi]); ++bi) bn = bn * 10 + (b[bi] - '0');
    if (an != bn) return an < bn;
    if (ai != bi) return ai < bi;
    return ac < bc;
  }
  return a.size() < b.size();
}

size_t digits_at(std::string_view s, size_t i, size_t max = std::string_view::npos) {
  size_t n = 0;
  while (i + n < s.size() && n < max && yaml_digit(s[i + n])) ++n;
  return n;
}

// [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?
bool yaml_float_text(std::string_view s) {
  size_t i = (!s.empty() && (s[0] == '-' || s[0] == '+')) ? 1 : 0;
  if (i < s.size() && s[i] == '.') {
    size_t n = digits_at(s, i + 1);
    if (n == 0) return false;
    i += 1 + n;
  } else {
    size_t n = digits_at(s, i);
    if (n == 0) return false;
    i += n;
    if (i < s.size() && s[i] == '.') i += 1 + digits_at(s, i + 1);
  }
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '-' || s[i] == '+')) ++i;
    size_t n = digits_at(s, i);
    if (n == 0) return false;
    i += n;
  }
  return i == s.size();
}

// strconv.ParseInt(s, 0, 64)'s prefixed forms: 0x.., 0o.., 0b...
bool yaml_prefixed_int(std::string_view s) {
  if (!s.empty() && (s[0] == '-' || s[0] == '+')) s.remove_prefix(1);
  if (s.size() < 3 || s[0] != '0') return false;
  const char p = static_cast<char>(std::tolower(static_cast<unsigned char>(s[1])));
  std::string_view digits = s.substr(2);
  auto all = [&](auto ok) { return std::all_of(digits.begin(), digits.end(), ok); };
  if (p == 'x') return all([](char c) { return std::isxdigit(static_cast<unsigned char>(c)); });
  if (p == 'o') return all([](char c) { return c >= '0' && c <= '7'; });
  if (p == 'b') return all([](char c) { return c == '0' || c == '1'; });
  return false;
}

// The timestamps go-yaml reads from plain text: 2006-1-2, optionally with
// a time (after T, t or a space) and, after T or t, a zone.
bool yaml_timestamp(std::string_view s) {
  if (digits_at(s, 0) != 4 || s.size() < 5 || s[4] != '-') return false;
  size_t i = 5, n = digits_at(s, i, 2);
  if (n == 0 || i + n >= s.size() || s[i + n] != '-') return false;
  i += n + 1;
  if ((n = digits_at(s, i, 2)) == 0) return false;
  i += n;
  if (i == s.size()) return true;
  const char sep = s[i];
  if (sep != 'T' && sep != 't' && sep != ' ') return false;
  ++i;
  for (int part = 0; part < 3; ++part) {
    if (part > 0) {
      if (i >= s.size() || s[i] != ':') return false;
      ++i;
    }
    if ((n = digits_at(s, i, 2)) == 0) return false;
    i += n;
  }
  if (i < s.size() && s[i] == '.') i += 1 + digits_at(s, i + 1);
  if (sep == ' ') return i == s.size();
  if (i < s.size() && s[i] == 'Z') return i + 1 == s.size();
  if (i >= s.size() || (s[i] != '+' && s[i] != '-')) return false;
  ++i;
  if (digits_at(s, i, 2) != 2 || i + 2 >= s.size() || s[i + 2] != ':') return false;
  return digits_at(s, i + 3, 2) == 2 && i + 5 == s.size();
}

// [-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?
bool yaml_base60_float(std::string_view s) {
  size_t i = (!s.empty() && (s[0] == '-' || s[0] == '+')) ? 1 : 0;
  if (i >= s.size() || !yaml_digit(s[i])) return false;
  while (i < s.size() && (yaml_digit(s[i]) || s[i] == '_')) ++i;
  int groups = 0;
  while (i < s.size() && s[i] == ':') {
    size_t n = digits_at(s, i + 1, 2);
    if (n == 0 || (n == 2 && s[i + 1] > '5')) return false;
    i += 1 + n;
    ++groups;
  }
  if (groups == 0) return false;
  if (i < s.size() && s[i] == '.') {
    ++i;
    while (i < s.size() && (yaml_digit(s[i]) || s[i] == '_')) ++i;
  }
  return i == s.size();
}

// Whether go-yaml would read `s` written plainly as anything but this
// string (null, a boolean, a number, a timestamp): such strings are quoted.
bool yaml_reads_as_other(std::string_view s) {
  static const std::set<std::string_view> kWords = {
      "",      "~",    "null", "Null",  "NULL",  "y",     "Y",     "yes",   "Yes",   "YES",
      "n",     "N",    "no",   "No",    "NO",    "true",  "True",  "TRUE",  "false", "False",
      "FALSE", "on",   "On",   "ON",    "off",   "Off",   "OFF",   ".nan",  ".NaN",  ".NAN",
      ".inf",  ".Inf", ".INF", "+.inf", "+.Inf", "+.INF", "-.inf", "-.Inf", "-.INF", "<<"};
  if (kWords.contains(s)) return true;
  const char c = s[0];
  if (!yaml_digit(c) && c != '+' && c != '-' && c != '.') return false;
  if (c == '.') return yaml_float_text(s);
  if (yaml_timestamp(s)) return true;
  std::string plain(s);
  std::erase(plain, '_');
  return yaml_float_text(plain) || yaml_prefixed_int(plain) || yaml_base60_float(s);
}

size_t utf8_width(unsigned char c) {
  if (c < 0x80) return 1;
  if ((c & 0xE0) == 0xC0) return 2;
  if ((c & 0xF0) == 0xE0) return 3;
  return (c & 0xF8) == 0xF0 ? 4 : 1;
}

// go-yaml's is_printable, on the UTF-8 bytes at i.
bool yaml_printable(std::string_view v, size_t i) {
  auto b = [&](size_t k) { return i + k < v.size() ? static_cast<unsigned char>(v[i + k]) : 0; };
  const unsigned char c = b(0);
  return c == 0x0A || (c >= 0x20 && c <= 0x7E) || (c == 0xC2 && b(1) >= 0xA0) ||
         (c > 0xC2 && c < 0xED) || (c == 0xED && b(1) < 0xA0) || c == 0xEE ||
         (c == 0xEF && !(b(1) == 0xBB && b(2) == 0xBF) &&
          !(b(1) == 0xBF && (b(2) == 0xBE || b(2) == 0xBF)));
}

bool yaml_break(std::string_view v, size_t i) {
  auto b = [&](size_t k) { return i + k < v.size() ? static_cast<unsigned char>(v[i + k]) : 0; };
  return b(0) == '\r' || b(0) == '\n' || (b(0) == 0xC2 && b(1) == 0x85) ||
         (b(0) == 0xE2 && b(1) == 0x80 && (b(2) == 0xA8 || b(2) == 0xA9));
}

bool yaml_blankz(std::string_view v, size_t i) {
  return i >= v.size() || v[i] == ' ' || v[i] == '\t' || yaml_break(v, i);
}

enum class Style { kPlain, kSingle, kDouble, kLiteral };

// go-yaml's choice for a string: stringv's wish, then what the emitter's
// analysis of the characters allows.
Style yaml_style(std::string_view s, bool key) {
  bool flow_ind = false, block_ind = false, leading_space = false, leading_break = false;
  bool trailing_space = false, trailing_break = false, break_space = false, space_break = false;
  bool special = false, line_breaks = false, prev_space = false, prev_break = false;
  if (s.starts_with("---") || s.starts_with("...")) block_ind = flow_ind = true;
  bool preceded_by_ws = true;
  for (size_t i = 0; i < s.size();) {
    const size_t w = utf8_width(static_cast<unsigned char>(s[i]));
    const bool followed_by_ws = yaml_blankz(s, i + w);
    const char c = s[i];
    if (i == 0) {
      if (std::string_view("#,[]{}&*!|>'\"%@`").find(c) != std::string_view::npos)
        flow_ind = block_ind = true;
      if (c == '?' || c == ':') {
        flow_ind = true;
        block_ind = block_ind || followed_by_ws;
      }
      if (c == '-' && followed_by_ws) flow_ind = block_ind = true;
    } else {
      if (std::string_view(",?[]{}").find(c) != std::string_view::npos) flow_ind = true;
      if (c == ':') {
        flow_ind = true;
        block_ind = block_ind || followed_by_ws;
      }
      if (c == '#' && preceded_by_ws) flow_ind = block_ind = true;
    }
    if (!yaml_printable(s, i)) special = true;
    if (c == ' ') {
      leading_space = leading_space || i == 0;
      trailing_space = trailing_space || i + w == s.size();
      break_space = break_space || prev_break;
      prev_space = true;
      prev_break = false;
    } else if (yaml_break(s, i)) {
      line_breaks = true;
      leading_break = leading_break || i == 0;
      trailing_break = trailing_break || i + w == s.size();
      space_break = space_break || prev_space;
      prev_break = true;
      prev_space = false;
    } else {
      prev_space = prev_break = false;
    }
    preceded_by_ws = yaml_blankz(s, i);
    i += w;
  }
  bool plain_ok = !(leading_space || leading_break || trailing_space || trailing_break);
  bool single_ok = true, block_ok = !trailing_space;
  if (break_space) plain_ok = single_ok = false;
  if (space_break || special) plain_ok = single_ok = block_ok = false;
  if (line_breaks || block_ind) plain_ok = false;

  Style style = s.find('\n') != std::string_view::npos           ? Style::kLiteral
                : yaml_reads_as_other(s) || yaml_base60_float(s) ? Style::kDouble
                                                                 : Style::kPlain;
  if (style == Style::kLiteral && (!block_ok || key)) style = Style::kDouble;
  if (style == Style::kPlain && !plain_ok) style = Style::kSingle;
  if (style == Style::kSingle && !single_ok) style = Style::kDouble;
  return style;
}

class YamlWriter {
 public:
  std::string out;

  void document(const json& v) {
    if (v.is_object() && !v.empty()) return map(v, 0);
    if (v.is_array() && !v.empty()) return seq(v, 0);
    scalar(v, 2, false);
    end_line();
  }

 private:
  size_t column_ = 0;

  void put(std::string_view s) {
    for (char c : s) {
      out += c;
      if (c == '\n')
        column_ = 0;
      else if ((static_cast<unsigned char>(c) & 0xC0) != 0x80)
        ++column_;
    }
  }
  void newline() { put("\n"); }
  // Ends a scalar's line; a literal block ending in a line break has.
  void end_line() {
    if (column_ > 0) newline();
  }
  void indent_to(size_t indent) {
    if (column_ > 0) newline();
    out.append(indent, ' ');
    column_ = indent;
  }

  static bool nested(const json& v) { return (v.is_object() || v.is_array()) && !v.empty(); }

  // A block mapping whose keys start at `indent`; the first key is written
  // where the cursor is (after "- " in a sequence).
  void map(const json& v, size_t indent) {
    std::vector<const std::string*> keys;
    for (auto it = v.begin(); it != v.end(); ++it) keys.push_back(&it.key());
    std::sort(keys.begin(), keys.end(),
              [](const std::string* a, const std::string* b) { return yaml_key_less(*a, *b); });
    bool first = true;
    for (const std::string* k : keys) {
      if (!first || column_ != indent) indent_to(indent);
      first = false;
      string(*k, indent + 2, true);
      put(":");
      const json& val = v.at(*k);
      if (val.is_object() && !val.empty()) {
        newline();
        map(val, indent + 2);
      } else if (val.is_array() && !val.empty()) {
        newline();
        seq(val, indent);  // go-yaml does not indent a sequence under its key
      } else {
        put(" ");
        scalar(val, indent + 2, false);
        end_line();
      }
    }
  }

  void seq(const json& v, size_t indent) {
    for (const json& item : v) {
      indent_to(indent);
      put("- ");
      if (item.is_object() && !item.empty()) {
        map(item, indent + 2);
      } else if (item.is_array() && !item.empty()) {
        seq_inline(item, indent + 2);
      } else {
        scalar(item, indent + 2, false);
        end_line();
      }
    }
  }

  // A sequence in a sequence: its first item follows the outer "- ".
  void seq_inline(const json& v, size_t indent) {
    bool first = true;
    for (const json& item : v) {
      if (!first) indent_to(indent);
      first = false;
      put("- ");
      if (item.is_object() && !item.empty())
        map(item, indent + 2);
      else if (item.is_array() && !item.empty())
        seq_inline(item, indent + 2);
      else {
        scalar(item, indent + 2, false);
        end_line();
      }
    }
  }

  void scalar(const json& v, size_t indent, bool key) {
    switch (v.type()) {
      case json::value_t::object:
        put("{}");
        return;
      case json::value_t::array:
        put("[]");
        return;
      case json::value_t::null:
        put("null");
        return;
      case json::value_t::boolean:
        put(v.get<bool>() ? "true" : "false");
        return;
      case json::value_t::number_integer:
        put(std::to_string(v.get<int64_t>()));
        return;
      case json::value_t::number_unsigned:
        put(std::to_string(v.get<uint64_t>()));
        return;
      case json::value_t::number_float:
        put(format_go_float(v.get<double>()));
        return;
      case json::value_t::string:
        string(v.get_ref<const std::string&>(), indent, key);
        return;
      default:
        put("null");
        return;
    }
  }

  void string(std::string_view s, size_t indent, bool key) {
    switch (yaml_style(s, key)) {
      case Style::kPlain:
        return folded(s, indent, !key, '\0');
      case Style::kSingle:
        return folded(s, indent, !key, '\'');
      case Style::kDouble:
        return double_quoted(s, indent, !key);
      case Style::kLiteral:
        return literal(s, indent);
    }
  }

  // Plain or single-quoted text: a space past column 80 becomes a line break.
  void folded(std::string_view s, size_t indent, bool breaks, char quote) {
    if (quote) out += quote, ++column_;
    bool spaces = false;
    for (size_t i = 0; i < s.size();) {
      const size_t w = utf8_width(static_cast<unsigned char>(s[i]));
      if (s[i] == ' ') {
        const bool last = i + 1 == s.size();
        if (breaks && !spaces && column_ > 80 && !last && s[i + 1] != ' ' &&
            (quote == '\0' || i != 0)) {
          indent_to(indent);
        } else {
          put(" ");
        }
        spaces = true;
      } else {
        if (quote && s[i] == '\'') put("'");
        put(s.substr(i, w));
        spaces = false;
      }
      i += w;
    }
    if (quote) out += quote, ++column_;
  }

  void double_quoted(std::string_view s, size_t indent, bool breaks) {
    put("\"");
    bool spaces = false;
    for (size_t i = 0; i < s.size();) {
      const auto c = static_cast<unsigned char>(s[i]);
      const size_t w = utf8_width(c);
      const bool bom = s.substr(i).starts_with("\xEF\xBB\xBF");
      if (!yaml_printable(s, i) || bom || yaml_break(s, i) || c == '"' || c == '\\') {
        uint32_t r = c;
        if (w > 1) {
          r = c & (0xFF >> (w + 1));
          for (size_t k = 1; k < w && i + k < s.size(); ++k)
            r = (r << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
        }
        put(escape(r));
        spaces = false;
      } else if (c == ' ') {
        if (breaks && !spaces && column_ > 80 && i > 0 && i + 1 < s.size()) {
          indent_to(indent);
          if (s[i + 1] == ' ') put("\\");
        } else {
          put(" ");
        }
        spaces = true;
      } else {
        put(s.substr(i, w));
        spaces = false;
      }
      i += w;
    }
    put("\"");
  }

  static std::string escape(uint32_t r) {
    switch (r) {
      case 0x00:
        return "\\0";
      case 0x07:
        return "\\a";
      case 0x08:
        return "\\b";
      case 0x09:
        return "\\t";
      case 0x0A:
        return "\\n";
      case 0x0B:
        return "\\v";
      case 0x0C:
        return "\\f";
      case 0x0D:
        return "\\r";
      case 0x1B:
        return "\\e";
      case 0x22:
        return "\\\"";
      case 0x5C:
        return "\\\\";
      case 0x85:
        return "\\N";
      case 0xA0:
        return "\\_";
      case 0x2028:
        return "\\L";
      case 0x2029:
        return "\\P";
    }
    char buf[16];
    if (r <= 0xFF)
      std::snprintf(buf, sizeof buf, "\\x%02X", r);
    else if (r <= 0xFFFF)
      std::snprintf(buf, sizeof buf, "\\u%04X", r);
    else
      std::snprintf(buf, sizeof buf, "\\U%08X", r);
    return buf;
  }

  void literal(std::string_view s, size_t indent) {
    put("|");
    if (s[0] == ' ' || yaml_break(s, 0)) put("2");
    // Chomping: "-" without a final line break, "+" to keep several.
    size_t last = s.size() - 1;
    while (last > 0 && (static_cast<unsigned char>(s[last]) & 0xC0) == 0x80) --last;
    if (!yaml_break(s, last)) {
      put("-");
    } else if (last == 0) {
      put("+");
    } else {
      size_t prev = last - 1;
      while (prev > 0 && (static_cast<unsigned char>(s[prev]) & 0xC0) == 0x80) --prev;
      if (yaml_break(s, prev)) put("+");
    }
    newline();
    bool at_line_start = true;
    for (size_t i = 0; i < s.size();) {
      const size_t w = utf8_width(static_cast<unsigned char>(s[i]));
      if (yaml_break(s, i)) {
        newline();
        at_line_start = true;
      } else {
        if (at_line_start) {
          out.append(indent, ' ');
          column_ = indent;
          at_line_start = false;
        }
        put(s.substr(i, w));
      }
      i += w;
    }
  }
};

}  // namespace

std::string format_go_float(double f) {
  if (std::isnan(f)) return ".nan";
  if (std::isinf(f)) return f > 0 ? ".inf" : "-.inf";
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, f, std::chars_format::scientific);
  std::string sci(buf, res.ptr);  // d.ddde±XX
  const size_t e = sci.find('e');
  const int exp = std::stoi(sci.substr(e + 1));
  std::string mant = sci.substr(0, e);
  const bool neg = mant[0] == '-';
  if (neg) mant.erase(0, 1);
  std::string digits;
  for (char c : mant)
    if (c != '.') digits += c;
  std::string s = neg ? "-" : "";
  if (exp < -4 || exp >= 6) {  // shortest 'g' switches at 1e6
    s += mant;
    s += 'e';
    s += exp < 0 ? '-' : '+';
    std::string ed = std::to_string(exp < 0 ? -exp : exp);
    if (ed.size() < 2) ed = "0" + ed;
    return s + ed;
  }
  if (exp < 0) return s + "0." + std::string(-exp - 1, '0') + digits;
  if (static_cast<int>(digits.size()) <= exp + 1)
    return s + digits + std::string(exp + 1 - digits.size(), '0');
  return s + digits.substr(0, exp + 1) + "." + digits.substr(exp + 1);
}

std::string json_to_yaml(const json& v) {
  YamlWriter w;
  w.document(v);
  return std::move(w.out);
}

}  // namespace vkube::apiserver
