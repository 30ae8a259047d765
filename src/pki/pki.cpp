// ensure_pki: the CA, serving and admin certificates of an endpoint, kept in dir/pki.
#include "vkube/pki/pki.h"

#include <openssl/rand.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <set>

#include "file_io.h"
#include "x509.h"

namespace vkube::pki {
namespace {

using namespace detail;  // NOLINT(google-build-using-namespace): this module's own helpers

constexpr std::chrono::seconds kRenewBefore = std::chrono::hours(24 * 30);
constexpr mode_t kDirMode = 0700;
constexpr mode_t kKeyMode = 0600;
constexpr mode_t kCertMode = 0644;
constexpr size_t kMaxNameBytes = 64;  // ub-common-name and ub-organization-name, RFC 5280
constexpr const char* kDefaultHosts[] = {"localhost", "127.0.0.1", "::1"};

// A short-lived certificate would otherwise be re-issued on every start.
std::chrono::seconds renew_margin(std::chrono::hours validity) {
  return std::min<std::chrono::seconds>(kRenewBefore, validity / 2);
}

// A certificate and its key, parsed and as PEM.
struct Pair {
  X509Ptr cert;
  PkeyPtr key;
  KeyPair pem;
};

class PkiFiles {
 public:
  explicit PkiFiles(std::string dir) : dir_(std::move(dir)) {}
  PkiFiles(const PkiFiles&) = delete;
  PkiFiles& operator=(const PkiFiles&) = delete;
  const std::string& dir() const { return dir_; }
  std::string cert(const char* name) const { return dir_ + "/" + name + ".crt"; }
  std::string key(const char* name) const { return dir_ + "/" + name + ".key"; }

  Result<std::string> read_cert(const char* name) const { return read_file(cert(name)); }
  Result<std::string> read_key(const char* name) const { return read_file(key(name), kKeyMode); }
  Result<PkeyPtr> parse_key(const std::string& pem) { return keys_.parse(pem); }

  // Reads and parses name.crt and name.key: kNotFound when either is missing,
  // kCorruption when either cannot be parsed, kInternal on I/O errors.
  Result<Pair> load(const char* name) {
    auto cert = read_cert(name);
    if (!cert.is_ok()) return cert.status();
    auto key = read_key(name);
    if (!key.is_ok()) return key.status();
    auto x = parse_cert(*cert);
    if (!x.is_ok()) return Status::corruption(this->cert(name) + ": " + x.status().message());
    auto k = parse_key(*key);
    if (!k.is_ok()) return Status::corruption(this->key(name) + ": " + k.status().message());
    return Pair{std::move(*x), std::move(*k), KeyPair{std::move(*cert), std::move(*key)}};
  }

  Status write_key(const char* name, const Pair& p, bool durable) const {
    return write_file_atomic(key(name), p.pem.key_pem, kKeyMode, durable);
  }
  Status write_cert(const char* name, const Pair& p) const {
    return write_file_atomic(cert(name), p.pem.cert_pem, kCertMode, /*durable=*/false);
  }

 private:
  std::string dir_;
  KeyParser keys_;
};

Result<Pair> make_pair(const CertSpec& spec, PkeyPtr key, const Pair* issuer) {
  auto cert = issue(spec, key.get(), issuer ? issuer->cert.get() : nullptr,
                    issuer ? issuer->key.get() : nullptr);
  if (!cert.is_ok()) return cert.status();
  auto cert_text = cert_pem(cert->get());
  if (!cert_text.is_ok()) return cert_text.status();
  auto key_text = key_pem(key.get());
  if (!key_text.is_ok()) return key_text.status();
  return Pair{std::move(*cert), std::move(key),
              KeyPair{std::move(*cert_text), std::move(*key_text)}};
}

Result<Pair> fresh_pair(const CertSpec& spec, const Pair* issuer) {
  auto key = generate_key();
  if (!key.is_ok()) return key.status();
  return make_pair(spec, std::move(*key), issuer);
}

// The CA's identity is its key: ca.key is written once, synced, and never
// replaced. ca.crt is rebuilt from it when missing, unreadable (a crash can
// leave it so, as it is not synced) or expiring, so that everything the CA
// signed stays valid. Only ca.key is synced before its rename, as a lost or
// damaged ca.crt is rebuilt from it.
Result<Pair> ensure_ca(PkiFiles& files, const PkiOptions& options, bool* new_key) {
  CertSpec spec{Kind::kCa,
                options.ca_common_name,
                {},
                {},
                std::chrono::duration_cast<std::chrono::seconds>(options.ca_validity)};
  auto key_text = files.read_key("ca");
  if (!key_text.is_ok() && key_text.status().code() != Code::kNotFound) return key_text.status();
  auto cert_text = files.read_cert("ca");
  if (!cert_text.is_ok() && cert_text.status().code() != Code::kNotFound) {
    return cert_text.status();
  }
  if (!key_text.is_ok()) {
    if (cert_text.is_ok()) {
      return Status::corruption(files.key("ca") + " is missing but " + files.cert("ca") +
                                " exists; restore the key, or remove both to make a new CA");
    }
    auto ca = fresh_pair(spec, nullptr);
    if (!ca.is_ok()) return ca.status();
    VKUBE_RETURN_IF_ERROR(files.write_key("ca", *ca, /*durable=*/true));
    VKUBE_RETURN_IF_ERROR(files.write_cert("ca", *ca));
    *new_key = true;
    return ca;
  }

  auto key = files.parse_key(*key_text);
  if (!key.is_ok()) return Status::corruption(files.key("ca") + ": " + key.status().message());
  if (cert_text.is_ok()) {
    if (auto cert = parse_cert(*cert_text); cert.is_ok()) {
      if (!matches_key(cert->get(), key->get())) {
        return Status::corruption(files.cert("ca") + " does not belong to " + files.key("ca"));
      }
      if (!is_ca(cert->get())) {
        return Status::corruption(files.cert("ca") + " is not a CA certificate");
      }
      if (valid_for(cert->get(), std::time(nullptr), renew_margin(options.ca_validity))) {
        return Pair{std::move(*cert), std::move(*key),
                    KeyPair{std::move(*cert_text), std::move(*key_text)}};
      }
    }
  }
  auto ca = make_pair(spec, std::move(*key), nullptr);
  if (!ca.is_ok()) return ca.status();
  ca->pem.key_pem = std::move(*key_text);  // byte for byte what is on disk
  VKUBE_RETURN_IF_ERROR(files.write_cert("ca", *ca));
  return ca;
}

// Loads a leaf pair, re-issuing it when it is missing, unreadable, not
// signed by `ca`, mismatched, expiring, or when `still_fits` says no.
template <typename Fits>
Result<Pair> ensure_leaf(PkiFiles& files, const char* name, const CertSpec& spec, const Pair& ca,
                         std::chrono::hours validity, Fits still_fits) {
  auto loaded = files.load(name);
  if (loaded.is_ok()) {
    X509* cert = loaded->cert.get();
    std::time_t now = std::time(nullptr);
    // A leaf capped at its CA's end gains nothing from being issued again.
    bool fresh_enough =
        valid_for(cert, now, renew_margin(validity)) ||
        (valid_for(cert, now, std::chrono::seconds(0)) && !expires_before(cert, ca.cert.get()));
    if (fresh_enough && signed_by(cert, ca.cert.get()) && matches_key(cert, loaded->key.get()) &&
        still_fits(cert)) {
      return loaded;
    }
  } else if (loaded.status().code() == Code::kInternal) {
    return loaded.status();
  }
  auto fresh = fresh_pair(spec, &ca);
  if (!fresh.is_ok()) return fresh.status();
  // Not synced: a leaf lost in a crash is simply issued again by the next
  // start. The key goes first; a crash between the two renames leaves a
  // mismatched pair, which is re-issued as well.
  VKUBE_RETURN_IF_ERROR(files.write_key(name, *fresh, /*durable=*/false));
  VKUBE_RETURN_IF_ERROR(files.write_cert(name, *fresh));
  return fresh;
}

// options.hosts and the loopback names, parsed, without duplicates, in order.
Result<std::vector<SanEntry>> serving_sans(const std::vector<std::string>& hosts) {
  std::vector<SanEntry> sans;
  auto add = [&sans](std::string_view host) -> Status {
    auto san = parse_host(host);
    if (!san.is_ok()) return san.status();
    if (std::find(sans.begin(), sans.end(), *san) == sans.end()) sans.push_back(std::move(*san));
    return Status::ok();
  };
  for (const auto& host : hosts) VKUBE_RETURN_IF_ERROR(add(host));
  for (const char* host : kDefaultHosts) VKUBE_RETURN_IF_ERROR(add(host));
  return sans;
}

std::string serving_common_name(const std::vector<std::string>& hosts) {
  if (hosts.empty()) return "vkube";
  std::string cn = hosts.front();
  if (cn.size() >= 2 && cn.front() == '[' && cn.back() == ']') cn = cn.substr(1, cn.size() - 2);
  return cn.size() <= kMaxNameBytes ? cn : "vkube";
}

Status check_name(const std::string& what, const std::string& value) {
  if (value.empty() || value.size() > kMaxNameBytes) {
    return Status::invalid(what + " \"" + value + "\" must have 1 to 64 bytes");
  }
  return Status::ok();
}

}  // namespace

Result<Bundle> ensure_pki(const PkiOptions& options) {
  if (options.dir.empty()) return Status::invalid("pki: no directory given");
  if (options.validity.count() <= 0 || options.ca_validity.count() <= 0) {
    return Status::invalid("pki: validity must be positive");
  }
  VKUBE_RETURN_IF_ERROR(check_name("CA common name", options.ca_common_name));
  auto sans = serving_sans(options.hosts);
  if (!sans.is_ok()) return sans.status();

  PkiFiles files(options.dir + "/pki");
  auto created = make_dir(files.dir(), kDirMode);
  if (!created.is_ok()) return created.status();
  auto lock = FileLock::acquire(files.dir() + "/.lock");
  if (!lock.is_ok()) return lock.status();

  bool new_ca_key = false;
  auto ca = ensure_ca(files, options, &new_ca_key);
  if (!ca.is_ok()) return ca.status();
  // A new CA key must survive a crash before anything it signs is handed out.
  // Leaves need no sync: any that are lost are issued again by the next start.
  if (new_ca_key) VKUBE_RETURN_IF_ERROR(sync_dir(files.dir()));
  if (*created) VKUBE_RETURN_IF_ERROR(sync_dir(options.dir));

  auto leaf_validity = std::chrono::duration_cast<std::chrono::seconds>(options.validity);
  CertSpec serving_spec{
      Kind::kServing, serving_common_name(options.hosts), {}, *sans, leaf_validity};
  auto covers_hosts = [&sans](X509* cert) {
    auto have = cert_sans(cert);
    std::set<SanEntry> present(have.begin(), have.end());
    return std::all_of(sans->begin(), sans->end(),
                       [&present](const SanEntry& san) { return present.count(san) > 0; });
  };
  auto serving = ensure_leaf(files, "server", serving_spec, *ca, options.validity, covers_hosts);
  if (!serving.is_ok()) return serving.status();

  CertSpec admin_spec{Kind::kClient, "kubernetes-admin", {"system:masters"}, {}, leaf_validity};
  auto admin =
      ensure_leaf(files, "admin", admin_spec, *ca, options.validity, [](X509*) { return true; });
  if (!admin.is_ok()) return admin.status();

  return Bundle{std::move(ca->pem), std::move(serving->pem), std::move(admin->pem)};
}

Result<KeyPair> issue_client_cert(const KeyPair& ca, const std::string& cn,
                                  const std::vector<std::string>& orgs,
                                  std::chrono::hours validity) {
  VKUBE_RETURN_IF_ERROR(check_name("common name", cn));
  for (const auto& org : orgs) VKUBE_RETURN_IF_ERROR(check_name("organization", org));
  if (validity.count() <= 0) return Status::invalid("validity must be positive");
  auto ca_cert = parse_cert(ca.cert_pem);
  if (!ca_cert.is_ok()) return Status::invalid("CA certificate: " + ca_cert.status().message());
  auto ca_key = parse_key(ca.key_pem);
  if (!ca_key.is_ok()) return Status::invalid("CA key: " + ca_key.status().message());
  if (!matches_key(ca_cert->get(), ca_key->get())) {
    return Status::invalid("the CA key does not match the CA certificate");
  }
  Pair issuer{std::move(*ca_cert), std::move(*ca_key), {}};
  CertSpec spec{
      Kind::kClient, cn, orgs, {}, std::chrono::duration_cast<std::chrono::seconds>(validity)};
  auto pair = fresh_pair(spec, &issuer);
  if (!pair.is_ok()) return pair.status();
  return std::move(pair->pem);
}

std::string random_token(size_t bytes) {
  std::string raw(bytes, '\0');
  if (bytes > 0 &&
      RAND_bytes(reinterpret_cast<unsigned char*>(raw.data()), static_cast<int>(bytes)) != 1) {
    std::fprintf(stderr, "vkube: the OpenSSL CSPRNG failed; refusing to continue\n");
    std::abort();
  }
  return base64_url(raw);
}

}  // namespace vkube::pki
