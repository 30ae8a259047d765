// Certificate signing requests (PKCS#10), as the certificates.k8s.io API
// carries them: reading what a request asks for, signing it with a CA (the
// kubernetes.io/kube-apiserver-client signer), and checking an issued
// certificate chain. Errors are worded as Go's crypto/x509 and kube's
// certificates helpers word them, since they end up in API answers.
// Functions here share no state and are safe to call from any thread.
#pragma once

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include "vkube/common/status.h"
#include "vkube/pki/pki.h"

namespace vkube::pki {

// What a certificate request asks for, as kube's authenticator will read the
// certificate made from it: CN is the user, each O a group.
struct CsrSubject {
  std::string common_name;
  std::vector<std::string> organizations;
};

// Parses the first PEM block of `pem`, which must be a "CERTIFICATE REQUEST"
// whose self-signature verifies. kInvalid with kube's wording ("PEM block
// type must be CERTIFICATE REQUEST", "x509: ...") otherwise.
Result<CsrSubject> parse_csr(std::string_view pem);

struct SignOptions {
  // Key usages as certificates.k8s.io names them ("digital signature",
  // "key encipherment", "client auth", "server auth", ...).
  std::vector<std::string> usages;
  // How long the certificate is valid from its notBefore (now minus a
  // five-minute backdate, as kube's signer does); never past the CA's end.
  std::chrono::seconds ttl{std::chrono::hours(24 * 365)};
};

// Issues a certificate for the request `csr_pem`, signed by `ca`: the
// request's subject, public key and subject alternative names, the usages
// asked for, basicConstraints CA:FALSE. Returns the PEM "CERTIFICATE".
// kInvalid for a request parse_csr refuses or a CA key that does not match
// its certificate; kInternal on OpenSSL failures.
Result<std::string> sign_csr(const KeyPair& ca, std::string_view csr_pem,
                             const SignOptions& options);

// kube's check of status.certificate: one or more PEM blocks, every one a
// "CERTIFICATE" without headers that parses. kInvalid with kube's message.
// An empty text is valid (nothing issued yet).
Status check_certificate_pem(std::string_view pem);

}  // namespace vkube::pki
