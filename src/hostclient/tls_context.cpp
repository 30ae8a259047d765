#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <boost/asio/buffer.hpp>

#include "tls_context.h"
#include "vkube/common/log.h"

namespace vkube::hostclient::detail {
namespace {

namespace ssl = boost::asio::ssl;

Status invalid(const std::string& what, const boost::system::error_code& ec) {
  ERR_clear_error();
  return Status::invalid("TLS " + what + ": " + ec.message());
}

// Trusts every certificate of a PEM bundle (a CA file may hold several).
Status add_cas(SSL_CTX* ctx, const std::string& pem) {
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  if (bio == nullptr) return Status::internal("TLS: out of memory");
  int added = 0;
  while (X509* cert = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr)) {
    // A duplicate is harmless; anything else leaves the CA untrusted.
    if (X509_STORE_add_cert(SSL_CTX_get_cert_store(ctx), cert) == 1) ++added;
    X509_free(cert);
  }
  BIO_free(bio);
  // The loop ends on a "no start line" error that must not leak into later calls.
  ERR_clear_error();
  if (added == 0) return Status::invalid("TLS certificate authority: no PEM certificate found");
  return Status::ok();
}

}  // namespace

ssl_ctx_st* native_context(TlsContext& tls) { return tls.ctx.native_handle(); }

Result<std::shared_ptr<TlsContext>> make_tls_context(const Config& config) {
  std::shared_ptr<TlsContext> tls;
  try {
    tls = std::make_shared<TlsContext>();
  } catch (const std::exception& e) {
    ERR_clear_error();
    return Status::internal(std::string("TLS: cannot create context: ") + e.what());
  }
  SSL_CTX* native = tls->ctx.native_handle();
  SSL_CTX_set_min_proto_version(native, TLS1_2_VERSION);
  SSL_CTX_set_options(native, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION);
  // Sessions are kept by the TlsContext (see offer_session), not OpenSSL's cache.
  SSL_CTX_set_session_cache_mode(native, SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
  // Not the app data slot: Asio keeps its verify callback there.
  static const int owner_index = SSL_CTX_get_ex_new_index(0, nullptr, nullptr, nullptr, nullptr);
  SSL_CTX_set_ex_data(native, owner_index, tls.get());
  SSL_CTX_sess_set_new_cb(native, [](SSL* ssl, SSL_SESSION* session) -> int {
    auto* owner = static_cast<TlsContext*>(SSL_CTX_get_ex_data(SSL_get_SSL_CTX(ssl), owner_index));
    if (owner == nullptr || SSL_SESSION_is_resumable(session) != 1) return 0;
    owner->keep_session(session);
    return 1;  // ours now
  });
  boost::system::error_code ec;
  if (config.insecure_skip_verify) {
    VKUBE_LOG(warn,
              "host client: the server's certificate is not verified (insecure-skip-tls-verify)",
              {"server", config.server});
    tls->verify = false;
    tls->ctx.set_verify_mode(ssl::verify_none, ec);
  } else {
    if (config.ca_pem.empty()) {
      // No CA named: the system's roots, as client-go does.
      tls->ctx.set_default_verify_paths(ec);
      if (ec) return invalid("default certificate authorities", ec);
    } else {
      VKUBE_RETURN_IF_ERROR(add_cas(native, config.ca_pem));
    }
    tls->ctx.set_verify_mode(ssl::verify_peer, ec);
  }
  if (ec) return invalid("verify mode", ec);

  if (config.cert_pem.empty() != config.key_pem.empty())
    return Status::invalid("TLS client certificate and key must be given together");
  if (!config.cert_pem.empty()) {
    tls->ctx.use_certificate_chain(boost::asio::buffer(config.cert_pem), ec);
    if (ec) return invalid("client certificate", ec);
    tls->ctx.use_private_key(boost::asio::buffer(config.key_pem), ssl::context::pem, ec);
    if (ec) return invalid("client key", ec);
    if (SSL_CTX_check_private_key(native) != 1) {
      ERR_clear_error();
      return Status::invalid("TLS client key does not match the client certificate");
    }
  }
  return tls;
}

}  // namespace vkube::hostclient::detail
