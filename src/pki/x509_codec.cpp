// Reading and writing keys and certificates, and inspecting what they say.
#include <arpa/inet.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>

#include <algorithm>
#include <cctype>
#include <utility>

#include "x509.h"

namespace vkube::pki::detail {
namespace {

struct BioFree {
  void operator()(BIO* b) const { BIO_free(b); }
};
using BioPtr = std::unique_ptr<BIO, BioFree>;

// Encrypted keys are not supported; without this OpenSSL would prompt on the terminal.
int no_passphrase(char*, int, int, void*) {
  return -1;
}

BioPtr read_bio(const std::string& pem) {
  return BioPtr(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
}

std::string drain(BIO* bio) {
  char* data = nullptr;
  long n = BIO_get_mem_data(bio, &data);
  return std::string(data, static_cast<size_t>(n));
}

bool is_dns_label(std::string_view label) {
  if (label.empty() || label.size() > 63) return false;
  return std::all_of(label.begin(), label.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_';
  });
}

}  // namespace

Status openssl_error(std::string_view what) {
  std::string msg(what);
  const char* data = nullptr;
  int flags = 0;
  bool first = true;
  while (unsigned long e = ERR_get_error_all(nullptr, nullptr, nullptr, &data, &flags)) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof buf);
    msg += first ? ": " : "; ";
    msg += buf;
    if ((flags & ERR_TXT_STRING) != 0 && data != nullptr && *data != '\0') {
      msg += " (";
      msg += data;
      msg += ")";
    }
    first = false;
  }
  if (first) msg += ": unknown OpenSSL error";
  return Status::internal(std::move(msg));
}

Result<SanEntry> parse_host(std::string_view host) {
  std::string h(host);
  bool bracketed = h.size() >= 2 && h.front() == '[' && h.back() == ']';
  if (bracketed) h = h.substr(1, h.size() - 2);
  unsigned char raw[16];
  if (!bracketed && inet_pton(AF_INET, h.c_str(), raw) == 1) {
    return SanEntry{true, std::string(reinterpret_cast<char*>(raw), 4)};
  }
  if (inet_pton(AF_INET6, h.c_str(), raw) == 1) {
    return SanEntry{true, std::string(reinterpret_cast<char*>(raw), 16)};
  }
  auto invalid =
      Status::invalid("host \"" + std::string(host) + "\" is neither an IP address nor a DNS name");
  if (bracketed || h.empty() || h.size() > 253) return invalid;
  std::string_view rest(h);
  if (rest.starts_with("*.")) rest.remove_prefix(2);  // a wildcard, as Go's verifier accepts
  while (true) {
    size_t dot = rest.find('.');
    if (!is_dns_label(rest.substr(0, dot))) return invalid;
    if (dot == std::string_view::npos) break;
    rest.remove_prefix(dot + 1);
  }
  std::transform(h.begin(), h.end(), h.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return SanEntry{false, h};
}

std::vector<SanEntry> cert_sans(X509* cert) {
  std::vector<SanEntry> out;
  auto* names =
      static_cast<GENERAL_NAMES*>(X509_get_ext_d2i(cert, NID_subject_alt_name, nullptr, nullptr));
  if (names == nullptr) return out;
  for (int i = 0; i < sk_GENERAL_NAME_num(names); ++i) {
    const GENERAL_NAME* name = sk_GENERAL_NAME_value(names, i);
    if (name->type != GEN_DNS && name->type != GEN_IPADD) continue;
    const ASN1_STRING* s = name->type == GEN_DNS ? name->d.dNSName : name->d.iPAddress;
    std::string value(reinterpret_cast<const char*>(ASN1_STRING_get0_data(s)),
                      static_cast<size_t>(ASN1_STRING_length(s)));
    if (name->type == GEN_DNS) {
      std::transform(value.begin(), value.end(), value.begin(),
                     [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    }
    out.push_back({name->type == GEN_IPADD, std::move(value)});
  }
  GENERAL_NAMES_free(names);
  return out;
}

Result<PkeyPtr> parse_key(const std::string& pem) {
  ERR_clear_error();
  BioPtr bio = read_bio(pem);
  PkeyPtr key(bio ? PEM_read_bio_PrivateKey(bio.get(), nullptr, no_passphrase, nullptr) : nullptr);
  if (!key) return openssl_error("parse private key");
  return key;
}

Result<PkeyPtr> KeyParser::parse(const std::string& pem) {
  ERR_clear_error();
  if (ec_ == nullptr) {
    ec_ = OSSL_DECODER_CTX_new_for_pkey(&decoded_, "PEM", nullptr, "EC", EVP_PKEY_KEYPAIR, nullptr,
                                        nullptr);
  }
  decoded_ = nullptr;
  const auto* data = reinterpret_cast<const unsigned char*>(pem.data());
  size_t size = pem.size();
  if (ec_ != nullptr && OSSL_DECODER_from_data(ec_, &data, &size) == 1 && decoded_ != nullptr) {
    return PkeyPtr(std::exchange(decoded_, nullptr));
  }
  EVP_PKEY_free(std::exchange(decoded_, nullptr));
  return parse_key(pem);
}

Result<X509Ptr> parse_cert(const std::string& pem) {
  ERR_clear_error();
  BioPtr bio = read_bio(pem);
  X509Ptr cert(bio ? PEM_read_bio_X509(bio.get(), nullptr, no_passphrase, nullptr) : nullptr);
  if (!cert) return openssl_error("parse certificate");
  return cert;
}

Result<std::string> key_pem(EVP_PKEY* key) {
  ERR_clear_error();
  BioPtr bio(BIO_new(BIO_s_mem()));
  if (!bio ||
      PEM_write_bio_PrivateKey(bio.get(), key, nullptr, nullptr, 0, nullptr, nullptr) != 1) {
    return openssl_error("encode private key");
  }
  return drain(bio.get());
}

Result<std::string> cert_pem(X509* cert) {
  ERR_clear_error();
  BioPtr bio(BIO_new(BIO_s_mem()));
  if (!bio || PEM_write_bio_X509(bio.get(), cert) != 1) return openssl_error("encode certificate");
  return drain(bio.get());
}

bool valid_for(X509* cert, std::time_t now, std::chrono::seconds margin) {
  std::time_t until = now + static_cast<std::time_t>(margin.count());
  // X509_cmp_time: -1 when the certificate's time is at or before the given one, 0 on error.
  return X509_cmp_time(X509_get0_notBefore(cert), &now) == -1 &&
         X509_cmp_time(X509_get0_notAfter(cert), &until) == 1;
}

bool expires_before(X509* cert, X509* other) {
  return ASN1_TIME_compare(X509_get0_notAfter(cert), X509_get0_notAfter(other)) < 0;
}

bool matches_key(X509* cert, EVP_PKEY* key) {
  EVP_PKEY* pub = X509_get0_pubkey(cert);
  bool eq = pub != nullptr && EVP_PKEY_eq(pub, key) == 1;
  ERR_clear_error();
  return eq;
}

bool signed_by(X509* cert, X509* issuer) {
  EVP_PKEY* pub = X509_get0_pubkey(issuer);
  bool ok = pub != nullptr &&
            X509_NAME_cmp(X509_get_issuer_name(cert), X509_get_subject_name(issuer)) == 0 &&
            X509_verify(cert, pub) == 1;
  ERR_clear_error();
  return ok;
}

bool is_ca(X509* cert) {
  bool ca = X509_check_ca(cert) != 0;
  ERR_clear_error();
  return ca;
}

std::string base64(std::string_view data) {
  std::string out(4 * ((data.size() + 2) / 3) + 1, '\0');
  int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(data.data()),
                          static_cast<int>(data.size()));
  out.resize(static_cast<size_t>(n));
  return out;
}

std::string base64_url(std::string_view data) {
  std::string out = base64(data);
  while (!out.empty() && out.back() == '=') out.pop_back();
  for (char& c : out) {
    if (c == '+') c = '-';
    if (c == '/') c = '_';
  }
  return out;
}

}  // namespace vkube::pki::detail
