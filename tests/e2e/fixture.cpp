#include "fixture.h"

#include <signal.h>
#include <stdlib.h>

#include <filesystem>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace vkube::e2e {

namespace fs = std::filesystem;

std::string kubectl_path() {
  const std::string pinned = std::string(VKUBE_SOURCE_DIR) + "/.tools/bin/kubectl";
  return fs::exists(pinned) ? pinned : "/usr/bin/kubectl";
}

bool eventually(const std::function<bool()>& condition, milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!condition()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(milliseconds(100));
  }
  return true;
}

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.find_first_not_of(" \t\r") != std::string::npos) out.push_back(line);
  }
  return out;
}

std::vector<std::string> columns(const std::string& line) {
  std::vector<std::string> out;
  std::istringstream in(line);
  for (std::string col; in >> col;) out.push_back(col);
  return out;
}

Cluster::Cluster(const std::string& token_auth_csv) {
  std::string tmpl = (fs::temp_directory_path() / "vkube-e2e-XXXXXX").string();
  if (::mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  dir_ = tmpl;
  std::vector<std::string> argv = {VKUBE_BINARY,   "serve",    "--data-dir",
                                   dir_ + "/data", "--listen", "127.0.0.1:0"};
  if (!token_auth_csv.empty()) {
    write_file(dir_ + "/tokens.csv", token_auth_csv);
    argv.insert(argv.end(), {"--token-auth-file", dir_ + "/tokens.csv"});
  }
  start(std::move(argv));
}

Cluster::Cluster(const Host& host) {
  std::string tmpl = (fs::temp_directory_path() / "vkube-e2e-XXXXXX").string();
  if (::mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  dir_ = tmpl;
  std::vector<std::string> argv = {VKUBE_BINARY,   "host",     "--data-dir",
                                   dir_ + "/data", "--listen", "127.0.0.1:0"};
  for (const auto& [name, content] : host.files) write_file(dir_ + "/" + name, content);
  for (std::string arg : host.args) {
    if (size_t at = arg.find("{dir}"); at != std::string::npos) arg.replace(at, 5, dir_);
    argv.push_back(std::move(arg));
  }
  start(std::move(argv));
}

Cluster::Cluster(const Serve& serve) {
  std::string tmpl = (fs::temp_directory_path() / "vkube-e2e-XXXXXX").string();
  if (::mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  dir_ = tmpl;
  std::vector<std::string> argv = {VKUBE_BINARY,   "serve",    "--data-dir",
                                   dir_ + "/data", "--listen", "127.0.0.1:0"};
  for (std::string arg : serve.args) {
    if (size_t at = arg.find("{dir}"); at != std::string::npos) arg.replace(at, 5, dir_);
    argv.push_back(std::move(arg));
  }
  start(std::move(argv));
}

void Cluster::restart(int signal) {
  server_->stop(signal, seconds(10));
  // The "serving" line is looked for in a fresh stdout file (the earlier
  // run's is kept beside it; the log starts anew).
  fs::rename(dir_ + "/server.out", dir_ + "/server.out." + std::to_string(next_command_++));
  start(argv_);
}

void Cluster::start(std::vector<std::string> argv) {
  fs::create_directories(dir_ + "/kube-cache");
  argv_ = argv;
  Spawn s;
  s.argv = std::move(argv);
  s.out_path = dir_ + "/server.out";
  s.err_path = dir_ + "/server.log";
  server_ = std::make_unique<Process>(s);

  // Wait for the whole "vkube is serving https://HOST:PORT" line, or the end.
  const std::string marker = "vkube is serving ";
  const bool up = eventually(
      [&] {
        const std::string out = server_->out();
        const size_t at = out.find(marker);
        return (at != std::string::npos && out.find('\n', at) != std::string::npos) ||
               !server_->running();
      },
      seconds(30));
  if (!up || !server_->running()) {
    const int code = server_->stop(SIGKILL, seconds(5));
    std::string why = "vkube did not come up within 30 s (exit code " + std::to_string(code) +
                      ")\n" + server_->out() + server_log();
    fs::remove_all(dir_);
    throw std::runtime_error(why);
  }
  const std::string out = server_->out();
  const size_t at = out.find(marker) + marker.size();
  url_ = out.substr(at, out.find('\n', at) - at);
  kubeconfig_ = dir_ + "/data/admin.kubeconfig";
  if (!fs::exists(kubeconfig_)) {
    server_->stop(SIGKILL, seconds(5));
    fs::remove_all(dir_);
    throw std::runtime_error("vkube wrote no " + kubeconfig_);
  }
}

Cluster::~Cluster() {
  stop();
  std::error_code ec;
  fs::remove_all(dir_, ec);
  // Nothing a test does may leave the machine (connect_guard/connect_guard.cpp).
  for (const std::string& line : take_connect_guard_findings())
    FAIL_CHECK("a connection outside 127.0.0.0/8 was attempted: " << line);
}

int Cluster::stop() {
  return server_->stop(SIGTERM, seconds(10));
}

std::string Cluster::server_log() const {
  return read_file(dir_ + "/server.log");
}

Spawn Cluster::spawn(const std::vector<std::string>& argv) {
  const std::string base = dir_ + "/cmd-" + std::to_string(next_command_++);
  Spawn s;
  s.argv = argv;
  // HOME too, so that neither client reads or writes the user's ~/.kube.
  s.env = {{"KUBECONFIG", kubeconfig_}, {"KUBECACHEDIR", dir_ + "/kube-cache"}, {"HOME", dir_}};
  s.out_path = base + ".out";
  s.err_path = base + ".err";
  return s;
}

Result Cluster::run(const std::vector<std::string>& argv, seconds timeout) {
  return e2e::run(spawn(argv), timeout);
}

Result Cluster::kubectl(const std::vector<std::string>& args, seconds timeout) {
  std::vector<std::string> argv = {kubectl_path()};
  argv.insert(argv.end(), args.begin(), args.end());
  return run(argv, timeout);
}

Process Cluster::kubectl_background(const std::vector<std::string>& args,
                                    const std::map<std::string, std::string>& env) {
  std::vector<std::string> argv = {kubectl_path()};
  argv.insert(argv.end(), args.begin(), args.end());
  Spawn s = spawn(argv);
  for (const auto& [k, v] : env) s.env[k] = v;
  return Process(s);
}

std::string Cluster::token_kubeconfig(const std::string& user, const std::string& token) {
  return file(user + ".kubeconfig",
              "apiVersion: v1\nkind: Config\nclusters:\n- name: vkube\n"
              "  cluster:\n    server: " +
                  url_ + "\n    certificate-authority: " + dir_ +
                  "/data/pki/ca.crt\n"
                  "users:\n- name: " +
                  user + "\n  user:\n    token: " + token + "\ncontexts:\n- name: " + user +
                  "\n  context:\n"
                  "    cluster: vkube\n    user: " +
                  user + "\ncurrent-context: " + user + "\n");
}

std::string Cluster::file(const std::string& name, const std::string& content) {
  const std::string path = dir_ + "/" + name;
  write_file(path, content);
  return path;
}

void Cluster::setup(const std::string& yaml) {
  const std::string path = file("setup-" + std::to_string(next_command_) + ".yaml", yaml);
  REQUIRE_THAT(kubectl({"create", "--validate=false", "-f", path}), Succeeded());
}

namespace {

nlohmann::json parse_output(const Result& r) {
  REQUIRE_THAT(r, Succeeded());
  nlohmann::json j = nlohmann::json::parse(r.out, nullptr, false);
  INFO(r);
  REQUIRE_FALSE(j.is_discarded());
  return j;
}

}  // namespace

nlohmann::json Cluster::get_json(std::vector<std::string> args) {
  args.insert(args.begin(), "get");
  args.insert(args.end(), {"-o", "json"});
  return parse_output(kubectl(args));
}

nlohmann::json Cluster::raw_json(const std::string& path) {
  return parse_output(kubectl({"get", "--raw", path}));
}

Result helm(Cluster& c, std::vector<std::string> args, seconds timeout) {
  std::vector<std::string> argv = {"/usr/bin/env",
                                   "HELM_CACHE_HOME=" + c.dir() + "/helm/cache",
                                   "HELM_CONFIG_HOME=" + c.dir() + "/helm/config",
                                   "HELM_DATA_HOME=" + c.dir() + "/helm/data",
                                   std::string(VKUBE_SOURCE_DIR) + "/.tools/bin/helm",
                                   "--kubeconfig",
                                   c.kubeconfig()};
  argv.insert(argv.end(), args.begin(), args.end());
  return c.run(argv, timeout);
}

Result vkube_at(Cluster& host, std::vector<std::string> args, seconds timeout) {
  args.insert(args.begin(), VKUBE_BINARY);
  args.insert(args.end(), {"--kubeconfig", host.kubeconfig()});
  return host.run(args, timeout);
}

std::map<std::string, std::string> vkube_list_row(Cluster& host, const std::string& name) {
  Result list = vkube_at(host, {"list"});
  REQUIRE_THAT(list, Succeeded());
  auto rows = lines(list.out);
  REQUIRE(rows.size() >= 2);
  auto header = columns(rows[0]);
  for (size_t i = 1; i < rows.size(); ++i) {
    auto cells = columns(rows[i]);
    if (cells.empty() || cells[0] != name) continue;
    REQUIRE(cells.size() == header.size());
    std::map<std::string, std::string> out;
    for (size_t c = 0; c < header.size(); ++c) out[header[c]] = cells[c];
    return out;
  }
  FAIL("no row for tenant " + name + " in:\n" + list.out);
  return {};
}

}  // namespace vkube::e2e
