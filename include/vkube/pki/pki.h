// Certificates and kubeconfigs for a vkube endpoint (OpenSSL 3).
//
// On first start an endpoint makes a CA, a serving certificate signed by it
// (SANs from flags), and an admin client certificate (CN = user, O = groups,
// as Kubernetes reads them), and writes an admin kubeconfig. Later starts
// reuse the files, renewing the serving certificate when its SANs changed.
//
// Keys are ECDSA P-256, signatures SHA-256, serial numbers random 128-bit.
// Every certificate is valid from one hour ago (clock skew between hosts).
// Functions here are safe to call from any thread; they share no state.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

#include "vkube/common/status.h"

namespace vkube::pki {

struct KeyPair {
  std::string cert_pem;
  std::string key_pem;  // PKCS#8 "PRIVATE KEY"
};

struct Bundle {
  KeyPair ca;
  KeyPair serving;
  KeyPair admin;  // CN=kubernetes-admin, O=system:masters
};

struct PkiOptions {
  std::string dir;  // files live in dir/pki/
  // Serving SANs: IP addresses (IPv6 may be [bracketed]) or DNS names.
  std::vector<std::string> hosts;
  std::string ca_common_name = "vkube-ca";
  std::chrono::hours validity{24 * 365};          // serving and admin certificates
  std::chrono::hours ca_validity{24 * 365 * 10};  // the CA
};

// Loads the bundle from dir/pki (ca.crt, ca.key, server.crt, server.key,
// admin.crt, admin.key), creating what is missing; the directory gets mode
// 0700, private keys 0600. Reuses existing files, and re-issues:
//  - the serving certificate when its SANs do not cover options.hosts plus
//    "localhost", "127.0.0.1" and "::1";
//  - a leaf that expires within 30 days (or within half of `validity`, if that
//    is shorter; never merely because it ends with its CA), is not valid yet,
//    does not match its key, or is not signed by the CA.
// The CA's identity is ca.key: a new CA is made only when ca.key and ca.crt
// are both absent, and ca.crt is rebuilt from ca.key (same subject and key,
// so everything the CA signed stays valid) when it is missing, unreadable or
// expires within 30 days. Errors: kInvalid for a host that is neither an IP
// address nor a DNS name; kCorruption when ca.key is missing beside ca.crt
// or unreadable, or ca.crt belongs to another key (an existing CA is never
// replaced silently); kInternal on I/O or OpenSSL failures, with OpenSSL's
// message. Callers on one dir, in any process, are serialised by a lock on
// dir/pki/.lock.
Result<Bundle> ensure_pki(const PkiOptions& options);

// A client certificate signed by `ca` for user `cn` in groups `orgs` (one O
// RDN each), with extendedKeyUsage clientAuth, valid for `validity` but never
// beyond the CA. kInvalid for an empty or over-long (> 64 bytes) cn or org, or
// a CA key that does not match its certificate; kInternal on OpenSSL failures.
Result<KeyPair> issue_client_cert(const KeyPair& ca, const std::string& cn,
                                  const std::vector<std::string>& orgs,
                                  std::chrono::hours validity);

// Writes a kubeconfig (mode 0600) with one cluster, user and context named
// `name`, embedding the CA and the client certificate as base64 data, and
// makes it the current context. Atomic (temporary file + rename); creates
// missing parent directories; leaves an identical existing file untouched.
// kInternal on I/O failures.
Status write_kubeconfig(const std::string& path, const std::string& name,
                        const std::string& server_url, const std::string& ca_pem,
                        const KeyPair& client);

// The key service-account tokens are signed with, as PKCS#8 PEM, for JWS
// algorithm `alg`: "ES256" (ECDSA P-256) or "RS256" (RSA 2048). Read from
// dir/pki/service-account-es256.key or -rs256.key, made there (0600, durable)
// when absent, so one data directory keeps one key per algorithm and tokens
// survive restarts. kInvalid for another alg; kCorruption when the file is not
// a private key of that type; kInternal on I/O or OpenSSL failures. Callers on
// one dir are serialised by dir/pki/.lock.
Result<std::string> ensure_service_account_key(const std::string& dir, const std::string& alg);

// `bytes` random bytes from OpenSSL's CSPRNG as unpadded URL-safe base64,
// e.g. for bearer tokens (32 bytes give 43 characters). Aborts the process if
// the CSPRNG fails, since no weaker token may ever be handed out.
std::string random_token(size_t bytes);

}  // namespace vkube::pki
