// The TLS side of the transport: an SSL context built from PEM strings, and
// the identity of a verified client certificate.
#pragma once

#include <openssl/ssl.h>

#include <memory>
#include <optional>

#include <boost/asio/ssl/context.hpp>

#include "vkube/common/status.h"
#include "vkube/http/server.h"

namespace vkube::http::detail {

// A TLS 1.2+ server context. When config.client_ca_pem is set, clients are
// asked for a certificate signed by that CA but may send none; a certificate
// that fails verification fails the handshake. kInvalid for bad PEM material.
Result<std::unique_ptr<boost::asio::ssl::context>> make_tls_context(const TlsConfig& config);

// Subject CN and O entries of the peer certificate of a completed handshake,
// or nullopt when the client sent none (or it did not verify).
std::optional<PeerCertificate> verified_peer(SSL* ssl);

}  // namespace vkube::http::detail
