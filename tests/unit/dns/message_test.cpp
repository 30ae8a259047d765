// The DNS wire format: what a resolver sends parses, what we build reads back
// the same and is compressed, and no malformed packet gets past parse().
#include <catch2/catch.hpp>

#include <string>

#include "vkube/dns/message.h"

namespace vkube::dns {
namespace {

std::string bytes(std::initializer_list<int> b) {
  std::string out;
  for (int v : b) out.push_back(static_cast<char>(v));
  return out;
}

// A query as dig sends it: id 0x1234, RD, one question, an OPT (size 1232).
std::string dig_query(const std::string& name_wire, int qtype) {
  std::string q = bytes({0x12, 0x34, 0x01, 0x20, 0, 1, 0, 0, 0, 0, 0, 1});
  q += name_wire;
  q += bytes({0, qtype, 0, 1});
  q += bytes({0, 0, 41, 0x04, 0xD0, 0, 0, 0, 0, 0, 0});
  return q;
}

const std::string kWebWire = bytes({3}) + "web" + bytes({7}) + "default" + bytes({3}) + "svc" +
                             bytes({7}) + "cluster" + bytes({5}) + "local" + bytes({0});

Record a(const std::string& name, const std::string& ip) {
  Record r;
  r.name = name;
  r.type = ip.find(':') == std::string::npos ? type::kA : type::kAaaa;
  r.ttl = 5;
  r.text = ip;
  return r;
}

TEST_CASE("a resolver's query parses with its question and OPT record", "[dns]") {
  auto m = parse(dig_query(kWebWire, type::kA));
  REQUIRE(m.is_ok());
  CHECK(m->header.id == 0x1234);
  CHECK(m->header.rd);
  CHECK_FALSE(m->header.qr);
  REQUIRE(m->questions.size() == 1);
  CHECK(m->questions[0].name == "web.default.svc.cluster.local");
  CHECK(m->questions[0].type == type::kA);
  CHECK(m->questions[0].klass == kClassIn);
  REQUIRE(m->opt() != nullptr);
  CHECK(m->opt()->klass == 1232);
}

TEST_CASE("a built answer reads back record for record", "[dns]") {
  Message m;
  m.header = {.id = 7, .qr = true, .aa = true, .rd = true, .ra = true};
  m.questions.push_back({"_http._tcp.web.default.svc.cluster.local", type::kSrv, kClassIn});
  Record srv;
  srv.name = "_http._tcp.web.default.svc.cluster.local";
  srv.type = type::kSrv;
  srv.ttl = 5;
  srv.srv = {0, 100, 8080, "web.default.svc.cluster.local"};
  m.answers.push_back(srv);
  m.additional.push_back(a("web.default.svc.cluster.local", "10.96.0.10"));
  m.additional.push_back(a("web.default.svc.cluster.local", "fd00::10"));
  Record soa;
  soa.name = "cluster.local";
  soa.type = type::kSoa;
  soa.ttl = 5;
  soa.soa = {"ns.dns.cluster.local", "hostmaster.cluster.local", 42, 7200, 1800, 86400, 5};
  m.authority.push_back(soa);

  auto wire = serialize(m);
  REQUIRE(wire.is_ok());
  auto back = parse(*wire);
  REQUIRE(back.is_ok());
  CHECK(back->header.id == 7);
  CHECK(back->header.aa);
  CHECK(back->header.ra);
  REQUIRE(back->answers.size() == 1);
  CHECK(back->answers[0].srv.port == 8080);
  CHECK(back->answers[0].srv.weight == 100);
  CHECK(back->answers[0].srv.target == "web.default.svc.cluster.local");
  REQUIRE(back->additional.size() == 2);
  CHECK(back->additional[0].text == "10.96.0.10");
  CHECK(back->additional[1].type == type::kAaaa);
  CHECK(back->additional[1].text == "fd00::10");
  REQUIRE(back->authority.size() == 1);
  CHECK(back->authority[0].soa.mname == "ns.dns.cluster.local");
  CHECK(back->authority[0].soa.serial == 42);
  CHECK(back->authority[0].soa.minimum == 5);
}

TEST_CASE("names are compressed against earlier ones, never inside SRV data", "[dns]") {
  Message m;
  m.questions.push_back({"web.default.svc.cluster.local", type::kA, kClassIn});
  for (int i = 0; i < 3; ++i) m.answers.push_back(a("web.default.svc.cluster.local", "10.0.0.1"));
  auto wire = serialize(m);
  REQUIRE(wire.is_ok());
  // Header 12 + name 31 + 4, then each answer: a 2-byte pointer + 10 + 4.
  CHECK(wire->size() == 12 + 31 + 4 + 3 * 16);

  Message s;
  Record srv;
  srv.name = "web.default.svc.cluster.local";
  srv.type = type::kSrv;
  srv.srv.target = "web.default.svc.cluster.local";
  s.answers.push_back(srv);
  auto srv_wire = serialize(s);
  REQUIRE(srv_wire.is_ok());
  // The target is written out in full (RFC 2782) after the owner name.
  CHECK(srv_wire->find(kWebWire) != std::string::npos);
  CHECK(srv_wire->rfind(kWebWire) != srv_wire->find(kWebWire));
  CHECK(parse(*srv_wire)->answers[0].srv.target == "web.default.svc.cluster.local");
}

TEST_CASE("an answer too big for the client drops glue, then sets TC", "[dns]") {
  Message m;
  m.questions.push_back({"big.default.svc.cluster.local", type::kA, kClassIn});
  Record opt;
  opt.type = type::kOpt;
  opt.klass = 1232;
  for (int i = 0; i < 20; ++i)
    m.answers.push_back(a("big.default.svc.cluster.local", "10.0.0." + std::to_string(i)));
  for (int i = 0; i < 20; ++i)
    m.additional.push_back(a("big.default.svc.cluster.local", "10.1.0." + std::to_string(i)));
  m.additional.push_back(opt);

  auto full = serialize(m);
  REQUIRE(full.is_ok());
  REQUIRE(full->size() > 512);

  auto no_glue = serialize(m, 512);
  REQUIRE(no_glue.is_ok());
  CHECK(no_glue->size() <= 512);
  auto nm = parse(*no_glue);
  REQUIRE(nm.is_ok());
  CHECK_FALSE(nm->header.tc);
  CHECK(nm->answers.size() == 20);
  REQUIRE(nm->additional.size() == 1);
  CHECK(nm->additional[0].type == type::kOpt);

  auto tiny = serialize(m, 100);
  REQUIRE(tiny.is_ok());
  auto tm = parse(*tiny);
  REQUIRE(tm.is_ok());
  CHECK(tm->header.tc);
  CHECK(tm->answers.empty());
  CHECK(tm->questions.size() == 1);
  CHECK(tm->opt() != nullptr);
}

TEST_CASE("odd label bytes are escaped and round-trip", "[dns]") {
  std::string wire =
      bytes({0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 3, 'a', '.', 'b', 2, 0x01, 'C', 0, 0, 1, 0, 1});
  auto m = parse(wire);
  REQUIRE(m.is_ok());
  CHECK(m->questions[0].name == "a\\.b.\\001C");
  auto again = serialize(*m);
  REQUIRE(again.is_ok());
  CHECK(*again == wire);
  CHECK(canonical("Web.Default.SVC.cluster.local.") == "web.default.svc.cluster.local");
}

TEST_CASE("names that cannot be encoded are refused, not truncated", "[dns]") {
  Message m;
  m.questions.push_back({std::string(64, 'a') + ".example", type::kA, kClassIn});
  CHECK(serialize(m).status().code() == Code::kInvalid);
  m.questions[0].name = "a..b";
  CHECK(serialize(m).status().code() == Code::kInvalid);
  std::string long_name;
  for (int i = 0; i < 5; ++i) long_name += std::string(60, 'x') + ".";
  m.questions[0].name = long_name;
  CHECK(serialize(m).status().code() == Code::kInvalid);
  m.questions[0].name = "ok.example";
  m.answers.push_back(a("ok.example", "10.0.0.300"));
  CHECK(serialize(m).status().code() == Code::kInvalid);
}

TEST_CASE("malformed packets are refused without reading out of bounds", "[dns]") {
  const std::string good = dig_query(kWebWire, type::kA);
  SECTION("every truncation of a valid query") {
    for (size_t n = 0; n < good.size(); ++n) {
      INFO("length " << n);
      CHECK_FALSE(parse(good.substr(0, n)).is_ok());
    }
  }
  SECTION("a pointer to itself") {
    std::string p = bytes({0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0xC0, 12, 0, 1, 0, 1});
    CHECK(parse(p).status().code() == Code::kBadRequest);
  }
  SECTION("two pointers to each other") {
    // The name at 12 is "a" then a pointer to 17; at 17 a pointer back to 12.
    std::string p =
        bytes({0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 1, 'a', 0xC0, 17, 0, 0xC0, 12, 0, 1, 0, 1});
    CHECK_FALSE(parse(p).is_ok());
  }
  SECTION("a pointer forward") {
    std::string p = bytes({0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0xC0, 18, 0, 1, 0, 1, 0});
    CHECK_FALSE(parse(p).is_ok());
  }
  SECTION("a pointer past the end") {
    std::string p = bytes({0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0xC0, 0xFF, 0, 1, 0, 1});
    CHECK_FALSE(parse(p).is_ok());
  }
  SECTION("reserved label types") {
    for (int kind : {0x40, 0x80}) {
      std::string p = bytes({0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, kind | 1, 'a', 0, 0, 1, 0, 1});
      CHECK_FALSE(parse(p).is_ok());
    }
  }
  SECTION("a name over 255 bytes") {
    std::string p = bytes({0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0});
    for (int i = 0; i < 5; ++i) p += bytes({60}) + std::string(60, 'x');
    p += bytes({0, 0, 1, 0, 1});
    CHECK_FALSE(parse(p).is_ok());
  }
  SECTION("counts the packet cannot hold") {
    std::string p = good;
    p[5] = static_cast<char>(0xFF);  // 255 questions
    p[7] = static_cast<char>(0xFF);  // 255 answers
    CHECK_FALSE(parse(p).is_ok());
  }
  SECTION("an A record of the wrong length") {
    std::string p =
        bytes({0, 1, 0x80, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 1, 0, 1, 0, 0, 0, 5, 0, 3, 10, 0, 0});
    CHECK_FALSE(parse(p).is_ok());
  }
  SECTION("record data longer than its length says") {
    // A CNAME whose name runs past RDLENGTH 1.
    std::string p =
        bytes({0, 1, 0x80, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 5, 0, 1, 0, 0, 0, 5, 0, 1, 1, 'a', 0});
    CHECK_FALSE(parse(p).is_ok());
  }
  SECTION("the header alone is readable for FORMERR") {
    Header h;
    CHECK(parse_header(good.substr(0, 12), &h));
    CHECK(h.id == 0x1234);
    CHECK_FALSE(parse_header(good.substr(0, 11), &h));
  }
}

TEST_CASE("random bytes never crash the parser", "[dns]") {
  uint32_t seed = 12345;
  auto next = [&] {
    seed = seed * 1103515245 + 12345;
    return static_cast<int>(seed >> 16 & 0xFF);
  };
  const std::string good = dig_query(kWebWire, type::kSrv);
  int parsed = 0;
  for (int i = 0; i < 20000; ++i) {
    std::string p = good;
    for (int flips = 1 + next() % 4; flips > 0; --flips)
      p[static_cast<size_t>(next()) % p.size()] = static_cast<char>(next());
    auto m = parse(p);
    if (!m.is_ok()) continue;
    ++parsed;
    // Whatever parsed can be written again (or is refused cleanly).
    auto again = serialize(*m);
    if (again.is_ok()) CHECK(parse(*again).is_ok());
  }
  CHECK(parsed > 0);
}

}  // namespace
}  // namespace vkube::dns
