#include "jws.h"

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <map>
#include <mutex>

#include "vkube/common/base64.h"

namespace vkube::apiserver {

namespace {

constexpr size_t kP256Bytes = 32;

struct PkeyFree {
  void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
};
struct CtxFree {
  void operator()(EVP_MD_CTX* p) const { EVP_MD_CTX_free(p); }
};
struct BnFree {
  void operator()(BIGNUM* p) const { BN_free(p); }
};
struct SigFree {
  void operator()(ECDSA_SIG* p) const { ECDSA_SIG_free(p); }
};
using PkeyPtr = std::unique_ptr<EVP_PKEY, PkeyFree>;
using BnPtr = std::unique_ptr<BIGNUM, BnFree>;

std::string b64url(std::string_view s) { return base64_encode(s, /*url_safe=*/true, /*pad=*/false); }

// The big-endian bytes of a key parameter, left-padded to `width` (0: minimal).
std::string bn_param(EVP_PKEY* key, const char* name, size_t width) {
  BIGNUM* raw = nullptr;
  if (EVP_PKEY_get_bn_param(key, name, &raw) != 1) return "";
  BnPtr bn(raw);
  size_t n = width ? width : static_cast<size_t>(BN_num_bytes(bn.get()));
  std::string out(n, '\0');
  if (BN_bn2binpad(bn.get(), reinterpret_cast<unsigned char*>(out.data()), static_cast<int>(n)) < 0)
    return "";
  return out;
}

class OpenSslKey final : public SigningKey {
 public:
  OpenSslKey(PkeyPtr key, bool ec) : key_(std::move(key)), ec_(ec) {
    alg_ = ec_ ? "ES256" : "RS256";
    unsigned char* der = nullptr;
    int len = i2d_PUBKEY(key_.get(), &der);
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int dlen = 0;
    if (len > 0) EVP_Digest(der, static_cast<size_t>(len), digest, &dlen, EVP_sha256(), nullptr);
    OPENSSL_free(der);
    kid_ = b64url(std::string_view(reinterpret_cast<const char*>(digest), dlen));
    jwk_ = {{"use", "sig"}, {"kid", kid_}, {"alg", alg_}};
    if (ec_) {
      jwk_["kty"] = "EC";
      jwk_["crv"] = "P-256";
      jwk_["x"] = b64url(bn_param(key_.get(), OSSL_PKEY_PARAM_EC_PUB_X, kP256Bytes));
      jwk_["y"] = b64url(bn_param(key_.get(), OSSL_PKEY_PARAM_EC_PUB_Y, kP256Bytes));
    } else {
      jwk_["kty"] = "RSA";
      jwk_["n"] = b64url(bn_param(key_.get(), OSSL_PKEY_PARAM_RSA_N, 0));
      jwk_["e"] = b64url(bn_param(key_.get(), OSSL_PKEY_PARAM_RSA_E, 0));
    }
  }

  const std::string& alg() const override { return alg_; }
  const std::string& kid() const override { return kid_; }
  nlohmann::json jwk() const override { return jwk_; }

  std::string sign(std::string_view data) const override {
    std::unique_ptr<EVP_MD_CTX, CtxFree> ctx(EVP_MD_CTX_new());
    size_t len = 0;
    if (!ctx || EVP_DigestSignInit(ctx.get(), nullptr, EVP_sha256(), nullptr, key_.get()) != 1 ||
        EVP_DigestSign(ctx.get(), nullptr, &len, reinterpret_cast<const unsigned char*>(data.data()),
                       data.size()) != 1) {
      ERR_clear_error();
      return "";
    }
    std::string sig(len, '\0');
    auto* out = reinterpret_cast<unsigned char*>(sig.data());
    if (EVP_DigestSign(ctx.get(), out, &len, reinterpret_cast<const unsigned char*>(data.data()),
                       data.size()) != 1) {
      ERR_clear_error();
      return "";
    }
    sig.resize(len);
    return ec_ ? der_to_raw(sig) : sig;
  }

  bool verify(std::string_view data, std::string_view sig) const override {
    std::string der;
    if (ec_) {
      der = raw_to_der(sig);
      if (der.empty()) return false;
      sig = der;
    }
    std::unique_ptr<EVP_MD_CTX, CtxFree> ctx(EVP_MD_CTX_new());
    bool ok = ctx &&
              EVP_DigestVerifyInit(ctx.get(), nullptr, EVP_sha256(), nullptr, key_.get()) == 1 &&
              EVP_DigestVerify(ctx.get(), reinterpret_cast<const unsigned char*>(sig.data()),
                               sig.size(), reinterpret_cast<const unsigned char*>(data.data()),
                               data.size()) == 1;
    ERR_clear_error();
    return ok;
  }

 private:
  // ECDSA-Sig-Value (DER) <-> JWS's fixed-width r||s.
  static std::string der_to_raw(const std::string& der) {
    const auto* p = reinterpret_cast<const unsigned char*>(der.data());
    std::unique_ptr<ECDSA_SIG, SigFree> s(d2i_ECDSA_SIG(nullptr, &p, static_cast<long>(der.size())));
    if (!s) return "";
    std::string out(2 * kP256Bytes, '\0');
    auto* o = reinterpret_cast<unsigned char*>(out.data());
    if (BN_bn2binpad(ECDSA_SIG_get0_r(s.get()), o, kP256Bytes) < 0 ||
        BN_bn2binpad(ECDSA_SIG_get0_s(s.get()), o + kP256Bytes, kP256Bytes) < 0)
      return "";
    return out;
  }
  static std::string raw_to_der(std::string_view raw) {
    if (raw.size() != 2 * kP256Bytes) return "";
    const auto* p = reinterpret_cast<const unsigned char*>(raw.data());
    std::unique_ptr<ECDSA_SIG, SigFree> s(ECDSA_SIG_new());
    BIGNUM* r = BN_bin2bn(p, kP256Bytes, nullptr);
    BIGNUM* ss = BN_bin2bn(p + kP256Bytes, kP256Bytes, nullptr);
    if (!s || !r || !ss || ECDSA_SIG_set0(s.get(), r, ss) != 1) {
      BN_free(r);
      BN_free(ss);
      return "";
    }
    unsigned char* der = nullptr;
    int len = i2d_ECDSA_SIG(s.get(), &der);
    if (len <= 0) return "";
    std::string out(reinterpret_cast<const char*>(der), static_cast<size_t>(len));
    OPENSSL_free(der);
    return out;
  }

  PkeyPtr key_;
  bool ec_;
  std::string alg_, kid_;
  nlohmann::json jwk_;
};

}  // namespace

Result<std::shared_ptr<const SigningKey>> SigningKey::parse(const std::string& pem) {
  std::unique_ptr<BIO, decltype(&BIO_free)> bio(
      BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())), &BIO_free);
  PkeyPtr key(bio ? PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr) : nullptr);
  ERR_clear_error();
  if (!key) return Status::invalid("the service-account key is not a PEM private key");
  const int type = EVP_PKEY_get_base_id(key.get());
  if (type == EVP_PKEY_EC) {
    char curve[64] = {0};
    size_t len = 0;
    if (EVP_PKEY_get_utf8_string_param(key.get(), OSSL_PKEY_PARAM_GROUP_NAME, curve, sizeof curve,
                                       &len) != 1 ||
        std::string_view(curve) != "prime256v1")
      return Status::invalid("the service-account EC key must be on P-256");
    return std::shared_ptr<const SigningKey>(std::make_shared<OpenSslKey>(std::move(key), true));
  }
  if (type == EVP_PKEY_RSA)
    return std::shared_ptr<const SigningKey>(std::make_shared<OpenSslKey>(std::move(key), false));
  return Status::invalid("the service-account key must be EC P-256 or RSA");
}

std::shared_ptr<const SigningKey> SigningKey::cached(const std::string& pem) {
  static std::mutex mu;
  static std::map<std::string, std::shared_ptr<const SigningKey>> keys;
  std::lock_guard lock(mu);
  auto it = keys.find(pem);
  if (it != keys.end()) return it->second;
  auto parsed = parse(pem);
  std::shared_ptr<const SigningKey> key = parsed.is_ok() ? std::move(parsed).value() : nullptr;
  keys.emplace(pem, key);
  return key;
}

}  // namespace vkube::apiserver
