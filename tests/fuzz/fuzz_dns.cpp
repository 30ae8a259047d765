// DNS packets from pods (the tenant's cluster DNS): message::parse of any
// bytes, serialize/parse round trips, and the responder's whole decision
// (plan) over a small zone, including answers from the upstream resolver,
// which are untrusted bytes too. Input: "<client packet>\0<upstream packet>";
// the upstream bytes also serve as a tenant's ExternalName target.
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "fake_lister.h"
#include "fuzz_util.h"
#include "responder.h"
#include "vkube/controllers/informers.h"
#include "vkube/dns/lookup.h"
#include "vkube/dns/message.h"

using nlohmann::json;
namespace dns = vkube::dns;
namespace controllers = vkube::controllers;

namespace {

using vkube::testing::FakeLister;

json meta(const std::string& name) {
  return {{"name", name}, {"namespace", "default"}};
}

// Every packet the server writes must be one it can read.
void check_packet(std::string_view wire) {
  if (wire.empty()) return;
  auto parsed = dns::parse(wire);
  FUZZ_CHECK(parsed.is_ok());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto [packet, upstream] = vkube::fuzz::split2(vkube::fuzz::as_text(data, size));

  auto message = dns::parse(packet);
  if (message.is_ok()) {
    auto wire = dns::serialize(*message);
    FUZZ_CHECK(wire.is_ok());
    auto again = dns::parse(*wire);
    FUZZ_CHECK(again.is_ok());
    FUZZ_CHECK(again->questions.size() == message->questions.size());
    for (size_t i = 0; i < again->questions.size(); ++i)
      FUZZ_CHECK(again->questions[i].name == message->questions[i].name);
    (void)dns::serialize(*message, 512);  // truncation to the UDP minimum
  }

  FakeLister services, slices, pods;
  services.add({{"metadata", meta("web")},
                {"spec",
                 {{"clusterIP", "10.96.0.10"},
                  {"clusterIPs", {"10.96.0.10", "fd00::10"}},
                  {"ports", {{{"name", "http"}, {"port", 80}, {"protocol", "TCP"}}}}}}});
  services.add({{"metadata", meta("ext")},
                {"spec", {{"type", "ExternalName"}, {"externalName", std::string(upstream)}}}});
  services.add({{"metadata", meta("db")}, {"spec", {{"clusterIP", "None"}}}});
  slices.add({{"metadata",
               {{"name", "db-a"},
                {"namespace", "default"},
                {"labels", {{"kubernetes.io/service-name", "db"}}}}},
              {"addressType", "IPv4"},
              {"ports", json::array()},
              {"endpoints",
               {{{"addresses", {"10.244.0.5"}},
                 {"hostname", "db-0"},
                 {"conditions", {{"ready", true}}}}}}});
  pods.add({{"metadata", meta("p")}, {"status", {{"podIP", "10.244.1.2"}}}});
  dns::Lookup lookup(services, slices, pods, "cluster.local", 5);

  for (bool udp : {true, false}) {
    dns::Plan plan = dns::plan(lookup, packet, udp);
    switch (plan.action) {
      case dns::Plan::Action::kDrop:
        break;
      case dns::Plan::Action::kReply:
        check_packet(plan.reply);
        FUZZ_CHECK(plan.reply.size() <= plan.limit);
        break;
      case dns::Plan::Action::kForward:
        check_packet(dns::finish_forward(plan, upstream));
        check_packet(dns::finish_forward(plan, std::nullopt));
        break;
      case dns::Plan::Action::kChase:
        check_packet(dns::chase_query(plan, 7));
        check_packet(dns::finish_chase(plan, upstream));
        check_packet(dns::finish_chase(plan, std::nullopt));
        break;
    }
  }
  return 0;
}
