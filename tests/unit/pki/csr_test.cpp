// Certificate signing requests: parse_csr reads what `openssl req` asked
// for, sign_csr issues a client certificate the CA verifies with the
// request's subject, usages and a capped lifetime, and bad input gets kube's
// words.
#include "vkube/pki/csr.h"

#include <catch2/catch.hpp>

#include "pki/pki_files.h"
#include "support/temp_dir.h"

namespace vkube::pki {
namespace {

using testing::openssl;
using testing::slurp;
using testing::spit;
using vkube::testing::TempDir;

// A request for CN=jane, O=devs, O=ops made by the openssl CLI, as a user would.
std::string jane_csr(const TempDir& dir, const std::string& key_type = "rsa:2048") {
  auto r = openssl("req -new -newkey " + key_type + " -nodes -keyout " + dir.sub("jane.key") +
                   " -subj '/O=devs/O=ops/CN=jane' -out " + dir.sub("jane.csr"));
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  return slurp(dir.sub("jane.csr"));
}

PkiOptions options_in(const TempDir& dir) {
  PkiOptions o;
  o.dir = dir.path();
  return o;
}

}  // namespace

TEST_CASE("parse_csr reads the user and groups a request asks for", "[pki]") {
  TempDir dir;
  auto subject = parse_csr(jane_csr(dir));
  REQUIRE(subject.is_ok());
  CHECK(subject->common_name == "jane");
  CHECK(subject->organizations == std::vector<std::string>{"devs", "ops"});
}

TEST_CASE("parse_csr refuses what is not a signed certificate request, in kube's words", "[pki]") {
  TempDir dir;
  auto not_pem = parse_csr("hello");
  REQUIRE_FALSE(not_pem.is_ok());
  CHECK(not_pem.status().message() == "PEM block type must be CERTIFICATE REQUEST");

  auto ca = ensure_pki(options_in(dir));
  REQUIRE(ca.is_ok());
  auto cert = parse_csr(ca->ca.cert_pem);
  REQUIRE_FALSE(cert.is_ok());
  CHECK(cert.status().message() == "PEM block type must be CERTIFICATE REQUEST");

  auto garbage = parse_csr(
      "-----BEGIN CERTIFICATE REQUEST-----\nAAAA\n-----END CERTIFICATE "
      "REQUEST-----\n");
  REQUIRE_FALSE(garbage.is_ok());
  CHECK(garbage.status().code() == Code::kInvalid);

  // A request whose subject was changed after signing fails its signature check.
  std::string pem = jane_csr(dir, "ec -pkeyopt ec_paramgen_curve:P-256");
  auto der = openssl("req -in " + dir.sub("jane.csr") + " -outform DER -out " + dir.sub("der"));
  REQUIRE(der.exit_code == 0);
  std::string bytes = slurp(dir.sub("der"));
  auto at = bytes.find("jane");
  REQUIRE(at != std::string::npos);
  bytes[at] = 'J';
  spit(dir.sub("der"), bytes);
  REQUIRE(
      openssl("req -inform DER -in " + dir.sub("der") + " -out " + dir.sub("bad.csr")).exit_code ==
      0);
  auto tampered = parse_csr(slurp(dir.sub("bad.csr")));
  REQUIRE_FALSE(tampered.is_ok());
  CHECK(tampered.status().message() == "x509: signature verification failure");
}

TEST_CASE("sign_csr issues a client certificate the CA verifies", "[pki]") {
  TempDir dir;
  auto bundle = ensure_pki(options_in(dir));
  REQUIRE(bundle.is_ok());
  SignOptions o;
  o.usages = {"digital signature", "key encipherment", "client auth"};
  o.ttl = std::chrono::hours(1);
  auto cert = sign_csr(bundle->ca, jane_csr(dir), o);
  REQUIRE(cert.is_ok());
  REQUIRE(check_certificate_pem(*cert).is_ok());
  spit(dir.sub("jane.crt"), *cert);
  spit(dir.sub("ca.crt"), bundle->ca.cert_pem);

  auto verify =
      openssl("verify -CAfile " + dir.sub("ca.crt") + " -purpose sslclient " + dir.sub("jane.crt"));
  INFO(verify.output);
  CHECK(verify.exit_code == 0);
  auto text = openssl("x509 -noout -text -in " + dir.sub("jane.crt")).output;
  CHECK(text.find("O = devs, O = ops, CN = jane") != std::string::npos);
  CHECK(text.find("TLS Web Client Authentication") != std::string::npos);
  CHECK(text.find("Digital Signature, Key Encipherment") != std::string::npos);
  CHECK(text.find("CA:FALSE") != std::string::npos);
  // One hour from a notBefore five minutes back: it ends within the hour.
  CHECK(openssl("x509 -noout -checkend 3600 -in " + dir.sub("jane.crt")).exit_code != 0);
  CHECK(openssl("x509 -noout -checkend 3000 -in " + dir.sub("jane.crt")).exit_code == 0);
  // The key the user kept matches the certificate.
  auto pub_cert = openssl("x509 -noout -pubkey -in " + dir.sub("jane.crt")).output;
  auto pub_key = openssl("pkey -pubout -in " + dir.sub("jane.key")).output;
  CHECK(pub_cert == pub_key);
}

TEST_CASE("check_certificate_pem accepts certificate chains only", "[pki]") {
  TempDir dir;
  auto bundle = ensure_pki(options_in(dir));
  REQUIRE(bundle.is_ok());
  CHECK(check_certificate_pem("").is_ok());
  CHECK(check_certificate_pem("notes\n" + bundle->admin.cert_pem + bundle->ca.cert_pem).is_ok());
  CHECK(check_certificate_pem("junk").message() ==
        "must contain at least one CERTIFICATE PEM block");
  CHECK(check_certificate_pem(bundle->admin.key_pem).message() ==
        "only CERTIFICATE PEM blocks are allowed, found \"PRIVATE KEY\"");
}

}  // namespace vkube::pki
