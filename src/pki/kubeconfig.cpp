// write_kubeconfig: the YAML that kubectl, client-go and the Python client read.
#include <sys/stat.h>

#include <cstdio>
#include <filesystem>

#include "file_io.h"
#include "vkube/pki/pki.h"
#include "x509.h"

namespace vkube::pki {
namespace {

constexpr mode_t kKubeconfigMode = 0600;

// A YAML double-quoted scalar (JSON's escapes are a subset of YAML's), so
// that no name or URL can change the document's structure.
std::string yaml_quoted(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned char>(c));
          out += buf;
        } else {
          out += c;
        }
    }
  }
  out += '"';
  return out;
}

std::string render(const std::string& name, const std::string& server_url,
                   const std::string& ca_pem, const KeyPair& client) {
  const std::string n = yaml_quoted(name);
  std::string y;
  y += "apiVersion: v1\n";
  y += "kind: Config\n";
  y += "clusters:\n";
  y += "- name: " + n + "\n";
  y += "  cluster:\n";
  y += "    server: " + yaml_quoted(server_url) + "\n";
  y += "    certificate-authority-data: " + detail::base64(ca_pem) + "\n";
  y += "users:\n";
  y += "- name: " + n + "\n";
  y += "  user:\n";
  y += "    client-certificate-data: " + detail::base64(client.cert_pem) + "\n";
  y += "    client-key-data: " + detail::base64(client.key_pem) + "\n";
  y += "contexts:\n";
  y += "- name: " + n + "\n";
  y += "  context:\n";
  y += "    cluster: " + n + "\n";
  y += "    user: " + n + "\n";
  y += "current-context: " + n + "\n";
  y += "preferences: {}\n";
  return y;
}

}  // namespace

Status write_kubeconfig(const std::string& path, const std::string& name,
                        const std::string& server_url, const std::string& ca_pem,
                        const KeyPair& client) {
  if (path.empty()) return Status::invalid("kubeconfig: no path given");
  if (name.empty()) return Status::invalid("kubeconfig: no name given");
  std::string yaml = render(name, server_url, ca_pem, client);

  // Every start writes the same file; leaving it alone spares a disk sync.
  if (auto existing = detail::read_file(path, kKubeconfigMode);
      existing.is_ok() && *existing == yaml) {
    return Status::ok();
  }
  std::filesystem::path parent = std::filesystem::path(path).parent_path();
  std::string dir = parent.empty() ? "." : parent.string();
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Status::internal("create directory " + dir + ": " + ec.message());
  VKUBE_RETURN_IF_ERROR(detail::write_file_atomic(path, yaml, kKubeconfigMode, /*durable=*/true));
  return detail::sync_dir(dir);
}

}  // namespace vkube::pki
