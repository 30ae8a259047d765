// WebSocket frames from a client (kubectl exec/attach/port-forward since
// 1.30/1.31): ws::Conn reads any byte stream as masked frames, joins
// fragments, answers pings and refuses oversized messages; the port-forward
// tunnel reads the binary messages as one stream.
#include <memory>

#include "input_duplex.h"
#include "fuzz_util.h"
#include "websocket.h"

namespace ws = vkube::streaming::ws;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input = vkube::fuzz::as_text(data, size);
  {
    auto conn = std::make_shared<ws::Conn>(std::make_shared<vkube::fuzz::InputDuplex>(input));
    for (int i = 0; i < 10000; ++i) {
      auto msg = conn->read();
      if (!msg.is_ok()) break;
      FUZZ_CHECK(msg->opcode == ws::kText || msg->opcode == ws::kBinary);
      FUZZ_CHECK(msg->data.size() <= size);
    }
    conn->close();
  }
  {
    auto conn = std::make_shared<ws::Conn>(std::make_shared<vkube::fuzz::InputDuplex>(input));
    auto tunnel = ws::tunnel(conn);
    char buf[4096];
    size_t total = 0;
    for (int i = 0; i < 10000; ++i) {
      auto n = tunnel->read(buf, sizeof buf);
      if (!n.is_ok() || *n == 0) break;
      total += *n;
    }
    FUZZ_CHECK(total <= size);
    tunnel->close();
  }
  return 0;
}
