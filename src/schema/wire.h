// The protobuf wire format, read and written by hand: varints, fixed-width
// numbers and length-delimited fields. Small enough to own, and it keeps
// vkube on libprotobuf-lite (the storage records) without the full runtime.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace vkube::schema::wire {

enum WireType : uint32_t { kVarint = 0, kFixed64 = 1, kLen = 2, kStartGroup = 3, kEndGroup = 4, kFixed32 = 5 };

// One field as read from the wire.
struct Tag {
  uint32_t number = 0;
  WireType type = kVarint;
  uint64_t varint = 0;     // kVarint, kFixed64, kFixed32 (raw bits)
  std::string_view bytes;  // kLen
};

// Reads fields one at a time; ok() turns false on malformed input.
class Reader {
 public:
  explicit Reader(std::string_view data) : p_(data.data()), end_(data.data() + data.size()) {}

  bool done() const { return p_ == end_ || !ok_; }
  bool ok() const { return ok_; }

  bool next(Tag& t) {
    if (done()) return false;
    uint64_t key;
    if (!varint(key)) return fail();
    t.number = static_cast<uint32_t>(key >> 3);
    t.type = static_cast<WireType>(key & 7);
    if (t.number == 0) return fail();
    switch (t.type) {
      case kVarint:
        return varint(t.varint) || fail();
      case kFixed64:
        if (end_ - p_ < 8) return fail();
        std::memcpy(&t.varint, p_, 8);
        p_ += 8;
        return true;
      case kFixed32: {
        if (end_ - p_ < 4) return fail();
        uint32_t v;
        std::memcpy(&v, p_, 4);
        t.varint = v;
        p_ += 4;
        return true;
      }
      case kLen: {
        uint64_t n;
        if (!varint(n) || n > static_cast<uint64_t>(end_ - p_)) return fail();
        t.bytes = std::string_view(p_, static_cast<size_t>(n));
        p_ += n;
        return true;
      }
      default:
        return fail();  // groups are not used by Kubernetes types
    }
  }

 private:
  bool varint(uint64_t& v) {
    v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (p_ == end_) return false;
      uint8_t b = static_cast<uint8_t>(*p_++);
      v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if (!(b & 0x80)) return true;
    }
    return false;
  }
  bool fail() {
    ok_ = false;
    return false;
  }
  const char* p_;
  const char* end_;
  bool ok_ = true;
};

inline void put_varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

inline void put_tag(std::string& out, uint32_t number, WireType type) {
  put_varint(out, (static_cast<uint64_t>(number) << 3) | type);
}

inline void put_len(std::string& out, uint32_t number, std::string_view bytes) {
  put_tag(out, number, kLen);
  put_varint(out, bytes.size());
  out.append(bytes);
}

inline void put_fixed64(std::string& out, uint32_t number, uint64_t bits) {
  put_tag(out, number, kFixed64);
  char b[8];
  std::memcpy(b, &bits, 8);
  out.append(b, 8);
}

inline void put_fixed32(std::string& out, uint32_t number, uint32_t bits) {
  put_tag(out, number, kFixed32);
  char b[4];
  std::memcpy(b, &bits, 4);
  out.append(b, 4);
}

}  // namespace vkube::schema::wire
