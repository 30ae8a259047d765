// Server: the listening socket, the I/O and worker threads, and shutdown.
#include <algorithm>
#include <future>
#include <thread>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core/bind_handler.hpp>

#include "connection.h"
#include "tls.h"
#include "vkube/common/log.h"

namespace vkube::http {

namespace detail {

void ServerCore::add(const std::shared_ptr<Connection>& c) {
  std::lock_guard lock(mu_);
  conns_.emplace(c.get(), c);
}

void ServerCore::remove(Connection* c) {
  std::lock_guard lock(mu_);
  conns_.erase(c);
}

std::vector<std::shared_ptr<Connection>> ServerCore::connections() {
  std::vector<std::shared_ptr<Connection>> out;
  std::lock_guard lock(mu_);
  out.reserve(conns_.size());
  for (auto& [raw, weak] : conns_) {
    if (auto c = weak.lock()) out.push_back(std::move(c));
  }
  return out;
}

// The counters are atomics so that requests do not take a lock; waking the
// shutdown waiter takes it only once shutdown has begun, after the update.
void ServerCore::connection_closed() {
  open_.fetch_sub(1);
  if (stopping) notify_waiter();
}

void ServerCore::handler_started() {
  in_flight_.fetch_add(1);
}

void ServerCore::handler_finished() {
  in_flight_.fetch_sub(1);
  if (stopping) notify_waiter();
}

void ServerCore::notify_waiter() {
  std::lock_guard lock(mu_);
  cv_.notify_all();
}

bool ServerCore::wait_quiet(std::chrono::steady_clock::time_point deadline) {
  std::unique_lock lock(mu_);
  return cv_.wait_until(lock, deadline, [&] { return in_flight_.load() == 0 && open() == 0; });
}

}  // namespace detail

namespace {

using detail::Connection;
using detail::error_code;
using detail::ServerCore;
namespace net = detail::net;
namespace beast = detail::beast;
using tcp = net::ip::tcp;

Result<tcp::endpoint> resolve(const std::string& host, uint16_t port) {
  error_code ec;
  net::ip::address address = net::ip::make_address(host, ec);
  if (!ec) return tcp::endpoint(address, port);
  // A name such as "localhost": take its first address.
  net::io_context ioc;
  tcp::resolver resolver(ioc);
  auto results = resolver.resolve(host, std::to_string(port), ec);
  if (ec || results.empty()) {
    return Status::invalid("cannot resolve listen host \"" + host + "\": " + ec.message());
  }
  return results.begin()->endpoint();
}

std::string endpoint_text(const tcp::endpoint& ep) {
  std::string addr = ep.address().to_string();
  if (ep.address().is_v6()) addr = "[" + addr + "]";
  return addr + ":" + std::to_string(ep.port());
}

class ServerImpl final : public Server {
 public:
  ServerImpl(ServerOptions options, Handler handler, std::unique_ptr<net::ssl::context> tls)
      : core_(std::move(options), std::move(handler), std::move(tls)),
        iocs_(make_io_contexts(core_.options.io_threads)),
        homes_(make_homes(iocs_)),
        acceptor_(std::in_place, net::make_strand(*iocs_.front())),
        retry_timer_(std::in_place, acceptor_->get_executor()) {}

  ~ServerImpl() override { shutdown(std::chrono::milliseconds(0)); }

  Status listen(const tcp::endpoint& endpoint);
  void run();

  uint16_t port() const override { return port_; }
  void shutdown(std::chrono::milliseconds grace) override;
  size_t open_connections() const override { return core_.open(); }
  uint64_t tls_handshakes() const override { return core_.tls_handshakes.load(); }
  uint64_t tls_resumptions() const override { return core_.tls_resumptions.load(); }

 private:
  void accept();
  void on_accept(error_code ec, tcp::socket socket);
  void stop_accepting();

  // One io_context per I/O thread, each connection on one of them: all of a
  // connection's handlers run on one thread (one io_context run by several
  // threads moved a connection's steps from thread to thread, and each move
  // was a wake-up of the other one).
  static std::vector<std::unique_ptr<net::io_context>> make_io_contexts(size_t n) {
    std::vector<std::unique_ptr<net::io_context>> out;
    for (size_t i = 0; i < std::max<size_t>(1, n); ++i)
      out.push_back(std::make_unique<net::io_context>(1));
    return out;
  }

  static std::vector<std::shared_ptr<detail::IoHome>> make_homes(
      const std::vector<std::unique_ptr<net::io_context>>& iocs) {
    std::vector<std::shared_ptr<detail::IoHome>> out;
    for (const auto& ioc : iocs) out.push_back(std::make_shared<detail::IoHome>(*ioc));
    return out;
  }

  ServerCore core_;
  // Cleared by shutdown(), before core_ goes.
  std::vector<std::unique_ptr<net::io_context>> iocs_;
  std::vector<std::shared_ptr<detail::IoHome>> homes_;  // one per io_context
  size_t next_ioc_ = 0;  // the io_context of the next connection (acceptor's strand)
  size_t accept_ioc_ = 0;  // the one the pending accept is for
  std::optional<tcp::acceptor> acceptor_;
  std::optional<net::steady_timer> retry_timer_;
  std::vector<std::thread> io_threads_;
  uint16_t port_ = 0;
  std::mutex shutdown_mu_;
  bool shut_down_ = false;
};

Status ServerImpl::listen(const tcp::endpoint& endpoint) {
  error_code ec;
  acceptor_->open(endpoint.protocol(), ec);
  if (!ec) acceptor_->set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) acceptor_->bind(endpoint, ec);
  if (ec == net::error::address_in_use) {
    return Status::unavailable("cannot listen on " + endpoint_text(endpoint) +
                               ": address already in use");
  }
  if (ec == boost::system::errc::address_not_available || ec == net::error::access_denied) {
    return Status::invalid("cannot listen on " + endpoint_text(endpoint) + ": " + ec.message());
  }
  if (!ec) acceptor_->listen(net::socket_base::max_listen_connections, ec);
  if (ec)
    return Status::unavailable("cannot listen on " + endpoint_text(endpoint) + ": " + ec.message());
  port_ = acceptor_->local_endpoint(ec).port();
  return Status::ok();
}

void ServerImpl::run() {
  // Only now that the port is ours: a failed start costs no threads.
  core_.workers.emplace(std::max<size_t>(1, core_.options.worker_threads));
  accept();
  for (auto& ioc : iocs_) {
    io_threads_.emplace_back([ioc = ioc.get()] {
      auto guard = net::make_work_guard(*ioc);
      for (;;) {
        try {
          ioc->run();
          return;
        } catch (const std::exception& e) {
          // Handlers do not throw by design; keep serving if one does.
          VKUBE_LOG(error, "http: I/O thread caught an exception", {"error", e.what()});
        }
      }
    });
  }
}

void ServerImpl::accept() {
  accept_ioc_ = next_ioc_++ % iocs_.size();
  acceptor_->async_accept(net::make_strand(*iocs_[accept_ioc_]),
                          beast::bind_front_handler(&ServerImpl::on_accept, this));
}

void ServerImpl::on_accept(error_code ec, tcp::socket socket) {
  if (core_.stopping || !acceptor_->is_open()) return;
  if (ec) {
    if (ec == net::error::operation_aborted) return;
    // Out of file descriptors and the like: back off instead of spinning.
    VKUBE_LOG(warn, "http: accept failed", {"error", ec.message()});
    retry_timer_->expires_after(std::chrono::milliseconds(100));
    retry_timer_->async_wait([this](error_code wait_ec) {
      if (!wait_ec && !core_.stopping) accept();
    });
    return;
  }
  error_code ignored;
  socket.set_option(tcp::no_delay(true), ignored);
  socket.set_option(net::socket_base::keep_alive(true), ignored);
  auto connection = std::make_shared<Connection>(core_, std::move(socket), homes_[accept_ioc_]);
  core_.add(connection);
  connection->start();
  accept();
}

void ServerImpl::stop_accepting() {
  std::promise<void> done;
  net::post(acceptor_->get_executor(), [&] {
    error_code ignored;
    acceptor_->close(ignored);
    retry_timer_->cancel();
    done.set_value();
  });
  done.get_future().wait();
}

void ServerImpl::shutdown(std::chrono::milliseconds grace) {
  {
    std::lock_guard lock(shutdown_mu_);
    if (shut_down_) return;
    shut_down_ = true;
  }
  auto deadline = std::chrono::steady_clock::now() + grace;
  core_.stopping = true;
  if (!io_threads_.empty()) {
    stop_accepting();
    // Idle connections close, responses finish, streams get their last chunk.
    for (auto& c : core_.connections()) {
      net::post(c->executor(), [c] { c->shutdown_graceful(); });
    }
    if (grace.count() > 0) core_.wait_quiet(deadline);
  }
  core_.abandon = true;
  for (auto& ioc : iocs_) ioc->stop();
  for (auto& t : io_threads_) t.join();
  io_threads_.clear();
  if (core_.workers) core_.workers->join();  // running handlers finish; queued ones are skipped
  // No thread runs now: close what is left from here, then let the
  // io_context destroy its pending handlers (and the connections they hold).
  for (auto& c : core_.connections()) c->close_now();
  retry_timer_.reset();
  acceptor_.reset();
  for (auto& home : homes_) home->close();  // producers may still hold them
  iocs_.clear();
}

}  // namespace

Result<std::unique_ptr<Server>> Server::start(ServerOptions options, Handler handler) {
  if (!handler) return Status::invalid("http server: no handler");
  if (options.body_limit == 0) return Status::invalid("http server: body_limit must be > 0");
  auto endpoint = resolve(options.host, options.port);
  if (!endpoint.is_ok()) return endpoint.status();
  std::unique_ptr<net::ssl::context> tls;
  if (options.tls) {
    auto ctx = detail::make_tls_context(*options.tls);
    if (!ctx.is_ok()) return ctx.status();
    tls = std::move(ctx.value());
  }
  auto server =
      std::make_unique<ServerImpl>(std::move(options), std::move(handler), std::move(tls));
  VKUBE_RETURN_IF_ERROR(server->listen(endpoint.value()));
  server->run();
  VKUBE_LOG(debug, "http: listening", {"port", server->port()});
  return std::unique_ptr<Server>(std::move(server));
}

}  // namespace vkube::http
