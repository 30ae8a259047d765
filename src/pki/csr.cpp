// Certificate signing requests: parsing, signing with a CA (kube's
// csrsigning controller and its PermissiveSigningPolicy), and the check of
// an issued certificate chain (kube's certificates validation).
#include "vkube/pki/csr.h"

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>

#include <ctime>
#include <map>
#include <memory>
#include <optional>

#include "x509.h"

namespace vkube::pki {

namespace {

using detail::openssl_error;

struct BioFree {
  void operator()(BIO* b) const { BIO_free(b); }
};
struct ReqFree {
  void operator()(X509_REQ* r) const { X509_REQ_free(r); }
};
using BioPtr = std::unique_ptr<BIO, BioFree>;
using ReqPtr = std::unique_ptr<X509_REQ, ReqFree>;

// Go's x509 backdates nothing; kube's signer backdates five minutes so a
// client whose clock lags a little can use the certificate at once.
constexpr long kBackdateSeconds = 5 * 60;

// One PEM block (Go's pem.Decode): its type, whether it had headers, its bytes.
struct PemBlock {
  std::string type;
  bool headers = false;
  std::string der;
};

// Reads the next PEM block from `bio`; nullopt when none is left. Text
// outside blocks is skipped, as Go's pem.Decode skips it.
std::optional<PemBlock> next_block(BIO* bio) {
  char* name = nullptr;
  char* header = nullptr;
  unsigned char* data = nullptr;
  long len = 0;
  if (PEM_read_bio(bio, &name, &header, &data, &len) != 1) {
    ERR_clear_error();
    return std::nullopt;
  }
  PemBlock b{name, header != nullptr && *header != '\0',
             std::string(reinterpret_cast<char*>(data), static_cast<size_t>(len))};
  OPENSSL_free(name);
  OPENSSL_free(header);
  OPENSSL_free(data);
  return b;
}

BioPtr read_bio(std::string_view pem) {
  return BioPtr(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
}

// kube's certificates.ParseCSR followed by CheckSignature.
Result<ReqPtr> parse_request(std::string_view pem) {
  ERR_clear_error();
  BioPtr bio = read_bio(pem);
  std::optional<PemBlock> block = bio ? next_block(bio.get()) : std::nullopt;
  if (!block || block->type != "CERTIFICATE REQUEST")
    return Status::invalid("PEM block type must be CERTIFICATE REQUEST");
  const auto* p = reinterpret_cast<const unsigned char*>(block->der.data());
  ReqPtr req(d2i_X509_REQ(nullptr, &p, static_cast<long>(block->der.size())));
  if (!req) {
    ERR_clear_error();
    return Status::invalid("asn1: structure error: malformed certificate request");
  }
  EVP_PKEY* key = X509_REQ_get0_pubkey(req.get());
  if (key == nullptr) {
    ERR_clear_error();
    return Status::invalid("x509: unsupported public key algorithm");
  }
  if (X509_REQ_verify(req.get(), key) != 1) {
    ERR_clear_error();
    return Status::invalid("x509: signature verification failure");
  }
  return req;
}

std::vector<std::string> name_entries(X509_NAME* name, int nid) {
  std::vector<std::string> out;
  for (int i = X509_NAME_get_index_by_NID(name, nid, -1); i >= 0;
       i = X509_NAME_get_index_by_NID(name, nid, i)) {
    ASN1_STRING* s = X509_NAME_ENTRY_get_data(X509_NAME_get_entry(name, i));
    unsigned char* utf8 = nullptr;
    int n = ASN1_STRING_to_UTF8(&utf8, s);
    if (n >= 0) out.emplace_back(reinterpret_cast<char*>(utf8), static_cast<size_t>(n));
    OPENSSL_free(utf8);
  }
  return out;
}

// certificates.k8s.io usage names -> OpenSSL's keyUsage / extKeyUsage words
// (kube's keyUsageDict and extKeyUsageDict).
const std::map<std::string, const char*>& key_usages() {
  static const std::map<std::string, const char*> m = {{"signing", "digitalSignature"},
                                                       {"digital signature", "digitalSignature"},
                                                       {"content commitment", "nonRepudiation"},
                                                       {"key encipherment", "keyEncipherment"},
                                                       {"key agreement", "keyAgreement"},
                                                       {"data encipherment", "dataEncipherment"},
                                                       {"cert sign", "keyCertSign"},
                                                       {"crl sign", "cRLSign"},
                                                       {"encipher only", "encipherOnly"},
                                                       {"decipher only", "decipherOnly"}};
  return m;
}

const std::map<std::string, const char*>& ext_key_usages() {
  static const std::map<std::string, const char*> m = {{"any", "anyExtendedKeyUsage"},
                                                       {"server auth", "serverAuth"},
                                                       {"client auth", "clientAuth"},
                                                       {"code signing", "codeSigning"},
                                                       {"email protection", "emailProtection"},
                                                       {"s/mime", "emailProtection"},
                                                       {"ipsec end system", "ipsecEndSystem"},
                                                       {"ipsec tunnel", "ipsecTunnel"},
                                                       {"ipsec user", "ipsecUser"},
                                                       {"timestamping", "timeStamping"},
                                                       {"ocsp signing", "OCSPSigning"},
                                                       {"microsoft sgc", "msSGC"},
                                                       {"netscape sgc", "nsSGC"}};
  return m;
}

// "critical,a,b" of the usages found in `dict` (each once); empty when none.
std::string usage_list(const std::vector<std::string>& usages,
                       const std::map<std::string, const char*>& dict, bool critical) {
  std::string out;
  for (const std::string& u : usages) {
    auto it = dict.find(u);
    if (it == dict.end() || out.find(it->second) != std::string::npos) continue;
    out += out.empty() ? "" : ",";
    out += it->second;
  }
  return out.empty() || !critical ? out : "critical," + out;
}

Status add_ext(X509* x, X509V3_CTX* ctx, int nid, const std::string& value) {
  X509_EXTENSION* ext = X509V3_EXT_nconf_nid(nullptr, ctx, nid, value.c_str());
  bool ok = ext != nullptr && X509_add_ext(x, ext, -1) == 1;
  X509_EXTENSION_free(ext);
  return ok ? Status::ok() : openssl_error(std::string("extension ") + OBJ_nid2sn(nid));
}

// The request's subjectAltName extension, copied as it is (DNS names, IPs,
// emails and URIs, as Go's template takes them from the request).
Status copy_sans(X509* x, X509_REQ* req) {
  STACK_OF(X509_EXTENSION)* exts = X509_REQ_get_extensions(req);
  Status s = Status::ok();
  for (int i = 0; exts != nullptr && i < sk_X509_EXTENSION_num(exts); ++i) {
    X509_EXTENSION* e = sk_X509_EXTENSION_value(exts, i);
    if (OBJ_obj2nid(X509_EXTENSION_get_object(e)) != NID_subject_alt_name) continue;
    if (X509_add_ext(x, e, -1) != 1) s = openssl_error("subjectAltName");
    break;
  }
  sk_X509_EXTENSION_pop_free(exts, X509_EXTENSION_free);
  ERR_clear_error();
  return s;
}

Status set_validity(X509* x, X509* ca, std::chrono::seconds ttl) {
  std::time_t start = std::time(nullptr) - kBackdateSeconds;
  const long secs = static_cast<long>(ttl.count());
  if (X509_time_adj_ex(X509_getm_notBefore(x), 0, 0, &start) == nullptr ||
      X509_time_adj_ex(X509_getm_notAfter(x), static_cast<int>(secs / 86400), secs % 86400,
                       &start) == nullptr)
    return openssl_error("set validity");
  if (ASN1_TIME_compare(X509_get0_notAfter(x), X509_get0_notAfter(ca)) > 0 &&
      X509_set1_notAfter(x, X509_get0_notAfter(ca)) != 1)
    return openssl_error("cap validity to the CA's");
  return Status::ok();
}

}  // namespace

Result<CsrSubject> parse_csr(std::string_view pem) {
  auto req = parse_request(pem);
  if (!req.is_ok()) return req.status();
  X509_NAME* subject = X509_REQ_get_subject_name(req->get());
  CsrSubject out;
  std::vector<std::string> cn = name_entries(subject, NID_commonName);
  if (!cn.empty()) out.common_name = cn.front();
  out.organizations = name_entries(subject, NID_organizationName);
  return out;
}

Result<std::string> sign_csr(const KeyPair& ca, std::string_view csr_pem,
                             const SignOptions& options) {
  auto req = parse_request(csr_pem);
  if (!req.is_ok()) return req.status();
  auto ca_cert = detail::parse_cert(ca.cert_pem);
  if (!ca_cert.is_ok()) return Status::invalid("CA certificate: " + ca_cert.status().message());
  auto ca_key = detail::parse_key(ca.key_pem);
  if (!ca_key.is_ok()) return Status::invalid("CA key: " + ca_key.status().message());
  if (!detail::matches_key(ca_cert->get(), ca_key->get()))
    return Status::invalid("the CA key does not match the CA certificate");
  ERR_clear_error();
  detail::X509Ptr x(X509_new());
  if (!x) return openssl_error("X509_new");
  X509* c = x.get();
  if (X509_set_version(c, X509_VERSION_3) != 1) return openssl_error("set version");
  VKUBE_RETURN_IF_ERROR(detail::set_serial(c));
  if (X509_set_subject_name(c, X509_REQ_get_subject_name(req->get())) != 1 ||
      X509_set_issuer_name(c, X509_get_subject_name(ca_cert->get())) != 1)
    return openssl_error("set names");
  VKUBE_RETURN_IF_ERROR(set_validity(c, ca_cert->get(), options.ttl));
  if (X509_set_pubkey(c, X509_REQ_get0_pubkey(req->get())) != 1)
    return openssl_error("set public key");
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, ca_cert->get(), c, nullptr, nullptr, 0);
  VKUBE_RETURN_IF_ERROR(add_ext(c, &ctx, NID_basic_constraints, "critical,CA:FALSE"));
  if (auto ku = usage_list(options.usages, key_usages(), true); !ku.empty())
    VKUBE_RETURN_IF_ERROR(add_ext(c, &ctx, NID_key_usage, ku));
  if (auto eku = usage_list(options.usages, ext_key_usages(), false); !eku.empty())
    VKUBE_RETURN_IF_ERROR(add_ext(c, &ctx, NID_ext_key_usage, eku));
  VKUBE_RETURN_IF_ERROR(add_ext(c, &ctx, NID_authority_key_identifier, "keyid"));
  VKUBE_RETURN_IF_ERROR(copy_sans(c, req->get()));
  if (X509_sign(c, ca_key->get(), EVP_sha256()) <= 0) return openssl_error("sign certificate");
  return detail::cert_pem(c);
}

Status check_certificate_pem(std::string_view pem) {
  if (pem.empty()) return Status::ok();
  BioPtr bio = read_bio(pem);
  if (!bio) return Status::internal("BIO_new_mem_buf");
  int blocks = 0;
  while (auto block = next_block(bio.get())) {
    if (block->type != "CERTIFICATE")
      return Status::invalid("only CERTIFICATE PEM blocks are allowed, found \"" + block->type +
                             "\"");
    if (block->headers) return Status::invalid("no PEM block headers are permitted");
    ++blocks;
    const auto* p = reinterpret_cast<const unsigned char*>(block->der.data());
    detail::X509Ptr cert(d2i_X509(nullptr, &p, static_cast<long>(block->der.size())));
    if (!cert) {
      ERR_clear_error();
      return Status::invalid("x509: malformed certificate");
    }
  }
  if (blocks == 0) return Status::invalid("must contain at least one CERTIFICATE PEM block");
  return Status::ok();
}

}  // namespace vkube::pki
