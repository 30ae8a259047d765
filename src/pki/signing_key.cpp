// The service-account signing key: made once per data directory, read on
// every later start, so tokens issued before a restart still verify.
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/rsa.h>

#include "file_io.h"
#include "vkube/pki/pki.h"
#include "x509.h"

namespace vkube::pki {

namespace {

constexpr mode_t kDirMode = 0700;
constexpr mode_t kKeyMode = 0600;

Result<detail::PkeyPtr> generate(const std::string& alg) {
  if (alg == "ES256") return detail::generate_key();
  ERR_clear_error();
  detail::PkeyPtr key(EVP_RSA_gen(2048));
  if (!key) return detail::openssl_error("generate RSA 2048 key");
  return key;
}

}  // namespace

Result<std::string> ensure_service_account_key(const std::string& dir, const std::string& alg) {
  if (alg != "ES256" && alg != "RS256")
    return Status::invalid("--service-account-signing-alg must be ES256 or RS256, got '" + alg +
                           "'");
  const std::string pki_dir = dir + "/pki";
  VKUBE_RETURN_IF_ERROR(detail::make_dir(pki_dir, kDirMode).status());
  auto lock = detail::FileLock::acquire(pki_dir + "/.lock");
  if (!lock.is_ok()) return lock.status();
  const std::string path = pki_dir + "/service-account-" + (alg == "ES256" ? "es256" : "rs256") +
                           ".key";
  auto pem = detail::read_file(path, kKeyMode);
  if (pem.is_ok()) {
    auto key = detail::parse_key(*pem);
    if (!key.is_ok())
      return Status::corruption(path + " is not a private key: " + key.status().message());
    const int want = alg == "ES256" ? EVP_PKEY_EC : EVP_PKEY_RSA;
    if (EVP_PKEY_get_base_id(key->get()) != want)
      return Status::corruption(path + " does not hold a key for " + alg);
    return pem;
  }
  if (pem.status().code() != Code::kNotFound) return pem.status();
  auto key = generate(alg);
  if (!key.is_ok()) return key.status();
  auto out = detail::key_pem(key->get());
  if (!out.is_ok()) return out.status();
  VKUBE_RETURN_IF_ERROR(detail::write_file_atomic(path, *out, kKeyMode, /*durable=*/true));
  VKUBE_RETURN_IF_ERROR(detail::sync_dir(pki_dir));
  return out;
}

}  // namespace vkube::pki
