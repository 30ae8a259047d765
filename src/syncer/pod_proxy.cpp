#include "vkube/syncer/pod_proxy.h"

#include <strings.h>

#include <thread>

#include "vkube/common/log.h"
#include "vkube/hostclient/client.h"

namespace vkube::syncer {

namespace {

using json = nlohmann::json;

// The request headers the host must see for the protocol to be the
// client's: the upgrade (WebSocket or SPDY) and what the body is.
bool relayed_header(const std::string& name) {
  for (const char* h : {"Upgrade", "Connection", "Sec-WebSocket-Key", "Sec-WebSocket-Version",
                        "Sec-WebSocket-Protocol", "Sec-WebSocket-Extensions",
                        "X-Stream-Protocol-Version", "Accept", "Content-Type", "Content-Length"})
    if (strcasecmp(name.c_str(), h) == 0) return true;
  return false;
}

std::string str(const json& obj, const char* a, const char* b) {
  if (!obj.is_object() || !obj.contains(a) || !obj[a].is_object()) return {};
  const json& v = obj[a].value(b, json());
  return v.is_string() ? v.get<std::string>() : std::string();
}

http::Response status_answer(int code, const std::string& reason, const std::string& message) {
  http::Response r;
  r.status = code;
  r.set_header("Content-Type", "application/json");
  r.body = json{{"kind", "Status"},    {"apiVersion", "v1"}, {"metadata", json::object()},
                {"status", "Failure"}, {"message", message}, {"reason", reason},
                {"code", code}}
               .dump();
  return r;
}

class PodProxy final : public apiserver::PodConnector {
 public:
  PodProxy(NameMapper names, std::string host_ns, std::shared_ptr<hostclient::Client> host)
      : names_(std::move(names)), host_ns_(std::move(host_ns)), host_(std::move(host)) {}

  http::Response connect(const apiserver::PodRequest& p, http::Request& req) override {
    const std::string ns = str(p.pod, "metadata", "namespace");
    const std::string name = str(p.pod, "metadata", "name");
    const std::string host_name = names_.host_name(ns, name);
    std::string target =
        "/api/v1/namespaces/" + host_ns_ + "/pods/" + host_name + "/" + p.subresource;
    if (!req.query.empty()) target += "?" + req.query;
    std::vector<std::pair<std::string, std::string>> headers;
    for (const auto& h : req.headers)
      if (relayed_header(h.name)) headers.emplace_back(h.name, h.value);

    auto opened = host_->open(req.method, target, headers, req.body);
    if (!opened.is_ok()) {
      return status_answer(503, "ServiceUnavailable",
                           "cannot reach pod " + name + ": " + opened.status().message());
    }
    hostclient::Client::Opened o = std::move(opened).value();
    const bool relay = o.code == 101 || (o.code >= 200 && o.code < 300);
    if (!relay) return translated_error(o, host_name, name, ns);

    http::Response r;
    r.status = o.code;
    for (auto& [k, v] : o.headers) r.headers.push_back({k, v});
    std::shared_ptr<http::Duplex> upstream(std::move(o.connection));
    const std::string what = p.subresource + " " + ns + "/" + name;
    r.upgrade = [upstream, what](std::shared_ptr<http::Duplex> client) {
      if (!client) return upstream->close();
      std::thread([client, upstream, what] {
        http::RelayCounts n = http::relay(*client, *upstream);
        VKUBE_LOG(debug, "pod stream relayed", {"stream", what}, {"to_host", n.a_to_b},
                  {"from_host", n.b_to_a});
      }).detach();
    };
    return r;
  }

 private:
  // A host refusal (its Status), with the host's names turned back into the
  // tenant's.
  http::Response translated_error(hostclient::Client::Opened& o, const std::string& host_name,
                                  const std::string& name, const std::string& ns) {
    http::ResponseHead head;
    head.status = o.code;
    head.headers = o.headers;
    o.connection->set_deadline(http::Duplex::Clock::now() + std::chrono::seconds(10));
    auto body = http::read_response_body(*o.connection, head, 1 << 20);
    o.connection->close();
    std::string text = body.is_ok() ? std::move(body).value() : std::string();
    json status = json::parse(text, nullptr, false);
    if (!status.is_object() || status.value("kind", "") != "Status") {
      std::string message = text.empty() ? "the host answered " + std::to_string(o.code) : text;
      while (!message.empty() && (message.back() == '\n' || message.back() == '\r'))
        message.pop_back();
      return status_answer(o.code, o.code == 404 ? "NotFound" : "InternalError",
                           tenant_message(message, host_name, name, host_ns_, ns));
    }
    if (status.contains("message") && status["message"].is_string())
      status["message"] =
          tenant_message(status["message"].get<std::string>(), host_name, name, host_ns_, ns);
    if (status.contains("details") && status["details"].is_object() &&
        status["details"].value("name", "") == host_name)
      status["details"]["name"] = name;
    http::Response r;
    r.status = o.code;
    r.set_header("Content-Type", "application/json");
    r.body = status.dump();
    return r;
  }

  const NameMapper names_;
  const std::string host_ns_;
  const std::shared_ptr<hostclient::Client> host_;
};

void replace_all(std::string& s, const std::string& from, const std::string& to) {
  if (from.empty()) return;
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
}

}  // namespace

std::string tenant_message(std::string message, const std::string& host_name,
                           const std::string& name, const std::string& host_namespace,
                           const std::string& ns) {
  replace_all(message, host_name, name);
  replace_all(message, "namespace \"" + host_namespace + "\"", "namespace \"" + ns + "\"");
  return message;
}

std::shared_ptr<apiserver::PodConnector> make_pod_proxy(NameMapper names,
                                                        std::string host_namespace,
                                                        std::shared_ptr<hostclient::Client> host) {
  return std::make_shared<PodProxy>(std::move(names), std::move(host_namespace), std::move(host));
}

}  // namespace vkube::syncer
