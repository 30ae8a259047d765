// Requests and discovery for group versions that aggregated API servers serve.
#include <strings.h>

#include <algorithm>
#include <thread>

#include "aggregator.h"
#include "server_impl.h"
#include "vkube/common/log.h"

namespace vkube::apiserver {

namespace {

using json = nlohmann::json;

// Neither the client's credentials nor identity headers it made up reach the aggregated
// server: it learns the user from the front-proxy headers only (kube's auth proxy round
// tripper). Hop-by-hop headers are the transport's.
bool forwarded(const std::string& name) {
  for (const char* h : {"Authorization", "Connection", "Keep-Alive", "Host", "Content-Length",
                        "Transfer-Encoding", "Upgrade", "User-Agent", "Proxy-Authorization"})
    if (strcasecmp(name.c_str(), h) == 0) return false;
  for (const char* prefix : {"Impersonate-", "X-Remote-"})
    if (strncasecmp(name.c_str(), prefix, strlen(prefix)) == 0) return false;
  return true;
}

http::Response plain(int code, const std::string& text) {
  http::Response r;
  r.status = code;
  r.set_header("Content-Type", "text/plain; charset=utf-8");
  r.set_header("X-Content-Type-Options", "nosniff");
  r.body = text + "\n";
  return r;
}

// "the host cluster at https://x is unreachable: why" (hostclient's words) -> "why".
std::string reason_of(const Status& s) {
  std::string m = s.message();
  for (const char* marker :
       {" is unreachable: ", ": sending the request: ", ": reading the answer: "})
    if (auto at = m.find(marker); at != std::string::npos) return m.substr(at + strlen(marker));
  return m;
}

// An APIResourceList entry set as aggregated discovery (apidiscovery.k8s.io/v2) lists it.
json aggregated_resources(const json& list, const RemoteApi& r) {
  json out = json::array();
  const json& resources = list.value("resources", json::array());
  if (!resources.is_array()) return out;
  auto kind_ref = [&](const json& e) {
    return json{{"group", e.value("group", r.group)},
                {"version", e.value("version", r.version)},
                {"kind", e.value("kind", "")}};
  };
  for (const json& e : resources) {
    const std::string name = e.value("name", "");
    if (name.empty() || name.find('/') != std::string::npos) continue;
    json entry = {{"resource", name},
                  {"responseKind", kind_ref(e)},
                  {"scope", e.value("namespaced", false) ? "Namespaced" : "Cluster"},
                  {"singularResource", e.value("singularName", "")},
                  {"verbs", e.value("verbs", json::array())}};
    for (const char* k : {"shortNames", "categories"})
      if (e.contains(k) && e[k].is_array() && !e[k].empty()) entry[k] = e[k];
    json subs = json::array();
    for (const json& sub : resources) {
      const std::string sub_name = sub.value("name", "");
      if (!sub_name.starts_with(name + "/")) continue;
      subs.push_back({{"subresource", sub_name.substr(name.size() + 1)},
                      {"responseKind", kind_ref(sub)},
                      {"verbs", sub.value("verbs", json::array())}});
    }
    if (!subs.empty()) entry["subresources"] = std::move(subs);
    out.push_back(std::move(entry));
  }
  return out;
}

// The aggregated groups the registry does not serve, each with its remotes by priority.
std::map<std::string, std::vector<RemoteApi>> remote_groups(Server& s) {
  std::shared_ptr<const KindSet> kinds = s.registry().snapshot();
  std::set<std::string> local;
  for (const api::GroupVersion& gv : kinds->group_versions()) local.insert(gv.group);
  std::map<std::string, std::vector<RemoteApi>> groups;
  for (RemoteApi& r : s.aggregator().remotes())
    if (!local.contains(r.group)) groups[r.group].push_back(std::move(r));
  for (auto& [group, versions] : groups)
    std::stable_sort(versions.begin(), versions.end(), [](const RemoteApi& a, const RemoteApi& b) {
      return a.version_priority > b.version_priority;
    });
  return groups;
}

json api_group_of(const std::string& group, const std::vector<RemoteApi>& versions) {
  json list = json::array();
  for (const RemoteApi& r : versions)
    list.push_back({{"groupVersion", group + "/" + r.version}, {"version", r.version}});
  return {{"name", group}, {"versions", list}, {"preferredVersion", list[0]}};
}

}  // namespace

std::optional<http::Response> proxy_aggregated(Server& s, http::Request& req,
                                               const RequestInfo& info, const UserInfo& user) {
  if (info.api_prefix != "apis" || info.group.empty() || info.version.empty()) return std::nullopt;
  std::optional<RemoteApi> r = s.aggregator().remote(info.group, info.version);
  if (!r) return std::nullopt;
  Aggregator& agg = s.aggregator();
  // kube answers at once while the APIService is unavailable; vkube checks again first, as
  // nothing else would notice the server coming back.
  if (!agg.available(*r) && check_remote(s, *r).is_null()) return plain(503, "service unavailable");
  auto dest = resolve_destination(s, r->service, req.target, "");
  if (!dest.is_ok()) {
    check_remote(s, *r);  // records why (no Service, no endpoints)
    return plain(503, "service unavailable");
  }
  auto client = dial_client(*dest, r->service, 30, "kube-aggregator");
  if (!client.is_ok()) return plain(500, client.status().message());
  std::vector<std::pair<std::string, std::string>> headers;
  for (const auto& h : req.headers)
    if (forwarded(h.name)) headers.emplace_back(h.name, h.value);
  headers.emplace_back("X-Remote-User", user.name);
  for (const std::string& g : user.groups) headers.emplace_back("X-Remote-Group", g);
  auto opened = (*client)->open(req.method, dest->target, headers, req.body);
  if (!opened.is_ok()) {
    agg.report(s, *r, false, "FailedDiscoveryCheck",
               "failing or missing response from " + dest->server + "/apis/" + r->group + "/" +
                   r->version + ": " + reason_of(opened.status()));
    return plain(503, "error trying to reach service: " + reason_of(opened.status()));
  }
  agg.report(s, *r, true, "Passed", "all checks passed");
  hostclient::Client::Opened o = std::move(opened).value();
  // The answer is relayed as bytes (a watch streams for as long as the server sends); the
  // client's connection ends with it, so nothing it sends later reaches the aggregated server.
  http::Response resp;
  resp.status = o.code;
  for (auto& [name, value] : o.headers)
    if (strcasecmp(name.c_str(), "Connection") != 0 && strcasecmp(name.c_str(), "Keep-Alive") != 0)
      resp.headers.push_back({name, value});
  resp.headers.push_back({"Connection", "close"});
  std::shared_ptr<http::Duplex> upstream(std::move(o.connection));
  resp.upgrade = [upstream](std::shared_ptr<http::Duplex> client_conn) {
    if (!client_conn) return upstream->close();
    std::thread([client_conn, upstream] {
      char buf[64 * 1024];
      for (;;) {
        auto n = upstream->read(buf, sizeof buf);
        if (!n.is_ok() || *n == 0) break;
        if (!client_conn->write(std::string_view(buf, *n)).is_ok()) break;
      }
      client_conn->close_write();
      client_conn->close();
      upstream->close();
    }).detach();
  };
  return resp;
}

std::vector<json> remote_api_groups(Server& s, bool aggregated_format) {
  std::vector<json> out;
  for (const auto& [group, versions] : remote_groups(s)) {
    if (!aggregated_format) {
      out.push_back(api_group_of(group, versions));
      continue;
    }
    json list = json::array();
    for (const RemoteApi& r : versions) {
      json resources = s.aggregator().resources(s, r);
      if (!resources.is_object()) continue;  // unreachable: left out, as kube drops it
      list.push_back({{"version", r.version},
                      {"resources", aggregated_resources(resources, r)},
                      {"freshness", "Current"}});
    }
    if (list.empty()) continue;
    out.push_back({{"metadata", {{"name", group}, {"creationTimestamp", nullptr}}},
                   {"versions", std::move(list)}});
  }
  return out;
}

json remote_api_group(Server& s, const std::string& group) {
  auto groups = remote_groups(s);
  auto it = groups.find(group);
  if (it == groups.end()) return nullptr;
  json g = api_group_of(group, it->second);
  g["kind"] = "APIGroup";
  g["apiVersion"] = "v1";
  return g;
}

}  // namespace vkube::apiserver
