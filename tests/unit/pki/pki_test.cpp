// ensure_pki and issue_client_cert, checked with the openssl CLI.
#include "vkube/pki/pki.h"

#include <catch2/catch.hpp>

#include <chrono>
#include <ctime>
#include <set>
#include <sstream>

#include "pki/pki_files.h"
#include "support/temp_dir.h"

namespace vkube::pki {
namespace {

using testing::inode_of;
using testing::mode_of;
using testing::openssl;
using testing::slurp;
using testing::spit;
using vkube::testing::TempDir;

const char* const kFiles[] = {"ca.crt",     "ca.key",    "server.crt",
                              "server.key", "admin.crt", "admin.key"};

PkiOptions options_in(const TempDir& dir, std::vector<std::string> hosts = {}) {
  PkiOptions o;
  o.dir = dir.path();
  o.hosts = std::move(hosts);
  return o;
}

std::string text_of(const std::string& cert_path) {
  auto r = openssl("x509 -noout -text -in " + cert_path);
  REQUIRE(r.exit_code == 0);
  return r.output;
}

std::string verify(const std::string& ca, const std::string& purpose, const std::string& cert) {
  return openssl("verify -CAfile " + ca + " -purpose " + purpose + " " + cert).output;
}

TEST_CASE("ensure_pki creates the files, with private modes", "[pki]") {
  TempDir dir;
  auto bundle = ensure_pki(options_in(dir, {"10.1.2.3", "api.example.com"}));
  REQUIRE(bundle.is_ok());
  std::string pki = dir.sub("pki");
  CHECK(mode_of(pki) == 0700);
  for (const char* f : kFiles) {
    INFO(f);
    bool is_key = std::string(f).ends_with(".key");
    CHECK(mode_of(pki + "/" + f) == (is_key ? 0600 : 0644));
  }
  CHECK(slurp(pki + "/ca.crt") == bundle->ca.cert_pem);
  CHECK(slurp(pki + "/ca.key") == bundle->ca.key_pem);
  CHECK(slurp(pki + "/server.crt") == bundle->serving.cert_pem);
  CHECK(slurp(pki + "/admin.key") == bundle->admin.key_pem);
  CHECK_THAT(bundle->serving.key_pem, Catch::StartsWith("-----BEGIN PRIVATE KEY-----"));
}

TEST_CASE("the certificates say what clients check", "[pki]") {
  TempDir dir;
  REQUIRE(ensure_pki(options_in(dir, {"10.1.2.3", "API.example.com", "[2001:db8::7]"})).is_ok());
  std::string pki = dir.sub("pki");
  std::string ca = pki + "/ca.crt";

  CHECK_THAT(verify(ca, "sslserver", pki + "/server.crt"), Catch::Contains(": OK"));
  CHECK_THAT(verify(ca, "sslclient", pki + "/admin.crt"), Catch::Contains(": OK"));
  // Each certificate is good for its own purpose only.
  CHECK_THAT(verify(ca, "sslserver", pki + "/admin.crt"), !Catch::Contains(": OK"));
  CHECK_THAT(verify(ca, "sslclient", pki + "/server.crt"), !Catch::Contains(": OK"));

  std::string ca_text = text_of(ca);
  CHECK_THAT(ca_text, Catch::Contains("CA:TRUE") && Catch::Contains("Certificate Sign, CRL Sign") &&
                          Catch::Contains("Subject Key Identifier") &&
                          Catch::Contains("Subject: CN = vkube-ca") &&
                          Catch::Contains("ecdsa-with-SHA256") && Catch::Contains("prime256v1"));

  std::string server = text_of(pki + "/server.crt");
  CHECK_THAT(server, Catch::Contains("Subject: CN = 10.1.2.3") &&
                         Catch::Contains("TLS Web Server Authentication") &&
                         Catch::Contains("Digital Signature, Key Encipherment") &&
                         Catch::Contains("Authority Key Identifier") &&
                         Catch::Contains("CA:FALSE"));
  CHECK_THAT(server, Catch::Contains("IP Address:10.1.2.3, DNS:api.example.com, "
                                     "IP Address:2001:DB8:0:0:0:0:0:7, DNS:localhost, "
                                     "IP Address:127.0.0.1, IP Address:0:0:0:0:0:0:0:1\n"));

  std::string admin = text_of(pki + "/admin.crt");
  CHECK_THAT(admin, Catch::Contains("Subject: O = system:masters, CN = kubernetes-admin") &&
                        Catch::Contains("TLS Web Client Authentication"));
  CHECK_THAT(admin, !Catch::Contains("Subject Alternative Name"));

  // 128-bit random serials: two certificates never share one.
  auto serial = [](const std::string& cert) {
    return openssl("x509 -noout -serial -in " + cert).output;
  };
  CHECK(serial(ca) != serial(pki + "/server.crt"));
  CHECK(serial(pki + "/server.crt") != serial(pki + "/admin.crt"));

  // Each key belongs to its certificate.
  for (const char* name : {"ca", "server", "admin"}) {
    INFO(name);
    auto from_cert = openssl("x509 -noout -pubkey -in " + pki + "/" + name + ".crt");
    auto from_key = openssl("pkey -pubout -in " + pki + "/" + name + ".key");
    CHECK(from_cert.exit_code == 0);
    CHECK(from_cert.output == from_key.output);
  }

  // Valid from an hour ago (clock skew), for a year; the CA for ten.
  auto dates = openssl("x509 -noout -checkend 0 -in " + pki + "/server.crt");
  CHECK(dates.exit_code == 0);
  CHECK(openssl("x509 -noout -checkend 31000000 -in " + pki + "/server.crt").exit_code == 0);
  CHECK(openssl("x509 -noout -checkend 32000000 -in " + pki + "/server.crt").exit_code == 1);
  CHECK(openssl("x509 -noout -checkend 315000000 -in " + ca).exit_code == 0);
}

TEST_CASE("ensure_pki reuses the files it made", "[pki]") {
  TempDir dir;
  auto first = ensure_pki(options_in(dir, {"10.0.0.1"}));
  REQUIRE(first.is_ok());
  std::string pki = dir.sub("pki");
  ino_t ca_inode = inode_of(pki + "/ca.crt");

  auto second = ensure_pki(options_in(dir, {"10.0.0.1"}));
  REQUIRE(second.is_ok());
  CHECK(second->ca.cert_pem == first->ca.cert_pem);
  CHECK(second->ca.key_pem == first->ca.key_pem);
  CHECK(second->serving.cert_pem == first->serving.cert_pem);
  CHECK(second->admin.cert_pem == first->admin.cert_pem);
  CHECK(inode_of(pki + "/ca.crt") == ca_inode);  // not even rewritten

  // Fewer hosts, or the same ones spelled differently, are still covered.
  auto fewer = ensure_pki(options_in(dir, {"LOCALHOST", "::0001"}));
  REQUIRE(fewer.is_ok());
  CHECK(fewer->serving.cert_pem == first->serving.cert_pem);

  // A key copied in with a loose mode is tightened.
  REQUIRE(::chmod((pki + "/admin.key").c_str(), 0644) == 0);
  REQUIRE(ensure_pki(options_in(dir, {"10.0.0.1"})).is_ok());
  CHECK(mode_of(pki + "/admin.key") == 0600);
}

TEST_CASE("a new host re-issues the serving certificate and keeps the CA", "[pki]") {
  TempDir dir;
  auto first = ensure_pki(options_in(dir, {"10.0.0.1"}));
  REQUIRE(first.is_ok());
  auto more = ensure_pki(options_in(dir, {"10.0.0.1", "tenant-a.example.com"}));
  REQUIRE(more.is_ok());
  CHECK(more->ca.cert_pem == first->ca.cert_pem);
  CHECK(more->admin.cert_pem == first->admin.cert_pem);
  CHECK(more->serving.cert_pem != first->serving.cert_pem);
  CHECK(more->serving.key_pem != first->serving.key_pem);

  std::string pki = dir.sub("pki");
  CHECK_THAT(text_of(pki + "/server.crt"), Catch::Contains("DNS:tenant-a.example.com"));
  CHECK_THAT(verify(pki + "/ca.crt", "sslserver", pki + "/server.crt"), Catch::Contains(": OK"));
  // The old admin kubeconfig keeps working: the admin certificate still verifies.
  CHECK_THAT(verify(pki + "/ca.crt", "sslclient", pki + "/admin.crt"), Catch::Contains(": OK"));
}

TEST_CASE("certificates that expire soon are re-issued", "[pki]") {
  TempDir dir;
  std::string pki = dir.sub("pki");
  auto opts = options_in(dir);
  opts.validity = std::chrono::hours(24 * 10);
  auto short_lived = ensure_pki(opts);
  REQUIRE(short_lived.is_ok());
  // Re-using a 10-day certificate on a 10-day policy is fine (renewal at half-life)...
  auto again = ensure_pki(opts);
  REQUIRE(again.is_ok());
  CHECK(again->serving.cert_pem == short_lived->serving.cert_pem);

  // ...but on a one-year policy it expires within 30 days.
  auto renewed = ensure_pki(options_in(dir));
  REQUIRE(renewed.is_ok());
  CHECK(renewed->ca.cert_pem == short_lived->ca.cert_pem);
  CHECK(renewed->serving.cert_pem != short_lived->serving.cert_pem);
  CHECK(renewed->admin.cert_pem != short_lived->admin.cert_pem);
  CHECK(openssl("x509 -noout -checkend 31000000 -in " + pki + "/admin.crt").exit_code == 0);
}

TEST_CASE("a CA near its end is renewed with the same key", "[pki]") {
  TempDir dir;
  std::string pki = dir.sub("pki");
  auto opts = options_in(dir);
  opts.ca_validity = std::chrono::hours(24 * 20);
  auto first = ensure_pki(opts);
  REQUIRE(first.is_ok());
  // Leaves never outlive their CA; being capped is no reason to re-issue them.
  CHECK(openssl("x509 -noout -checkend 1728000 -in " + pki + "/admin.crt").exit_code == 1);
  auto again = ensure_pki(opts);
  REQUIRE(again.is_ok());
  CHECK(again->ca.cert_pem == first->ca.cert_pem);
  CHECK(again->admin.cert_pem == first->admin.cert_pem);
  spit(dir.sub("old-admin.crt"), first->admin.cert_pem);

  // 20 days left is within the 30-day renewal window of a 10-year CA.
  auto renewed = ensure_pki(options_in(dir));
  REQUIRE(renewed.is_ok());
  CHECK(renewed->ca.key_pem == first->ca.key_pem);
  CHECK(renewed->ca.cert_pem != first->ca.cert_pem);
  CHECK(renewed->admin.cert_pem != first->admin.cert_pem);
  CHECK(openssl("x509 -noout -checkend 315000000 -in " + pki + "/ca.crt").exit_code == 0);
  // Kubeconfigs already handed out keep working with the renewed CA.
  CHECK_THAT(verify(pki + "/ca.crt", "sslclient", dir.sub("old-admin.crt")),
             Catch::Contains(": OK"));
}

TEST_CASE("ensure_pki never replaces an existing CA silently", "[pki]") {
  TempDir dir;
  auto first = ensure_pki(options_in(dir));
  REQUIRE(first.is_ok());
  std::string pki = dir.sub("pki");

  SECTION("ca.key missing") {
    REQUIRE(::unlink((pki + "/ca.key").c_str()) == 0);
    auto r = ensure_pki(options_in(dir));
    REQUIRE_FALSE(r.is_ok());
    CHECK(r.status().code() == Code::kCorruption);
    CHECK_THAT(r.status().message(), Catch::Contains("ca.key is missing"));
    CHECK(slurp(pki + "/ca.crt") == first->ca.cert_pem);
  }
  SECTION("ca.key of another CA") {
    TempDir other;
    REQUIRE(ensure_pki(options_in(other)).is_ok());
    spit(pki + "/ca.key", slurp(other.sub("pki/ca.key")));
    auto r = ensure_pki(options_in(dir));
    REQUIRE_FALSE(r.is_ok());
    CHECK(r.status().code() == Code::kCorruption);
  }
  SECTION("ca.key garbled") {
    spit(pki + "/ca.key", "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n");
    auto r = ensure_pki(options_in(dir));
    REQUIRE_FALSE(r.is_ok());
    CHECK(r.status().code() == Code::kCorruption);
    CHECK_THAT(r.status().message(), Catch::Contains("ca.key"));
  }
  SECTION("ca.crt lost or damaged: rebuilt from ca.key, issued certificates stay valid") {
    if (GENERATE(true, false)) {
      REQUIRE(::unlink((pki + "/ca.crt").c_str()) == 0);
    } else {
      spit(pki + "/ca.crt", "");  // as a crash may leave it: it is not synced
    }
    auto r = ensure_pki(options_in(dir));
    REQUIRE(r.is_ok());
    CHECK(r->ca.key_pem == first->ca.key_pem);
    CHECK(r->ca.cert_pem != first->ca.cert_pem);
    CHECK(r->serving.cert_pem == first->serving.cert_pem);
    CHECK(r->admin.cert_pem == first->admin.cert_pem);
    CHECK_THAT(verify(pki + "/ca.crt", "sslserver", pki + "/server.crt"), Catch::Contains(": OK"));
    // The old ca.crt, as kubeconfigs carry it, still verifies the server.
    spit(dir.sub("old-ca.crt"), first->ca.cert_pem);
    CHECK_THAT(verify(dir.sub("old-ca.crt"), "sslserver", pki + "/server.crt"),
               Catch::Contains(": OK"));
  }
  SECTION("both lost: a new CA, and new leaves signed by it") {
    REQUIRE(::unlink((pki + "/ca.crt").c_str()) == 0);
    REQUIRE(::unlink((pki + "/ca.key").c_str()) == 0);
    auto r = ensure_pki(options_in(dir));
    REQUIRE(r.is_ok());
    CHECK(r->ca.cert_pem != first->ca.cert_pem);
    CHECK(r->serving.cert_pem != first->serving.cert_pem);
    CHECK_THAT(verify(pki + "/ca.crt", "sslserver", pki + "/server.crt"), Catch::Contains(": OK"));
  }
  SECTION("a garbled leaf is issued again") {
    spit(pki + "/server.key", "");
    auto r = ensure_pki(options_in(dir));
    REQUIRE(r.is_ok());
    CHECK(r->ca.cert_pem == first->ca.cert_pem);
    CHECK(r->serving.cert_pem != first->serving.cert_pem);
    CHECK_THAT(verify(pki + "/ca.crt", "sslserver", pki + "/server.crt"), Catch::Contains(": OK"));
  }
}

TEST_CASE("ensure_pki rejects bad options", "[pki]") {
  TempDir dir;
  for (const char* host : {"", "bad host", "a..b", "[example.com]", "10.0.0.1/24"}) {
    INFO(host);
    auto r = ensure_pki(options_in(dir, {host}));
    REQUIRE_FALSE(r.is_ok());
    CHECK(r.status().code() == Code::kInvalid);
  }
  CHECK(ensure_pki(PkiOptions{}).status().code() == Code::kInvalid);
}

TEST_CASE("issue_client_cert puts the user in CN and each group in an O", "[pki]") {
  TempDir dir;
  auto bundle = ensure_pki(options_in(dir));
  REQUIRE(bundle.is_ok());
  auto alice = issue_client_cert(bundle->ca, "alice", {"dev", "system:authenticated"},
                                 std::chrono::hours(24));
  REQUIRE(alice.is_ok());
  spit(dir.sub("alice.crt"), alice->cert_pem);
  std::string text = text_of(dir.sub("alice.crt"));
  CHECK_THAT(text, Catch::Contains("Subject: O = dev, O = system:authenticated, CN = alice") &&
                       Catch::Contains("TLS Web Client Authentication"));
  CHECK_THAT(verify(dir.sub("pki/ca.crt"), "sslclient", dir.sub("alice.crt")),
             Catch::Contains(": OK"));
  CHECK(openssl("x509 -noout -checkend 90000 -in " + dir.sub("alice.crt")).exit_code == 1);

  CHECK(issue_client_cert(bundle->ca, "", {}, std::chrono::hours(1)).status().code() ==
        Code::kInvalid);
  CHECK(issue_client_cert(bundle->ca, "bob", {std::string(65, 'g')}, std::chrono::hours(1))
            .status()
            .code() == Code::kInvalid);
  KeyPair mismatched{bundle->ca.cert_pem, bundle->admin.key_pem};
  CHECK(issue_client_cert(mismatched, "bob", {}, std::chrono::hours(1)).status().code() ==
        Code::kInvalid);
}

TEST_CASE("random_token is URL-safe and unpredictable", "[pki]") {
  std::set<std::string> seen;
  for (int i = 0; i < 100; ++i) {
    std::string t = random_token(32);
    CHECK(t.size() == 43);
    CHECK(t.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_") ==
          std::string::npos);
    seen.insert(t);
  }
  CHECK(seen.size() == 100);
  CHECK(random_token(0).empty());
}

// Printed, not asserted: wall time depends on the disk (a new CA key is
// synced) and on the machine's load; CPU time shows the work itself.
TEST_CASE("ensure_pki is fast", "[pki]") {
  TempDir dir;
  struct Sample {
    std::chrono::steady_clock::time_point wall;
    std::clock_t cpu;
  };
  auto now = [] { return Sample{std::chrono::steady_clock::now(), std::clock()}; };
  auto since = [](const Sample& a, const Sample& b) {
    std::ostringstream out;
    out << std::chrono::duration<double, std::milli>(b.wall - a.wall).count() << " ms ("
        << 1000.0 * static_cast<double>(b.cpu - a.cpu) / CLOCKS_PER_SEC << " ms CPU)";
    return out.str();
  };
  auto opts = options_in(dir, {"10.0.0.1", "tenant.example.com"});
  auto t0 = now();
  random_token(16);  // OpenSSL's one-time initialisation, paid once per process
  auto t1 = now();
  auto bundle = ensure_pki(opts);
  REQUIRE(bundle.is_ok());
  auto t2 = now();
  REQUIRE(write_kubeconfig(dir.sub("kubeconfig"), "t", "https://127.0.0.1:6443",
                           bundle->ca.cert_pem, bundle->admin)
              .is_ok());
  auto t3 = now();
  REQUIRE(ensure_pki(opts).is_ok());
  auto t4 = now();
  WARN("OpenSSL init " << since(t0, t1) << "; ensure_pki first start " << since(t1, t2)
                       << ", second start " << since(t3, t4) << "; first kubeconfig "
                       << since(t2, t3));
}

}  // namespace
}  // namespace vkube::pki
