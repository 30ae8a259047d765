// Key layout of the RocksDB backend.
//
//   default CF  "rev" -> BE64 current revision, "compact" -> BE64, "format" -> version string
//   latest      key -> Record                    (live keys only; the fast path)
//   history     key \0 BE64(~rev) -> Record      (every version, newest first per key)
//   log         BE64(rev) -> LogEntry            (one entry per revision, for watch replay)
//
// Keys never contain NUL (checked on write), so "key\0" separates a key from
// its revision suffix and keys sort as they would alone.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace vkube::storage::codec {

inline constexpr std::string_view kMetaRevision = "rev";
inline constexpr std::string_view kMetaCompacted = "compact";
inline constexpr std::string_view kMetaFormat = "format";
inline constexpr std::string_view kFormatVersion = "vkube-storage/1";

inline void put_be64(std::string* out, uint64_t v) {
  for (int shift = 56; shift >= 0; shift -= 8) out->push_back(static_cast<char>((v >> shift) & 0xff));
}

inline uint64_t get_be64(std::string_view in) {
  uint64_t v = 0;
  for (size_t i = 0; i < 8 && i < in.size(); ++i) v = (v << 8) | static_cast<unsigned char>(in[i]);
  return v;
}

inline std::string be64(int64_t v) {
  std::string s;
  put_be64(&s, static_cast<uint64_t>(v));
  return s;
}

inline std::string history_key(std::string_view key, int64_t rev) {
  std::string s;
  s.reserve(key.size() + 9);
  s.append(key);
  s.push_back('\0');
  put_be64(&s, ~static_cast<uint64_t>(rev));
  return s;
}

// The user key of a history key.
inline std::string_view history_user_key(std::string_view hk) {
  return hk.size() >= 9 ? hk.substr(0, hk.size() - 9) : std::string_view{};
}

inline int64_t history_revision(std::string_view hk) {
  return hk.size() >= 9 ? static_cast<int64_t>(~get_be64(hk.substr(hk.size() - 8))) : 0;
}

// The smallest history key greater than every version of `key`.
inline std::string history_after_key(std::string_view key) {
  std::string s(key);
  s.push_back('\x01');
  return s;
}

// The smallest string greater than every string with this prefix, or "" when
// there is none (prefix of all 0xff bytes, or empty).
inline std::string prefix_end(std::string_view prefix) {
  std::string s(prefix);
  while (!s.empty()) {
    auto c = static_cast<unsigned char>(s.back());
    if (c != 0xff) {
      s.back() = static_cast<char>(c + 1);
      return s;
    }
    s.pop_back();
  }
  return s;
}

}  // namespace vkube::storage::codec
