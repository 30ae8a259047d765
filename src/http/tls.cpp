#include "tls.h"

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <cstdint>
#include <string>

#include <boost/asio/buffer.hpp>

namespace vkube::http::detail {
namespace {

namespace ssl = boost::asio::ssl;

Status invalid(std::string what, const boost::system::error_code& ec) {
  ERR_clear_error();
  return Status::invalid("TLS " + what + ": " + ec.message());
}

// Adds every certificate of a PEM bundle to the verify store and to the list
// of acceptable CAs sent in the CertificateRequest. Clients such as Go's only
// offer a certificate whose issuer is on that list.
Status add_client_cas(SSL_CTX* ctx, const std::string& pem) {
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  if (bio == nullptr) return Status::internal("TLS: out of memory");
  int added = 0;
  Status status;
  while (X509* cert = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr)) {
    if (X509_STORE_add_cert(SSL_CTX_get_cert_store(ctx), cert) != 1 ||
        SSL_CTX_add_client_CA(ctx, cert) != 1) {
      status = Status::invalid("TLS client CA: cannot add certificate");
    }
    X509_free(cert);
    ++added;
  }
  BIO_free(bio);
  // The loop ends on a "no start line" error that must not leak into later calls.
  ERR_clear_error();
  if (added == 0) return Status::invalid("TLS client CA: no PEM certificate found");
  return status;
}

std::string entry_utf8(X509_NAME* name, int index) {
  X509_NAME_ENTRY* entry = X509_NAME_get_entry(name, index);
  if (entry == nullptr) return {};
  unsigned char* utf8 = nullptr;
  int len = ASN1_STRING_to_UTF8(&utf8, X509_NAME_ENTRY_get_data(entry));
  if (len < 0 || utf8 == nullptr) return {};
  std::string out(reinterpret_cast<char*>(utf8), static_cast<size_t>(len));
  OPENSSL_free(utf8);
  return out;
}

}  // namespace

Result<std::unique_ptr<ssl::context>> make_tls_context(const TlsConfig& config) {
  std::unique_ptr<ssl::context> ctx;
  try {
    ctx = std::make_unique<ssl::context>(ssl::context::tls_server);
  } catch (const std::exception& e) {
    ERR_clear_error();
    return Status::internal(std::string("TLS: cannot create context: ") + e.what());
  }
  SSL_CTX* native = ctx->native_handle();
  SSL_CTX_set_min_proto_version(native, TLS1_2_VERSION);
  // Sessions stay in this server's memory (stateful TLS 1.3 tickets:
  // SSL_OP_NO_TICKET), one per handshake. A stateless ticket would carry the
  // whole session, client certificate included: OpenSSL 3.0 spent a quarter
  // of a full handshake serialising two of them, and a resumption would parse
  // the certificate again (through its slow key decoders, a third of a
  // handshake). So a client that resumes (vkube's host client does) costs a
  // cache lookup and a key exchange.
  SSL_CTX_set_options(native, SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE |
                                  SSL_OP_NO_COMPRESSION | SSL_OP_NO_TICKET);
  // AES-128-GCM first, as Go's TLS (kube-apiserver's) prefers on CPUs with
  // AES instructions: as safe, and cheaper per record than AES-256, which
  // OpenSSL would pick.
  SSL_CTX_set_ciphersuites(native,
                           "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:"
                           "TLS_CHACHA20_POLY1305_SHA256");
  SSL_CTX_set_num_tickets(native, 1);
  SSL_CTX_set_session_cache_mode(native, SSL_SESS_CACHE_SERVER);
  SSL_CTX_sess_set_cache_size(native, 512);  // ~2 KiB each, the oldest go first
  // Needed for session resumption once client certificates are verified.
  static constexpr unsigned char kSessionContext[] = "vkube";
  SSL_CTX_set_session_id_context(native, kSessionContext, sizeof kSessionContext - 1);

  boost::system::error_code ec;
  if (config.cert_pem.empty()) return Status::invalid("TLS certificate: empty PEM");
  ctx->use_certificate_chain(boost::asio::buffer(config.cert_pem), ec);
  if (ec) return invalid("certificate", ec);
  if (config.key_pem.empty()) return Status::invalid("TLS private key: empty PEM");
  ctx->use_private_key(boost::asio::buffer(config.key_pem), ssl::context::pem, ec);
  if (ec) return invalid("private key", ec);
  if (SSL_CTX_check_private_key(native) != 1) {
    ERR_clear_error();
    return Status::invalid("TLS private key does not match the certificate");
  }
  if (!config.client_ca_pem.empty()) {
    VKUBE_RETURN_IF_ERROR(add_client_cas(native, config.client_ca_pem));
    // Ask, do not require: clients may authenticate with a token instead.
    ctx->set_verify_mode(ssl::verify_peer, ec);
    if (ec) return invalid("verify mode", ec);
  }
  return ctx;
}

std::optional<PeerCertificate> verified_peer(SSL* ssl) {
  X509* cert = SSL_get0_peer_certificate(ssl);
  if (cert == nullptr || SSL_get_verify_result(ssl) != X509_V_OK) return std::nullopt;
  X509_NAME* subject = X509_get_subject_name(cert);
  if (subject == nullptr) return std::nullopt;
  PeerCertificate peer;
  int cn = X509_NAME_get_index_by_NID(subject, NID_commonName, -1);
  if (cn >= 0) peer.common_name = entry_utf8(subject, cn);
  for (int i = X509_NAME_get_index_by_NID(subject, NID_organizationName, -1); i >= 0;
       i = X509_NAME_get_index_by_NID(subject, NID_organizationName, i)) {
    peer.organizations.push_back(entry_utf8(subject, i));
  }
  return peer;
}

}  // namespace vkube::http::detail
