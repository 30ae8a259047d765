// The upstream forwarder and the TCP connections (see transport.h).
#include "transport.h"

#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>

#include "responder.h"

namespace vkube::dns::transport {

namespace {

// Beyond this many forwarded queries in flight, new ones get SERVFAIL at
// once: a flood must not open unbounded sockets.
constexpr size_t kMaxInFlight = 1024;

uint16_t parse_port(std::string_view text, bool* ok) {
  unsigned v = 0;
  *ok = !text.empty() && text.size() <= 5;
  for (char c : text) {
    if (c < '0' || c > '9') *ok = false;
    v = v * 10 + static_cast<unsigned>(c - '0');
  }
  *ok = *ok && v <= 0xFFFF;
  return *ok ? static_cast<uint16_t>(v) : 0;
}

}  // namespace

Result<udp::endpoint> parse_endpoint(std::string_view text, uint16_t default_port) {
  std::string_view host = text;
  uint16_t port = default_port;
  bool ok = true;
  if (text.starts_with("[")) {
    size_t close = text.find(']');
    if (close == std::string_view::npos)
      return Status::invalid("bad address \"" + std::string(text) + "\"");
    host = text.substr(1, close - 1);
    std::string_view rest = text.substr(close + 1);
    if (!rest.empty()) {
      if (!rest.starts_with(":"))
        return Status::invalid("bad address \"" + std::string(text) + "\"");
      port = parse_port(rest.substr(1), &ok);
    }
  } else if (size_t colon = text.rfind(':');
             colon != std::string_view::npos && text.find(':') == colon) {
    // Exactly one colon: host:port. More are a bare IPv6 address.
    host = text.substr(0, colon);
    port = parse_port(text.substr(colon + 1), &ok);
  }
  if (!ok) return Status::invalid("bad port in \"" + std::string(text) + "\"");
  if (host == "localhost") host = "127.0.0.1";
  error_code ec;
  net::ip::address address = net::ip::make_address(std::string(host), ec);
  if (ec) return Status::invalid("bad IP address \"" + std::string(host) + "\"");
  return udp::endpoint(address, port);
}

// One forwarded query: tries each upstream in turn. Handlers carry the
// attempt they belong to, so that late ones from a given-up upstream do
// nothing.
class Exchange : public std::enable_shared_from_this<Exchange> {
 public:
  Exchange(Forwarder& f, std::string query, Question question, Forwarder::Done done)
      : f_(f),
        socket_(f.ioc_),
        timer_(f.ioc_),
        query_(std::move(query)),
        question_(std::move(question)),
        done_(std::move(done)),
        in_flight_(f.in_flight_) {
    ++*in_flight_;
  }
  ~Exchange() { --*in_flight_; }

  void try_next() {
    error_code ec;
    socket_.close(ec);
    timer_.cancel();
    ++attempt_;
    if (next_ >= f_.upstreams_.size()) return finish(std::nullopt);
    const udp::endpoint& upstream = f_.upstreams_[next_++];
    id_ = static_cast<uint16_t>(f_.random_());
    query_[0] = static_cast<char>(id_ >> 8);
    query_[1] = static_cast<char>(id_ & 0xFF);
    // Connected: the kernel drops datagrams from anyone but the upstream.
    socket_.open(upstream.protocol(), ec);
    if (!ec) socket_.connect(upstream, ec);
    if (ec) return try_next();
    auto self = shared_from_this();
    unsigned attempt = attempt_;
    socket_.async_send(net::buffer(query_), [self, attempt](error_code send_ec, size_t) {
      if (send_ec && attempt == self->attempt_) self->try_next();
    });
    receive();
    timer_.expires_after(f_.timeout_);
    timer_.async_wait([self, attempt](error_code wait_ec) {
      if (!wait_ec && attempt == self->attempt_) self->try_next();
    });
  }

 private:
  void receive() {
    auto self = shared_from_this();
    unsigned attempt = attempt_;
    buffer_.resize(65535);
    socket_.async_receive(net::buffer(buffer_), [self, attempt](error_code ec, size_t n) {
      if (attempt != self->attempt_ || self->finished_) return;
      if (ec) return self->try_next();  // refused (ICMP) or closed: the next one
      std::string_view answer(self->buffer_.data(), n);
      if (!answers(answer, self->id_, self->question_)) return self->receive();
      self->finish(std::string(answer));
    });
  }

  void finish(std::optional<std::string> answer) {
    if (finished_) return;
    finished_ = true;
    ++attempt_;
    error_code ec;
    socket_.close(ec);
    timer_.cancel();
    done_(std::move(answer));
  }

  Forwarder& f_;
  udp::socket socket_;
  net::steady_timer timer_;
  std::string query_;
  Question question_;
  Forwarder::Done done_;
  std::shared_ptr<size_t> in_flight_;
  std::vector<char> buffer_;
  size_t next_ = 0;
  unsigned attempt_ = 0;
  uint16_t id_ = 0;
  bool finished_ = false;
};

Forwarder::Forwarder(net::io_context& ioc, std::vector<udp::endpoint> upstreams,
                     std::chrono::milliseconds timeout)
    : ioc_(ioc),
      upstreams_(std::move(upstreams)),
      timeout_(timeout),
      random_(std::random_device{}()),
      in_flight_(std::make_shared<size_t>(0)) {}

void Forwarder::exchange(std::string query, Question question, Done done) {
  if (query.size() < 12 || upstreams_.empty() || *in_flight_ >= kMaxInFlight)
    return done(std::nullopt);
  std::make_shared<Exchange>(*this, std::move(query), std::move(question), std::move(done))
      ->try_next();
}

TcpConnection::TcpConnection(tcp::socket socket, Dispatch& dispatch,
                             std::chrono::milliseconds idle_timeout,
                             std::shared_ptr<size_t> open_count)
    : socket_(std::move(socket)),
      idle_(socket_.get_executor()),
      dispatch_(dispatch),
      idle_timeout_(idle_timeout),
      open_count_(std::move(open_count)) {
  ++*open_count_;
}

TcpConnection::~TcpConnection() {
  --*open_count_;
}

void TcpConnection::start() {
  read_length();
}

void TcpConnection::read_length() {
  if (closed_) return;
  auto self = shared_from_this();
  idle_.expires_after(idle_timeout_);
  idle_.async_wait([self](error_code ec) {
    if (!ec) self->close();
  });
  net::async_read(socket_, net::buffer(length_, 2), [self](error_code ec, size_t) {
    size_t length = static_cast<size_t>(self->length_[0]) << 8 | self->length_[1];
    if (ec || length == 0) return self->end_of_queries();
    self->read_body(length);
  });
}

void TcpConnection::read_body(size_t length) {
  auto self = shared_from_this();
  body_.resize(length);
  net::async_read(socket_, net::buffer(body_), [self](error_code ec, size_t) {
    if (ec) return self->end_of_queries();
    ++self->pending_;
    // The answer keeps the connection: a client may half-close after its
    // query and still read the answer.
    self->dispatch_(std::move(self->body_), /*udp=*/false, [self](std::string reply) {
      --self->pending_;
      self->send(std::move(reply));
    });
    self->read_length();
  });
}

void TcpConnection::end_of_queries() {
  reading_done_ = true;
  close_when_done();
}

void TcpConnection::close_when_done() {
  if (reading_done_ && pending_ == 0 && !writing_) close();
}

void TcpConnection::send(std::string reply) {
  if (!closed_ && !reply.empty() && reply.size() <= 0xFFFF) {
    std::string framed;
    framed.reserve(reply.size() + 2);
    framed.push_back(static_cast<char>(reply.size() >> 8));
    framed.push_back(static_cast<char>(reply.size() & 0xFF));
    framed += reply;
    out_.push_back(std::move(framed));
  }
  if (!writing_) write_next();
}

void TcpConnection::write_next() {
  if (out_.empty() || closed_) {
    writing_ = false;
    return close_when_done();
  }
  writing_ = true;
  auto self = shared_from_this();
  net::async_write(socket_, net::buffer(out_.front()), [self](error_code ec, size_t) {
    if (ec) return self->close();
    self->out_.pop_front();
    self->write_next();
  });
}

void TcpConnection::close() {
  writing_ = false;
  if (closed_) return;
  closed_ = true;
  error_code ec;
  socket_.shutdown(tcp::socket::shutdown_both, ec);
  socket_.close(ec);
  idle_.cancel();
}

}  // namespace vkube::dns::transport
