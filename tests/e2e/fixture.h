// One tenant endpoint for an end-to-end test: `vkube serve` in a temporary
// directory on a free port, and the real clients pointed at its kubeconfig.
#pragma once

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "process.h"

namespace vkube::e2e {

// kubectl as the tests run it: $REPO/.tools/bin/kubectl (v1.32, installed by
// tools/setup.sh), else /usr/bin/kubectl.
std::string kubectl_path();
// The Debian python3 with python3-kubernetes.
inline const std::string kPython = "/usr/bin/python3";

// Starts `vkube serve --data-dir DIR/data --listen 127.0.0.1:0` in a fresh
// temporary directory and waits for its "vkube is serving https://..." line.
// Construction throws std::runtime_error (a test failure, with the server log)
// when the server does not come up within 30 s. The destructor stops it with
// SIGTERM and removes the directory. Not thread-safe.
class Cluster {
 public:
  // `token_auth_csv`, when not empty, is written to DIR/tokens.csv and served
  // with --token-auth-file (token,user,uid,"group1,group2" lines).
  explicit Cluster(const std::string& token_auth_csv = "");
  // `vkube host` (API, GPU scheduler, simulated nodes) with these extra
  // flags; `files` (name, content) are written to the directory first, and
  // "{dir}" in an argument names it.
  struct Host {
    std::vector<std::string> args;
    std::vector<std::pair<std::string, std::string>> files;
  };
  explicit Cluster(const Host& host);
  // `vkube serve` with these extra flags ("{dir}" as for Host).
  struct Serve {
    std::vector<std::string> args;
  };
  explicit Cluster(const Serve& serve);
  ~Cluster();
  Cluster(const Cluster&) = delete;
  Cluster& operator=(const Cluster&) = delete;

  const std::string& url() const { return url_; }
  const std::string& dir() const { return dir_; }
  const std::string& kubeconfig() const { return kubeconfig_; }
  std::string server_log() const;

  // Runs kubectl with `args` against this server and waits for it to end;
  // KUBECONFIG and a private discovery cache (KUBECACHEDIR) are set.
  Result kubectl(const std::vector<std::string>& args, seconds timeout = seconds(30));
  // Starts kubectl without waiting (for `get -w`, `wait`); stop it or let it end.
  // `env` joins kubectl's environment (e.g. KUBECTL_PORT_FORWARD_WEBSOCKETS).
  Process kubectl_background(const std::vector<std::string>& args,
                             const std::map<std::string, std::string>& env = {});
  // Runs any program with the same environment as kubectl.
  Result run(const std::vector<std::string>& argv, seconds timeout = seconds(30));

  // Writes a kubeconfig for a bearer-token user of this server and returns
  // its path; pass it as `kubectl --kubeconfig PATH ...`.
  std::string token_kubeconfig(const std::string& user, const std::string& token);

  // Writes `content` to DIR/name and returns the path.
  std::string file(const std::string& name, const std::string& content);
  // Test setup: `kubectl create -f` of `yaml`, REQUIREd to succeed. It passes
  // --validate=false so that a test of, say, label selectors does not depend on
  // the OpenAPI download; default validation has its own tests.
  void setup(const std::string& yaml);
  // `kubectl get <args> -o json`, REQUIREd to succeed, parsed.
  nlohmann::json get_json(std::vector<std::string> args);
  // `kubectl get --raw <path>`, REQUIREd to succeed, parsed.
  nlohmann::json raw_json(const std::string& path);

  // Sends SIGTERM and returns the server's exit code (the destructor does this
  // too); the server must have stopped within 10 s.
  int stop();
  // Stops the server with `signal` (SIGKILL: a crash) and starts it again on
  // the same data directory and flags (a new port: the kubeconfig follows).
  void restart(int signal);

 private:
  Spawn spawn(const std::vector<std::string>& argv);
  void start(std::vector<std::string> argv);

  std::string dir_;
  std::string kubeconfig_;
  std::string url_;
  std::unique_ptr<Process> server_;
  std::vector<std::string> argv_;
  int next_command_ = 0;
};

// Catch matchers on a Result: the command exited 0; it failed with a message
// containing `text` (kubectl's "Error from server (Reason)" and the like).
class Succeeded : public Catch::MatcherBase<Result> {
 public:
  bool match(const Result& r) const override { return r.exit_code == 0 && !r.timed_out; }
  std::string describe() const override { return "exited 0"; }
};

class FailedWith : public Catch::MatcherBase<Result> {
 public:
  explicit FailedWith(std::string text) : text_(std::move(text)) {}
  bool match(const Result& r) const override {
    return r.exit_code != 0 && !r.timed_out && r.output().find(text_) != std::string::npos;
  }
  std::string describe() const override { return "failed with \"" + text_ + "\""; }

 private:
  std::string text_;
};

// Runs helm 3.17 (.tools/bin/helm) against `c`, with its caches in c's directory.
Result helm(Cluster& c, std::vector<std::string> args, seconds timeout = seconds(90));

// Runs the vkube binary with `args` and `--kubeconfig` of `host` (the
// tenant commands: create, list, share, delete, ...).
Result vkube_at(Cluster& host, std::vector<std::string> args, seconds timeout = seconds(60));

// `vkube list`'s cells of tenant `name` on `host`, by column header
// (a test failure when the tenant has no row).
std::map<std::string, std::string> vkube_list_row(Cluster& host, const std::string& name);

// Calls `condition` every 100 ms until it holds; false if `timeout` passes first.
bool eventually(const std::function<bool()>& condition, milliseconds timeout = seconds(10));

// The non-empty lines of `text`.
std::vector<std::string> lines(const std::string& text);
// The whitespace-separated columns of one line of kubectl's table output.
std::vector<std::string> columns(const std::string& line);

}  // namespace vkube::e2e
