// CEL's string functions: size in code points, contains/startsWith/endsWith, and kube's strings
// library (lowerAscii, upperAscii, trim, split, replace, indexOf, lastIndexOf, substring, charAt)
// with Go's semantics and error text; matches(), find() and findAll() on the RE2 engine
// (re2_regex.h), their work charged to the cost budget.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cel_internal.h"
#include "vkube/cel/re2_regex.h"

namespace vkube::cel::detail {
namespace {

std::u32string to_runes(std::string_view s) {
  std::u32string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size();) out.push_back(decode_utf8(s, &i));
  return out;
}

std::string from_runes(std::u32string_view r) {
  std::string out;
  for (char32_t c : r) append_utf8(out, c);
  return out;
}

Value index_error(int64_t i) {
  return make_error("index out of range: " + format_int(i));
}

bool is_go_space(char32_t c) {
  switch (c) {
    case '\t':
    case '\n':
    case '\v':
    case '\f':
    case '\r':
    case ' ':
    case 0x85:
    case 0xA0:
    case 0x1680:
    case 0x2028:
    case 0x2029:
    case 0x202F:
    case 0x205F:
    case 0x3000:
      return true;
    default:
      return c >= 0x2000 && c <= 0x200A;
  }
}

Value str_trim(std::string_view s) {
  std::u32string r = to_runes(s);
  std::size_t b = 0, e = r.size();
  while (b < e && is_go_space(r[b])) ++b;
  while (e > b && is_go_space(r[e - 1])) --e;
  return make_string(from_runes(std::u32string_view(r).substr(b, e - b)));
}

Value str_case(std::string_view s, bool upper) {
  std::string out(s);
  for (char& c : out) {
    if (upper && c >= 'a' && c <= 'z') c = static_cast<char>(c - 32);
    if (!upper && c >= 'A' && c <= 'Z') c = static_cast<char>(c + 32);
  }
  return make_string(std::move(out));
}

// Go's strings.SplitN.
Value str_split(std::string_view s, std::string_view sep, int64_t n) {
  ValueList out;
  if (n == 0) return make_list(std::move(out));
  if (sep.empty()) {
    std::u32string r = to_runes(s);
    for (std::size_t i = 0; i < r.size(); ++i) {
      if (n > 0 && static_cast<int64_t>(out.size()) == n - 1) {
        out.push_back(make_string(from_runes(std::u32string_view(r).substr(i))));
        return make_list(std::move(out));
      }
      out.push_back(make_string(from_runes(std::u32string_view(r).substr(i, 1))));
    }
    return make_list(std::move(out));
  }
  std::size_t start = 0;
  while (n < 0 || static_cast<int64_t>(out.size()) < n - 1) {
    std::size_t at = s.find(sep, start);
    if (at == std::string_view::npos) break;
    out.push_back(make_string(std::string(s.substr(start, at - start))));
    start = at + sep.size();
  }
  out.push_back(make_string(std::string(s.substr(start))));
  return make_list(std::move(out));
}

// Go's strings.Replace.
Value str_replace(std::string_view s, std::string_view from, std::string_view to, int64_t n) {
  if (from == to || n == 0) return make_string(std::string(s));
  std::string out;
  if (from.empty()) {
    std::u32string r = to_runes(s);
    int64_t done = 0;
    for (std::size_t i = 0; i <= r.size(); ++i) {
      if (n < 0 || done < n) {
        out += to;
        ++done;
      }
      if (i < r.size()) append_utf8(out, r[i]);
    }
    return make_string(std::move(out));
  }
  std::size_t start = 0;
  for (int64_t done = 0; n < 0 || done < n; ++done) {
    std::size_t at = s.find(from, start);
    if (at == std::string_view::npos) break;
    out.append(s.substr(start, at - start));
    out.append(to);
    start = at + from.size();
  }
  out.append(s.substr(start));
  return make_string(std::move(out));
}

int64_t find_runes(const std::u32string& s, const std::u32string& sub, int64_t from, bool last) {
  int64_t limit = static_cast<int64_t>(s.size()) - static_cast<int64_t>(sub.size());
  if (!last) {
    for (int64_t i = from; i <= limit; ++i) {
      if (s.compare(static_cast<std::size_t>(i), sub.size(), sub) == 0) return i;
    }
    return -1;
  }
  for (int64_t i = std::min(from, limit); i >= 0; --i) {
    if (s.compare(static_cast<std::size_t>(i), sub.size(), sub) == 0) return i;
  }
  return -1;
}

// indexOf / lastIndexOf of cel-go's strings extension, in code points.
Value str_index_of(std::string_view s, std::string_view sub, const std::optional<int64_t>& offset,
                   bool last) {
  std::u32string r = to_runes(s), rs = to_runes(sub);
  int64_t len = static_cast<int64_t>(r.size());
  if (!offset) {
    if (rs.empty()) return make_int(last ? len : 0);
    return make_int(find_runes(r, rs, last ? len : 0, last));
  }
  if (rs.empty()) return make_int(*offset);
  if (*offset < 0 || *offset >= len) return index_error(*offset);
  return make_int(find_runes(r, rs, *offset, last));
}

Value str_substring(std::string_view s, int64_t start, std::optional<int64_t> end) {
  std::u32string r = to_runes(s);
  int64_t len = static_cast<int64_t>(r.size());
  int64_t stop = end.value_or(len);
  if (start < 0 || start > len) return index_error(start);
  if (stop < 0 || stop > len) return index_error(stop);
  if (start > stop) {
    return make_error("invalid substring range. start: " + format_int(start) +
                      ", end: " + format_int(stop));
  }
  return make_string(from_runes(std::u32string_view(r).substr(
      static_cast<std::size_t>(start), static_cast<std::size_t>(stop - start))));
}

Value str_char_at(std::string_view s, int64_t i) {
  std::u32string r = to_runes(s);
  if (i < 0 || i > static_cast<int64_t>(r.size())) return index_error(i);
  if (i == static_cast<int64_t>(r.size())) return make_string("");
  return make_string(from_runes(std::u32string_view(r).substr(static_cast<std::size_t>(i), 1)));
}

std::optional<int64_t> int_arg(const std::vector<Value>& a, std::size_t i) {
  if (i >= a.size()) return std::nullopt;
  return a[i].kind == Kind::kInt ? std::optional<int64_t>(a[i].i) : std::nullopt;
}

bool all_strings(const std::vector<Value>& a, std::size_t from = 0) {
  for (std::size_t i = from; i < a.size(); ++i) {
    if (a[i].kind != Kind::kString) return false;
  }
  return true;
}

// The node's precompiled pattern, or the pattern argument compiled now; an error value if bad.
std::shared_ptr<const Regex> regex_for(const Node& n, const Value& pattern, Value* err) {
  if (n.regex) return n.regex;
  std::string error;
  auto re = Regex::compile_cached(pattern.str(), &error);
  if (!re) *err = make_error(error);
  return re;
}

// Regex work in cost units: the input bytes stepped over times the program's size, scaled.
bool charge_regex(const Regex& re, std::size_t bytes, Ctx& ctx) {
  return ctx.charge(1 + static_cast<int64_t>(bytes * re.program_size() / 32));
}

// Go's FindAllString: successive non-overlapping matches, an empty match abutting the previous
// match skipped; at most `limit` (all when negative).
Value find_all(const Regex& re, std::string_view text, int64_t limit, Ctx& ctx) {
  ValueList out;
  std::size_t pos = 0;
  std::size_t prev_end = std::string_view::npos;
  while (pos <= text.size() && (limit < 0 || static_cast<int64_t>(out.size()) < limit)) {
    std::size_t b = 0, e = 0, scanned = 0;
    bool found = re.find(text, pos, &b, &e, &scanned);
    if (!charge_regex(re, scanned, ctx)) return make_error(kCostExceeded);
    if (!found) break;
    if (!(e == b && b == prev_end)) out.push_back(make_string(std::string(text.substr(b, e - b))));
    prev_end = e;
    pos = e;
    if (e == b) {
      if (b >= text.size()) break;
      decode_utf8(text, &pos);
    }
  }
  return make_list(std::move(out));
}

}  // namespace

std::size_t rune_count(std::string_view s) {
  std::size_t n = 0;
  for (std::size_t i = 0; i < s.size();) {
    decode_utf8(s, &i);
    ++n;
  }
  return n;
}

bool valid_utf8(std::string_view s) {
  for (std::size_t i = 0; i < s.size();) {
    std::size_t at = i;
    char32_t c = decode_utf8(s, &i);
    if (c == 0xFFFD && !(i - at == 3 && s.substr(at, 3) == "\xEF\xBF\xBD")) return false;
  }
  return true;
}

Value string_predicate(Fn fn, const std::vector<Value>& a) {
  if (!all_strings(a)) return no_overload();
  std::string_view s = a[0].str(), t = a[1].str();
  switch (fn) {
    case Fn::kContains:
      return make_bool(s.find(t) != std::string_view::npos);
    case Fn::kStartsWith:
      return make_bool(s.substr(0, t.size()) == t);
    default:
      return make_bool(s.size() >= t.size() && s.substr(s.size() - t.size()) == t);
  }
}

Value string_library(Fn fn, const std::vector<Value>& a) {
  if (a[0].kind != Kind::kString) return no_overload();
  std::string_view s = a[0].str();
  switch (fn) {
    case Fn::kLowerAscii:
      return str_case(s, false);
    case Fn::kUpperAscii:
      return str_case(s, true);
    case Fn::kTrim:
      return str_trim(s);
    case Fn::kSplit:
      if (a[1].kind != Kind::kString || (a.size() > 2 && !int_arg(a, 2))) return no_overload();
      return str_split(s, a[1].str(), int_arg(a, 2).value_or(-1));
    case Fn::kReplace:
      if (!all_strings(a, 1) && !(a.size() == 4 && a[1].kind == Kind::kString &&
                                  a[2].kind == Kind::kString && int_arg(a, 3))) {
        return no_overload();
      }
      return str_replace(s, a[1].str(), a[2].str(), int_arg(a, 3).value_or(-1));
    case Fn::kSubstring:
      if (!int_arg(a, 1) || (a.size() > 2 && !int_arg(a, 2))) return no_overload();
      return str_substring(s, *int_arg(a, 1), int_arg(a, 2));
    case Fn::kCharAt:
      if (!int_arg(a, 1)) return no_overload();
      return str_char_at(s, *int_arg(a, 1));
    default:  // indexOf, lastIndexOf
      if (a[1].kind != Kind::kString || (a.size() > 2 && !int_arg(a, 2))) return no_overload();
      return str_index_of(s, a[1].str(), int_arg(a, 2), fn == Fn::kLastIndexOf);
  }
}

Value regex_function(const Node& n, const std::vector<Value>& a, Ctx& ctx) {
  if (a[0].kind != Kind::kString || a[1].kind != Kind::kString) return no_overload();
  Value err;
  auto re = regex_for(n, a[1], &err);
  if (!re) return err;
  std::string_view text = a[0].str();
  if (n.fn == Fn::kFindAll) {
    if (a.size() > 2 && a[2].kind != Kind::kInt) return no_overload();
    return find_all(*re, text, a.size() > 2 ? a[2].i : -1, ctx);
  }
  if (!charge_regex(*re, text.size(), ctx)) return make_error(kCostExceeded);
  if (n.fn == Fn::kMatches) return make_bool(re->search(text));
  std::size_t b = 0, e = 0;
  return make_string(re->find(text, 0, &b, &e) ? std::string(text.substr(b, e - b)) : "");
}

}  // namespace vkube::cel::detail
