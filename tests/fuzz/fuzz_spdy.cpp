// SPDY/3.1 frames from a client (kubectl exec/attach/port-forward before
// WebSockets): the server's Session reads any byte stream, inflating
// zlib-compressed header blocks with SPDY's dictionary, opening, feeding and
// resetting streams, and ends cleanly when the bytes run out. Every stream
// it opened must then read its data and end.
#include <memory>
#include <vector>

#include "input_duplex.h"
#include "fuzz_util.h"
#include "spdy.h"

namespace spdy = vkube::streaming::spdy;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto duplex = std::make_shared<vkube::fuzz::InputDuplex>(vkube::fuzz::as_text(data, size));
  auto session = std::make_shared<spdy::Session>(duplex);
  std::vector<std::shared_ptr<spdy::Stream>> streams;
  session->run([&](std::shared_ptr<spdy::Stream> s) {
    (void)s->header("streamtype");
    streams.push_back(std::move(s));
  });
  char buf[4096];
  for (auto& s : streams) {
    // The session ended, so every read finishes: data, then 0 or an error.
    for (int i = 0; i < 1000; ++i) {
      auto n = s->read(buf, sizeof buf);
      if (!n.is_ok() || *n == 0) break;
    }
    s->close();
  }
  streams.clear();
  session->close();
  return 0;
}
