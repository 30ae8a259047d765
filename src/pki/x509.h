// Private to vkube_pki: OpenSSL ownership, key and certificate building and
// inspection. Every failure is a Status carrying OpenSSL's error queue.
#pragma once

#include <openssl/decoder.h>
#include <openssl/evp.h>
#include <openssl/x509.h>

#include <chrono>
#include <ctime>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "vkube/common/status.h"

namespace vkube::pki::detail {

struct PkeyFree {
  void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
};
struct X509Free {
  void operator()(X509* p) const { X509_free(p); }
};
using PkeyPtr = std::unique_ptr<EVP_PKEY, PkeyFree>;
using X509Ptr = std::unique_ptr<X509, X509Free>;

// Status::internal("<what>: <OpenSSL error queue>"); empties the queue.
Status openssl_error(std::string_view what);

// A subjectAltName entry: an IP address as its 4 or 16 raw bytes, or a
// lower-case DNS name. Ordered so that sets of them can be compared.
struct SanEntry {
  bool is_ip = false;
  std::string value;
  auto operator<=>(const SanEntry&) const = default;
};

// Parses a host flag: a literal IPv4/IPv6 address (IPv6 may be in brackets)
// or a DNS name (letters, digits, '-', '_', '.', a leading "*."). kInvalid otherwise.
Result<SanEntry> parse_host(std::string_view host);
// The subjectAltName entries of `cert` (other kinds of names are skipped).
std::vector<SanEntry> cert_sans(X509* cert);

enum class Kind { kCa, kServing, kClient };

struct CertSpec {
  Kind kind = Kind::kClient;
  std::string common_name;
  std::vector<std::string> organizations;  // one O RDN each
  std::vector<SanEntry> sans;              // kServing only
  std::chrono::seconds validity{0};
};

// Gives `x` a random 128-bit serial number.
Status set_serial(X509* x);

// Signs a certificate for `subject_key` as described by `spec`. For kCa the
// certificate is self-signed (issuer and issuer_key are ignored); otherwise
// it is signed by `issuer`/`issuer_key` and never outlives `issuer`.
Result<X509Ptr> issue(const CertSpec& spec, EVP_PKEY* subject_key, X509* issuer,
                      EVP_PKEY* issuer_key);

Result<PkeyPtr> generate_key();                     // ECDSA P-256
Result<PkeyPtr> parse_key(const std::string& pem);  // any PEM private key, unencrypted

// Parses PEM private keys like parse_key, faster for a series of them:
// OpenSSL 3 spends most of a key parse (about 1 ms) assembling its decoder
// chain, which this builds once, for EC keys (the ones vkube makes); other
// key types take parse_key's path. Not thread-safe: one per call site.
class KeyParser {
 public:
  KeyParser() = default;
  KeyParser(const KeyParser&) = delete;  // ec_ points into this object
  KeyParser& operator=(const KeyParser&) = delete;
  ~KeyParser() { OSSL_DECODER_CTX_free(ec_); }

  Result<PkeyPtr> parse(const std::string& pem);

 private:
  EVP_PKEY* decoded_ = nullptr;  // where ec_ puts each key it decodes
  OSSL_DECODER_CTX* ec_ = nullptr;
};
Result<X509Ptr> parse_cert(const std::string& pem);
Result<std::string> key_pem(EVP_PKEY* key);
Result<std::string> cert_pem(X509* cert);

// True when `cert` is usable at `now` and stays so for `margin` at least.
bool valid_for(X509* cert, std::time_t now, std::chrono::seconds margin);
// True when `cert` expires before `other` does.
bool expires_before(X509* cert, X509* other);
// True when `cert` carries the public half of `key`.
bool matches_key(X509* cert, EVP_PKEY* key);
// True when `cert` is signed by `issuer` (name and signature).
bool signed_by(X509* cert, X509* issuer);
// True when `cert` may sign certificates (basicConstraints CA:TRUE, keyCertSign).
bool is_ca(X509* cert);

std::string base64(std::string_view data);      // standard alphabet, padded
std::string base64_url(std::string_view data);  // URL-safe, unpadded

}  // namespace vkube::pki::detail
