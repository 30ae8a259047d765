// The embedded host's dial policy: off until a simulated network is known;
// then loopback only, with the simulated pod's message for its networks.
#include <catch2/catch.hpp>

#include "vkube/common/dial_policy.h"

namespace vkube {
namespace {

TEST_CASE("dial policy: simulated pods are answered locally, loopback is dialled",
          "[common][embedded]") {
  // The first test to note a network turns the policy on for this process
  // (as in a tenant once it has seen a simulated node): nothing is off before.
  REQUIRE(dial_policy::note_simulated_network("10.244.0.0/16").is_ok());
  CHECK(dial_policy::check("127.0.0.1", 6443).is_ok());
  CHECK(dial_policy::check("127.244.0.2", 6443).is_ok());
  CHECK(dial_policy::check("::1", 443).is_ok());
  Status pod = dial_policy::check("10.244.1.5", 443);
  CHECK(pod.code() == Code::kUnavailable);
  CHECK(pod.message() == "dial tcp 10.244.1.5:443: pod runs on a simulated node: nothing listens");
  Status elsewhere = dial_policy::check("192.0.2.7", 443);
  CHECK_FALSE(elsewhere.is_ok());
  CHECK(elsewhere.message().find("127.0.0.0/8") != std::string::npos);
  CHECK(dial_policy::note_simulated_network("nonsense").code() == Code::kInvalid);
  CHECK(dial_policy::simulated_networks().find("10.244.0.0/16") != std::string::npos);
}

}  // namespace
}  // namespace vkube
