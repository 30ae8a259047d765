// JWS signatures (RFC 7515/7518) for service-account tokens: ES256 (ECDSA
// P-256, raw r||s) or RS256 (RSASSA-PKCS1-v1_5 with SHA-256), with the key's
// JWK (RFC 7517) as /openid/v1/jwks publishes it.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "vkube/common/status.h"

namespace vkube::apiserver {

class SigningKey {
 public:
  // The key of a PEM private key (EC P-256 or RSA); kInvalid for another
  // type or what is not a key. Thread-safe once made (const only).
  static Result<std::shared_ptr<const SigningKey>> parse(const std::string& pem);
  // parse(), remembered per PEM, so a server parses its key once; nullptr
  // for what parse refuses. Thread-safe.
  static std::shared_ptr<const SigningKey> cached(const std::string& pem);
  virtual ~SigningKey() = default;

  virtual const std::string& alg() const = 0;  // "ES256" or "RS256"
  // base64url (unpadded) SHA-256 of the public key's DER (PKIX), as kube's kid.
  virtual const std::string& kid() const = 0;
  // The public key as a JWK: kty, alg, use "sig", kid, and crv/x/y or n/e.
  virtual nlohmann::json jwk() const = 0;
  // The JWS signature of `data` (raw bytes); empty if OpenSSL fails.
  virtual std::string sign(std::string_view data) const = 0;
  // True when `sig` (raw bytes) is this key's signature of `data`.
  virtual bool verify(std::string_view data, std::string_view sig) const = 0;
};

}  // namespace vkube::apiserver
