// write_kubeconfig, read back by the real kubectl.
#include <catch2/catch.hpp>

#include <filesystem>

#include "pki/pki_files.h"
#include "support/source_dir.h"
#include "support/temp_dir.h"
#include "vkube/pki/pki.h"

namespace vkube::pki {
namespace {

using testing::inode_of;
using testing::mode_of;
using testing::slurp;
using vkube::testing::run;
using vkube::testing::TempDir;

// The project's pinned kubectl, else the one on PATH.
std::string kubectl() {
  auto pinned = vkube::testing::source_dir_of(__FILE__) / "../../../.tools/bin/kubectl";
  std::error_code ec;
  if (std::filesystem::exists(pinned, ec)) return std::filesystem::canonical(pinned).string();
  return "kubectl";
}

// kubectl's view of one field of the kubeconfig at `path`.
std::string field(const std::string& path, const std::string& jsonpath) {
  auto r = run(kubectl() + " --kubeconfig " + path + " config view --raw -o jsonpath='" + jsonpath +
               "'");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  return r.output;
}

// The bytes that kubectl would decode from a base64 field.
std::string decoded(const std::string& path, const std::string& jsonpath) {
  auto r = run(kubectl() + " --kubeconfig " + path + " config view --raw -o jsonpath='" + jsonpath +
               "' | base64 -d");
  REQUIRE(r.exit_code == 0);
  return r.output;
}

TEST_CASE("kubectl reads the kubeconfig", "[pki]") {
  TempDir dir;
  PkiOptions o;
  o.dir = dir.path();
  auto bundle = ensure_pki(o);
  REQUIRE(bundle.is_ok());
  std::string path = dir.sub("home/.kube/config");  // parents are created
  REQUIRE(write_kubeconfig(path, "tenant-a", "https://127.0.0.1:6443", bundle->ca.cert_pem,
                           bundle->admin)
              .is_ok());
  CHECK(mode_of(path) == 0600);

  CHECK(decoded(path, "{.users[0].user.client-certificate-data}") == bundle->admin.cert_pem);
  CHECK(decoded(path, "{.users[0].user.client-key-data}") == bundle->admin.key_pem);
  CHECK(decoded(path, "{.clusters[0].cluster.certificate-authority-data}") == bundle->ca.cert_pem);
  CHECK(field(path, "{.clusters[0].cluster.server}") == "https://127.0.0.1:6443");
  CHECK(field(path, "{.current-context}") == "tenant-a");
  CHECK(field(path, "{.contexts[0].context.cluster}") == "tenant-a");
  CHECK(field(path, "{.contexts[0].context.user}") == "tenant-a");
  CHECK(field(path, "{.users[0].name}") == "tenant-a");
  auto current = run(kubectl() + " --kubeconfig " + path + " config current-context");
  CHECK(current.output == "tenant-a\n");
}

TEST_CASE("kubeconfig names cannot break the YAML", "[pki]") {
  TempDir dir;
  KeyPair client{"CERT", "KEY"};
  std::string path = dir.sub("config");
  std::string name = "a: b # \"c\" \\ {d}";
  REQUIRE(write_kubeconfig(path, name, "https://[::1]:6443/x?y=#z", "CA", client).is_ok());
  CHECK(field(path, "{.current-context}") == name);
  CHECK(field(path, "{.clusters[0].cluster.server}") == "https://[::1]:6443/x?y=#z");
  CHECK(decoded(path, "{.users[0].user.client-key-data}") == "KEY");
}

TEST_CASE("write_kubeconfig replaces atomically and skips identical content", "[pki]") {
  TempDir dir;
  std::string path = dir.sub("config");
  KeyPair one{"CERT-1", "KEY-1"};
  REQUIRE(write_kubeconfig(path, "t", "https://127.0.0.1:1", "CA", one).is_ok());
  ino_t first = inode_of(path);
  REQUIRE(::chmod(path.c_str(), 0644) == 0);

  REQUIRE(write_kubeconfig(path, "t", "https://127.0.0.1:1", "CA", one).is_ok());
  CHECK(inode_of(path) == first);  // left alone...
  CHECK(mode_of(path) == 0600);    // ...but no longer readable by others

  KeyPair two{"CERT-2", "KEY-2"};
  REQUIRE(write_kubeconfig(path, "t", "https://127.0.0.1:1", "CA", two).is_ok());
  CHECK(inode_of(path) != first);  // a new file renamed into place
  CHECK(mode_of(path) == 0600);
  CHECK(decoded(path, "{.users[0].user.client-certificate-data}") == "CERT-2");
  // No temporary files left behind.
  size_t entries = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir.path())) ++entries;
  CHECK(entries == 1);

  CHECK_FALSE(write_kubeconfig(dir.sub("config/under/a/file"), "t", "u", "CA", one).is_ok());
}

}  // namespace
}  // namespace vkube::pki
