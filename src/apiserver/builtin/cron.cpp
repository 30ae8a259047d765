// A port of robfig/cron v3's standard parser: the same inputs are accepted
// and the same error messages produced (kubectl users read them in 422
// responses), and the same bit sets built for cron_next.
#include "cron.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <vector>

namespace vkube::apiserver::builtin {

namespace {

struct Bounds {
  int64_t min;
  int64_t max;
  const std::map<std::string, int64_t>* names;
};

const std::map<std::string, int64_t> kMonths = {{"jan", 1}, {"feb", 2},  {"mar", 3},  {"apr", 4},
                                                {"may", 5}, {"jun", 6},  {"jul", 7},  {"aug", 8},
                                                {"sep", 9}, {"oct", 10}, {"nov", 11}, {"dec", 12}};
const std::map<std::string, int64_t> kDays = {{"sun", 0}, {"mon", 1}, {"tue", 2}, {"wed", 3},
                                              {"thu", 4}, {"fri", 5}, {"sat", 6}};

std::vector<std::string> split(std::string_view s, char sep, bool drop_empty) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (c == sep) {
      if (!drop_empty || !cur.empty()) out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!drop_empty || !cur.empty()) out.push_back(cur);
  return out;
}

std::vector<std::string> fields_of(std::string_view s) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (std::isspace(static_cast<unsigned char>(c))) {
      if (!cur.empty()) out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

// strconv.Atoi plus the parser's sign check; sets `err` on failure.
int64_t parse_int(const std::string& expr, std::string& err) {
  size_t i = (!expr.empty() && (expr[0] == '+' || expr[0] == '-')) ? 1 : 0;
  bool ok = i < expr.size() && expr.size() - i <= 18;
  for (size_t k = i; ok && k < expr.size(); ++k)
    ok = std::isdigit(static_cast<unsigned char>(expr[k]));
  if (!ok) {
    bool digits = i < expr.size() &&
                  std::all_of(expr.begin() + static_cast<long>(i), expr.end(),
                              [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
    err = "failed to parse int from " + expr + ": strconv.Atoi: parsing \"" + expr +
          "\": " + (digits ? "value out of range" : "invalid syntax");
    return 0;
  }
  int64_t n = std::stoll(expr);
  if (n < 0) err = "negative number (" + std::to_string(n) + ") not allowed: " + expr;
  return n;
}

int64_t parse_int_or_name(const std::string& expr, const Bounds& b, std::string& err) {
  if (b.names != nullptr) {
    std::string lower = expr;
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    auto it = b.names->find(lower);
    if (it != b.names->end()) return it->second;
  }
  return parse_int(expr, err);
}

// robfig's getBits: the values min..max stepping by `step`.
uint64_t bits_of(int64_t min, int64_t max, int64_t step) {
  uint64_t bits = 0;
  for (int64_t i = min; i <= max; i += step) bits |= uint64_t{1} << i;
  return bits;
}

// robfig's getRange: one comma-separated part of a field. Returns the error
// message ("" on success) and ORs the matching values into `bits`.
std::string get_range(const std::string& expr, const Bounds& b, uint64_t& bits) {
  std::vector<std::string> range_and_step = split(expr, '/', false);
  std::vector<std::string> low_high = split(range_and_step[0], '-', false);
  std::string err;
  int64_t start = 0;
  int64_t end = 0;
  uint64_t extra = 0;
  if (low_high[0] == "*" || low_high[0] == "?") {
    start = b.min;
    end = b.max;
    extra = CronSchedule::kStarBit;
  } else {
    start = parse_int_or_name(low_high[0], b, err);
    if (!err.empty()) return err;
    if (low_high.size() == 1) {
      end = start;
    } else if (low_high.size() == 2) {
      end = parse_int_or_name(low_high[1], b, err);
      if (!err.empty()) return err;
    } else {
      return "too many hyphens: " + expr;
    }
  }
  int64_t step = 1;
  if (range_and_step.size() == 2) {
    step = parse_int(range_and_step[1], err);
    if (!err.empty()) return err;
    if (low_high.size() == 1) end = b.max;  // "N/step" means "N-max/step"
    if (step > 1) extra = 0;
  } else if (range_and_step.size() > 2) {
    return "too many slashes: " + expr;
  }
  auto num = [](int64_t v) { return std::to_string(v); };
  if (start < b.min) {
    return "beginning of range (" + num(start) + ") below minimum (" + num(b.min) + "): " + expr;
  }
  if (end > b.max) {
    return "end of range (" + num(end) + ") above maximum (" + num(b.max) + "): " + expr;
  }
  if (start > end) {
    return "beginning of range (" + num(start) + ") beyond end of range (" + num(end) +
           "): " + expr;
  }
  if (step == 0) return "step of range should be a positive number: " + expr;
  bits |= bits_of(start, end, step) | extra;
  return "";
}

// time.ParseDuration's acceptance and messages, for "@every <duration>";
// the value, in seconds, goes to *seconds.
std::optional<std::string> parse_duration(const std::string& d, long double* seconds) {
  std::string quoted = "\"" + d + "\"";
  size_t i = 0;
  bool negative = false;
  if (i < d.size() && (d[i] == '+' || d[i] == '-')) negative = d[i++] == '-';
  *seconds = 0;
  if (d.substr(i) == "0") return std::nullopt;
  if (i == d.size()) return "time: invalid duration " + quoted;
  static const std::pair<const char*, long double> kUnits[] = {
      {"ns", 1e-9L}, {"us", 1e-6L}, {"\xC2\xB5s", 1e-6L}, {"\xCE\xBCs", 1e-6L},
      {"ms", 1e-3L}, {"s", 1.0L},   {"m", 60.0L},         {"h", 3600.0L}};
  long double total = 0;
  while (i < d.size()) {
    size_t start = i;
    while (i < d.size() && std::isdigit(static_cast<unsigned char>(d[i]))) ++i;
    bool pre = i > start;
    bool post = false;
    size_t number_end = i;
    if (i < d.size() && d[i] == '.') {
      size_t frac = ++i;
      while (i < d.size() && std::isdigit(static_cast<unsigned char>(d[i]))) ++i;
      post = i > frac;
    }
    if (!pre && !post) return "time: invalid duration " + quoted;
    std::string number = d.substr(start, i - start);
    if (number_end == start) number = "0" + number;
    size_t unit_start = i;
    while (i < d.size() && d[i] != '.' && !std::isdigit(static_cast<unsigned char>(d[i]))) ++i;
    if (unit_start == i) return "time: missing unit in duration " + quoted;
    std::string unit = d.substr(unit_start, i - unit_start);
    auto u = std::find_if(std::begin(kUnits), std::end(kUnits),
                          [&](const auto& k) { return unit == k.first; });
    if (u == std::end(kUnits)) return "time: unknown unit \"" + unit + "\" in duration " + quoted;
    total += std::strtold(number.c_str(), nullptr) * u->second;
  }
  // Go counts in int64 nanoseconds: a longer duration is an error, which
  // also keeps @every's conversion to whole seconds defined.
  if (!(total * 1e9L < 9223372036854775808.0L)) return "time: invalid duration " + quoted;
  *seconds = negative ? -total : total;
  return std::nullopt;
}

const Bounds kFieldBounds[] = {
    {0, 59, nullptr}, {0, 23, nullptr}, {1, 31, nullptr}, {1, 12, &kMonths}, {0, 6, &kDays}};

uint64_t all_of(const Bounds& b) {
  return bits_of(b.min, b.max, 1) | CronSchedule::kStarBit;
}

// robfig's parseDescriptor.
std::optional<std::string> parse_descriptor(const std::string& spec, CronSchedule& s) {
  const Bounds& hour = kFieldBounds[1];
  const Bounds& dom = kFieldBounds[2];
  const Bounds& month = kFieldBounds[3];
  const Bounds& dow = kFieldBounds[4];
  s.minute = 1;
  s.hour = 1;
  s.dom = all_of(dom);
  s.month = all_of(month);
  s.dow = all_of(dow);
  if (spec == "@yearly" || spec == "@annually") {
    s.dom = uint64_t{1} << 1;
    s.month = uint64_t{1} << 1;
  } else if (spec == "@monthly") {
    s.dom = uint64_t{1} << 1;
  } else if (spec == "@weekly") {
    s.dow = 1;
  } else if (spec == "@daily" || spec == "@midnight") {
  } else if (spec == "@hourly") {
    s.hour = all_of(hour);
  } else if (spec.rfind("@every ", 0) == 0) {
    long double seconds = 0;
    if (auto err = parse_duration(spec.substr(7), &seconds)) {
      return "failed to parse duration " + spec + ": " + *err;
    }
    // robfig's Every: at least a second, whole seconds.
    s.every_seconds = seconds < 1 ? 1 : static_cast<int64_t>(seconds);
  } else {
    return "unrecognized descriptor: " + spec;
  }
  return std::nullopt;
}

std::optional<std::string> parse(std::string_view schedule, const TimeZone* zone, CronSchedule& s) {
  std::string spec(schedule);
  if (spec.empty()) return "empty spec string";
  s.zone = zone != nullptr ? zone : &TimeZone::utc();
  if (spec.rfind("TZ=", 0) == 0 || spec.rfind("CRON_TZ=", 0) == 0) {
    size_t space = spec.find(' ');
    std::string name =
        spec.substr(spec.find('=') + 1,
                    space == std::string::npos ? std::string::npos : space - spec.find('=') - 1);
    if (space == std::string::npos) return "provided bad location " + name;
    std::string err;
    s.zone = TimeZone::find(name, &err);
    if (s.zone == nullptr) return "provided bad location " + name + ": " + err;
    size_t first = spec.find_first_not_of(" \t\r\n\v\f", space);
    spec = first == std::string::npos ? "" : spec.substr(first);
    spec.erase(spec.find_last_not_of(" \t\r\n\v\f") + 1);
  }
  if (!spec.empty() && spec[0] == '@') return parse_descriptor(spec, s);
  std::vector<std::string> fields = fields_of(spec);
  if (fields.size() != 5) {
    std::string list;
    for (const auto& f : fields) list += (list.empty() ? "" : " ") + f;
    return "expected exactly 5 fields, found " + std::to_string(fields.size()) + ": [" + list + "]";
  }
  uint64_t* bits[] = {&s.minute, &s.hour, &s.dom, &s.month, &s.dow};
  for (size_t i = 0; i < 5; ++i) {
    for (const std::string& expr : split(fields[i], ',', true)) {
      std::string err = get_range(expr, kFieldBounds[i], *bits[i]);
      if (!err.empty()) return err;
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> cron_schedule_error(std::string_view schedule) {
  CronSchedule s;
  return parse(schedule, nullptr, s);
}

std::optional<CronSchedule> parse_cron_schedule(std::string_view spec, const TimeZone* zone,
                                                std::string* error) {
  CronSchedule s;
  if (auto err = parse(spec, zone, s)) {
    if (error != nullptr) *error = *err;
    return std::nullopt;
  }
  return s;
}

}  // namespace vkube::apiserver::builtin
