// Issue 39's dashboard in a real browser: `vkube host` with 2 nodes of 8 GPUs,
// two tenants made by `vkube create --gpu-share` running GPU pods (one
// borrowing, one pod waiting), `vkube dashboard` as the local proxy, and
// Debian's headless Chromium loading the page through it: the rendered DOM
// must show the pool, each tenant's GPU books and each node's GPUs (the
// contract of DESIGN39), and a screenshot is taken (docs/images/dashboard.png
// with VKUBE_UPDATE_SCREENSHOT=1). Then the host's own /dashboard/: who may
// read it, and what the proxy refuses.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <regex>
#include <string>
#include <vector>

#include "fixture.h"

namespace vkube::e2e {
namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;

// Chromium from Debian's package (tools/setup.sh installs it), or "".
std::string chromium_path() {
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "";
  for (size_t at = 0; at <= dirs.size();) {
    size_t end = dirs.find(':', at);
    if (end == std::string::npos) end = dirs.size();
    for (const char* name : {"chromium", "chromium-browser"}) {
      fs::path candidate = fs::path(dirs.substr(at, end - at)) / name;
      if (!candidate.parent_path().empty() && access(candidate.c_str(), X_OK) == 0)
        return candidate.string();
    }
    at = end + 1;
  }
  return access("/usr/bin/chromium", X_OK) == 0 ? "/usr/bin/chromium" : "";
}

// One start tag of the rendered page: its name and attributes.
struct Tag {
  std::string name;
  std::map<std::string, std::string> attrs;

  std::string attr(const std::string& a) const {
    auto it = attrs.find(a);
    return it == attrs.end() ? "" : it->second;
  }
  bool has_class(const std::string& c) const {
    const std::string list = " " + attr("class") + " ";
    return list.find(" " + c + " ") != std::string::npos;
  }
};

std::string unescape(std::string s) {
  for (auto [from, to] : {std::pair{"&quot;", "\""}, {"&lt;", "<"}, {"&gt;", ">"}, {"&amp;", "&"}})
    for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + 1))
      s.replace(at, std::string_view(from).size(), to);
  return s;
}

// The start tags of Chromium's --dump-dom output, in document order (it
// writes every attribute value in double quotes).
std::vector<Tag> start_tags(const std::string& html) {
  static const std::regex tag_re(
      R"(<([a-zA-Z][a-zA-Z0-9-]*)((?:\s+[^\s=>/]+(?:="[^"]*")?)*)\s*/?>)");
  static const std::regex attr_re(R"re(([^\s=>/]+)(?:="([^"]*)")?)re");
  std::vector<Tag> out;
  for (auto it = std::sregex_iterator(html.begin(), html.end(), tag_re);
       it != std::sregex_iterator(); ++it) {
    Tag t{(*it)[1].str(), {}};
    const std::string attrs = (*it)[2].str();
    for (auto a = std::sregex_iterator(attrs.begin(), attrs.end(), attr_re);
         a != std::sregex_iterator(); ++a)
      t.attrs[(*a)[1].str()] = unescape((*a)[2].str());
    out.push_back(std::move(t));
  }
  return out;
}

std::vector<Tag> where(const std::vector<Tag>& tags, const std::function<bool(const Tag&)>& pred) {
  std::vector<Tag> out;
  for (const Tag& t : tags)
    if (pred(t)) out.push_back(t);
  return out;
}

// A number attribute ("16", "3.5"); -1 when absent or not a number.
double number(const Tag& t, const std::string& a) {
  const std::string v = t.attr(a);
  char* end = nullptr;
  double d = std::strtod(v.c_str(), &end);
  return v.empty() || end == v.c_str() || *end != '\0' ? -1 : d;
}

std::string gpu_pod(const std::string& name, int gpus) {
  return "apiVersion: v1\nkind: Pod\nmetadata: {name: " + name +
         "}\nspec:\n  containers:\n  - name: c\n    image: example.com/c:1\n"
         "    resources: {limits: {nvidia.com/gpu: " +
         std::to_string(gpus) + "}}\n---\n";
}

// Chromium's IPv6 reachability check connect()s a UDP socket to Google's
// public DNS address to learn whether a route exists (it sends nothing);
// the connection guard records it. Any other address off the machine fails
// the test, as for every process the fixture starts.
void check_stayed_on_machine() {
  for (const std::string& line : take_connect_guard_findings())
    if (line.find("chromium) connect [2001:4860:4860::8888]:443") == std::string::npos)
      FAIL_CHECK("a connection outside 127.0.0.0/8 was attempted: " << line);
}

// Chromium, headless, with a profile of its own, no background services and
// no name resolution (every name but 127.0.0.1 is NOTFOUND: nothing is
// looked up). `timeout` ends the whole process tree if it hangs.
Result chromium(Cluster& host, std::vector<std::string> args, const std::string& url) {
  std::vector<std::string> argv = {"/usr/bin/timeout",
                                   "-k",
                                   "5",
                                   "90",
                                   chromium_path(),
                                   "--headless=new",
                                   "--no-sandbox",
                                   "--disable-gpu",
                                   "--no-first-run",
                                   "--disable-background-networking",
                                   "--disable-component-update",
                                   "--disable-sync",
                                   "--disable-default-apps",
                                   "--disable-extensions",
                                   "--hide-scrollbars",
                                   "--user-data-dir=" + host.dir() + "/chromium",
                                   "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1",
                                   "--virtual-time-budget=8000"};
  argv.insert(argv.end(), args.begin(), args.end());
  argv.push_back(url);
  Result r = host.run(argv, seconds(100));
  check_stayed_on_machine();
  return r;
}

// curl's status code and Content-Type for `url` with `args` (credentials).
std::pair<std::string, std::string> curl(Cluster& host, std::vector<std::string> args,
                                         const std::string& url) {
  std::vector<std::string> argv = {"/usr/bin/curl", "-sS", "-o",
                                   "/dev/null",     "-w",  "%{http_code} %{content_type}"};
  argv.insert(argv.end(), args.begin(), args.end());
  argv.push_back(url);
  Result r = host.run(argv, seconds(30));
  INFO(r);
  REQUIRE(r.exit_code == 0);
  const size_t space = r.out.find(' ');
  return {r.out.substr(0, space), space == std::string::npos ? "" : r.out.substr(space + 1)};
}

TEST_CASE("the GPU dashboard in headless Chromium shows each tenant's GPUs, the pool and nodes",
          "[e2e][dashboard]") {
  const std::string browser = chromium_path();
  if (browser.empty())
    FAIL("chromium is not installed: run tools/setup.sh (it installs Debian's chromium)");

  Cluster host(Cluster::Host{
      {"--nodes", "2", "--gpus-per-node", "8", "--gpu-model", "H100", "--gpu-sharing", "exclusive",
       "--sim-job-duration", "0", "--token-auth-file", "{dir}/tokens.csv"},
      {{"tokens.csv", "carol-token,carol,1001\n"}}});
  // alpha holds 3 of its 4 deserved GPUs; bravo holds 6 (2 borrowed) and
  // waits for 8 more: no node has 8 free.
  const std::map<std::string, std::string> pods = {
      {"alpha", gpu_pod("a1", 1) + gpu_pod("a2", 1) + gpu_pod("a3", 1)},
      {"bravo", gpu_pod("b1", 1) + gpu_pod("b2", 1) + gpu_pod("b3", 2) + gpu_pod("b4", 2) +
                    gpu_pod("big", 8)}};
  for (const auto& [name, yaml] : pods) {
    const std::string kubeconfig = host.dir() + "/" + name + ".kubeconfig";
    Result r = vkube_at(host, {"create", name, "--gpu-share", "deserved=4", "--out", kubeconfig});
    INFO(r);
    REQUIRE_THAT(r, Succeeded());
    r = host.run({kubectl_path(), "--kubeconfig", kubeconfig, "create", "-f",
                  host.file(name + "-pods.yaml", yaml)});
    INFO(r);
    REQUIRE_THAT(r, Succeeded());
  }
  auto running_gpu_pods = [&](const std::string& ns) {
    json list = host.get_json({"pods", "-n", ns});
    int n = 0;
    for (const json& p : list["items"])
      n += p["metadata"]["name"].get<std::string>() != "vkube-0" &&
           p["status"].value("phase", "") == "Running";
    return n;
  };
  REQUIRE(eventually(
      [&] { return running_gpu_pods("vkube-alpha") == 3 && running_gpu_pods("vkube-bravo") == 4; },
      seconds(60)));

  Spawn s;
  s.argv = {VKUBE_BINARY,      "dashboard", "--kubeconfig",
            host.kubeconfig(), "--listen",  "127.0.0.1:0"};
  s.out_path = host.dir() + "/dashboard.out";
  s.err_path = host.dir() + "/dashboard.err";
  Process proxy(s);
  REQUIRE(proxy.wait_for_out("/dashboard/\n", seconds(20)));
  std::smatch m;
  const std::string line = proxy.out();
  REQUIRE(std::regex_search(line, m,
                            std::regex(R"(dashboard: (http://127\.0\.0\.1:(\d+))/dashboard/)")));
  const std::string base = m[1].str();
  const std::string url = base + "/dashboard/";

  // One host for every check (Catch SECTIONs would start it again for each).
  {  // The rendered page.
    Result dump = chromium(host, {"--dump-dom"}, url);
    INFO(dump);
    REQUIRE(dump.exit_code == 0);
    const std::vector<Tag> tags = start_tags(dump.out);
    INFO("proxy log:\n" << proxy.err());

    auto body = where(tags, [](const Tag& t) { return t.name == "body"; });
    REQUIRE(body.size() == 1);
    CHECK(body[0].attr("data-ready") == "true");
    auto summary = where(tags, [](const Tag& t) { return t.attr("id") == "pool-summary"; });
    REQUIRE(summary.size() == 1);
    CHECK(number(summary[0], "data-capacity-gpus") == 16);
    CHECK(number(summary[0], "data-allocated-gpus") == 9);
    CHECK(number(summary[0], "data-stranded-gpus") >= 0);

    std::map<std::string, Tag> rows;
    for (const Tag& t : where(tags, [](const Tag& t) { return t.has_class("tenant-row"); }))
      rows[t.attr("data-tenant")] = t;
    REQUIRE(rows.size() == 2);
    REQUIRE(rows.count("alpha") == 1);
    REQUIRE(rows.count("bravo") == 1);
    const Tag& alpha = rows["alpha"];
    const Tag& bravo = rows["bravo"];
    CHECK(number(alpha, "data-allocated-gpus") == 3);
    CHECK(number(alpha, "data-deserved-gpus") == 4);
    CHECK(number(alpha, "data-borrowed-gpus") == 0);
    CHECK(number(alpha, "data-pending-gpus") == 0);
    CHECK(number(bravo, "data-allocated-gpus") == 6);
    CHECK(number(bravo, "data-deserved-gpus") == 4);
    CHECK(number(bravo, "data-borrowed-gpus") == 2);
    CHECK(number(bravo, "data-pending-gpus") == 8);

    auto nodes = where(tags, [](const Tag& t) { return t.has_class("node"); });
    CHECK(nodes.size() == 2);
    for (const Tag& n : nodes) CHECK_THAT(n.attr("data-node"), Catch::StartsWith("gpu-node-"));
    auto gpus =
        where(tags, [](const Tag& t) { return t.has_class("gpu") && t.attrs.count("data-gpu"); });
    CHECK(gpus.size() == 16);
    std::map<std::string, int> held;
    for (const Tag& g : gpus)
      if (!g.attr("data-tenants").empty()) ++held[g.attr("data-tenants")];
    CHECK(held.size() == 2);
    CHECK(held["alpha"] == 3);
    CHECK(held["bravo"] == 6);
    bool chart = false, in_history = false;
    for (const Tag& t : tags) {
      in_history = in_history || t.attr("id") == "history";
      chart = chart || (in_history && t.name == "svg");
    }
    CHECK(chart);
    auto error = where(tags, [](const Tag& t) { return t.attr("id") == "error"; });
    REQUIRE(error.size() == 1);
    CHECK(error[0].attrs.count("hidden") == 1);  // nothing failed
  }

  {  // A screenshot.
    const std::string png = host.dir() + "/dashboard.png";
    Result shot = chromium(host, {"--window-size=1400,1000", "--screenshot=" + png}, url);
    INFO(shot);
    REQUIRE(shot.exit_code == 0);
    const std::string bytes = read_file(png);
    REQUIRE(bytes.size() > 20000);  // a rendered page, not a blank one
    CHECK(bytes.substr(1, 3) == "PNG");
    const char* update = std::getenv("VKUBE_UPDATE_SCREENSHOT");
    if (update != nullptr && std::string(update) == "1") {
      const fs::path docs = fs::path(VKUBE_SOURCE_DIR) / "docs" / "images";
      fs::create_directories(docs);
      fs::copy_file(png, docs / "dashboard.png", fs::copy_options::overwrite_existing);
      WARN("wrote " << (docs / "dashboard.png").string());
    }
  }

  {  // The host serves the page to authenticated users only, as the viewer role says.
    const std::string ca = host.dir() + "/data/pki/ca.crt";
    const std::vector<std::string> admin = {"--cacert", ca,
                                            "--cert",   host.dir() + "/data/pki/admin.crt",
                                            "--key",    host.dir() + "/data/pki/admin.key"};
    const std::vector<std::string> carol = {"--cacert", ca, "-H",
                                            "Authorization: Bearer carol-token"};
    auto [code, type] = curl(host, admin, host.url() + "/dashboard/");
    CHECK(code == "200");
    CHECK(type == "text/html; charset=utf-8");
    CHECK(curl(host, admin, host.url() + "/dashboard/dashboard.js").first == "200");
    CHECK(curl(host, {"--cacert", ca}, host.url() + "/dashboard/").first == "401");
    // Any authenticated user, through vkube:dashboard-viewer's binding...
    CHECK(curl(host, carol, host.url() + "/dashboard/").first == "200");
    CHECK(curl(host, carol, host.url() + "/dashboard").first == "301");
    // ...until the operator deletes it.
    REQUIRE_THAT(host.kubectl({"delete", "clusterrolebinding", "vkube:dashboard-viewer"}),
                 Succeeded());
    CHECK(eventually([&] { return curl(host, carol, host.url() + "/dashboard/").first == "403"; }));
    CHECK(curl(host, admin, host.url() + "/dashboard/").first == "200");
  }

  {  // The proxy forwards only the page's reads.
    CHECK(curl(host, {}, base + "/api/v1/pods?limit=10").first == "200");
    CHECK(curl(host, {}, base + "/metrics").second == "text/plain; version=0.0.4; charset=utf-8");
    CHECK(curl(host, {"-X", "POST", "-H", "Content-Type: application/json", "-d", "{}"},
               base + "/api/v1/pods")
              .first == "405");
    CHECK(curl(host, {"-X", "DELETE"}, base + "/api/v1/namespaces").first == "405");
    CHECK(curl(host, {}, base + "/api/v1/secrets").first == "404");
    CHECK(curl(host, {}, base + "/api/v1/namespaces/vkube-alpha/pods").first == "404");
    CHECK(curl(host, {}, base + "/apis/rbac.authorization.k8s.io/v1/clusterroles").first == "404");
    CHECK(curl(host, {"-H", "Host: rebound.example.com:" + m[2].str()}, base + "/api/v1/pods")
              .first == "403");
  }

  {  // A host user whose RBAC does not let it list pods sees the page say so, and no numbers.
    Spawn c = s;
    c.argv = {VKUBE_BINARY,   "dashboard",
              "--kubeconfig", host.token_kubeconfig("carol", "carol-token"),
              "--listen",     "127.0.0.1:0"};
    c.out_path = host.dir() + "/dashboard-carol.out";
    c.err_path = host.dir() + "/dashboard-carol.err";
    Process carol(c);
    REQUIRE(carol.wait_for_out("/dashboard/\n", seconds(20)));
    std::smatch cm;
    const std::string carol_line = carol.out();
    REQUIRE(std::regex_search(carol_line, cm, std::regex(R"(http://127\.0\.0\.1:\d+/dashboard/)")));
    Result dump = chromium(host, {"--dump-dom"}, cm[0].str());
    INFO(dump);
    REQUIRE(dump.exit_code == 0);
    std::smatch em;
    REQUIRE(
        std::regex_search(dump.out, em, std::regex(R"((<p[^>]*\bid="error"[^>]*>)([^<]*)</p>)")));
    CHECK(em[1].str().find("hidden") == std::string::npos);
    CHECK_THAT(em[2].str(), Catch::Contains("403"));
    auto rows = where(start_tags(dump.out), [](const Tag& t) { return t.has_class("tenant-row"); });
    CHECK(rows.empty());
  }
}

}  // namespace
}  // namespace vkube::e2e
