// exec and attach: remotecommand over WebSocket (channel bytes in binary
// messages, or base64 text) and over SPDY (one stream per kind).
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <thread>

#include <nlohmann/json.hpp>

#include "common.h"
#include "spdy.h"
#include "vkube/common/base64.h"
#include "vkube/common/log.h"
#include "vkube/streaming/streaming.h"
#include "websocket.h"

namespace vkube::streaming {

namespace {

using json = nlohmann::json;

enum Channel : uint8_t { kStdin = 0, kStdout = 1, kStderr = 2, kError = 3, kResize = 4 };
constexpr uint8_t kCloseSignal = 255;  // v5: [255, channel] ends that channel

// The remotecommand protocol versions: 5 and 4 report the exit as a Status
// on the error stream; 3 adds resize; 2 and 1 report only failures, as text.
int version_of(const std::string& p) {
  if (p == "v5.channel.k8s.io") return 5;
  if (p == "v4.channel.k8s.io" || p == "v4.base64.channel.k8s.io") return 4;
  if (p == "v3.channel.k8s.io") return 3;
  if (p == "v2.channel.k8s.io") return 2;
  if (p == "channel.k8s.io" || p == "base64.channel.k8s.io" || p.empty()) return 1;
  return 0;
}

bool parse_bool(const std::string& v) {
  return v == "1" || v == "t" || v == "T" || v == "true" || v == "TRUE" || v == "True";
}

std::string quoted_list(const std::vector<std::string>& v) {
  std::string out = "[";
  for (size_t i = 0; i < v.size(); ++i) out += (i ? " " : "") + v[i];
  return out + "]";
}

// The exit, as the error stream carries it for `version`; "" for nothing.
std::string exit_report(const ExitStatus& e, const std::vector<std::string>& command, int version) {
  if (version >= 4) {
    json s = {{"metadata", json::object()}};
    if (!e.message.empty()) {
      s["status"] = "Failure";
      s["message"] = e.message;
      s["reason"] = "InternalError";
      s["code"] = 500;
    } else if (e.code != 0) {
      s["status"] = "Failure";
      s["message"] = "command terminated with non-zero exit code: error executing command " +
                     quoted_list(command) + ", exit code " + std::to_string(e.code);
      s["reason"] = "NonZeroExitCode";
      s["details"] = {{"causes", json::array({{{"reason", "ExitCode"},
                                               {"message", std::to_string(e.code)}}})}};
    } else {
      s["status"] = "Success";
    }
    return s.dump();
  }
  if (!e.message.empty()) return e.message;
  if (e.code != 0)
    return "command terminated with non-zero exit code: error executing command " +
           quoted_list(command) + ", exit code " + std::to_string(e.code);
  return {};
}

std::optional<TerminalSize> parse_size(std::string_view text) {
  json j = json::parse(text, nullptr, false);
  if (!j.is_object()) return std::nullopt;
  TerminalSize t;
  t.width = static_cast<uint16_t>(j.value("Width", 0));
  t.height = static_cast<uint16_t>(j.value("Height", 0));
  return t;
}

// What both transports share: stdin bytes and terminal sizes queued by a
// reader, the client's departure.
class Queues {
 public:
  void push_stdin(std::string_view data) {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return stdin_.size() < (4u << 20) || ended_; });
    stdin_.append(data);
    cv_.notify_all();
  }
  void end_stdin() {
    std::lock_guard lock(mu_);
    stdin_done_ = true;
    cv_.notify_all();
  }
  void push_size(TerminalSize s) {
    std::lock_guard lock(mu_);
    sizes_.push_back(s);
    cv_.notify_all();
  }
  void end() {
    std::lock_guard lock(mu_);
    ended_ = stdin_done_ = input_done_ = true;
    cv_.notify_all();
  }
  void end_input() {
    std::lock_guard lock(mu_);
    stdin_done_ = input_done_ = true;
    cv_.notify_all();
  }
  bool ended() const {
    std::lock_guard lock(mu_);
    return ended_;
  }
  size_t pop_stdin(char* out, size_t size) {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return !stdin_.empty() || stdin_done_; });
    size_t n = std::min(size, stdin_.size());
    std::copy_n(stdin_.data(), n, out);
    stdin_.erase(0, n);
    cv_.notify_all();
    return n;
  }
  std::optional<TerminalSize> pop_size() {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return !sizes_.empty() || input_done_; });
    if (sizes_.empty() || input_done_) return std::nullopt;
    TerminalSize s = sizes_.front();
    sizes_.pop_front();
    return s;
  }

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::string stdin_;
  std::deque<TerminalSize> sizes_;
  bool stdin_done_ = false;
  bool input_done_ = false;
  bool ended_ = false;
};

// ---- WebSocket ----

class WsSession final : public Session {
 public:
  WsSession(std::shared_ptr<ws::Conn> conn, bool base64, bool tty)
      : conn_(std::move(conn)), base64_(base64), tty_(tty) {}

  // The reader: stdin, resize, the v5 close signal, the client's close.
  void read_loop() {
    for (;;) {
      auto m = conn_->read();
      if (!m.is_ok()) break;
      std::string data = std::move(m->data);
      if (data.empty()) continue;
      uint8_t ch = static_cast<uint8_t>(data[0]);
      std::string body = data.substr(1);
      if (base64_) {
        ch = static_cast<uint8_t>(ch - '0');
        auto decoded = base64_decode(body);
        if (!decoded) continue;
        body = std::move(*decoded);
      }
      if (ch == kCloseSignal) {
        if (!body.empty() && static_cast<uint8_t>(body[0]) == kStdin) q_.end_stdin();
      } else if (ch == kStdin) {
        q_.push_stdin(body);
      } else if (ch == kResize) {
        if (auto s = parse_size(body)) q_.push_size(*s);
      }
    }
    q_.end();
  }

  Result<size_t> read_stdin(char* out, size_t size) override { return q_.pop_stdin(out, size); }
  void stop_input() override { q_.end_input(); }
  bool write_stdout(std::string_view data) override { return send(kStdout, data); }
  bool write_stderr(std::string_view data) override { return send(tty_ ? kStdout : kStderr, data); }
  std::optional<TerminalSize> next_resize() override { return q_.pop_size(); }
  bool client_gone() const override { return q_.ended(); }

  bool send(uint8_t ch, std::string_view data) {
    if (q_.ended()) return false;
    if (!base64_) {
      char c = static_cast<char>(ch);
      return conn_->send(ws::kBinary, std::string_view(&c, 1), data).is_ok();
    }
    char c = static_cast<char>('0' + ch);
    return conn_->send(ws::kText, std::string_view(&c, 1), base64_encode(data)).is_ok();
  }
  void end() { q_.end(); }

 private:
  std::shared_ptr<ws::Conn> conn_;
  const bool base64_;
  const bool tty_;
  Queues q_;
};

void run_ws(std::shared_ptr<http::Duplex> d, const std::string& protocol, ExecOptions o,
            ExecHandler handler) {
  auto conn = std::make_shared<ws::Conn>(d);
  const int version = version_of(protocol);
  const bool base64 = protocol.find("base64") != std::string::npos;
  auto session = std::make_shared<WsSession>(conn, base64, o.tty);
  std::thread reader([session] { session->read_loop(); });
  ExitStatus e = handler(o, *session);
  std::string report = exit_report(e, o.command, version);
  if (!report.empty()) {
    char c = base64 ? '3' : static_cast<char>(kError);
    (void)conn->send(base64 ? ws::kText : ws::kBinary, std::string_view(&c, 1),
                     base64 ? base64_encode(report) : report);
  }
  conn->close(1000);
  // The client answers the close; its reader then ends. One that does not
  // is cut off.
  d->set_deadline(http::Duplex::Clock::now() + std::chrono::seconds(2));
  reader.join();
  d->close();
}

// ---- SPDY ----

class SpdySession final : public Session {
 public:
  explicit SpdySession(bool tty) : tty_(tty) {}

  // The streams the client opened, by streamtype.
  void add(std::shared_ptr<spdy::Stream> s) {
    std::lock_guard lock(mu_);
    streams_[s->header("streamtype")] = std::move(s);
    cv_.notify_all();
  }
  // Waits until the streams of `types` are all there (or `until`).
  bool wait_for(const std::vector<std::string>& types, std::chrono::steady_clock::time_point until) {
    std::unique_lock lock(mu_);
    return cv_.wait_until(lock, until, [&] {
      if (gone_) return true;
      for (const auto& t : types)
        if (!streams_.count(t)) return false;
      return true;
    }) && !gone_;
  }
  void gone() {
    std::lock_guard lock(mu_);
    gone_ = true;
    cv_.notify_all();
  }
  std::shared_ptr<spdy::Stream> get(const std::string& type) {
    std::lock_guard lock(mu_);
    auto it = streams_.find(type);
    return it == streams_.end() ? nullptr : it->second;
  }

  Result<size_t> read_stdin(char* out, size_t size) override {
    auto s = get("stdin");
    if (!s || stdin_stopped_) return size_t{0};
    auto n = s->read(out, size);
    if (!n.is_ok()) return size_t{0};
    return n;
  }
  void stop_input() override {
    stdin_stopped_ = true;
    for (const char* t : {"stdin", "resize"})
      if (auto s = get(t)) s->set_deadline(http::Duplex::Clock::now());
  }
  bool write_stdout(std::string_view data) override { return write("stdout", data); }
  bool write_stderr(std::string_view data) override {
    return write(tty_ ? "stdout" : "stderr", data);
  }
  std::optional<TerminalSize> next_resize() override {
    auto s = get("resize");
    if (!s || stdin_stopped_) return std::nullopt;
    // The client writes JSON objects one after another.
    char buf[512];
    for (;;) {
      size_t close = resize_buf_.find('}');
      if (close != std::string::npos) {
        std::string one = resize_buf_.substr(0, close + 1);
        resize_buf_.erase(0, close + 1);
        if (auto t = parse_size(one)) return t;
        continue;
      }
      auto n = s->read(buf, sizeof buf);
      if (!n.is_ok() || *n == 0) return std::nullopt;
      resize_buf_.append(buf, *n);
    }
  }
  bool client_gone() const override {
    std::lock_guard lock(mu_);
    return gone_;
  }

 private:
  bool write(const std::string& type, std::string_view data) {
    auto s = get(type);
    return s && s->write(data).is_ok();
  }

  const bool tty_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, std::shared_ptr<spdy::Stream>> streams_;
  bool gone_ = false;
  std::atomic<bool> stdin_stopped_{false};
  std::string resize_buf_;
};

void run_spdy(std::shared_ptr<http::Duplex> d, const std::string& protocol, ExecOptions o,
              ExecHandler handler) {
  const int version = version_of(protocol);
  auto conn = std::make_shared<spdy::Session>(d);
  auto session = std::make_shared<SpdySession>(o.tty);
  std::thread reader([conn, session] {
    conn->run([&](std::shared_ptr<spdy::Stream> s) { session->add(std::move(s)); });
    session->gone();
  });
  std::vector<std::string> want = {"error"};
  if (o.stdin) want.push_back("stdin");
  if (o.stdout) want.push_back("stdout");
  if (o.stderr && !o.tty) want.push_back("stderr");
  if (o.tty && version >= 3) want.push_back("resize");
  if (!session->wait_for(want, std::chrono::steady_clock::now() + std::chrono::seconds(30))) {
    VKUBE_LOG(info, "exec: the client did not open its streams", {"wanted", want.size()});
    conn->close();
    reader.join();
    return;
  }
  ExitStatus e = handler(o, *session);
  for (const char* t : {"stdout", "stderr"})
    if (auto s = session->get(t)) s->close_write();
  if (auto err = session->get("error")) {
    std::string report = exit_report(e, o.command, version);
    if (!report.empty()) (void)err->write(report);
    err->close_write();
  }
  // The client closes the connection once it has read the error stream.
  d->set_deadline(http::Duplex::Clock::now() + std::chrono::seconds(2));
  reader.join();
  conn->close();
}

const std::vector<std::string>& ws_protocols() {
  static const std::vector<std::string> p = {
      "v5.channel.k8s.io", "v4.channel.k8s.io",     "v4.base64.channel.k8s.io", "v3.channel.k8s.io",
      "v2.channel.k8s.io", "channel.k8s.io",        "base64.channel.k8s.io"};
  return p;
}
const std::vector<std::string>& spdy_protocols() {
  static const std::vector<std::string> p = {"v5.channel.k8s.io", "v4.channel.k8s.io",
                                             "v3.channel.k8s.io", "v2.channel.k8s.io",
                                             "channel.k8s.io"};
  return p;
}

// The first of the client's protocols this side speaks; nullopt when none.
std::optional<std::string> negotiate(const std::vector<std::string>& offered,
                                     const std::vector<std::string>& ours) {
  for (const auto& p : offered)
    if (std::find(ours.begin(), ours.end(), p) != ours.end()) return p;
  return std::nullopt;
}

}  // namespace

Result<ExecOptions> parse_exec_options(const http::Request& req, bool attach) {
  ExecOptions o;
  for (auto& [k, v] : http::parse_query(req.query)) {
    if (k == "command") o.command.push_back(v);
    else if (k == "container") o.container = v;
    else if (k == "stdin") o.stdin = parse_bool(v);
    else if (k == "stdout") o.stdout = parse_bool(v);
    else if (k == "stderr") o.stderr = parse_bool(v);
    else if (k == "tty") o.tty = parse_bool(v);
  }
  if (!o.stdin && !o.stdout && !o.stderr)
    return Status::bad_request("you must specify at least 1 of stdin, stdout, stderr");
  if (!attach && o.command.empty())
    return Status::bad_request("you must specify a command");  // kubectl checks this first
  if (attach) o.command.clear();
  return o;
}

http::Response serve_exec(const http::Request& req, ExecOptions options, ExecHandler handler) {
  if (ws::is_upgrade(req)) {
    auto offered = ws::offered_protocols(req);
    std::optional<std::string> p = offered.empty() ? std::optional<std::string>("")
                                                   : negotiate(offered, ws_protocols());
    if (!p)
      return refuse(400, "requested protocol(s) are not supported: " + quoted_list(offered) +
                             "; supports " + quoted_list(ws_protocols()));
    http::Response r = ws::accept(req, *p);
    r.upgrade = [p = *p, o = std::move(options), handler](std::shared_ptr<http::Duplex> d) {
      if (!d) return;
      std::thread([d, p, o, handler] { run_ws(d, p, o, handler); }).detach();
    };
    return r;
  }
  if (spdy::is_upgrade(req)) {
    auto offered = spdy::offered_protocols(req);
    auto p = negotiate(offered, spdy_protocols());
    if (!p)
      return refuse(403, "unable to upgrade: unable to negotiate protocol: client supports " +
                             quoted_list(offered) + ", server accepts " +
                             quoted_list(spdy_protocols()));
    http::Response r = spdy::accept(*p);
    r.upgrade = [p = *p, o = std::move(options), handler](std::shared_ptr<http::Duplex> d) {
      if (!d) return;
      std::thread([d, p, o, handler] { run_spdy(d, p, o, handler); }).detach();
    };
    return r;
  }
  return refuse(400, "Upgrade request required");
}

}  // namespace vkube::streaming
