// bench_crd: CRDs and Helm charts in a tenant, through the real system. Starts
// `vkube host` and one tenant (`vkube serve --host-kubeconfig`) as processes,
// waits until the tenant's syncer is ready, and measures:
//
//   helm      `helm install --wait` of the chart `helm create` makes, from
//             fork to exit; then `helm upgrade --install` of new releases
//             (web2, web3, ...) until --runs runs in all. Each time and the
//             median, next to the target (< 3 s).
//   crd       a Widget CRD (bench.example.com/v1: a structural schema with a
//             default, an enum and printer columns), then --objects Widgets
//             created by --connections concurrent workers (creates/s, p50,
//             p99), then the same number of ConfigMaps of about the same
//             size; then a full LIST of each collection in pages of 500, as
//             JSON and as a Table. The custom/built-in ratios, next to the
//             target (within 20 %).
//
// Creates go through vkube's own host client (keep-alive HTTPS pool). The
// LISTs use one Boost.Beast HTTPS connection, because the host client always
// sends Accept: application/json and a Table needs its own Accept; JSON and
// Table lists take the same path, so their times compare.
//
// A vkube that does not serve CRDs yet (the CRD POST or the Widget creates
// answer 404) is reported as such, the ConfigMap figures are still printed,
// and the exit code is 1. A failed helm run also exits 1; a setup error
// exits 1 and keeps the temporary directory for its logs. It is a benchmark,
// not a test: a missed target prints MISS and the exit code stays 0.
//
//   build/tools/bench/bench_crd [--vkube PATH] [--helm PATH] [--runs 3]
//       [--objects 10000] [--connections 64] [--skip-helm true] [--keep true]
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>  // mkdtemp
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>

#include "children.h"
#include "vkube/hostclient/client.h"

extern char** environ;

namespace {

namespace fs = std::filesystem;
namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = net::ssl;
using tcp = net::ip::tcp;
using json = nlohmann::json;
using Clock = std::chrono::steady_clock;
using vkube::hostclient::Client;

constexpr const char* kTableAccept = "application/json;as=Table;v=v1;g=meta.k8s.io";
constexpr const char* kWidgets = "/apis/bench.example.com/v1/namespaces/default/widgets";
constexpr const char* kConfigMaps = "/api/v1/namespaces/default/configmaps";

struct BenchError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct Flags {
  std::string vkube = VKUBE_BENCH_DEFAULT_VKUBE;
  std::string helm = VKUBE_BENCH_DEFAULT_HELM;
  int runs = 3;
  int objects = 10000;
  int connections = 64;
  bool skip_helm = false;
  bool keep = false;  // keep the temporary directory and the logs
};

double ms_since(Clock::time_point t0, Clock::time_point t1 = Clock::now()) {
  return std::chrono::duration<double, std::milli>(t1 - t0).count();
}

double pct(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())))];
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string tail(const std::string& text, size_t n = 1500) {
  return text.size() <= n ? text : "..." + text.substr(text.size() - n);
}

// ---------------------------------------------------------------------------
// Child processes. Every running child is in g_children, so that SIGINT and
// SIGTERM stop them too.

using vkube::bench::g_children;
using vkube::bench::track_child;
using vkube::bench::untrack_child;

extern "C" void on_signal(int sig) {
  for (auto& slot : g_children) {
    const pid_t pid = slot.load();
    if (pid <= 0) continue;
    kill(pid, SIGTERM);
    int status = 0;
    waitpid(pid, &status, 0);
  }
  _exit(128 + sig);
}

// Forks and execs argv with stdout in `out` and stderr in `err` (appended),
// and `env` as its environment.
pid_t spawn(const std::vector<std::string>& argv, const std::vector<std::string>& env,
            const std::string& out, const std::string& err) {
  std::fflush(stdout);  // or the child would print what is buffered again
  std::fflush(stderr);
  const pid_t pid = fork();
  if (pid != 0) {
    if (pid > 0) track_child(pid);
    return pid;
  }
  const int o = open(out.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  const int e = open(err.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (o >= 0) dup2(o, 1);
  if (e >= 0) dup2(e, 2);
  std::vector<char*> args, envp;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  for (const auto& v : env) envp.push_back(const_cast<char*>(v.c_str()));
  args.push_back(nullptr);
  envp.push_back(nullptr);
  execve(args[0], args.data(), envp.data());
  _exit(127);
}

std::vector<std::string> current_env() {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) env.emplace_back(*e);
  return env;
}

// A vkube process with stdout in a file (stderr in FILE.log).
struct Proc {
  pid_t pid = -1;
  std::string out;

  void start(const std::vector<std::string>& argv, const std::string& out_path) {
    out = out_path;
    pid = spawn(argv, current_env(), out_path, out_path + ".log");
  }
  // Waits for "vkube is serving URL".
  bool wait_serving(std::chrono::seconds timeout) {
    const auto deadline = Clock::now() + timeout;
    while (Clock::now() < deadline) {
      if (read_file(out).find("vkube is serving ") != std::string::npos) return true;
      int status = 0;
      if (waitpid(pid, &status, WNOHANG) == pid) {
        untrack_child(pid);
        pid = -1;
        return false;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return false;
  }
  void stop() {
    if (pid <= 0) return;
    kill(pid, SIGTERM);
    int status = 0;
    waitpid(pid, &status, 0);
    untrack_child(pid);
    pid = -1;
  }
  ~Proc() { stop(); }
};

// Runs argv to its end; returns the exit code (-1 when it did not exit).
int run_child(const std::vector<std::string>& argv, const std::vector<std::string>& env,
              const std::string& log) {
  const pid_t pid = spawn(argv, env, log, log);
  if (pid < 0) throw BenchError("fork failed");
  int status = 0;
  waitpid(pid, &status, 0);
  untrack_child(pid);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// ---------------------------------------------------------------------------
// Clients.

std::unique_ptr<Client> client_for(const std::string& kubeconfig, size_t connections) {
  auto config = vkube::hostclient::from_kubeconfig(kubeconfig);
  if (!config.is_ok()) throw BenchError(kubeconfig + ": " + config.status().message());
  vkube::hostclient::Options o;
  o.user_agent = "bench-crd";
  o.max_connections = connections;
  auto c = Client::create(std::move(config).value(), o);
  if (!c.is_ok()) throw BenchError("client: " + c.status().message());
  return std::move(c).value();
}

// GETs on one keep-alive HTTPS connection with any Accept header, with the
// credentials of a kubeconfig.
class RawGet {
 public:
  explicit RawGet(const std::string& kubeconfig) {
    auto config = vkube::hostclient::from_kubeconfig(kubeconfig);
    if (!config.is_ok()) throw BenchError(kubeconfig + ": " + config.status().message());
    const auto& c = config.value();
    parse_server(c.server);
    token_ = c.token;
    ctx_.set_verify_mode(c.insecure_skip_verify ? ssl::verify_none : ssl::verify_peer);
    if (!c.ca_pem.empty()) ctx_.add_certificate_authority(net::buffer(c.ca_pem));
    if (!c.cert_pem.empty()) {
      ctx_.use_certificate_chain(net::buffer(c.cert_pem));
      ctx_.use_private_key(net::buffer(c.key_pem), ssl::context::pem);
    }
  }

  // The status and body; one reconnect when the kept connection has gone.
  std::pair<int, std::string> get(const std::string& target, const std::string& accept) {
    for (int attempt = 0;; ++attempt) {
      try {
        return get_once(target, accept);
      } catch (const std::exception& e) {
        stream_.reset();
        if (attempt > 0) throw BenchError("GET " + target + ": " + e.what());
      }
    }
  }

 private:
  void parse_server(const std::string& server) {
    const std::string scheme = "https://";
    if (server.rfind(scheme, 0) != 0) throw BenchError("not an https server: " + server);
    std::string rest = server.substr(scheme.size());
    if (auto slash = rest.find('/'); slash != std::string::npos) {
      base_path_ = rest.substr(slash);
      if (base_path_.back() == '/') base_path_.pop_back();
      rest.resize(slash);
    }
    const auto colon = rest.rfind(':');
    host_ = colon == std::string::npos ? rest : rest.substr(0, colon);
    port_ = colon == std::string::npos ? "443" : rest.substr(colon + 1);
  }

  void connect() {
    tcp::resolver resolver(io_);
    stream_.emplace(io_, ctx_);
    beast::get_lowest_layer(*stream_).connect(resolver.resolve(host_, port_));
    stream_->handshake(ssl::stream_base::client);
  }

  std::pair<int, std::string> get_once(const std::string& target, const std::string& accept) {
    if (!stream_) connect();
    http::request<http::empty_body> req{http::verb::get, base_path_ + target, 11};
    req.set(http::field::host, host_);
    req.set(http::field::accept, accept);
    req.set(http::field::user_agent, "bench-crd");
    if (!token_.empty()) req.set(http::field::authorization, "Bearer " + token_);
    http::write(*stream_, req);
    http::response_parser<http::string_body> parser;
    parser.body_limit(std::numeric_limits<std::uint64_t>::max());
    http::read(*stream_, buffer_, parser);
    auto res = parser.release();
    if (!res.keep_alive()) stream_.reset();
    return {static_cast<int>(res.result_int()), std::move(res.body())};
  }

  net::io_context io_;
  ssl::context ctx_{ssl::context::tls_client};
  std::string host_, port_, base_path_, token_;
  std::optional<beast::ssl_stream<beast::tcp_stream>> stream_;
  beast::flat_buffer buffer_;
};

// Scrapes /metrics for a sample's value (-1 when absent).
double metric(Client& c, const std::string& sample) {
  auto r = c.call("GET", "/metrics");
  std::string text = r.body.is_string() ? r.body.get<std::string>() : r.body.value("message", "");
  auto at = text.find("\n" + sample + " ");
  if (at == std::string::npos) return -1;
  return std::atof(text.c_str() + at + sample.size() + 2);
}

// ---------------------------------------------------------------------------
// The system under test.

struct Cluster {
  std::string dir;
  Proc host, tenant;
  std::string host_kubeconfig() const { return dir + "/host/admin.kubeconfig"; }
  std::string tenant_kubeconfig() const { return dir + "/tenant/admin.kubeconfig"; }
};

void start_cluster(Cluster& cl, const std::string& vkube) {
  cl.host.start(
      {vkube, "host", "--data-dir", cl.dir + "/host", "--listen", "127.0.0.1:0", "--durable=false"},
      cl.dir + "/host.out");
  if (!cl.host.wait_serving(std::chrono::seconds(60)))
    throw BenchError("vkube host did not start; see " + cl.dir + "/host.out.log");
  cl.tenant.start({vkube, "serve", "--data-dir", cl.dir + "/tenant", "--listen", "127.0.0.1:0",
                   "--name", "bench", "--host-kubeconfig", cl.host_kubeconfig()},
                  cl.dir + "/tenant.out");
  if (!cl.tenant.wait_serving(std::chrono::seconds(60)))
    throw BenchError("vkube serve did not start; see " + cl.dir + "/tenant.out.log");
  auto t = client_for(cl.tenant_kubeconfig(), 2);
  const auto t0 = Clock::now();
  while (metric(*t, "vkube_syncer_ready") != 1) {
    if (ms_since(t0) > 60000) throw BenchError("the tenant's syncer was not ready in 60 s");
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  t->stop();
}

// ---------------------------------------------------------------------------
// 1. Helm.

struct Helm {
  std::string bin, kubeconfig, log;
  std::vector<std::string> env;

  Helm(const std::string& helm, const Cluster& cl)
      : bin(helm), kubeconfig(cl.tenant_kubeconfig()), log(cl.dir + "/helm.log") {
    for (std::string& v : current_env())
      if (v.rfind("HELM_", 0) != 0) env.push_back(std::move(v));
    env.push_back("HELM_CACHE_HOME=" + cl.dir + "/helm/cache");
    env.push_back("HELM_CONFIG_HOME=" + cl.dir + "/helm/config");
    env.push_back("HELM_DATA_HOME=" + cl.dir + "/helm/data");
  }
  int run(std::vector<std::string> args) const {
    args.insert(args.begin(), bin);
    return run_child(args, env, log);
  }
};

// Times one install (run 0) or upgrade --install; -1 when helm failed.
double time_release(const Helm& helm, const std::string& chart, int run) {
  const std::string name = run == 0 ? "web" : "web" + std::to_string(run + 1);
  std::vector<std::string> args = {"install"};
  if (run > 0) args = {"upgrade", "--install"};
  args.insert(args.end(), {name, chart, "-n", "apps", "--create-namespace", "--wait", "--timeout",
                           "60s", "--kubeconfig", helm.kubeconfig});
  const auto t0 = Clock::now();
  const int rc = helm.run(args);
  const double s = ms_since(t0) / 1000;
  const std::string what = (run == 0 ? "install " : "upgrade --install ") + name;
  const std::string failed = rc == 0 ? "" : "  FAILED (exit " + std::to_string(rc) + ")";
  std::printf("  run %d  %-24s %6.2f s%s\n", run + 1, what.c_str(), s, failed.c_str());
  return rc == 0 ? s : -1;
}

// Returns false when a helm run failed.
bool bench_helm(const Flags& f, const Cluster& cl) {
  if (!fs::exists(f.helm)) throw BenchError("no helm at " + f.helm + " (--helm PATH)");
  Helm helm(f.helm, cl);
  const std::string chart = cl.dir + "/web";
  if (helm.run({"create", chart}) != 0)
    throw BenchError("helm create failed: " + tail(read_file(helm.log)));
  std::printf("helm install --wait of the `helm create` chart (target < 3 s)\n");
  std::vector<double> times;
  bool ok = true;
  for (int run = 0; run < f.runs; ++run) {
    const double s = time_release(helm, chart, run);
    if (s < 0)
      ok = false;
    else
      times.push_back(s);
  }
  if (!ok)
    std::fprintf(stderr, "helm log (%s):\n%s\n", helm.log.c_str(),
                 tail(read_file(helm.log)).c_str());
  if (!times.empty())
    std::printf("  median %.2f s over %zu runs  (target < 3 s: %s)\n\n", pct(times, 0.5),
                times.size(), pct(times, 0.5) < 3 ? "ok" : "MISS");
  return ok;
}

// ---------------------------------------------------------------------------
// 2. Custom resources against ConfigMaps.

json widget_crd() {
  const json schema = {{"type", "object"},
                       {"properties",
                        {{"spec",
                          {{"type", "object"},
                           {"properties",
                            {{"size", {{"type", "integer"}, {"minimum", 0}, {"default", 1}}},
                             {"color", {{"type", "string"}, {"enum", {"red", "blue"}}}}}}}}}}};
  const json columns = {{{"name", "Color"}, {"type", "string"}, {"jsonPath", ".spec.color"}},
                        {{"name", "Size"}, {"type", "integer"}, {"jsonPath", ".spec.size"}}};
  return {{"apiVersion", "apiextensions.k8s.io/v1"},
          {"kind", "CustomResourceDefinition"},
          {"metadata", {{"name", "widgets.bench.example.com"}}},
          {"spec",
           {{"group", "bench.example.com"},
            {"scope", "Namespaced"},
            {"names",
             {{"plural", "widgets"},
              {"singular", "widget"},
              {"kind", "Widget"},
              {"listKind", "WidgetList"}}},
            {"versions",
             {{{"name", "v1"},
               {"served", true},
               {"storage", true},
               {"schema", {{"openAPIV3Schema", schema}}},
               {"additionalPrinterColumns", columns}}}}}}};
}

json widget(int i) {
  return {{"apiVersion", "bench.example.com/v1"},
          {"kind", "Widget"},
          {"metadata", {{"name", "w-" + std::to_string(i)}}},
          {"spec", {{"size", i % 100}, {"color", i % 2 == 0 ? "red" : "blue"}}}};
}

// About the same size as a Widget: the same two values, as data.
json config_map(int i) {
  return {{"apiVersion", "v1"},
          {"kind", "ConfigMap"},
          {"metadata", {{"name", "w-" + std::to_string(i)}}},
          {"data", {{"size", std::to_string(i % 100)}, {"color", i % 2 == 0 ? "red" : "blue"}}}};
}

// Creates the CRD and waits until its group version is served. Returns an
// empty string, or why CRDs are not available.
std::string install_crd(Client& c) {
  auto r = c.call("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", widget_crd());
  if (r.code == 404)
    return "POST /apis/apiextensions.k8s.io/v1/customresourcedefinitions answered 404";
  if (!r.ok()) throw BenchError("create CRD: " + std::to_string(r.code) + " " + r.message());
  const auto t0 = Clock::now();
  while (c.call("GET", "/apis/bench.example.com/v1").code != 200) {
    if (ms_since(t0) > 30000) return "GET /apis/bench.example.com/v1 not 200 30 s after the CRD";
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return "";
}

struct Row {
  std::string kind;
  bool measured = false;
  double creates_per_s = 0, p50_ms = 0, p99_ms = 0, list_ms = 0, table_ms = 0;
  size_t listed = 0, table_rows = 0;
  int errors = 0;
};

struct Creates {
  std::mutex mu;
  std::vector<double> latencies_ms;
  int errors = 0, first_code = 0;
  std::string first_error;

  void add(const std::vector<double>& mine, int failed, int code, const std::string& error) {
    std::lock_guard lock(mu);
    latencies_ms.insert(latencies_ms.end(), mine.begin(), mine.end());
    if (failed > 0 && errors == 0) {
      first_code = code;
      first_error = error;
    }
    errors += failed;
  }
};

// One worker's share: sequential creates of the names `next` hands out.
void create_worker(Client& c, const std::string& path, int n, std::atomic<int>& next,
                   const std::function<json(int)>& make, Creates& out) {
  std::vector<double> mine;
  int errors = 0, code = 0;
  std::string error;
  for (int i; (i = next++) < n;) {
    const auto t0 = Clock::now();
    auto r = c.call("POST", path, make(i));
    if (r.ok()) {
      mine.push_back(ms_since(t0));
    } else if (errors++ == 0) {
      code = r.code;
      error = r.message();
    }
  }
  out.add(mine, errors, code, error);
}

void measure_creates(const Flags& f, const std::string& kubeconfig, const std::string& path,
                     const std::function<json(int)>& make, Row& row) {
  auto c = client_for(kubeconfig, static_cast<size_t>(f.connections));
  Creates out;
  std::atomic<int> next{0};
  const auto t0 = Clock::now();
  std::vector<std::thread> threads;
  for (int w = 0; w < f.connections; ++w)
    threads.emplace_back([&] { create_worker(*c, path, f.objects, next, make, out); });
  for (auto& t : threads) t.join();
  const double wall_ms = ms_since(t0);
  c->stop();
  row.errors = out.errors;
  if (out.errors > 0)
    std::fprintf(stderr, "%s: %d of %d creates failed, the first: %d %s\n", row.kind.c_str(),
                 out.errors, f.objects, out.first_code, out.first_error.c_str());
  if (row.kind == "Widget" && out.first_code == 404 && out.latencies_ms.empty())
    return;  // not served: measured stays false
  row.measured = true;
  row.creates_per_s = static_cast<double>(out.latencies_ms.size()) / (wall_ms / 1000);
  row.p50_ms = pct(out.latencies_ms, 0.5);
  row.p99_ms = pct(out.latencies_ms, 0.99);
}

std::string url_escape(const std::string& s) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char ch : s) {
    if (std::isalnum(ch) || ch == '-' || ch == '_' || ch == '.' || ch == '~') {
      out.push_back(static_cast<char>(ch));
    } else {
      out += {'%', hex[ch >> 4], hex[ch & 15]};
    }
  }
  return out;
}

// Lists `path` in full, 500 at a time; returns the ms the requests took
// (the server's work and the transfer, not this client's JSON parsing, which
// would dominate and measure nlohmann) and counts the entries under `key`
// ("items" or "rows").
double list_all(RawGet& g, const std::string& path, const std::string& accept,
                const std::string& key, size_t& count) {
  count = 0;
  std::string cont;
  double ms = 0;
  do {
    std::string target = path + "?limit=500";
    if (!cont.empty()) target += "&continue=" + url_escape(cont);
    const auto t0 = Clock::now();
    auto [code, body] = g.get(target, accept);
    ms += ms_since(t0);
    if (code != 200) throw BenchError("GET " + target + ": " + std::to_string(code) + " " + body);
    const json page = json::parse(body);
    count += page.value(key, json::array()).size();
    cont = page.value("metadata", json::object()).value("continue", "");
  } while (!cont.empty());
  return ms;
}

void check_rows(const Row& row) {
  if (row.table_rows != row.listed)
    std::fprintf(stderr, "%s: the Table had %zu rows, the list %zu items\n", row.kind.c_str(),
                 row.table_rows, row.listed);
}

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Lists both kinds in turn, three rounds, and keeps each one's median: the
// first list after a burst of creates meets the controllers still digesting
// it, which says nothing about the kind.
void measure_lists(RawGet& g, const std::vector<std::pair<std::string, Row*>>& kinds) {
  std::map<Row*, std::vector<double>> list, table;
  for (int round = 0; round < 3; ++round) {
    for (const auto& [path, row] : kinds) {
      list[row].push_back(list_all(g, path, "application/json", "items", row->listed));
      table[row].push_back(list_all(g, path, kTableAccept, "rows", row->table_rows));
    }
  }
  for (const auto& [path, row] : kinds) {
    row->list_ms = median_of(list[row]);
    row->table_ms = median_of(table[row]);
    check_rows(*row);
  }
}

void print_rows(const Flags& f, const Row& custom, const Row& builtin) {
  std::printf("%d objects per kind, %d connections\n", f.objects, f.connections);
  std::printf("  %-10s %10s %9s %9s %9s %14s %8s\n", "kind", "creates/s", "p50 ms", "p99 ms",
              "list ms", "table list ms", "listed");
  for (const Row* r : {&custom, &builtin}) {
    if (!r->measured) {
      std::printf("  %-10s %10s\n", r->kind.c_str(), "n/a (not served)");
      continue;
    }
    std::printf("  %-10s %10.0f %9.1f %9.1f %9.1f %14.1f %8zu\n", r->kind.c_str(), r->creates_per_s,
                r->p50_ms, r->p99_ms, r->list_ms, r->table_ms, r->listed);
  }
  if (!custom.measured || !builtin.measured) return;
  const double creates = custom.creates_per_s / builtin.creates_per_s;
  const double list = custom.list_ms / builtin.list_ms;
  const double table = custom.table_ms / builtin.table_ms;
  std::printf(
      "  custom/built-in: creates/s %.2f (target >= 0.80: %s), list %.2f (target <= 1.20: %s), "
      "table list %.2f\n",
      creates, creates >= 0.8 ? "ok" : "MISS", list, list <= 1.2 ? "ok" : "MISS", table);
}

// Returns false when CRDs are not served.
bool bench_crd(const Flags& f, const Cluster& cl) {
  auto c = client_for(cl.tenant_kubeconfig(), 2);
  const std::string why = install_crd(*c);
  c->stop();
  Row custom{"Widget"}, builtin{"ConfigMap"};
  if (why.empty()) measure_creates(f, cl.tenant_kubeconfig(), kWidgets, widget, custom);
  measure_creates(f, cl.tenant_kubeconfig(), kConfigMaps, config_map, builtin);
  RawGet g(cl.tenant_kubeconfig());
  std::vector<std::pair<std::string, Row*>> kinds;
  if (custom.measured) kinds.push_back({kWidgets, &custom});
  kinds.push_back({kConfigMaps, &builtin});
  measure_lists(g, kinds);
  print_rows(f, custom, builtin);
  if (!why.empty() || !custom.measured) {
    std::printf("CRDs are not served by this vkube: %s\n",
                why.empty() ? "the Widget creates answered 404" : why.c_str());
    return false;
  }
  return true;
}

// ---------------------------------------------------------------------------

void usage() {
  std::fprintf(stderr,
               "usage: bench_crd [--vkube PATH] [--helm PATH] [--runs N] [--objects N]\n"
               "                 [--connections N] [--skip-helm true] [--keep true]\n");
}

std::optional<Flags> parse_flags(int argc, char** argv) {
  Flags f;
  if (argc % 2 == 0) return std::nullopt;  // every flag takes a value
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], v = argv[i + 1];
    if (flag == "--vkube")
      f.vkube = v;
    else if (flag == "--helm")
      f.helm = v;
    else if (flag == "--runs")
      f.runs = std::atoi(v.c_str());
    else if (flag == "--objects")
      f.objects = std::atoi(v.c_str());
    else if (flag == "--connections")
      f.connections = std::atoi(v.c_str());
    else if (flag == "--skip-helm")
      f.skip_helm = v == "true";
    else if (flag == "--keep")
      f.keep = v == "true";
    else
      return std::nullopt;
  }
  if (f.runs < 1 || f.objects < 1 || f.connections < 1) return std::nullopt;
  return f;
}

int run(const Flags& f, Cluster& cl) {
  if (access(f.vkube.c_str(), X_OK) != 0)
    throw BenchError("cannot run " + f.vkube + " (--vkube PATH)");
  start_cluster(cl, f.vkube);
  bool ok = true;
  if (!f.skip_helm) ok = bench_helm(f, cl);
  if (!bench_crd(f, cl)) ok = false;
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  auto flags = parse_flags(argc, argv);
  if (!flags) {
    usage();
    return 2;
  }
  signal(SIGPIPE, SIG_IGN);
  signal(SIGINT, on_signal);
  signal(SIGTERM, on_signal);
  char tmpl[] = "/tmp/vkube-bench-crd-XXXXXX";
  const char* made = mkdtemp(tmpl);
  if (made == nullptr) {
    std::perror("mkdtemp");
    return 1;
  }
  int rc = 1;
  bool keep = flags->keep;
  {
    Cluster cl;
    cl.dir = made;
    try {
      rc = run(*flags, cl);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "bench_crd: %s\n", e.what());
      keep = true;  // the message may point into the logs
    }
  }  // the processes are stopped here
  if (keep)
    std::printf("logs kept in %s\n", made);
  else
    fs::remove_all(made);
  return rc;
}
