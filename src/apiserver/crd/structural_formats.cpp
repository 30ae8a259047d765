// The string formats a CRD schema's `format` validates (kube-openapi's strfmt registry as
// apiextensions-apiserver enables it): date, date-time, byte, uuid*, duration, isbn*,
// creditcard, ssn, colors, bsonobjectid, password, the k8s-short-name / k8s-long-name of
// Kubernetes 1.34, and the network formats of structural_formats_net.cpp. Hand-written checks
// where the Go library is a parser; the few regexes are compiled once.
#include <algorithm>
#include <cctype>
#include <regex>
#include <set>

#include "structural_internal.h"

namespace vkube::apiserver::crd::detail {
namespace {

using Check = bool (*)(std::string_view);

// time.Parse("2006-01-02", s), which also refuses days the month does not have.
bool is_date(std::string_view s) {
  if (s.size() != 10 || s[4] != '-' || s[7] != '-') return false;
  std::string_view y = s.substr(0, 4), m = s.substr(5, 2), d = s.substr(8, 2);
  if (!all_of(y, is_digit) || !all_of(m, is_digit) || !all_of(d, is_digit)) return false;
  int year = digits(y), month = digits(m), day = digits(d);
  static constexpr int kDays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (month < 1 || month > 12 || day < 1 || day > kDays[month - 1]) return false;
  bool leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
  return month != 2 || day < 29 || leap;
}

// strfmt.IsDateTime: a date, 't', then hh:mm:ss[.frac](z|+hh:mm), compared as text.
bool is_date_time(std::string_view s) {
  if (s.size() < 4) return false;
  std::string lower(s);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  std::size_t t = lower.find('t');
  if (t == std::string::npos || !is_date(std::string_view(lower).substr(0, t))) return false;
  std::size_t next = lower.find('t', t + 1);
  std::string clock = lower.substr(t + 1, next == std::string::npos ? next : next - t - 1);
  static const std::regex kClock(
      "^([0-9]{2}):([0-9]{2}):([0-9]{2})(.[0-9]+)?(z|([+-][0-9]{2}:[0-9]{2}))$");
  std::smatch m;
  // std::regex recurses per character: bound the input before matching.
  if (clock.size() > 64 || !std::regex_search(clock, m, kClock)) return false;
  return m.str(1) <= "23" && m.str(2) <= "59" && m.str(3) <= "59";
}

bool is_base64_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '+' || c == '/';
}

// govalidator.IsBase64: standard alphabet, padded, at least one quantum.
bool is_byte(std::string_view s) {
  if (s.empty() || s.size() % 4 != 0) return false;
  std::size_t pad = s.size() - (s.find_last_not_of('=') + 1);
  if (pad > 2 || s.find('=') != s.size() - pad) return false;
  return all_of(s.substr(0, s.size() - pad), is_base64_char);
}

// (?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?V[0-9a-f]{3}-?[89ab]?... with the version digit `version`
// (0: any) and, for versions 4 and 5, the variant nibble checked.
bool is_uuid_version(std::string_view s, char version) {
  static constexpr std::size_t kGroups[] = {8, 4, 4, 4, 12};
  std::string hex;
  for (std::size_t g = 0, i = 0; g < 5; ++g) {
    if (g > 0 && i < s.size() && s[i] == '-') ++i;
    if (i + kGroups[g] > s.size() || !all_of(s.substr(i, kGroups[g]), is_hex)) return false;
    hex += s.substr(i, kGroups[g]);
    i += kGroups[g];
    if (g == 4 && i != s.size()) return false;
  }
  if (version == 0) return true;
  char variant = static_cast<char>(std::tolower(static_cast<unsigned char>(hex[16])));
  bool variant_ok =
      version == '3' || std::string_view("89ab").find(variant) != std::string_view::npos;
  return hex[12] == version && variant_ok;
}

bool is_uuid(std::string_view s) {
  return is_uuid_version(s, 0);
}
bool is_uuid3(std::string_view s) {
  return is_uuid_version(s, '3');
}
bool is_uuid4(std::string_view s) {
  return is_uuid_version(s, '4');
}
bool is_uuid5(std::string_view s) {
  return is_uuid_version(s, '5');
}

bool parse_go_duration(std::string_view s) {
  if (!s.empty() && (s[0] == '-' || s[0] == '+')) s.remove_prefix(1);
  if (s == "0") return true;
  if (s.empty()) return false;
  static const std::set<std::string_view> kUnits = {"ns", "us", "\xC2\xB5s", "\xCE\xBCs",
                                                    "ms", "s",  "m",         "h"};
  while (!s.empty()) {
    std::size_t pre = s.find_first_not_of("0123456789");
    std::size_t i = pre == s.npos ? s.size() : pre;
    bool has_digits = i > 0;
    if (i < s.size() && s[i] == '.') {
      std::size_t frac = s.find_first_not_of("0123456789", i + 1);
      frac = frac == s.npos ? s.size() : frac;
      has_digits = has_digits || frac > i + 1;
      i = frac;
    }
    if (!has_digits) return false;
    std::size_t unit_end = s.find_first_of(".0123456789", i);
    unit_end = unit_end == s.npos ? s.size() : unit_end;
    if (unit_end == i || !kUnits.count(s.substr(i, unit_end - i))) return false;
    s.remove_prefix(unit_end);
  }
  return true;
}

// strfmt.ParseDuration: Go's syntax, else "<n> <unit>" pairs such as "3 days" or "1 hr".
bool is_duration(std::string_view s) {
  if (parse_go_duration(s)) return true;
  static const std::vector<std::vector<std::string_view>> kUnits = {
      {"ns", "nano"}, {"us", "\xC2\xB5s", "micro"}, {"ms", "milli"}, {"s", "sec"},
      {"m", "min"},   {"h", "hr", "hour"},          {"d", "day"},    {"w", "wk", "week"}};
  bool ok = false;
  for (std::size_t i = 0; i < s.size();) {
    if (!is_digit(s[i])) {
      ++i;
      continue;
    }
    std::size_t j = s.find_first_not_of("0123456789", i);
    j = j == s.npos ? s.size() : j;
    if (j - i > 18) return false;  // strconv.Atoi overflow fails the whole parse
    std::size_t k = s.find_first_not_of(" \t\n\f\r", j);
    k = k == s.npos ? s.size() : k;
    std::size_t m = k;
    while (m < s.size() &&
           (std::isalpha(static_cast<unsigned char>(s[m])) || s.substr(m, 2) == "\xC2\xB5")) {
      m += std::isalpha(static_cast<unsigned char>(s[m])) ? 1 : 2;
    }
    std::string unit(s.substr(k, m - k));
    std::transform(unit.begin(), unit.end(), unit.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    for (const auto& variants : kUnits) {
      for (std::size_t v = 0; v < variants.size(); ++v) {
        bool last = v + 1 == variants.size();
        ok = ok || unit == variants[v] || (last && unit.rfind(variants[v], 0) == 0 && m > k);
      }
    }
    i = m > k ? m : j;
  }
  return ok;
}

std::string without(std::string_view s, std::string_view drop) {
  std::string out;
  for (char c : s) {
    if (drop.find(c) == drop.npos) out += c;
  }
  return out;
}

bool is_isbn10(std::string_view raw) {
  std::string s = without(raw, " \t\n\v\f\r-");
  if (s.size() != 10 || !all_of(std::string_view(s).substr(0, 9), is_digit)) return false;
  if (!is_digit(s[9]) && s[9] != 'X') return false;
  int sum = 0;
  for (int i = 0; i < 9; ++i) sum += (i + 1) * (s[i] - '0');
  sum += 10 * (s[9] == 'X' ? 10 : s[9] - '0');
  return sum % 11 == 0;
}

bool is_isbn13(std::string_view raw) {
  std::string s = without(raw, " \t\n\v\f\r-");
  if (s.size() != 13 || !all_of(s, is_digit)) return false;
  int sum = 0;
  for (int i = 0; i < 12; ++i) sum += (i % 2 == 0 ? 1 : 3) * (s[i] - '0');
  return s[12] - '0' == (10 - sum % 10) % 10;
}

bool is_isbn(std::string_view s) {
  return is_isbn10(s) || is_isbn13(s);
}

bool is_creditcard(std::string_view raw) {
  std::string s;
  for (char c : raw) {
    if (is_digit(c)) s += c;
  }
  static const std::regex kCard(
      "^(?:4[0-9]{12}(?:[0-9]{3})?|5[1-5][0-9]{14}|6(?:011|5[0-9][0-9])[0-9]{12}|3[47][0-9]{13}|"
      "3(?:0[0-5]|[68][0-9])[0-9]{11}|(?:2131|1800|35\\d{3})\\d{11})$");
  if (s.size() > 19 || !std::regex_search(s, kCard)) return false;
  int sum = 0;
  bool twice = false;
  for (auto it = s.rbegin(); it != s.rend(); ++it, twice = !twice) {
    int d = (*it - '0') * (twice ? 2 : 1);
    sum += d > 9 ? d - 9 : d;
  }
  return sum % 10 == 0;
}

bool is_ssn(std::string_view s) {
  if (s.size() != 11) return false;
  auto sep = [](char c) { return c == '-' || c == ' '; };
  return all_of(s.substr(0, 3), is_digit) && sep(s[3]) && all_of(s.substr(4, 2), is_digit) &&
         sep(s[6]) && all_of(s.substr(7), is_digit);
}

bool is_hexcolor(std::string_view s) {
  if (!s.empty() && s[0] == '#') s.remove_prefix(1);
  return (s.size() == 3 || s.size() == 6) && all_of(s, is_hex);
}

bool is_rgbcolor(std::string_view s) {
  static const std::string kN = "\\s*(0|[1-9]\\d?|1\\d\\d?|2[0-4]\\d|25[0-5])\\s*";
  static const std::regex kRgb("^rgb\\(" + kN + "," + kN + "," + kN + "\\)$");
  if (s.size() > 64) return false;  // std::regex recurses per character
  std::string text(s);
  return std::regex_search(text, kRgb);
}

bool is_bson_object_id(std::string_view s) {
  return s.size() == 24 && all_of(s, is_hex);
}
bool is_password(std::string_view) {
  return true;
}

bool is_short_name(std::string_view s) {
  bool edge_ok = !s.empty() && s.front() != '-' && s.back() != '-';
  return s.size() <= 63 && edge_ok &&
         all_of(s, [](char c) { return (c >= 'a' && c <= 'z') || is_digit(c) || c == '-'; });
}

bool is_long_name(std::string_view s) {
  if (s.size() > 253) return false;
  for (std::size_t start = 0;;) {
    std::size_t dot = s.find('.', start);
    if (!is_short_name(s.substr(start, dot == s.npos ? s.npos : dot - start))) return false;
    if (dot == s.npos) return true;
    start = dot + 1;
  }
}

struct Format {
  std::string_view name;  // normalized: dashes removed, as strfmt looks names up
  Check check;
};

constexpr Format kFormats[] = {
    {"bsonobjectid", is_bson_object_id},
    {"uri", is_uri},
    {"email", is_email},
    {"hostname", is_hostname},
    {"ipv4", is_ipv4},
    {"ipv6", is_ipv6},
    {"cidr", is_cidr},
    {"mac", is_mac},
    {"uuid", is_uuid},
    {"uuid3", is_uuid3},
    {"uuid4", is_uuid4},
    {"uuid5", is_uuid5},
    {"isbn", is_isbn},
    {"isbn10", is_isbn10},
    {"isbn13", is_isbn13},
    {"creditcard", is_creditcard},
    {"ssn", is_ssn},
    {"hexcolor", is_hexcolor},
    {"rgbcolor", is_rgbcolor},
    {"byte", is_byte},
    {"password", is_password},
    {"date", is_date},
    {"duration", is_duration},
    {"datetime", is_date_time},
    {"k8sshortname", is_short_name},
    {"k8slongname", is_long_name},
};

const Format* find_format(std::string_view format) {
  std::string name = without(format, "-");
  for (const Format& f : kFormats) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

}  // namespace

bool is_string_format(std::string_view format) {
  return find_format(format) != nullptr;
}

bool format_accepts(std::string_view format, std::string_view value) {
  const Format* f = find_format(format);
  return f == nullptr || f->check(value);
}

std::string_view effective_format(std::string_view format, std::string_view type,
                                  bool int_or_string) {
  if (format.empty()) return format;
  if (int_or_string) type = {};  // two types: kube normalizes the format as a string's
  if (type.empty() || type == "string") return is_string_format(format) ? format : "";
  if (type == "integer") return format == "int32" || format == "int64" ? format : "";
  if (type == "number") return format == "float" || format == "double" ? format : "";
  return {};
}

}  // namespace vkube::apiserver::crd::detail
