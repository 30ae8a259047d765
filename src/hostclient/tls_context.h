// The OpenSSL client context of one Client (private: includes Asio).
#pragma once

#include <mutex>

#include <boost/asio/ssl/context.hpp>

#include "connection.h"

namespace vkube::hostclient::detail {

class TlsContext {
 public:
  TlsContext() : ctx(boost::asio::ssl::context::tls_client) {}
  ~TlsContext() {
    if (session_ != nullptr) SSL_SESSION_free(session_);
  }
  TlsContext(const TlsContext&) = delete;
  TlsContext& operator=(const TlsContext&) = delete;

  boost::asio::ssl::context ctx;
  bool verify = true;  // false: insecure-skip-tls-verify

  // TLS session resumption: the newest session the server gave (a TLS 1.3
  // ticket) is offered by the next connection, which then skips the
  // certificate exchange and its signatures on both sides. A tenant opens
  // several connections to its host (lists, watches); each full handshake
  // cost both sides about a millisecond of CPU. One Client talks to one
  // server, so one session serves all its connections.
  void offer_session(SSL* ssl) {
    std::lock_guard lock(mu_);
    if (session_ != nullptr) SSL_set_session(ssl, session_);
  }
  // Takes ownership of `session` (OpenSSL's new-session callback).
  void keep_session(SSL_SESSION* session) {
    std::lock_guard lock(mu_);
    if (session_ != nullptr) SSL_SESSION_free(session_);
    session_ = session;
  }
  // A resumption the server refused, or a failed handshake: start afresh.
  void forget_session() { keep_session(nullptr); }

 private:
  std::mutex mu_;
  SSL_SESSION* session_ = nullptr;
};

}  // namespace vkube::hostclient::detail
