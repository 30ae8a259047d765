// DNS messages (RFC 1035) as plain values, and their wire format: parse()
// reads a packet from anyone (bounds-checked, compression pointers may only
// point backwards, so loops cannot happen), serialize() writes one with name
// compression and truncation to a size limit. No I/O.
//
// Names are in presentation form without the trailing dot ("www.example.com",
// "" for the root): a '.' or '\' inside a label and bytes outside printable
// ASCII are escaped ("\.", "\\", "\DDD"), so every wire name round-trips.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "vkube/common/status.h"

namespace vkube::dns {

namespace type {
inline constexpr uint16_t kA = 1;
inline constexpr uint16_t kNs = 2;
inline constexpr uint16_t kCname = 5;
inline constexpr uint16_t kSoa = 6;
inline constexpr uint16_t kPtr = 12;
inline constexpr uint16_t kMx = 15;
inline constexpr uint16_t kTxt = 16;
inline constexpr uint16_t kAaaa = 28;
inline constexpr uint16_t kSrv = 33;
inline constexpr uint16_t kOpt = 41;
inline constexpr uint16_t kAny = 255;
}  // namespace type

inline constexpr uint16_t kClassIn = 1;
inline constexpr uint16_t kClassAny = 255;

enum class Rcode : uint8_t {
  kNoError = 0,
  kFormErr = 1,
  kServFail = 2,
  kNxDomain = 3,
  kNotImp = 4,
  kRefused = 5,
};
// The extended rcode BADVERS (16): sent through the OPT record's upper bits.
inline constexpr uint16_t kBadVers = 16;

struct Header {
  uint16_t id = 0;
  bool qr = false;  // a response
  uint8_t opcode = 0;
  bool aa = false;  // authoritative answer
  bool tc = false;  // truncated
  bool rd = false;  // recursion desired
  bool ra = false;  // recursion available
  bool ad = false;
  bool cd = false;
  Rcode rcode = Rcode::kNoError;  // the header's 4 bits
};

struct Question {
  std::string name;
  uint16_t type = type::kA;
  uint16_t klass = kClassIn;
};

struct SrvData {
  uint16_t priority = 0;
  uint16_t weight = 0;
  uint16_t port = 0;
  std::string target;
};

struct SoaData {
  std::string mname;
  std::string rname;
  uint32_t serial = 0;
  uint32_t refresh = 0;
  uint32_t retry = 0;
  uint32_t expire = 0;
  uint32_t minimum = 0;
};

// One resource record. The typed fields used depend on `type`:
//   A, AAAA:        text = the address ("10.0.0.1", "fd00::1")
//   CNAME, NS, PTR: text = the target name
//   SRV:            srv;  SOA: soa
//   anything else (OPT included): raw = the RDATA bytes as on the wire.
// For OPT, `klass` is the sender's UDP payload size and `ttl` holds the
// extended rcode (bits 24-31), the version (16-23) and the DO flag (bit 15).
struct Record {
  std::string name;
  uint16_t type = type::kA;
  uint16_t klass = kClassIn;
  uint32_t ttl = 0;
  std::string text;
  SrvData srv;
  SoaData soa;
  std::string raw;
};

struct Message {
  Header header;
  std::vector<Question> questions;
  std::vector<Record> answers;
  std::vector<Record> authority;
  std::vector<Record> additional;

  // The OPT record of the additional section, or null.
  const Record* opt() const;
};

// Reads a whole packet. kBadRequest for anything malformed: shorter than its
// counts say, a label or name too long, a bad compression pointer (forward,
// self or loop), a reserved label type, bad A/AAAA lengths, record data of the wrong length.
// Bytes after the last record are ignored.
Result<Message> parse(std::string_view wire);
// Only the 12-byte header (to answer FORMERR with the right id); false when
// the packet is shorter.
bool parse_header(std::string_view wire, Header* out);

// Writes `message`. Owner names and the names inside CNAME/NS/PTR/SOA data
// are compressed (never SRV targets, RFC 2782). When the result would exceed
// `max_size`, the additional section (but its OPT) is dropped, and if that is
// not enough the answer and authority sections too, with the TC bit set.
// kInvalid for a name or address that cannot be encoded (a label over 63
// bytes, a name over 255, a bad address text).
Result<std::string> serialize(const Message& message, size_t max_size = 65535);

// Lower-cased ASCII (names compare case-insensitively, RFC 4343).
std::string lower(std::string_view name);
// The name with a trailing dot removed, lower-cased.
std::string canonical(std::string_view name);

}  // namespace vkube::dns
