// What the server does with one client packet, and how it finishes a query
// that needed an upstream resolver. Pure: the transports (server.cpp) only
// move bytes and run timers.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "vkube/dns/lookup.h"
#include "vkube/dns/message.h"

namespace vkube::dns {

// The largest answer over TCP; over UDP the client's EDNS size (at least
// 512, RFC 1035; at most what we send unfragmented with some confidence).
inline constexpr size_t kTcpLimit = 65535;
inline constexpr size_t kUdpMinLimit = 512;
inline constexpr size_t kUdpMaxLimit = 4096;
// The UDP size our OPT records advertise (DNS flag day 2020).
inline constexpr uint16_t kAdvertisedUdpSize = 1232;

struct Plan {
  enum class Action {
    kDrop,     // not a query (a response, shorter than a header): no answer
    kReply,    // `reply` is the answer
    kForward,  // send the client's packet upstream, then finish_forward()
    kChase,    // resolve `target` upstream, then finish_chase()
  };
  Action action = Action::kDrop;
  std::string reply;
  Message query;    // kForward, kChase
  Message partial;  // kChase: the answer so far, ending in a CNAME out of the zone
  std::string target;
  size_t limit = kUdpMinLimit;  // the size the answer must fit
};

// Decides on `packet` from a client over UDP (`udp`) or TCP. Malformed
// queries get FORMERR, other opcodes NOTIMP, EDNS versions above 0 BADVERS.
Plan plan(const Lookup& lookup, std::string_view packet, bool udp);

// The query that asks upstream about plan.target (kChase), with `id`.
std::string chase_query(const Plan& plan, uint16_t id);
// The client's answer from the upstream's (nullopt: none answered, SERVFAIL).
std::string finish_forward(const Plan& plan, std::optional<std::string_view> upstream);
std::string finish_chase(const Plan& plan, std::optional<std::string_view> upstream);

// Whether `answer` (an upstream packet) answers `question` with id `id`.
bool answers(std::string_view answer, uint16_t id, const Question& question);

}  // namespace vkube::dns
