// pods/<name>/binding and the bindings collection through the API server's
// whole chain over a real store: what a scheduler's bind changes on the pod,
// what a watcher of pods sees, and the refusals worded as kube-apiserver's.
#include <catch2/catch.hpp>

#include <chrono>
#include <condition_variable>
#include <mutex>

#include <nlohmann/json.hpp>

#include "support/api_server.h"
#include "vkube/schema/protobuf.h"

namespace vkube::apiserver {
namespace {

using json = nlohmann::json;

const std::string kPods = "/api/v1/namespaces/b/pods";

Options with_tokens() {
  Options o;
  o.tokens["scheduler-token"] = UserInfo{"my-scheduler", {}, "2001"};
  o.tokens["creator-token"] = UserInfo{"pod-creator", {}, "2002"};
  return o;
}

struct Server : testing::ApiServerOverStore {
  Server() : ApiServerOverStore(with_tokens()) {
    REQUIRE(call("POST", "/api/v1/namespaces", {{"metadata", {{"name", "b"}}}}).status == 201);
    pod("p");
  }

  // `token` empty: the admin certificate.
  http::Response call(const std::string& method, const std::string& target,
                      const json& body = nullptr, const std::string& token = "") {
    http::Request req = testing::request(method, target);
    if (token.empty())
      req.peer = http::PeerCertificate{"admin", {"system:masters"}};
    else
      req.headers.push_back({"Authorization", "Bearer " + token});
    if (!body.is_null()) {
      req.body = body.dump();
      req.headers.push_back({"Content-Type", "application/json"});
    }
    return api->handle(req);
  }
  json pod(const std::string& name, json spec_extra = json::object(),
           json meta_extra = json::object()) {
    json spec = {{"containers", {{{"name", "c"}, {"image", "busybox"}}}}};
    spec.update(spec_extra);
    json meta = {{"name", name}};
    meta.update(meta_extra);
    http::Response r = call("POST", kPods, {{"metadata", meta}, {"spec", spec}});
    INFO(r.body);
    REQUIRE(r.status == 201);
    return json::parse(r.body);
  }
  json get(const std::string& name) {
    http::Response r = call("GET", kPods + "/" + name);
    REQUIRE(r.status == 200);
    return json::parse(r.body);
  }
  http::Response bind(const std::string& pod, const json& binding, const std::string& token = "") {
    return call("POST", kPods + "/" + pod + "/binding", binding, token);
  }
};

json binding(const std::string& pod, const std::string& node, json annotations = nullptr) {
  json b = {{"apiVersion", "v1"},
            {"kind", "Binding"},
            {"metadata", {{"name", pod}}},
            {"target", {{"apiVersion", "v1"}, {"kind", "Node"}, {"name", node}}}};
  if (!annotations.is_null()) b["metadata"]["annotations"] = std::move(annotations);
  return b;
}

json parse(const http::Response& r) {
  return json::parse(r.body, nullptr, false);
}

// The pod's PodScheduled condition, or null.
json scheduled_condition(const json& pod) {
  for (const json& c : pod["status"].value("conditions", json::array()))
    if (c.value("type", "") == "PodScheduled") return c;
  return nullptr;
}

// The watch events written to a watch response's stream.
class Collector : public http::StreamSink {
 public:
  bool write(std::string chunk) override {
    std::lock_guard lock(mu_);
    text_ += chunk;
    cv_.notify_all();
    return true;
  }
  void close() override {}
  // The events once there are at least `n`, or what there is after 5 s.
  std::vector<json> events(size_t n) {
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, std::chrono::seconds(5), [&] { return parse_locked().size() >= n; });
    return parse_locked();
  }

 private:
  std::vector<json> parse_locked() const {
    std::vector<json> out;
    size_t start = 0;
    for (size_t nl; (nl = text_.find('\n', start)) != std::string::npos; start = nl + 1)
      out.push_back(json::parse(text_.substr(start, nl - start)));
    return out;
  }
  std::mutex mu_;
  std::condition_variable cv_;
  std::string text_;
};

TEST_CASE("a binding sets the node, the annotations and PodScheduled in one update",
          "[apiserver][binding]") {
  Server s;
  const std::string rv = s.get("p")["metadata"]["resourceVersion"];
  http::Response watch = s.call("GET", kPods + "?watch=true&resourceVersion=" + rv);
  REQUIRE(watch.status == 200);
  REQUIRE(watch.stream != nullptr);
  auto collector = std::make_shared<Collector>();
  watch.stream->start(collector);

  http::Response r = s.bind("p", binding("p", "gpu-node-1", {{"vkube.io/gpu-ids", "0,1"}}));
  INFO(r.body);
  REQUIRE(r.status == 201);
  CHECK(parse(r) == json{{"kind", "Status"},
                         {"apiVersion", "v1"},
                         {"metadata", json::object()},
                         {"status", "Success"},
                         {"code", 201}});

  json pod = s.get("p");
  CHECK(pod["spec"]["nodeName"] == "gpu-node-1");
  CHECK(pod["metadata"]["annotations"] == json{{"vkube.io/gpu-ids", "0,1"}});
  const json cond = scheduled_condition(pod);
  REQUIRE(cond.is_object());
  CHECK(cond["status"] == "True");
  CHECK(cond.contains("lastProbeTime"));
  CHECK(cond["lastProbeTime"].is_null());
  CHECK(cond["lastTransitionTime"].is_string());
  CHECK(pod["status"]["phase"] == "Pending");  // the rest of the status stays

  // One write: the watcher sees one MODIFIED event with all of it.
  std::vector<json> events = collector->events(1);
  REQUIRE(events.size() == 1);
  CHECK(events[0]["type"] == "MODIFIED");
  CHECK(events[0]["object"]["spec"]["nodeName"] == "gpu-node-1");
  CHECK(scheduled_condition(events[0]["object"])["status"] == "True");
  CHECK(events[0]["object"]["metadata"]["resourceVersion"] == pod["metadata"]["resourceVersion"]);
  watch.stream->stop();
}

TEST_CASE("a binding replaces a scheduler's Unschedulable condition and keeps other ones",
          "[apiserver][binding]") {
  Server s;
  json pod = s.get("p");
  pod["status"]["conditions"] = {{{"type", "PodScheduled"},
                                  {"status", "False"},
                                  {"reason", "Unschedulable"},
                                  {"message", "0/1 nodes are available"},
                                  {"lastProbeTime", nullptr},
                                  {"lastTransitionTime", "2026-01-01T00:00:00Z"}},
                                 {{"type", "DisruptionTarget"}, {"status", "False"}}};
  REQUIRE(s.call("PUT", kPods + "/p/status", pod).status == 200);

  REQUIRE(s.bind("p", binding("p", "n1")).status == 201);
  const json conditions = s.get("p")["status"]["conditions"];
  REQUIRE(conditions.size() == 2);
  CHECK(conditions[0]["type"] == "PodScheduled");
  CHECK(conditions[0]["status"] == "True");
  CHECK(!conditions[0].contains("reason"));
  CHECK(conditions[0]["lastTransitionTime"] != "2026-01-01T00:00:00Z");
  CHECK(conditions[1]["type"] == "DisruptionTarget");
}

TEST_CASE("a bound pod cannot be bound again", "[apiserver][binding]") {
  Server s;
  REQUIRE(s.bind("p", binding("p", "n1")).status == 201);
  http::Response again = s.bind("p", binding("p", "n2"));
  REQUIRE(again.status == 409);
  json st = parse(again);
  CHECK(st["reason"] == "Conflict");
  CHECK(st["message"] ==
        "Operation cannot be fulfilled on pods/binding \"p\": pod p is already assigned to node "
        "\"n1\"");
  CHECK(st["details"] == json{{"name", "p"}, {"kind", "pods/binding"}});
  CHECK(s.get("p")["spec"]["nodeName"] == "n1");

  // A pod created with spec.nodeName is assigned from the start.
  s.pod("pinned", {{"nodeName", "n3"}});
  CHECK(s.bind("pinned", binding("pinned", "n1")).status == 409);
}

TEST_CASE("binding refusals: missing, terminating or gated pods and malformed bindings",
          "[apiserver][binding]") {
  Server s;
  SECTION("an unknown pod is 404") {
    http::Response r = s.bind("nope", binding("nope", "n1"));
    REQUIRE(r.status == 404);
    CHECK(parse(r)["message"] == "pods \"nope\" not found");
  }
  SECTION("a target that is not a Node is 422, as is a missing target name") {
    json b = binding("p", "n1");
    b["target"]["kind"] = "Pod";
    http::Response r = s.bind("p", b);
    REQUIRE(r.status == 422);
    json st = parse(r);
    CHECK(st["reason"] == "Invalid");
    CHECK(st["message"] ==
          "Binding \"p\" is invalid: target.kind: Unsupported value: \"Pod\": supported values: "
          "\"Node\", \"<empty>\"");
    b = binding("p", "");
    b["target"].erase("kind");  // an empty kind means Node
    r = s.bind("p", b);
    REQUIRE(r.status == 422);
    CHECK(parse(r)["details"]["causes"][0]["field"] == "target.name");
    CHECK(!s.get("p")["spec"].contains("nodeName"));
  }
  SECTION("the binding must name the pod of the URL, in its namespace") {
    CHECK(s.bind("p", binding("other", "n1")).status == 400);
    json b = binding("p", "n1");
    b["metadata"]["namespace"] = "elsewhere";
    CHECK(s.bind("p", b).status == 400);
    CHECK(!s.get("p")["spec"].contains("nodeName"));
  }
  SECTION("a pod being deleted is 409") {
    s.pod("held", json::object(), {{"finalizers", {"example.com/hold"}}});
    REQUIRE(s.call("DELETE", kPods + "/held").status == 200);
    http::Response r = s.bind("held", binding("held", "n1"));
    REQUIRE(r.status == 409);
    CHECK(parse(r)["message"] ==
          "Operation cannot be fulfilled on pods/binding \"held\": pod held is being deleted, "
          "cannot be assigned to a host");
  }
  SECTION("a pod with scheduling gates is 409") {
    s.pod("gated", {{"schedulingGates", {{{"name", "example.com/wait"}}}}});
    http::Response r = s.bind("gated", binding("gated", "n1"));
    REQUIRE(r.status == 409);
    CHECK(parse(r)["message"].get<std::string>().ends_with(
        "pod gated has non-empty .spec.schedulingGates"));
  }
  SECTION("a uid precondition must match the pod's") {
    json b = binding("p", "n1");
    b["metadata"]["uid"] = "not-the-uid";
    http::Response r = s.bind("p", b);
    REQUIRE(r.status == 409);
    CHECK(parse(r)["message"].get<std::string>().find("Precondition failed: UID in precondition: "
                                                      "not-the-uid") != std::string::npos);
    b["metadata"]["uid"] = s.get("p")["metadata"]["uid"];
    CHECK(s.bind("p", b).status == 201);
  }
  SECTION("only POST binds") {
    CHECK(s.call("PUT", kPods + "/p/binding", binding("p", "n1")).status == 405);
    CHECK(s.call("GET", kPods + "/p/binding").status == 405);
  }
}

TEST_CASE("a protobuf binding, as client-go schedulers send it, is answered in protobuf",
          "[apiserver][binding]") {
  Server s;
  auto body = schema::encode_object(binding("p", "n1", {{"vkube.io/gpu-ids", "3"}}));
  REQUIRE(body.is_ok());
  http::Request req = testing::request("POST", kPods + "/p/binding");
  req.peer = http::PeerCertificate{"admin", {"system:masters"}};
  req.body = *body;
  req.headers = {{"Content-Type", "application/vnd.kubernetes.protobuf"},
                 {"Accept", "application/vnd.kubernetes.protobuf, application/json"}};
  http::Response r = s.api->handle(req);
  REQUIRE(r.status == 201);
  auto status = schema::decode_object(r.body);
  REQUIRE(status.is_ok());
  CHECK((*status)["kind"] == "Status");
  CHECK((*status)["status"] == "Success");
  CHECK((*status)["code"] == 201);
  json pod = s.get("p");
  CHECK(pod["spec"]["nodeName"] == "n1");
  CHECK(pod["metadata"]["annotations"]["vkube.io/gpu-ids"] == "3");
}

TEST_CASE("dry-run bindings change nothing", "[apiserver][binding]") {
  Server s;
  const json before = s.get("p");
  REQUIRE(s.call("POST", kPods + "/p/binding?dryRun=All", binding("p", "n1")).status == 201);
  CHECK(s.get("p") == before);
}

TEST_CASE("the bindings collection binds the pod the binding names", "[apiserver][binding]") {
  Server s;
  http::Response r = s.call("POST", "/api/v1/namespaces/b/bindings", binding("p", "n1"));
  INFO(r.body);
  REQUIRE(r.status == 201);
  CHECK(parse(r)["status"] == "Success");
  CHECK(s.get("p")["spec"]["nodeName"] == "n1");
  CHECK(s.call("POST", "/api/v1/namespaces/b/bindings", binding("p", "n2")).status == 409);
  CHECK(s.call("POST", "/api/v1/namespaces/b/bindings", binding("", "n2")).status == 400);
  CHECK(s.call("GET", "/api/v1/namespaces/b/bindings").status == 405);
}

TEST_CASE("binding is RBAC verb create on pods/binding", "[apiserver][binding]") {
  Server s;
  const std::string rbac = "/apis/rbac.authorization.k8s.io/v1/namespaces/b";
  auto grant = [&](const std::string& name, const std::string& user, const json& resources) {
    REQUIRE(s.call("POST", rbac + "/roles",
                   {{"metadata", {{"name", name}}},
                    {"rules",
                     {{{"apiGroups", {""}}, {"resources", resources}, {"verbs", {"create"}}}}}})
                .status == 201);
    REQUIRE(
        s.call("POST", rbac + "/rolebindings",
               {{"metadata", {{"name", name}}},
                {"roleRef",
                 {{"apiGroup", "rbac.authorization.k8s.io"}, {"kind", "Role"}, {"name", name}}},
                {"subjects",
                 {{{"apiGroup", "rbac.authorization.k8s.io"}, {"kind", "User"}, {"name", user}}}}})
            .status == 201);
  };
  grant("binder", "my-scheduler", {"pods/binding"});
  grant("creator", "pod-creator", {"pods"});

  http::Response denied = s.bind("p", binding("p", "n1"), "creator-token");
  REQUIRE(denied.status == 403);
  CHECK(parse(denied)["message"] ==
        "pods \"p\" is forbidden: User \"pod-creator\" cannot create resource \"pods/binding\" in "
        "API group \"\" in the namespace \"b\"");
  CHECK(s.bind("p", binding("p", "n1"), "scheduler-token").status == 201);
}

TEST_CASE("discovery lists pods/binding and bindings with verb create", "[apiserver][binding]") {
  Server s;
  json list = parse(s.call("GET", "/api/v1"));
  json binding_sub, bindings;
  for (const json& r : list["resources"]) {
    if (r["name"] == "pods/binding") binding_sub = r;
    if (r["name"] == "bindings") bindings = r;
  }
  CHECK(binding_sub["kind"] == "Binding");
  CHECK(binding_sub["verbs"] == json{"create"});
  CHECK(bindings["kind"] == "Binding");
  CHECK(bindings["namespaced"] == true);
  CHECK(bindings["verbs"] == json{"create"});

  http::Request req = testing::request("GET", "/api");
  req.peer = http::PeerCertificate{"admin", {"system:masters"}};
  req.headers.push_back(
      {"Accept", "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"});
  json aggregated = parse(s.api->handle(req));
  json subresources;
  for (const json& r : aggregated["items"][0]["versions"][0]["resources"])
    if (r["resource"] == "pods") subresources = r["subresources"];
  REQUIRE(subresources.is_array());
  CHECK(subresources[0] ==
        json{{"subresource", "binding"},
             {"responseKind", {{"group", ""}, {"version", "v1"}, {"kind", "Binding"}}},
             {"verbs", {"create"}}});
}

}  // namespace
}  // namespace vkube::apiserver
