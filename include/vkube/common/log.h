// Structured, levelled logging.
//
//   VKUBE_LOG(info, "store opened", {"path", dir}, {"revision", rev});
//
// prints one line per record, in logfmt by default
//   ts=2026-12-02T13:40:01.123Z level=info msg="store opened" path=/data revision=42
// or as a JSON object per line with set_format(Format::kJson). Thread-safe:
// records from concurrent threads never interleave. Fields are only
// formatted when the level is enabled.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <type_traits>

namespace vkube::log {

enum class Level { debug = 0, info = 1, warn = 2, error = 3, off = 4 };
enum class Format { kLogfmt, kJson };

struct Field {
  Field(std::string_view k, std::string_view v) : key(k), value(v) {}
  Field(std::string_view k, const char* v) : key(k), value(v) {}
  Field(std::string_view k, const std::string& v) : key(k), value(v) {}
  Field(std::string_view k, bool v) : key(k), value(v ? "true" : "false"), quoted(false) {}
  template <typename N>
    requires std::is_arithmetic_v<N>
  Field(std::string_view k, N v) : key(k), value(std::to_string(v)), quoted(false) {}

  std::string_view key;
  std::string value;
  bool quoted = true;
};

void set_level(Level level);
Level level();
void set_format(Format format);
// Parses "debug", "info", "warn", "error" or "off"; false when unknown.
bool parse_level(std::string_view text, Level* out);
// Writes to stderr by default; tests may redirect to a file descriptor.
void set_fd(int fd);

inline bool enabled(Level l) { return l >= level(); }
void write(Level l, std::string_view msg, std::initializer_list<Field> fields);

}  // namespace vkube::log

#define VKUBE_LOG(lvl, msg, ...)                                              \
  do {                                                                        \
    if (::vkube::log::enabled(::vkube::log::Level::lvl))                      \
      ::vkube::log::write(::vkube::log::Level::lvl, (msg), {__VA_ARGS__});    \
  } while (0)
