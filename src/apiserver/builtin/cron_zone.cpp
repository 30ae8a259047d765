// IANA time zones for CronJobs' spec.timeZone, read as Go's
// time.LoadLocation reads them: a TZif file (RFC 8536) of the system's tz
// database, its transitions, and for later times the POSIX TZ rule in its
// footer (slim files stop listing transitions early and rely on it).
#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>

#include "cron.h"

namespace vkube::apiserver::builtin {

namespace {

using namespace std::chrono;

constexpr int64_t kDay = 86400;

int64_t days_from_civil(int64_t y, int64_t m, int64_t d) {
  return sys_days(year_month_day(year(static_cast<int>(y)), month(static_cast<unsigned>(m)),
                                 day(static_cast<unsigned>(d))))
      .time_since_epoch()
      .count();
}

bool is_leap(int64_t y) {
  return year(static_cast<int>(y)).is_leap();
}

}  // namespace

// "STD offset [DST [offset] [,start[/time],end[/time]]]" (POSIX TZ).
struct TimeZone::Rule {
  struct Date {
    char kind = 'M';  // 'J' (1..365, no Feb 29), 'N' (0..365), 'M' (month.week.day)
    int n = 0, month = 0, week = 0, weekday = 0;
    int64_t time = 7200;  // local seconds after midnight
  };
  int32_t std_offset = 0;
  int32_t dst_offset = 0;
  bool has_dst = false;
  Date start, end;

  // Local seconds since the epoch at which `d` falls in year `y`.
  static int64_t at(const Date& d, int64_t y) {
    int64_t days = days_from_civil(y, 1, 1);
    if (d.kind == 'J') {
      days += d.n - 1 + (is_leap(y) && d.n >= 60 ? 1 : 0);
    } else if (d.kind == 'N') {
      days += d.n;
    } else {
      int64_t first = days_from_civil(y, d.month, 1);
      int64_t first_weekday = ((first % 7) + 11) % 7;  // 1970-01-01 was a Thursday
      int64_t dom = 1 + (d.weekday - first_weekday + 7) % 7 + (d.week - 1) * 7;
      int64_t length = static_cast<unsigned>(
          year_month_day_last(year(static_cast<int>(y)), month_day_last(month(d.month))).day());
      while (dom > length) dom -= 7;
      days = first + dom - 1;
    }
    return days * kDay + d.time;
  }

  Period lookup(int64_t t) const {
    if (!has_dst) return Period{std_offset, INT64_MIN, INT64_MAX};
    int64_t local = t + std_offset;
    int64_t local_days = local / kDay - (local % kDay < 0 ? 1 : 0);
    int64_t y = static_cast<int>(year_month_day(sys_days(days(local_days))).year());
    // Transitions of the years around t, in UTC: (instant, offset after it).
    std::vector<std::pair<int64_t, int32_t>> tx;
    for (int64_t yy = y - 1; yy <= y + 1; ++yy) {
      tx.emplace_back(at(start, yy) - std_offset, dst_offset);
      tx.emplace_back(at(end, yy) - dst_offset, std_offset);
    }
    std::sort(tx.begin(), tx.end());
    Period p{tx.front().second == dst_offset ? std_offset : dst_offset, INT64_MIN,
             tx.front().first};
    for (size_t i = 0; i < tx.size() && tx[i].first <= t; ++i) {
      p.offset = tx[i].second;
      p.start = tx[i].first;
      p.end = i + 1 < tx.size() ? tx[i + 1].first : INT64_MAX;
    }
    return p;
  }
};

namespace {

class Parser {
 public:
  explicit Parser(std::string_view s) : s_(s) {}
  bool done() const { return i_ == s_.size(); }
  bool eat(char c) {
    if (i_ < s_.size() && s_[i_] == c) return ++i_, true;
    return false;
  }
  bool peek_name() const {
    return i_ < s_.size() && (s_[i_] == '<' || std::isalpha(static_cast<unsigned char>(s_[i_])));
  }
  bool name() {
    if (eat('<')) {
      while (i_ < s_.size() && s_[i_] != '>') ++i_;
      return eat('>');
    }
    size_t start = i_;
    while (i_ < s_.size() && std::isalpha(static_cast<unsigned char>(s_[i_]))) ++i_;
    return i_ - start >= 3;
  }
  // [+-]hh[:mm[:ss]] as seconds.
  bool seconds(int64_t* out) {
    bool negative = false;
    if (i_ < s_.size() && (s_[i_] == '+' || s_[i_] == '-')) negative = s_[i_++] == '-';
    int64_t total = 0;
    for (int part = 0; part < 3; ++part) {
      if (part > 0 && !eat(':')) break;
      size_t start = i_;
      int64_t v = 0;
      while (i_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_])))
        v = v * 10 + (s_[i_++] - '0');
      if (i_ == start) return false;
      total += v * (part == 0 ? 3600 : part == 1 ? 60 : 1);
    }
    *out = negative ? -total : total;
    return true;
  }
  bool number(int* out) {
    size_t start = i_;
    int v = 0;
    while (i_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_])))
      v = v * 10 + (s_[i_++] - '0');
    *out = v;
    return i_ > start;
  }
  bool date(TimeZone::Rule::Date* d) {
    if (eat('M')) {
      d->kind = 'M';
      if (!number(&d->month) || !eat('.') || !number(&d->week) || !eat('.') || !number(&d->weekday))
        return false;
      if (d->month < 1 || d->month > 12 || d->week < 1 || d->week > 5 || d->weekday > 6)
        return false;
    } else {
      d->kind = eat('J') ? 'J' : 'N';
      if (!number(&d->n)) return false;
    }
    if (eat('/')) return seconds(&d->time);
    return true;
  }

 private:
  std::string_view s_;
  size_t i_ = 0;
};

std::shared_ptr<const TimeZone::Rule> parse_rule(std::string_view text) {
  auto r = std::make_shared<TimeZone::Rule>();
  Parser p(text);
  int64_t off = 0;
  if (!p.name() || !p.seconds(&off)) return nullptr;
  r->std_offset = static_cast<int32_t>(-off);
  if (p.done()) return r;
  if (!p.name()) return nullptr;
  r->has_dst = true;
  r->dst_offset = r->std_offset + 3600;
  if (!p.done() && !p.eat(',')) {
    if (!p.seconds(&off)) return nullptr;
    r->dst_offset = static_cast<int32_t>(-off);
    if (!p.done() && !p.eat(',')) return nullptr;
  }
  if (p.done()) {
    // No dates: tzcode's (and Go's) default, the US rules.
    r->start = {'M', 0, 3, 2, 0, 7200};
    r->end = {'M', 0, 11, 1, 0, 7200};
    return r;
  }
  if (!p.date(&r->start) || !p.eat(',') || !p.date(&r->end) || !p.done()) return nullptr;
  return r;
}

class Reader {
 public:
  explicit Reader(const std::string& d) : d_(d) {}
  bool ok() const { return ok_; }
  size_t pos() const { return pos_; }
  void skip(size_t n) {
    if (pos_ + n > d_.size()) ok_ = false;
    pos_ = std::min(d_.size(), pos_ + n);
  }
  int64_t be(size_t n) {
    if (pos_ + n > d_.size()) {
      ok_ = false;
      return 0;
    }
    uint64_t v = 0;
    for (size_t i = 0; i < n; ++i) v = (v << 8) | static_cast<unsigned char>(d_[pos_ + i]);
    pos_ += n;
    if (n == 4) return static_cast<int32_t>(static_cast<uint32_t>(v));
    return static_cast<int64_t>(v);
  }

 private:
  const std::string& d_;
  size_t pos_ = 0;
  bool ok_ = true;
};

// A TZif file, version 1 data or (when present) the 64-bit version 2+ data.
std::unique_ptr<TimeZone> parse_tzif(const std::string& name, const std::string& data) {
  Reader r(data);
  if (data.compare(0, 4, "TZif") != 0) return nullptr;
  r.skip(4);
  char version = static_cast<char>(r.be(1));
  r.skip(15);
  int64_t counts[6];  // isutcnt isstdcnt leapcnt timecnt typecnt charcnt
  for (int64_t& c : counts) c = r.be(4);
  size_t time_size = 4;
  if (version >= '2') {
    r.skip(static_cast<size_t>(counts[3] * 5 + counts[4] * 6 + counts[5] + counts[2] * 8 +
                               counts[1] + counts[0]));
    r.skip(20);
    for (int64_t& c : counts) c = r.be(4);
    time_size = 8;
  }
  if (!r.ok() || counts[4] <= 0 || counts[3] < 0) return nullptr;
  std::vector<int64_t> times(static_cast<size_t>(counts[3]));
  for (int64_t& t : times) t = r.be(time_size);
  std::vector<size_t> type_of(times.size());
  for (size_t& t : type_of) t = static_cast<size_t>(r.be(1));
  std::vector<int32_t> type_offset(static_cast<size_t>(counts[4]));
  std::vector<bool> type_dst(type_offset.size());
  for (size_t i = 0; i < type_offset.size(); ++i) {
    type_offset[i] = static_cast<int32_t>(r.be(4));
    type_dst[i] = r.be(1) != 0;
    r.skip(1);
  }
  r.skip(static_cast<size_t>(counts[5] + counts[2] * (time_size + 4) + counts[1] + counts[0]));
  if (!r.ok()) return nullptr;
  std::vector<int32_t> offsets;
  for (size_t t : type_of) {
    if (t >= type_offset.size()) return nullptr;
    offsets.push_back(type_offset[t]);
  }
  // Before the first transition: Go's lookupFirstZone, simplified: the first
  // type no transition uses, else the first standard-time type.
  size_t first = 0;
  if (std::find(type_of.begin(), type_of.end(), 0) != type_of.end()) {
    for (size_t i = 0; i < type_dst.size(); ++i)
      if (!type_dst[i]) {
        first = i;
        break;
      }
  }
  std::shared_ptr<const TimeZone::Rule> rule;
  if (version >= '2' && r.pos() < data.size() && data[r.pos()] == '\n') {
    size_t end = data.find('\n', r.pos() + 1);
    if (end != std::string::npos) rule = parse_rule(data.substr(r.pos() + 1, end - r.pos() - 1));
  }
  return std::make_unique<TimeZone>(name, std::move(times), std::move(offsets), type_offset[first],
                                    std::move(rule));
}

std::string read_zone_file(const std::string& name) {
  std::vector<std::string> dirs;
  if (const char* env = std::getenv("ZONEINFO"); env != nullptr && *env != '\0')
    dirs.emplace_back(env);
  dirs.emplace_back("/usr/share/zoneinfo");
  dirs.emplace_back("/usr/share/lib/zoneinfo");
  dirs.emplace_back("/etc/zoneinfo");
  for (const std::string& dir : dirs) {
    std::ifstream in(dir + "/" + name, std::ios::binary);
    if (!in) continue;
    std::ostringstream out;
    out << in.rdbuf();
    if (in.bad()) continue;
    std::string data = out.str();
    if (data.compare(0, 4, "TZif") == 0) return data;
  }
  return {};
}

}  // namespace

TimeZone::TimeZone(std::string name, std::vector<int64_t> transitions, std::vector<int32_t> offsets,
                   int32_t initial_offset, std::shared_ptr<const Rule> rule)
    : name_(std::move(name)),
      transitions_(std::move(transitions)),
      offsets_(std::move(offsets)),
      initial_offset_(initial_offset),
      rule_(std::move(rule)) {}

const TimeZone& TimeZone::utc() {
  static const TimeZone zone("UTC", {}, {}, 0, nullptr);
  return zone;
}

const TimeZone* TimeZone::find(std::string_view name, std::string* error) {
  if (name.empty() || name == "UTC") return &utc();
  static std::mutex mu;
  static std::map<std::string, std::unique_ptr<TimeZone>, std::less<>> zones;
  std::lock_guard lock(mu);
  if (auto it = zones.find(name); it != zones.end()) return it->second.get();
  std::string n(name);
  std::unique_ptr<TimeZone> zone;
  // Go refuses names that could leave the database directory.
  bool bad_name = n.find("..") != std::string::npos || n[0] == '/' || n[0] == '\\' ||
                  n.find('\0') != std::string::npos;
  if (bad_name) {
    if (error != nullptr) *error = "time: invalid location name";
    return nullptr;
  }
  std::string data = read_zone_file(n);
  if (!data.empty()) zone = parse_tzif(n, data);
  if (zone == nullptr) {
    // Not cached: the zones that exist are a few hundred, the names a tenant
    // can write are not (found by fuzz_cron: the cache grew without bound).
    if (error != nullptr) *error = "unknown time zone " + n;
    return nullptr;
  }
  return zones.emplace(n, std::move(zone)).first->second.get();
}

TimeZone::Period TimeZone::lookup(int64_t t) const {
  if (transitions_.empty()) {
    if (rule_) return rule_->lookup(t);
    return Period{initial_offset_, INT64_MIN, INT64_MAX};
  }
  if (t < transitions_.front()) return Period{initial_offset_, INT64_MIN, transitions_.front()};
  size_t i = static_cast<size_t>(std::upper_bound(transitions_.begin(), transitions_.end(), t) -
                                 transitions_.begin()) -
             1;
  if (i + 1 == transitions_.size()) {
    if (rule_) {
      Period p = rule_->lookup(t);
      p.start = std::max(p.start, transitions_.back());
      return p;
    }
    return Period{offsets_[i], transitions_[i], INT64_MAX};
  }
  return Period{offsets_[i], transitions_[i], transitions_[i + 1]};
}

int64_t TimeZone::from_local(int64_t local) const {
  // Go's time.Date: guess with the offset in force at `local` read as UTC,
  // and if the result falls outside that offset's period, use the offset at
  // the result.
  Period p = lookup(local);
  int64_t utc = local - p.offset;
  if (utc < p.start || utc >= p.end) utc = local - lookup(utc).offset;
  return utc;
}

}  // namespace vkube::apiserver::builtin
