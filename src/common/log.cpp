#include "vkube/common/log.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <mutex>

namespace vkube::log {
namespace {

std::atomic<Level> g_level{Level::info};
std::atomic<Format> g_format{Format::kLogfmt};
std::atomic<int> g_fd{STDERR_FILENO};

std::string_view level_name(Level l) {
  switch (l) {
    case Level::debug: return "debug";
    case Level::info: return "info";
    case Level::warn: return "warn";
    case Level::error: return "error";
    case Level::off: return "off";
  }
  return "info";
}

void append_timestamp(std::string& out) {
  auto now = std::chrono::system_clock::now();
  auto secs = std::chrono::system_clock::to_time_t(now);
  auto millis =
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(millis));
  out += buf;
}

// Escapes for both logfmt's and JSON's double-quoted strings.
void append_quoted(std::string& out, std::string_view s) {
  out += '"';
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += c;
        }
    }
  }
  out += '"';
}

bool needs_quotes(std::string_view s) {
  if (s.empty()) return true;
  for (char c : s)
    if (c == ' ' || c == '"' || c == '=' || static_cast<unsigned char>(c) < 0x21) return true;
  return false;
}

}  // namespace

void set_level(Level l) { g_level = l; }
Level level() { return g_level.load(std::memory_order_relaxed); }
void set_format(Format f) { g_format = f; }
void set_fd(int fd) { g_fd = fd; }

bool parse_level(std::string_view text, Level* out) {
  for (Level l : {Level::debug, Level::info, Level::warn, Level::error, Level::off}) {
    if (text == level_name(l)) {
      *out = l;
      return true;
    }
  }
  return false;
}

void write(Level l, std::string_view msg, std::initializer_list<Field> fields) {
  std::string line;
  line.reserve(128);
  if (g_format == Format::kJson) {
    line += "{\"ts\":\"";
    append_timestamp(line);
    line += "\",\"level\":\"";
    line += level_name(l);
    line += "\",\"msg\":";
    append_quoted(line, msg);
    for (const Field& f : fields) {
      line += ',';
      append_quoted(line, f.key);
      line += ':';
      if (f.quoted) append_quoted(line, f.value);
      else line += f.value;
    }
    line += "}\n";
  } else {
    line += "ts=";
    append_timestamp(line);
    line += " level=";
    line += level_name(l);
    line += " msg=";
    append_quoted(line, msg);
    for (const Field& f : fields) {
      line += ' ';
      line += f.key;
      line += '=';
      if (needs_quotes(f.value)) append_quoted(line, f.value);
      else line += f.value;
    }
    line += '\n';
  }
  // One write(2) per record keeps concurrent records from interleaving.
  static std::mutex mu;
  std::lock_guard lock(mu);
  const char* p = line.data();
  size_t left = line.size();
  while (left > 0) {
    ssize_t n = ::write(g_fd.load(), p, left);
    if (n <= 0) break;
    p += n;
    left -= static_cast<size_t>(n);
  }
}

}  // namespace vkube::log
