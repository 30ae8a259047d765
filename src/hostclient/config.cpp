// Config from a kubeconfig file or from the in-cluster service account.
#include <yaml-cpp/yaml.h>

#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "vkube/common/base64.h"
#include "vkube/hostclient/client.h"

namespace vkube::hostclient {
namespace {

namespace fs = std::filesystem;

Result<std::string> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::unavailable("cannot read " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return Status::unavailable("cannot read " + path);
  return ss.str();
}

std::string trimmed(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  size_t start = 0;
  while (start < s.size() && std::isspace(static_cast<unsigned char>(s[start]))) ++start;
  return s.substr(start);
}

// The entry named `name` of a kubeconfig list ("clusters", "users",
// "contexts"), i.e. its inner map (entry[kind-without-s]).
Result<YAML::Node> named(const YAML::Node& root, const std::string& list, const std::string& inner,
                         const std::string& name, const std::string& path) {
  const YAML::Node entries = root[list];
  if (entries && entries.IsSequence()) {
    for (const YAML::Node& e : entries) {
      if (!e.IsMap() || !e["name"] || e["name"].as<std::string>() != name) continue;
      YAML::Node body = e[inner];
      if (!body) body = YAML::Node(YAML::NodeType::Map);
      if (!body.IsMap())
        return Status::invalid(path + ": " + list + " entry \"" + name + "\" is not a map");
      return body;
    }
  }
  return Status::invalid(path + ": no " + inner + " named \"" + name + "\"");
}

std::string scalar(const YAML::Node& map, const char* key) {
  const YAML::Node n = map[key];
  return n && n.IsScalar() ? n.as<std::string>() : std::string();
}

// A "<key>-data" (base64 PEM) or "<key>" (a file, relative to `dir`) field;
// "" when neither is set.
Result<std::string> pem_field(const YAML::Node& map, const std::string& key, const fs::path& dir,
                              const std::string& path) {
  std::string data = scalar(map, (key + "-data").c_str());
  if (!data.empty()) {
    auto decoded = base64_decode(trimmed(data));
    if (!decoded) return Status::invalid(path + ": " + key + "-data is not base64");
    return std::move(*decoded);
  }
  std::string file = scalar(map, key.c_str());
  if (file.empty()) return std::string();
  fs::path p(file);
  if (p.is_relative()) p = dir / p;
  return read_file(p.string());
}

Result<Config> parse_kubeconfig(const YAML::Node& root, const std::string& path,
                                const std::string& wanted) {
  if (!root.IsMap()) return Status::invalid(path + ": not a kubeconfig (no map at the top)");
  const fs::path dir = fs::absolute(fs::path(path)).parent_path();
  std::string context_name = wanted.empty() ? scalar(root, "current-context") : wanted;
  if (context_name.empty()) return Status::invalid(path + ": no current-context and none chosen");
  auto context = named(root, "contexts", "context", context_name, path);
  if (!context.is_ok()) return context.status();
  std::string cluster_name = scalar(*context, "cluster");
  std::string user_name = scalar(*context, "user");
  if (cluster_name.empty())
    return Status::invalid(path + ": context \"" + context_name + "\" names no cluster");

  Config c;
  c.ns = scalar(*context, "namespace");
  auto cluster = named(root, "clusters", "cluster", cluster_name, path);
  if (!cluster.is_ok()) return cluster.status();
  c.server = scalar(*cluster, "server");
  if (c.server.empty())
    return Status::invalid(path + ": cluster \"" + cluster_name + "\" has no server");
  auto ca = pem_field(*cluster, "certificate-authority", dir, path);
  if (!ca.is_ok()) return ca.status();
  c.ca_pem = std::move(ca).value();
  c.insecure_skip_verify = scalar(*cluster, "insecure-skip-tls-verify") == "true";
  c.tls_server_name = scalar(*cluster, "tls-server-name");

  if (user_name.empty()) return c;  // anonymous
  auto user = named(root, "users", "user", user_name, path);
  if (!user.is_ok()) return user.status();
  if ((*user)["exec"] || (*user)["auth-provider"])
    return Status::invalid(path + ": user \"" + user_name +
                           "\" uses exec or auth-provider credentials, which are not supported");
  auto cert = pem_field(*user, "client-certificate", dir, path);
  if (!cert.is_ok()) return cert.status();
  auto key = pem_field(*user, "client-key", dir, path);
  if (!key.is_ok()) return key.status();
  c.cert_pem = std::move(cert).value();
  c.key_pem = std::move(key).value();
  if (c.cert_pem.empty() != c.key_pem.empty())
    return Status::invalid(path + ": user \"" + user_name +
                           "\" needs both a client certificate and a client key");
  c.token = scalar(*user, "token");
  std::string token_file = scalar(*user, "tokenFile");
  if (!token_file.empty()) {
    fs::path p(token_file);
    if (p.is_relative()) p = dir / p;
    c.token_file = p.string();
    // Read now so that a wrong path fails here, not at the first call.
    auto t = read_file(c.token_file);
    if (!t.is_ok()) return t.status();
    if (c.token.empty()) c.token = trimmed(std::move(t).value());
  }
  return c;
}

}  // namespace

Result<Config> from_kubeconfig(const std::string& path, const std::string& context) {
  auto text = read_file(path);
  if (!text.is_ok()) return text.status();
  YAML::Node root;
  try {
    root = YAML::Load(*text);
    return parse_kubeconfig(root, path, context);
  } catch (const YAML::Exception& e) {
    return Status::invalid(path + ": malformed kubeconfig: " + e.what());
  }
}

Result<Config> in_cluster(const std::string& account_dir) {
  const char* host = std::getenv("KUBERNETES_SERVICE_HOST");
  const char* port = std::getenv("KUBERNETES_SERVICE_PORT");
  if (host == nullptr || *host == '\0' || port == nullptr || *port == '\0')
    return Status::invalid(
        "not in a cluster: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be set");
  Config c;
  std::string h = host;
  if (h.find(':') != std::string::npos) h = "[" + h + "]";  // IPv6
  c.server = "https://" + h + ":" + port;
  auto ca = read_file(account_dir + "/ca.crt");
  if (!ca.is_ok()) return ca.status();
  c.ca_pem = std::move(ca).value();
  c.token_file = account_dir + "/token";
  auto token = read_file(c.token_file);
  if (!token.is_ok()) return token.status();
  c.token = trimmed(std::move(token).value());
  if (auto ns = read_file(account_dir + "/namespace"); ns.is_ok())
    c.ns = trimmed(std::move(ns).value());
  return c;
}

}  // namespace vkube::hostclient
