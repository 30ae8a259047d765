// The OpenSSL client context of one Client (private: includes Asio).
#pragma once

#include <boost/asio/ssl/context.hpp>

#include "connection.h"

namespace vkube::hostclient::detail {

class TlsContext {
 public:
  TlsContext() : ctx(boost::asio::ssl::context::tls_client) {}
  boost::asio::ssl::context ctx;
  bool verify = true;  // false: insecure-skip-tls-verify
};

}  // namespace vkube::hostclient::detail
