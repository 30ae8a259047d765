// parse(): every read is bounds-checked, and a packet from anyone can only
// produce a Message or kBadRequest.
#include <arpa/inet.h>

#include "names.h"
#include "vkube/dns/message.h"

namespace vkube::dns {

namespace {

// Compression pointers may only point before the name that holds them; with
// this bound on jumps as well, no packet can make the reader loop.
constexpr int kMaxJumps = 64;

class Reader {
 public:
  explicit Reader(std::string_view wire) : wire_(wire) {}

  size_t pos() const { return pos_; }
  size_t left() const { return wire_.size() - pos_; }

  Status u8(uint8_t* out) {
    if (left() < 1) return truncated();
    *out = static_cast<uint8_t>(wire_[pos_++]);
    return Status::ok();
  }
  Status u16(uint16_t* out) {
    if (left() < 2) return truncated();
    *out = static_cast<uint16_t>(byte(pos_) << 8 | byte(pos_ + 1));
    pos_ += 2;
    return Status::ok();
  }
  Status u32(uint32_t* out) {
    uint16_t hi = 0, lo = 0;
    VKUBE_RETURN_IF_ERROR(u16(&hi));
    VKUBE_RETURN_IF_ERROR(u16(&lo));
    *out = static_cast<uint32_t>(hi) << 16 | lo;
    return Status::ok();
  }
  Status bytes(size_t n, std::string* out) {
    if (left() < n) return truncated();
    out->assign(wire_.substr(pos_, n));
    pos_ += n;
    return Status::ok();
  }
  // A possibly compressed name at the current position; the position moves
  // past its in-place part.
  Status name(std::string* out);

 private:
  unsigned byte(size_t at) const { return static_cast<unsigned char>(wire_[at]); }
  static Status truncated() { return Status::bad_request("dns: packet truncated"); }

  std::string_view wire_;
  size_t pos_ = 0;
};

Status Reader::name(std::string* out) {
  out->clear();
  size_t at = pos_;
  size_t end = 0;        // where the in-place part ends, once a pointer was followed
  size_t lowest = pos_;  // a pointer must point below every byte read so far
  size_t wire_len = 1;
  int jumps = 0;
  for (;;) {
    if (at >= wire_.size()) return truncated();
    unsigned len = byte(at);
    if ((len & 0xC0) == 0xC0) {
      if (at + 1 >= wire_.size()) return truncated();
      size_t target = (len & 0x3F) << 8 | byte(at + 1);
      if (target >= lowest || ++jumps > kMaxJumps)
        return Status::bad_request("dns: bad compression pointer");
      if (end == 0) end = at + 2;
      lowest = target;
      at = target;
      continue;
    }
    if ((len & 0xC0) != 0) return Status::bad_request("dns: reserved label type");
    if (len == 0) {
      pos_ = end != 0 ? end : at + 1;
      return Status::ok();
    }
    if (at + 1 + len > wire_.size()) return truncated();
    wire_len += len + 1;
    if (wire_len > kMaxName) return Status::bad_request("dns: name longer than 255 bytes");
    if (!out->empty()) out->push_back('.');
    append_label_text(wire_.substr(at + 1, len), out);
    at += 1 + len;
  }
}

Status read_question(Reader& r, Question* q) {
  VKUBE_RETURN_IF_ERROR(r.name(&q->name));
  VKUBE_RETURN_IF_ERROR(r.u16(&q->type));
  return r.u16(&q->klass);
}

Status read_address(Reader& r, uint16_t rdlength, int family, Record* rec) {
  size_t want = family == AF_INET ? 4 : 16;
  if (rdlength != want) return Status::bad_request("dns: bad address length");
  std::string raw;
  VKUBE_RETURN_IF_ERROR(r.bytes(want, &raw));
  char text[INET6_ADDRSTRLEN] = {};
  if (inet_ntop(family, raw.data(), text, sizeof text) == nullptr)
    return Status::bad_request("dns: bad address");
  rec->text = text;
  return Status::ok();
}

Status read_rdata(Reader& r, uint16_t rdlength, Record* rec) {
  if (r.left() < rdlength) return Status::bad_request("dns: packet truncated");
  size_t end = r.pos() + rdlength;
  switch (rec->type) {
    case type::kA:
      return read_address(r, rdlength, AF_INET, rec);
    case type::kAaaa:
      return read_address(r, rdlength, AF_INET6, rec);
    case type::kCname:
    case type::kNs:
    case type::kPtr:
      VKUBE_RETURN_IF_ERROR(r.name(&rec->text));
      break;
    case type::kSrv:
      VKUBE_RETURN_IF_ERROR(r.u16(&rec->srv.priority));
      VKUBE_RETURN_IF_ERROR(r.u16(&rec->srv.weight));
      VKUBE_RETURN_IF_ERROR(r.u16(&rec->srv.port));
      VKUBE_RETURN_IF_ERROR(r.name(&rec->srv.target));
      break;
    case type::kSoa:
      VKUBE_RETURN_IF_ERROR(r.name(&rec->soa.mname));
      VKUBE_RETURN_IF_ERROR(r.name(&rec->soa.rname));
      VKUBE_RETURN_IF_ERROR(r.u32(&rec->soa.serial));
      VKUBE_RETURN_IF_ERROR(r.u32(&rec->soa.refresh));
      VKUBE_RETURN_IF_ERROR(r.u32(&rec->soa.retry));
      VKUBE_RETURN_IF_ERROR(r.u32(&rec->soa.expire));
      VKUBE_RETURN_IF_ERROR(r.u32(&rec->soa.minimum));
      break;
    default:
      return r.bytes(rdlength, &rec->raw);
  }
  if (r.pos() != end) return Status::bad_request("dns: record data length mismatch");
  return Status::ok();
}

Status read_record(Reader& r, Record* rec) {
  VKUBE_RETURN_IF_ERROR(r.name(&rec->name));
  VKUBE_RETURN_IF_ERROR(r.u16(&rec->type));
  VKUBE_RETURN_IF_ERROR(r.u16(&rec->klass));
  VKUBE_RETURN_IF_ERROR(r.u32(&rec->ttl));
  uint16_t rdlength = 0;
  VKUBE_RETURN_IF_ERROR(r.u16(&rdlength));
  return read_rdata(r, rdlength, rec);
}

Status read_records(Reader& r, uint16_t count, std::vector<Record>* out) {
  // Each record takes at least 11 bytes: a count the packet cannot hold is
  // refused before anything is reserved for it.
  if (static_cast<size_t>(count) * 11 > r.left())
    return Status::bad_request("dns: packet truncated");
  out->resize(count);
  for (Record& rec : *out) VKUBE_RETURN_IF_ERROR(read_record(r, &rec));
  return Status::ok();
}

void decode_header(std::string_view wire, Header* h) {
  auto b = [&](size_t i) { return static_cast<unsigned>(static_cast<unsigned char>(wire[i])); };
  h->id = static_cast<uint16_t>(b(0) << 8 | b(1));
  unsigned f1 = b(2), f2 = b(3);
  h->qr = f1 & 0x80;
  h->opcode = static_cast<uint8_t>(f1 >> 3 & 0x0F);
  h->aa = f1 & 0x04;
  h->tc = f1 & 0x02;
  h->rd = f1 & 0x01;
  h->ra = f2 & 0x80;
  h->ad = f2 & 0x20;
  h->cd = f2 & 0x10;
  h->rcode = static_cast<Rcode>(f2 & 0x0F);
}

}  // namespace

bool parse_header(std::string_view wire, Header* out) {
  if (wire.size() < 12) return false;
  decode_header(wire, out);
  return true;
}

Result<Message> parse(std::string_view wire) {
  Message m;
  if (!parse_header(wire, &m.header))
    return Status::bad_request("dns: packet shorter than a header");
  Reader r(wire);
  uint16_t counts[4] = {};
  std::string skipped;
  VKUBE_RETURN_IF_ERROR(r.bytes(4, &skipped));
  for (uint16_t& c : counts) VKUBE_RETURN_IF_ERROR(r.u16(&c));
  // A question takes at least 5 bytes.
  if (static_cast<size_t>(counts[0]) * 5 > r.left())
    return Status::bad_request("dns: packet truncated");
  m.questions.resize(counts[0]);
  for (Question& q : m.questions) VKUBE_RETURN_IF_ERROR(read_question(r, &q));
  VKUBE_RETURN_IF_ERROR(read_records(r, counts[1], &m.answers));
  VKUBE_RETURN_IF_ERROR(read_records(r, counts[2], &m.authority));
  VKUBE_RETURN_IF_ERROR(read_records(r, counts[3], &m.additional));
  // Bytes after the last record are ignored, as most servers do.
  return m;
}

const Record* Message::opt() const {
  for (const Record& r : additional)
    if (r.type == type::kOpt) return &r;
  return nullptr;
}

}  // namespace vkube::dns
