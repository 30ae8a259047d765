#include "responder.h"

#include <algorithm>

namespace vkube::dns {

namespace {

constexpr uint16_t kOpcodeQuery = 0;
constexpr uint16_t kTypeAxfr = 252;
constexpr uint16_t kTypeIxfr = 251;

// A reply's frame: the query's id, opcode, RD and CD, its question, and an
// OPT record when the query had one (RFC 6891 §7).
Message reply_to(const Message& query) {
  Message m;
  m.header.id = query.header.id;
  m.header.qr = true;
  m.header.opcode = query.header.opcode;
  m.header.rd = query.header.rd;
  m.header.cd = query.header.cd;
  m.header.ra = true;
  m.questions = query.questions;
  if (query.opt() != nullptr) {
    Record opt;
    opt.type = type::kOpt;
    opt.klass = kAdvertisedUdpSize;
    m.additional.push_back(std::move(opt));
  }
  return m;
}

size_t udp_limit(const Message& query) {
  const Record* opt = query.opt();
  if (opt == nullptr) return kUdpMinLimit;
  return std::clamp<size_t>(opt->klass, kUdpMinLimit, kUdpMaxLimit);
}

std::string encode(const Message& m, size_t limit) {
  auto wire = serialize(m, limit);
  if (wire.is_ok()) return std::move(wire).value();
  // A record we cannot encode (a bad address in an object): SERVFAIL rather
  // than nothing, so the client does not wait for its timeout.
  Message failed = m;
  failed.answers.clear();
  failed.authority.clear();
  failed.additional.erase(std::remove_if(failed.additional.begin(), failed.additional.end(),
                                         [](const Record& r) { return r.type != type::kOpt; }),
                          failed.additional.end());
  failed.header.rcode = Rcode::kServFail;
  auto retry = serialize(failed, limit);
  return retry.is_ok() ? std::move(retry).value() : std::string();
}

// FORMERR for a packet whose header we could read but not the rest.
std::string format_error(const Header& query) {
  Message m;
  m.header.id = query.id;
  m.header.qr = true;
  m.header.opcode = query.opcode;
  m.header.rd = query.rd;
  m.header.rcode = Rcode::kFormErr;
  return encode(m, kUdpMinLimit);
}

Plan reply_plan(const Message& m, size_t limit) {
  Plan p;
  p.action = Plan::Action::kReply;
  p.reply = encode(m, limit);
  p.limit = limit;
  if (p.reply.empty()) p.action = Plan::Action::kDrop;
  return p;
}

Plan answer_locally(const Lookup& lookup, const Message& query, size_t limit) {
  Message reply = reply_to(query);
  const Question& q = query.questions[0];
  if (q.klass != kClassIn && q.klass != kClassAny) {
    reply.header.rcode = Rcode::kRefused;
  } else if (q.type == kTypeAxfr || q.type == kTypeIxfr) {
    reply.header.rcode = Rcode::kRefused;  // no zone transfers
  } else {
    lookup.answer(q, &reply);
  }
  std::string target = external_target(lookup, q, reply);
  if (target.empty()) return reply_plan(reply, limit);
  Plan p;
  p.action = Plan::Action::kChase;
  p.query = query;
  p.partial = std::move(reply);
  p.target = std::move(target);
  p.limit = limit;
  return p;
}

}  // namespace

Plan plan(const Lookup& lookup, std::string_view packet, bool udp) {
  Header header;
  if (!parse_header(packet, &header) || header.qr) return {};
  auto parsed = parse(packet);
  if (!parsed.is_ok()) {
    Plan p;
    p.action = Plan::Action::kReply;
    p.reply = format_error(header);
    return p;
  }
  Message& query = parsed.value();
  size_t limit = udp ? udp_limit(query) : kTcpLimit;
  Message reply = reply_to(query);
  size_t opts = std::count_if(query.additional.begin(), query.additional.end(),
                              [](const Record& r) { return r.type == type::kOpt; });
  if (query.header.opcode != kOpcodeQuery) {
    reply.header.rcode = Rcode::kNotImp;
    return reply_plan(reply, limit);
  }
  if (query.questions.size() != 1 || opts > 1) {
    reply.header.rcode = Rcode::kFormErr;
    return reply_plan(reply, limit);
  }
  if (opts == 1 && (query.opt()->ttl >> 16 & 0xFF) != 0) {
    // BADVERS (16) is the OPT's extended rcode 1 with a header rcode 0.
    reply.additional.back().ttl = static_cast<uint32_t>(kBadVers >> 4) << 24;
    return reply_plan(reply, limit);
  }
  if (lookup.in_zone(query.questions[0].name)) return answer_locally(lookup, query, limit);
  Plan p;
  p.action = Plan::Action::kForward;
  p.query = std::move(query);
  p.limit = limit;
  return p;
}

std::string chase_query(const Plan& plan, uint16_t id) {
  Message m;
  m.header.id = id;
  m.header.rd = true;
  m.questions.push_back({plan.target, plan.query.questions[0].type, kClassIn});
  auto wire = serialize(m);
  return wire.is_ok() ? std::move(wire).value() : std::string();
}

bool answers(std::string_view answer, uint16_t id, const Question& question) {
  auto m = parse(answer);
  if (!m.is_ok() || !m->header.qr || m->header.id != id) return false;
  // A FORMERR may come without the question.
  if (m->questions.empty()) return m->header.rcode == Rcode::kFormErr;
  const Question& q = m->questions[0];
  return q.type == question.type && q.klass == question.klass &&
         canonical(q.name) == canonical(question.name);
}

std::string finish_forward(const Plan& plan, std::optional<std::string_view> upstream) {
  Message reply = reply_to(plan.query);
  if (!upstream) {
    reply.header.rcode = Rcode::kServFail;
    return encode(reply, plan.limit);
  }
  std::string out(*upstream);
  out[0] = static_cast<char>(plan.query.header.id >> 8);
  out[1] = static_cast<char>(plan.query.header.id & 0xFF);
  if (out.size() <= plan.limit) return out;
  // The upstream saw the client's own size limit; this is only for an
  // upstream that ignored it.
  reply.header.tc = true;
  return encode(reply, plan.limit);
}

std::string finish_chase(const Plan& plan, std::optional<std::string_view> upstream) {
  Message reply = plan.partial;
  if (upstream) {
    auto m = parse(*upstream);
    if (m.is_ok()) {
      // Only records whose data holds no compressed names we did not decode.
      for (Record& r : m->answers)
        if (r.type == type::kA || r.type == type::kAaaa || r.type == type::kCname ||
            r.type == type::kSrv || r.type == type::kPtr || r.type == type::kTxt)
          reply.answers.push_back(std::move(r));
      reply.header.rcode = m->header.rcode;
      reply.header.aa = false;
    }
  }
  // Without an upstream answer the CNAME alone still helps a client that
  // follows it itself.
  return encode(reply, plan.limit);
}

}  // namespace vkube::dns
