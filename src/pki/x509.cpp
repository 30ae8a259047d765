// Building certificates: subject, validity, extensions and signature.
#include "x509.h"

#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/rand.h>
#include <openssl/x509v3.h>

#include <cstdint>

namespace vkube::pki::detail {
namespace {

constexpr long kClockSkewSeconds = 60 * 60;

}  // namespace

Status set_serial(X509* x) {
  // 128 random bits, as Go's crypto/x509 users do; BN_bin2bn reads them as a
  // positive number, so the DER INTEGER is at most 17 bytes (RFC 5280 allows 20).
  unsigned char raw[16];
  if (RAND_bytes(raw, sizeof raw) != 1) return openssl_error("random serial");
  BIGNUM* bn = BN_bin2bn(raw, sizeof raw, nullptr);
  bool ok = bn != nullptr && BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x)) != nullptr;
  BN_free(bn);
  return ok ? Status::ok() : openssl_error("set serial");
}

namespace {

Status set_subject(X509* x, const CertSpec& spec) {
  X509_NAME* name = X509_get_subject_name(x);
  auto add = [name](int nid, const std::string& value) {
    return X509_NAME_add_entry_by_NID(name, nid, MBSTRING_UTF8,
                                      reinterpret_cast<const unsigned char*>(value.data()),
                                      static_cast<int>(value.size()), -1, 0) == 1;
  };
  // Kubernetes reads every O as a group; one RDN each, ahead of CN as kubeadm does.
  for (const auto& org : spec.organizations) {
    if (!add(NID_organizationName, org)) return openssl_error("subject O=" + org);
  }
  if (!add(NID_commonName, spec.common_name))
    return openssl_error("subject CN=" + spec.common_name);
  return Status::ok();
}

Status set_validity(X509* x, const CertSpec& spec, X509* issuer) {
  std::time_t now = std::time(nullptr);
  auto secs = spec.validity.count();
  if (X509_time_adj_ex(X509_getm_notBefore(x), 0, -kClockSkewSeconds, &now) == nullptr ||
      X509_time_adj_ex(X509_getm_notAfter(x), static_cast<int>(secs / 86400),
                       static_cast<long>(secs % 86400), &now) == nullptr) {
    return openssl_error("set validity");
  }
  if (issuer != nullptr &&
      ASN1_TIME_compare(X509_get0_notAfter(x), X509_get0_notAfter(issuer)) > 0 &&
      X509_set1_notAfter(x, X509_get0_notAfter(issuer)) != 1) {
    return openssl_error("cap validity to the CA's");
  }
  return Status::ok();
}

Status add_ext(X509* x, X509V3_CTX* ctx, int nid, const char* value) {
  X509_EXTENSION* ext = X509V3_EXT_nconf_nid(nullptr, ctx, nid, value);
  bool ok = ext != nullptr && X509_add_ext(x, ext, -1) == 1;
  X509_EXTENSION_free(ext);
  return ok ? Status::ok() : openssl_error(std::string("extension ") + OBJ_nid2sn(nid));
}

// Built as GENERAL_NAMEs rather than parsed from "DNS:a,IP:b" text, so that no
// host string can be misread as configuration syntax.
Status add_sans(X509* x, const std::vector<SanEntry>& sans) {
  GENERAL_NAMES* names = sk_GENERAL_NAME_new_null();
  bool ok = names != nullptr;
  for (size_t i = 0; ok && i < sans.size(); ++i) {
    const SanEntry& san = sans[i];
    ASN1_STRING* value = san.is_ip ? ASN1_OCTET_STRING_new() : ASN1_IA5STRING_new();
    GENERAL_NAME* name = GENERAL_NAME_new();
    ok = value != nullptr && name != nullptr &&
         ASN1_STRING_set(value, san.value.data(), static_cast<int>(san.value.size())) == 1;
    if (ok) {
      GENERAL_NAME_set0_value(name, san.is_ip ? GEN_IPADD : GEN_DNS, value);
      ok = sk_GENERAL_NAME_push(names, name) > 0;
      if (!ok) GENERAL_NAME_free(name);  // frees value too
    } else {
      ASN1_STRING_free(value);
      GENERAL_NAME_free(name);
    }
  }
  ok = ok && X509_add1_ext_i2d(x, NID_subject_alt_name, names, 0, X509V3_ADD_DEFAULT) == 1;
  GENERAL_NAMES_free(names);
  return ok ? Status::ok() : openssl_error("subjectAltName");
}

Status add_extensions(X509* x, const CertSpec& spec, X509* issuer) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, spec.kind == Kind::kCa ? x : issuer, x, nullptr, nullptr, 0);
  struct Ext {
    int nid;
    const char* value;
  };
  std::vector<Ext> exts;
  switch (spec.kind) {
    case Kind::kCa:
      exts = {{NID_basic_constraints, "critical,CA:TRUE"},
              {NID_key_usage, "critical,keyCertSign,cRLSign,digitalSignature"},
              {NID_subject_key_identifier, "hash"}};
      break;
    case Kind::kServing:
      exts = {{NID_basic_constraints, "critical,CA:FALSE"},
              {NID_key_usage, "critical,digitalSignature,keyEncipherment"},
              {NID_ext_key_usage, "serverAuth"},
              {NID_subject_key_identifier, "hash"},
              {NID_authority_key_identifier, "keyid,issuer"}};
      break;
    case Kind::kClient:
      exts = {{NID_basic_constraints, "critical,CA:FALSE"},
              {NID_key_usage, "critical,digitalSignature"},
              {NID_ext_key_usage, "clientAuth"},
              {NID_subject_key_identifier, "hash"},
              {NID_authority_key_identifier, "keyid,issuer"}};
      break;
  }
  for (const Ext& ext : exts) VKUBE_RETURN_IF_ERROR(add_ext(x, &ctx, ext.nid, ext.value));
  if (spec.kind == Kind::kServing) VKUBE_RETURN_IF_ERROR(add_sans(x, spec.sans));
  return Status::ok();
}

}  // namespace

Result<X509Ptr> issue(const CertSpec& spec, EVP_PKEY* subject_key, X509* issuer,
                      EVP_PKEY* issuer_key) {
  ERR_clear_error();
  X509Ptr x(X509_new());
  if (!x) return openssl_error("X509_new");
  if (spec.kind == Kind::kCa) {
    issuer = nullptr;
    issuer_key = subject_key;
  } else if (issuer == nullptr || issuer_key == nullptr) {
    return Status::internal("a leaf certificate needs an issuer");
  }
  if (X509_set_version(x.get(), X509_VERSION_3) != 1) return openssl_error("set version");
  VKUBE_RETURN_IF_ERROR(set_serial(x.get()));
  VKUBE_RETURN_IF_ERROR(set_subject(x.get(), spec));
  X509_NAME* issuer_name = issuer ? X509_get_subject_name(issuer) : X509_get_subject_name(x.get());
  if (X509_set_issuer_name(x.get(), issuer_name) != 1) return openssl_error("set issuer");
  VKUBE_RETURN_IF_ERROR(set_validity(x.get(), spec, issuer));
  if (X509_set_pubkey(x.get(), subject_key) != 1) return openssl_error("set public key");
  VKUBE_RETURN_IF_ERROR(add_extensions(x.get(), spec, issuer));
  if (X509_sign(x.get(), issuer_key, EVP_sha256()) <= 0) return openssl_error("sign certificate");
  return x;
}

Result<PkeyPtr> generate_key() {
  ERR_clear_error();
  PkeyPtr key(EVP_EC_gen("P-256"));
  if (!key) return openssl_error("generate P-256 key");
  return key;
}

}  // namespace vkube::pki::detail
