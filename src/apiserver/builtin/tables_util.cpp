#include "tables_util.h"

#include <cctype>
#include <cstdio>

#include "kinds.h"
#include "vkube/api/selector.h"

namespace vkube::apiserver::builtin::tables {

namespace {

const json& empty_array() {
  static const json kEmpty = json::array();
  return kEmpty;
}

const json& empty_object() {
  static const json kEmpty = json::object();
  return kEmpty;
}

// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm).
int64_t days_from_civil(int64_t y, int64_t m, int64_t d) {
  y -= m <= 2 ? 1 : 0;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const int64_t yoe = y - era * 400;
  const int64_t doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
  const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

struct Civil {
  int64_t year, month, day;
};

Civil civil_from_days(int64_t z) {
  z += 719468;
  const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const int64_t doe = z - era * 146097;
  const int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const int64_t mp = (5 * doy + 2) / 153;
  const int64_t d = doy - (153 * mp + 2) / 5 + 1;
  const int64_t m = mp < 10 ? mp + 3 : mp - 9;
  return {yoe + era * 400 + (m <= 2 ? 1 : 0), m, d};
}

bool leap(int64_t y) {
  return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

int64_t days_in_month(int64_t y, int64_t m) {
  static constexpr int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return m == 2 && leap(y) ? 29 : kDays[m - 1];
}

// Reads exactly `n` decimal digits at `pos`.
bool digits(std::string_view s, std::size_t& pos, std::size_t n, int64_t& out) {
  if (pos + n > s.size()) return false;
  out = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const char c = s[pos + i];
    if (c < '0' || c > '9') return false;
    out = out * 10 + (c - '0');
  }
  pos += n;
  return true;
}

bool expect(std::string_view s, std::size_t& pos, char a, char b = '\0') {
  if (pos >= s.size() || (s[pos] != a && (b == '\0' || s[pos] != b))) return false;
  ++pos;
  return true;
}

// Go's time.Time{}: metav1.Time.IsZero() is true for it.
constexpr int64_t kGoZeroTime = -62135596800;

std::optional<int64_t> parse_rfc3339(std::string_view s) {
  std::size_t pos = 0;
  int64_t y, mo, d, h, mi, sec;
  if (!digits(s, pos, 4, y) || !expect(s, pos, '-') || !digits(s, pos, 2, mo) ||
      !expect(s, pos, '-') || !digits(s, pos, 2, d) || !expect(s, pos, 'T', 't') ||
      !digits(s, pos, 2, h) || !expect(s, pos, ':') || !digits(s, pos, 2, mi) ||
      !expect(s, pos, ':') || !digits(s, pos, 2, sec)) {
    return std::nullopt;
  }
  if (mo < 1 || mo > 12 || d < 1 || d > days_in_month(y, mo) || h > 23 || mi > 59 || sec > 59) {
    return std::nullopt;
  }
  if (pos < s.size() && (s[pos] == '.' || s[pos] == ',')) {
    ++pos;
    const std::size_t start = pos;
    while (pos < s.size() && std::isdigit(static_cast<unsigned char>(s[pos]))) ++pos;
    if (pos == start) return std::nullopt;
  }
  int64_t offset = 0;
  if (expect(s, pos, 'Z', 'z')) {
  } else if (pos < s.size() && (s[pos] == '+' || s[pos] == '-')) {
    const int64_t sign = s[pos] == '-' ? -1 : 1;
    ++pos;
    int64_t oh, om;
    if (!digits(s, pos, 2, oh) || !expect(s, pos, ':') || !digits(s, pos, 2, om) || oh > 23 ||
        om > 59) {
      return std::nullopt;
    }
    offset = sign * (oh * 3600 + om * 60);
  } else {
    return std::nullopt;
  }
  if (pos != s.size()) return std::nullopt;
  return days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + sec - offset;
}

}  // namespace

// --- columns ---------------------------------------------------------------

api::Column column(std::string name, std::string type, std::string description, int priority) {
  return api::Column{std::move(name), std::move(type), "", std::move(description), priority};
}

api::Column name_column(int priority) {
  return api::Column{"Name", "string", "name",
                     "Name of the object, unique within its namespace (or the cluster).", priority};
}

api::Column age_column() {
  return column("Age", "string", "Time since the object was created (metadata.creationTimestamp).");
}

std::vector<api::Column> template_columns(std::string selector_description) {
  std::vector<api::Column> cols = {
      column("Containers", "string", "Names of the containers in the pod template.", 1),
      column("Images", "string", "Images of the containers in the pod template.", 1),
  };
  if (!selector_description.empty()) {
    cols.push_back(column("Selector", "string", std::move(selector_description), 1));
  }
  return cols;
}

std::vector<api::Column> concat(std::vector<api::Column> a, const std::vector<api::Column>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// --- tolerant JSON access --------------------------------------------------

const json* find(const json& obj, Path path) {
  const json* cur = &obj;
  for (std::string_view key : path) {
    if (!cur->is_object()) return nullptr;
    auto it = cur->find(key);
    if (it == cur->end()) return nullptr;
    cur = &*it;
  }
  return cur->is_null() ? nullptr : cur;
}

std::string str(const json& obj, Path path, std::string_view fallback) {
  const json* v = find(obj, path);
  if (v != nullptr && v->is_string()) return v->get<std::string>();
  return std::string(fallback);
}

std::optional<int64_t> opt_integer(const json& obj, Path path) {
  const json* v = find(obj, path);
  if (v == nullptr) return std::nullopt;
  if (v->is_number_integer()) return v->get<int64_t>();
  if (v->is_number_float()) {
    const double d = v->get<double>();
    if (d > -9.2e18 && d < 9.2e18) return static_cast<int64_t>(d);  // also false for NaN
  }
  return std::nullopt;
}

int64_t integer(const json& obj, Path path, int64_t fallback) {
  return opt_integer(obj, path).value_or(fallback);
}

std::optional<bool> opt_bool(const json& obj, Path path) {
  const json* v = find(obj, path);
  if (v != nullptr && v->is_boolean()) return v->get<bool>();
  return std::nullopt;
}

const json& array(const json& obj, Path path) {
  const json* v = find(obj, path);
  return v != nullptr && v->is_array() ? *v : empty_array();
}

const json& object(const json& obj, Path path) {
  const json* v = find(obj, path);
  return v != nullptr && v->is_object() ? *v : empty_object();
}

// --- formatting ----------------------------------------------------------

std::optional<int64_t> parse_time(const json* value) {
  if (value == nullptr || !value->is_string()) return std::nullopt;
  std::optional<int64_t> t = parse_rfc3339(value->get_ref<const std::string&>());
  if (t && *t == kGoZeroTime) return std::nullopt;
  return t;
}

std::string format_rfc3339(int64_t unix_seconds) {
  int64_t days = unix_seconds / 86400;
  int64_t rem = unix_seconds % 86400;
  if (rem < 0) {
    rem += 86400;
    --days;
  }
  const Civil c = civil_from_days(days);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04lld-%02lld-%02lldT%02lld:%02lld:%02lldZ",
                static_cast<long long>(c.year), static_cast<long long>(c.month),
                static_cast<long long>(c.day), static_cast<long long>(rem / 3600),
                static_cast<long long>(rem / 60 % 60), static_cast<long long>(rem % 60));
  return buf;
}

std::string since(const json* timestamp, int64_t now) {
  std::optional<int64_t> t = parse_time(timestamp);
  return t ? human_duration(now - *t) : "<unknown>";
}

std::string age(const json& obj, int64_t now) {
  return since(find(obj, {"metadata", "creationTimestamp"}), now);
}

std::string join(const std::vector<std::string>& parts, std::string_view sep) {
  std::string out;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (i > 0) out += sep;
    out += parts[i];
  }
  return out;
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string trim(std::string_view s) {
  constexpr std::string_view kSpace = " \t\n\v\f\r";
  const std::size_t b = s.find_first_not_of(kSpace);
  if (b == std::string_view::npos) return "";
  return std::string(s.substr(b, s.find_last_not_of(kSpace) - b + 1));
}

std::string format_labels(const json* labels) {
  std::vector<std::string> parts;
  if (labels != nullptr && labels->is_object()) {
    for (const auto& [k, v] : labels->items()) {  // nlohmann objects iterate sorted
      parts.push_back(k + "=" + (v.is_string() ? v.get<std::string>() : v.dump()));
    }
  }
  return parts.empty() ? "<none>" : join(parts, ",");
}

namespace {

std::optional<std::string> label_selector_text(const json* selector) {
  if (selector == nullptr) return std::string();
  Result<api::LabelSelector> parsed = api::LabelSelector::from_json(*selector);
  if (!parsed) return std::nullopt;
  return parsed.value().to_string();
}

}  // namespace

std::string format_label_selector(const json* selector) {
  std::optional<std::string> text = label_selector_text(selector);
  if (!text) return "<error>";
  return text->empty() ? "<none>" : *text;
}

std::string selector_string(const json* selector) {
  return label_selector_text(selector).value_or("<invalid>");
}

std::pair<std::string, std::string> container_cells(const json& containers) {
  std::vector<std::string> names, images;
  if (containers.is_array()) {
    for (const json& c : containers) {
      names.push_back(str(c, {"name"}));
      images.push_back(str(c, {"image"}));
    }
  }
  return {join(names, ","), join(images, ",")};
}

std::string quantity(const json* value, std::string_view absent) {
  if (value == nullptr) return std::string(absent);
  if (value->is_string()) return value->get<std::string>();
  if (value->is_number_integer()) return std::to_string(value->get<int64_t>());
  if (value->is_number()) return value->dump();
  return std::string(absent);
}

std::string int_or_string(const json* value) {
  if (value == nullptr) return "0";
  if (value->is_string()) return value->get<std::string>();
  if (value->is_number_integer()) return std::to_string(value->get<int64_t>());
  return value->dump();
}

std::string bool_ptr(std::optional<bool> value) {
  if (!value) return "<unset>";
  return *value ? "True" : "False";
}

std::string list_with_more(const std::vector<std::string>& items, std::size_t max,
                           std::string_view sep, std::string_view empty) {
  if (items.empty()) return std::string(empty);
  if (items.size() <= max) return join(items, sep);
  std::vector<std::string> head(items.begin(), items.begin() + static_cast<std::ptrdiff_t>(max));
  return join(head, sep) + " + " + std::to_string(items.size() - max) + " more...";
}

}  // namespace vkube::apiserver::builtin::tables
