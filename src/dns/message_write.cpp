// serialize(): name compression and truncation to the size the client takes.
#include <arpa/inet.h>

#include <unordered_map>

#include "names.h"
#include "vkube/dns/message.h"

namespace vkube::dns {

namespace {

// Pointers hold 14 bits: names written later than this cannot be targets.
constexpr size_t kMaxPointer = 0x3FFF;

class Writer {
 public:
  void u8(unsigned v) { out_.push_back(static_cast<char>(v & 0xFF)); }
  void u16(unsigned v) {
    u8(v >> 8);
    u8(v);
  }
  void u32(uint32_t v) {
    u16(v >> 16);
    u16(v & 0xFFFF);
  }
  void bytes(std::string_view b) { out_.append(b); }
  void set_u16(size_t at, unsigned v) {
    out_[at] = static_cast<char>(v >> 8 & 0xFF);
    out_[at + 1] = static_cast<char>(v & 0xFF);
  }
  size_t size() const { return out_.size(); }
  std::string take() { return std::move(out_); }

  // Writes `text` as labels, ending in a pointer to an earlier copy of its
  // longest known suffix when `compress`. Suffixes are matched byte for byte
  // (not case-folded) so that every name reads back as it was given.
  Status name(std::string_view text, bool compress);

 private:
  std::string out_;
  std::unordered_map<std::string, size_t> suffixes_;  // wire labels -> offset
};

Status Writer::name(std::string_view text, bool compress) {
  auto labels = split_name(text);
  if (!labels.is_ok()) return labels.status();
  const std::vector<std::string>& ls = labels.value();
  for (size_t i = 0; i < ls.size(); ++i) {
    std::string suffix;
    for (size_t j = i; j < ls.size(); ++j) {
      suffix.push_back(static_cast<char>(ls[j].size()));
      suffix += ls[j];
    }
    if (compress) {
      auto it = suffixes_.find(suffix);
      if (it != suffixes_.end()) {
        u16(0xC000 | it->second);
        return Status::ok();
      }
    }
    // Every written name may serve later ones, compressed or not.
    if (size() <= kMaxPointer) suffixes_.emplace(std::move(suffix), size());
    u8(ls[i].size());
    bytes(ls[i]);
  }
  u8(0);
  return Status::ok();
}

Status write_address(Writer& w, const Record& r) {
  int family = r.type == type::kA ? AF_INET : AF_INET6;
  unsigned char buf[16];
  if (inet_pton(family, r.text.c_str(), buf) != 1)
    return Status::invalid("dns: bad address \"" + r.text + "\"");
  w.u16(family == AF_INET ? 4 : 16);
  w.bytes(std::string_view(reinterpret_cast<const char*>(buf), family == AF_INET ? 4 : 16));
  return Status::ok();
}

Status write_record(Writer& w, const Record& r) {
  VKUBE_RETURN_IF_ERROR(w.name(r.name, true));
  w.u16(r.type);
  w.u16(r.klass);
  w.u32(r.ttl);
  if (r.type == type::kA || r.type == type::kAaaa) return write_address(w, r);
  size_t length_at = w.size();
  w.u16(0);
  switch (r.type) {
    case type::kCname:
    case type::kNs:
    case type::kPtr:
      VKUBE_RETURN_IF_ERROR(w.name(r.text, true));
      break;
    case type::kSrv:
      w.u16(r.srv.priority);
      w.u16(r.srv.weight);
      w.u16(r.srv.port);
      VKUBE_RETURN_IF_ERROR(w.name(r.srv.target, false));
      break;
    case type::kSoa:
      VKUBE_RETURN_IF_ERROR(w.name(r.soa.mname, true));
      VKUBE_RETURN_IF_ERROR(w.name(r.soa.rname, true));
      w.u32(r.soa.serial);
      w.u32(r.soa.refresh);
      w.u32(r.soa.retry);
      w.u32(r.soa.expire);
      w.u32(r.soa.minimum);
      break;
    default:
      if (r.raw.size() > 0xFFFF) return Status::invalid("dns: record data over 65535 bytes");
      w.bytes(r.raw);
  }
  size_t length = w.size() - length_at - 2;
  if (length > 0xFFFF) return Status::invalid("dns: record data over 65535 bytes");
  w.set_u16(length_at, static_cast<unsigned>(length));
  return Status::ok();
}

Result<std::string> write(const Message& m) {
  if (m.questions.size() > 0xFFFF || m.answers.size() > 0xFFFF || m.authority.size() > 0xFFFF ||
      m.additional.size() > 0xFFFF)
    return Status::invalid("dns: more than 65535 entries in a section");
  Writer w;
  const Header& h = m.header;
  w.u16(h.id);
  w.u8((h.qr ? 0x80 : 0) | (h.opcode & 0x0F) << 3 | (h.aa ? 0x04 : 0) | (h.tc ? 0x02 : 0) |
       (h.rd ? 0x01 : 0));
  w.u8((h.ra ? 0x80 : 0) | (h.ad ? 0x20 : 0) | (h.cd ? 0x10 : 0) |
       (static_cast<unsigned>(h.rcode) & 0x0F));
  w.u16(static_cast<unsigned>(m.questions.size()));
  w.u16(static_cast<unsigned>(m.answers.size()));
  w.u16(static_cast<unsigned>(m.authority.size()));
  w.u16(static_cast<unsigned>(m.additional.size()));
  for (const Question& q : m.questions) {
    VKUBE_RETURN_IF_ERROR(w.name(q.name, true));
    w.u16(q.type);
    w.u16(q.klass);
  }
  for (const auto* section : {&m.answers, &m.authority, &m.additional})
    for (const Record& r : *section) VKUBE_RETURN_IF_ERROR(write_record(w, r));
  return w.take();
}

}  // namespace

Result<std::string> serialize(const Message& message, size_t max_size) {
  auto full = write(message);
  if (!full.is_ok() || full->size() <= max_size) return full;
  // Glue in the additional section is optional (RFC 2181 §9): drop it first,
  // without TC, keeping the OPT record that tells the client our limits.
  Message smaller = message;
  smaller.additional.clear();
  if (const Record* opt = message.opt()) smaller.additional.push_back(*opt);
  auto without_glue = write(smaller);
  if (!without_glue.is_ok() || without_glue->size() <= max_size) return without_glue;
  smaller.answers.clear();
  smaller.authority.clear();
  smaller.header.tc = true;
  return write(smaller);
}

}  // namespace vkube::dns
