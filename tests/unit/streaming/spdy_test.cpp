// The SPDY session against hostile clients: whatever frames arrive, every
// stream the session opened ends when the connection does, so no handler
// reading one waits forever.
#include <catch2/catch.hpp>

#include <chrono>
#include <fstream>
#include <future>
#include <iterator>
#include <memory>
#include <thread>
#include <vector>

#include "input_duplex.h"
#include "streaming/spdy.h"

namespace vkube::streaming::spdy {
namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Runs a session over `input`, then reads every stream it opened to its end.
// Returns how many streams were opened.
size_t run_and_drain(const std::string& input) {
  auto session = std::make_shared<Session>(std::make_shared<fuzz::InputDuplex>(input));
  std::vector<std::shared_ptr<Stream>> streams;
  session->run([&](std::shared_ptr<Stream> s) { streams.push_back(std::move(s)); });
  char buf[4096];
  for (auto& s : streams) {
    for (;;) {
      auto n = s->read(buf, sizeof buf);
      if (!n.is_ok() || *n == 0) break;
    }
  }
  return streams.size();
}

// Found by tests/fuzz/fuzz_spdy.cpp: a SYN_STREAM reusing an open stream's id
// replaced it in the session, so the first stream was never reset when the
// connection ended and its reader blocked forever (a handler thread lost per
// such client). Ids must now increase, as spdystream requires.
TEST_CASE("a SPDY client reusing a stream id cannot leave a reader waiting forever",
          "[streaming]") {
  std::string input =
      read_file(VKUBE_SOURCE_DIR "/tests/fuzz/corpus/spdy/regress-duplicate-stream-id");
  REQUIRE(!input.empty());
  // On a thread of its own: a reader that never returns fails the test instead of hanging it.
  auto result = std::make_shared<std::promise<size_t>>();
  std::future<size_t> done = result->get_future();
  std::thread([input, result] { result->set_value(run_and_drain(input)); }).detach();
  REQUIRE(done.wait_for(std::chrono::seconds(20)) == std::future_status::ready);
  CHECK(done.get() == 1);  // the first stream; the reused and decreasing ids are refused
}

}  // namespace
}  // namespace vkube::streaming::spdy
