// Server: binds UDP and TCP on one port, runs the I/O thread, and routes each
// query to a local answer or the forwarder.
#include <fstream>
#include <sstream>
#include <thread>

#include "names.h"
#include "responder.h"
#include "transport.h"
#include "vkube/common/log.h"
#include "vkube/dns/dns.h"
#include "vkube/dns/lookup.h"

namespace vkube::dns {

namespace {

using namespace transport;

// With port 0, UDP picks a port and TCP must get the same one; another
// process may hold it for TCP, so a few ports are tried.
constexpr int kBindAttempts = 32;

std::string endpoint_text(const udp::endpoint& ep) {
  std::string addr = ep.address().to_string();
  if (ep.address().is_v6()) addr = "[" + addr + "]";
  return addr + ":" + std::to_string(ep.port());
}

class ServerImpl final : public Server {
 public:
  explicit ServerImpl(Options options) : options_(std::move(options)) {}
  ~ServerImpl() override { stop(); }

  void attach(controllers::Informers& informers) override {
    services_ = &informers.cache({"core", "services"});
    slices_ = &informers.cache({"discovery.k8s.io", "endpointslices"});
    pods_ = &informers.cache({"core", "pods"});
  }
  Status start() override;
  void stop() override;
  uint16_t port() const override { return port_; }
  std::vector<std::string> upstreams() const override;

 private:
  Status bind(const udp::endpoint& listen);
  Status bind_once(const udp::endpoint& listen, uint16_t port);
  std::vector<udp::endpoint> choose_upstreams(const udp::endpoint& self) const;
  void dispatch(std::string packet, bool udp, Respond respond);
  void receive_udp();
  void accept_tcp();

  Options options_;
  const controllers::Lister* services_ = nullptr;
  const controllers::Lister* slices_ = nullptr;
  const controllers::Lister* pods_ = nullptr;
  std::unique_ptr<Lookup> lookup_;
  Dispatch dispatch_;
  std::shared_ptr<size_t> tcp_open_ = std::make_shared<size_t>(0);
  // Destroyed (in stop) before what the handlers it holds refer to above.
  std::unique_ptr<net::io_context> ioc_;
  std::unique_ptr<Forwarder> forwarder_;
  std::optional<udp::socket> udp_;
  std::optional<tcp::acceptor> tcp_;
  std::vector<char> udp_buffer_ = std::vector<char>(65535);
  udp::endpoint udp_peer_;
  std::thread thread_;
  uint16_t port_ = 0;
  bool started_ = false;
};

Status ServerImpl::start() {
  if (started_) return Status::invalid("dns: server already started");
  if (services_ == nullptr) return Status::invalid("dns: start() before attach()");
  auto listen = parse_endpoint(options_.listen, 53);
  if (!listen.is_ok()) return Status::invalid("dns: listen: " + listen.status().message());
  auto domain = split_name(options_.cluster_domain);
  if (!domain.is_ok() || domain->empty())
    return Status::invalid("dns: bad cluster domain \"" + options_.cluster_domain + "\"");
  lookup_ =
      std::make_unique<Lookup>(*services_, *slices_, *pods_, options_.cluster_domain, options_.ttl);
  ioc_ = std::make_unique<net::io_context>(1);
  VKUBE_RETURN_IF_ERROR(bind(*listen));
  udp::endpoint self(listen->address(), port_);
  forwarder_ =
      std::make_unique<Forwarder>(*ioc_, choose_upstreams(self), options_.upstream_timeout);
  dispatch_ = [this](std::string packet, bool udp, Respond respond) {
    this->dispatch(std::move(packet), udp, std::move(respond));
  };
  started_ = true;
  receive_udp();
  accept_tcp();
  thread_ = std::thread([this] {
    for (;;) {
      try {
        ioc_->run();
        return;
      } catch (const std::exception& e) {
        // Handlers do not throw by design; keep serving if one does.
        VKUBE_LOG(error, "dns: I/O thread caught an exception", {"error", e.what()});
      }
    }
  });
  std::vector<std::string> ups = upstreams();
  std::string joined;
  for (const std::string& u : ups) joined += (joined.empty() ? "" : ",") + u;
  VKUBE_LOG(info, "dns: serving", {"address", endpoint_text(self)}, {"domain", lookup_->domain()},
            {"upstream", joined});
  return Status::ok();
}

Status ServerImpl::bind(const udp::endpoint& listen) {
  if (listen.port() != 0) return bind_once(listen, listen.port());
  Status last;
  for (int i = 0; i < kBindAttempts; ++i) {
    last = bind_once(listen, 0);
    if (last.is_ok() || last.code() != Code::kUnavailable) return last;
  }
  return last;
}

// UDP first (port 0 lets it choose), then TCP on the same port.
Status ServerImpl::bind_once(const udp::endpoint& listen, uint16_t port) {
  error_code ec;
  udp::endpoint at(listen.address(), port);
  udp_.emplace(*ioc_);
  udp_->open(at.protocol(), ec);
  if (!ec) udp_->bind(at, ec);
  if (!ec) at.port(udp_->local_endpoint(ec).port());
  tcp::endpoint tcp_at(at.address(), at.port());
  if (!ec) {
    tcp_.emplace(*ioc_);
    tcp_->open(tcp_at.protocol(), ec);
    if (!ec) tcp_->set_option(net::socket_base::reuse_address(true), ec);
    if (!ec) tcp_->bind(tcp_at, ec);
    if (!ec) tcp_->listen(net::socket_base::max_listen_connections, ec);
  }
  if (!ec) {
    port_ = at.port();
    return Status::ok();
  }
  error_code ignored;
  udp_->close(ignored);
  if (tcp_) tcp_->close(ignored);
  std::string what = "dns: cannot listen on " + endpoint_text(at) + ": " + ec.message();
  if (ec == net::error::address_in_use) return Status::unavailable(what);
  return Status::invalid(what);
}

std::vector<udp::endpoint> ServerImpl::choose_upstreams(const udp::endpoint& self) const {
  std::vector<std::string> texts = options_.upstream;
  if (texts.empty()) {
    std::ifstream in(options_.resolv_conf);
    std::stringstream text;
    text << in.rdbuf();
    texts = resolv_conf_nameservers(text.str());
  }
  std::vector<udp::endpoint> out;
  for (const std::string& t : texts) {
    auto ep = parse_endpoint(t, 53);
    if (!ep.is_ok()) {
      VKUBE_LOG(warn, "dns: ignoring upstream", {"upstream", t}, {"error", ep.status().message()});
      continue;
    }
    // Ourselves: the same address, or loopback when we listen on all of them.
    const auto& a = ep->address();
    bool ours =
        ep->port() == self.port() && (a == self.address() || self.address().is_unspecified() ||
                                      (a.is_loopback() && self.address().is_loopback()));
    if (ours) {
      VKUBE_LOG(info, "dns: skipping upstream that is this server", {"upstream", t});
      continue;
    }
    out.push_back(*ep);
  }
  return out;
}

std::vector<std::string> ServerImpl::upstreams() const {
  std::vector<std::string> out;
  if (forwarder_ == nullptr) return out;
  for (const udp::endpoint& ep : forwarder_->upstreams()) out.push_back(endpoint_text(ep));
  return out;
}

void ServerImpl::dispatch(std::string packet, bool udp, Respond respond) {
  Plan p = plan(*lookup_, packet, udp);
  switch (p.action) {
    case Plan::Action::kDrop:
      return;
    case Plan::Action::kReply:
      return respond(std::move(p.reply));
    case Plan::Action::kForward: {
      Question q = p.query.questions[0];
      auto shared = std::make_shared<Plan>(std::move(p));
      return forwarder_->exchange(std::move(packet), std::move(q),
                                  [shared, respond](std::optional<std::string> answer) {
                                    respond(finish_forward(*shared, answer));
                                  });
    }
    case Plan::Action::kChase: {
      std::string query = chase_query(p, 0);
      Question q{p.target, p.query.questions[0].type, kClassIn};
      auto shared = std::make_shared<Plan>(std::move(p));
      return forwarder_->exchange(std::move(query), std::move(q),
                                  [shared, respond](std::optional<std::string> answer) {
                                    respond(finish_chase(*shared, answer));
                                  });
    }
  }
}

void ServerImpl::receive_udp() {
  udp_->async_receive_from(net::buffer(udp_buffer_), udp_peer_, [this](error_code ec, size_t n) {
    if (ec == net::error::operation_aborted || ec == net::error::bad_descriptor) return;
    if (!ec) {
      udp::endpoint peer = udp_peer_;
      dispatch(std::string(udp_buffer_.data(), n), /*udp=*/true, [this, peer](std::string r) {
        if (r.empty() || !udp_->is_open()) return;
        auto data = std::make_shared<std::string>(std::move(r));
        udp_->async_send_to(net::buffer(*data), peer, [data](error_code, size_t) {});
      });
    }
    receive_udp();
  });
}

void ServerImpl::accept_tcp() {
  tcp_->async_accept([this](error_code ec, tcp::socket socket) {
    if (ec == net::error::operation_aborted || ec == net::error::bad_descriptor) return;
    if (!ec) {
      if (*tcp_open_ >= options_.max_tcp_connections) {
        error_code ignored;
        socket.close(ignored);
      } else {
        std::make_shared<TcpConnection>(std::move(socket), dispatch_, options_.tcp_idle_timeout,
                                        tcp_open_)
            ->start();
      }
    }
    accept_tcp();
  });
}

void ServerImpl::stop() {
  if (!ioc_) return;
  ioc_->stop();
  if (thread_.joinable()) thread_.join();
  // Sockets first, then the context with the handlers (and connections,
  // exchanges) it still holds; they refer to the members above it.
  error_code ignored;
  if (udp_) udp_->close(ignored);
  if (tcp_) tcp_->close(ignored);
  udp_.reset();
  tcp_.reset();
  forwarder_.reset();
  ioc_.reset();
}

}  // namespace

std::unique_ptr<Server> Server::create(Options options) {
  return std::make_unique<ServerImpl>(std::move(options));
}

std::vector<std::string> resolv_conf_nameservers(std::string_view text) {
  std::vector<std::string> out;
  std::istringstream in{std::string(text)};
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream words(line);
    std::string key, value;
    if (!(words >> key >> value) || key != "nameserver") continue;
    out.push_back(value);
  }
  return out;
}

}  // namespace vkube::dns
