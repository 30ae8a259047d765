// The kinds' strategies (builtin/strategy.h): their hooks on their own, and
// through the API server's whole chain over a real store.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "strategy.h"
#include "support/admin_server.h"

namespace vkube::apiserver {
namespace {

using json = nlohmann::json;
using builtin::convert_hpa;

struct Server : testing::AdminApiServer {
  Server() { make_namespace("s"); }

  // Sends `body` and REQUIREs the answer `want`; returns its body.
  json ok(const std::string& method, const std::string& target, const json& body = nullptr,
          int want = 200, const std::string& content_type = "application/json") {
    auto r = call(method, target, body, content_type);
    INFO(method << " " << target << ": " << r.body);
    REQUIRE(r.status == want);
    return json::parse(r.body);
  }
};

json load_balancer() {
  return json::parse(
      R"({"apiVersion":"v1","kind":"Service","metadata":{"name":"web","namespace":"s"},
    "spec":{"type":"LoadBalancer","selector":{"app":"web"},"externalTrafficPolicy":"Local",
      "loadBalancerClass":"example.com/lb","healthCheckNodePort":31000,
      "allocateLoadBalancerNodePorts":true,"internalTrafficPolicy":"Cluster","clusterIP":"10.96.0.10","clusterIPs":["10.96.0.10"],
      "ports":[{"port":80,"nodePort":30080}]},
    "status":{"loadBalancer":{"ingress":[{"ip":"192.0.2.1"}]}}})");
}

TEST_CASE("a Service's type change drops what the new type cannot use", "[apiserver][strategy]") {
  const json old = load_balancer();
  json next = old;
  next["spec"]["type"] = "ClusterIP";

  SECTION("fields the request left alone go") {
    builtin::drop_service_type_dependent_fields(old, next);
    const json& spec = next["spec"];
    CHECK_FALSE(spec["ports"][0].contains("nodePort"));
    CHECK_FALSE(spec.contains("healthCheckNodePort"));
    CHECK_FALSE(spec.contains("loadBalancerClass"));
    CHECK_FALSE(spec.contains("allocateLoadBalancerNodePorts"));
    CHECK_FALSE(spec.contains("externalTrafficPolicy"));
    CHECK(spec["clusterIP"] == "10.96.0.10");  // ClusterIP still needs its address
    CHECK(next["status"]["loadBalancer"] == json::object());
  }
  SECTION("a nodePort the request adds stays, for validation to refuse") {
    next["spec"]["ports"][0]["nodePort"] = 30081;
    builtin::drop_service_type_dependent_fields(old, next);
    CHECK(next["spec"]["ports"][0]["nodePort"] == 30081);
  }
  SECTION("ExternalName gives up the cluster IP") {
    next["spec"]["type"] = "ExternalName";
    next["spec"]["externalName"] = "example.com";
    builtin::drop_service_type_dependent_fields(old, next);
    CHECK_FALSE(next["spec"].contains("clusterIP"));
    CHECK_FALSE(next["spec"].contains("clusterIPs"));
    CHECK_FALSE(next["spec"].contains("internalTrafficPolicy"));
  }
  SECTION("LoadBalancer to NodePort keeps the nodePorts") {
    next["spec"]["type"] = "NodePort";
    builtin::drop_service_type_dependent_fields(old, next);
    CHECK(next["spec"]["ports"][0]["nodePort"] == 30080);
    CHECK(next["spec"]["externalTrafficPolicy"] == "Local");
    CHECK_FALSE(next["spec"].contains("loadBalancerClass"));
  }
}

TEST_CASE("HorizontalPodAutoscaler converts between autoscaling/v1 and v2",
          "[apiserver][strategy]") {
  json v1 = json::parse(R"({"apiVersion":"autoscaling/v1","kind":"HorizontalPodAutoscaler",
    "metadata":{"name":"h","namespace":"s"},
    "spec":{"scaleTargetRef":{"kind":"Deployment","name":"web","apiVersion":"apps/v1"},
      "minReplicas":1,"maxReplicas":5,"targetCPUUtilizationPercentage":70},
    "status":{"currentReplicas":2,"desiredReplicas":3,"currentCPUUtilizationPercentage":40}})");

  SECTION("v1's CPU target is a v2 Resource metric, and back") {
    json v2 = v1;
    convert_hpa(v2, "v2");
    CHECK(v2["apiVersion"] == "autoscaling/v2");
    CHECK(v2["spec"]["metrics"] == json::parse(R"([{"type":"Resource","resource":{"name":"cpu",
      "target":{"type":"Utilization","averageUtilization":70}}}])"));
    CHECK_FALSE(v2["spec"].contains("targetCPUUtilizationPercentage"));
    CHECK(v2["status"]["currentMetrics"][0]["resource"]["current"]["averageUtilization"] == 40);
    json back = v2;
    convert_hpa(back, "v1");
    CHECK(back == v1);
  }
  SECTION("no v1 target is v2's default of 80 % CPU") {
    v1["spec"].erase("targetCPUUtilizationPercentage");
    convert_hpa(v1, "v2");
    CHECK(v1["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"] == 80);
  }
  SECTION("what v1 cannot hold travels in annotations and comes back") {
    json v2 = json::parse(R"({"apiVersion":"autoscaling/v2","kind":"HorizontalPodAutoscaler",
      "metadata":{"name":"h","namespace":"s"},
      "spec":{"scaleTargetRef":{"kind":"Deployment","name":"web"},"minReplicas":1,"maxReplicas":5,
        "metrics":[
          {"type":"Resource","resource":{"name":"memory","target":{"type":"AverageValue","averageValue":"1Gi"}}},
          {"type":"Pods","pods":{"metric":{"name":"qps"},"target":{"type":"AverageValue","averageValue":"10"}}},
          {"type":"Resource","resource":{"name":"cpu","target":{"type":"Utilization","averageUtilization":60}}},
          {"type":"External","external":{"metric":{"name":"queue"},"target":{"type":"Value","value":"30"}}}],
        "behavior":{"scaleDown":{"stabilizationWindowSeconds":60}}},
      "status":{"desiredReplicas":1,"currentReplicas":1,
        "conditions":[{"type":"AbleToScale","status":"True"}]}})");
    json v1c = v2;
    convert_hpa(v1c, "v1");
    CHECK(v1c["spec"]["targetCPUUtilizationPercentage"] == 60);
    const json& ann = v1c["metadata"]["annotations"];
    REQUIRE(ann.contains("autoscaling.alpha.kubernetes.io/metrics"));
    json other = json::parse(ann["autoscaling.alpha.kubernetes.io/metrics"].get<std::string>());
    CHECK(other[0]["resource"]["targetAverageValue"] == "1Gi");
    CHECK(other[1]["pods"]["metricName"] == "qps");
    CHECK(ann.contains("autoscaling.alpha.kubernetes.io/behavior"));
    CHECK(ann.contains("autoscaling.alpha.kubernetes.io/conditions"));
    convert_hpa(v1c, "v2");
    // The CPU metric comes after the others, as kube's conversion orders them.
    json want = v2["spec"]["metrics"];
    json cpu = want[2];
    want.erase(2);
    want.push_back(cpu);
    CHECK(v1c["spec"]["metrics"] == want);
    CHECK(v1c["spec"]["behavior"] == v2["spec"]["behavior"]);
    CHECK(v1c["status"]["conditions"] == v2["status"]["conditions"]);
    CHECK_FALSE(v1c["metadata"].contains("annotations"));
  }
}

TEST_CASE("statuses carry the fields kube's types always serialise", "[apiserver][strategy]") {
  Server s;
  json rc = s.ok("POST", "/api/v1/namespaces/s/replicationcontrollers",
                 json::parse(R"({"metadata":{"name":"rc"},"spec":{"replicas":1,"selector":{"a":"b"},
                   "template":{"metadata":{"labels":{"a":"b"}},
                     "spec":{"containers":[{"name":"c","image":"i"}]}}}})"),
                 201);
  CHECK(rc["status"] == json{{"replicas", 0}});
  json ds =
      s.ok("POST", "/apis/apps/v1/namespaces/s/daemonsets",
           json::parse(R"({"metadata":{"name":"ds"},"spec":{"selector":{"matchLabels":{"a":"b"}},
                   "template":{"metadata":{"labels":{"a":"b"}},
                     "spec":{"containers":[{"name":"c","image":"i"}]}}}})"),
           201);
  CHECK(ds["status"] == json{{"currentNumberScheduled", 0},
                             {"numberMisscheduled", 0},
                             {"desiredNumberScheduled", 0},
                             {"numberReady", 0}});
  json pdb = s.ok("POST", "/apis/policy/v1/namespaces/s/poddisruptionbudgets",
                  json::parse(R"({"metadata":{"name":"p"},"spec":{"minAvailable":1,
                    "selector":{"matchLabels":{"a":"b"}}}})"),
                  201);
  CHECK(pdb["status"]["expectedPods"] == 0);
  CHECK(pdb["status"]["disruptionsAllowed"] == 0);
  // A status written without them gets them back.
  json written = s.ok("PATCH", "/api/v1/namespaces/s/replicationcontrollers/rc/status",
                      json::parse(R"({"status":{"replicas":null,"readyReplicas":1}})"), 200,
                      "application/merge-patch+json");
  CHECK(written["status"]["replicas"] == 0);
  CHECK(written["status"]["readyReplicas"] == 1);
}

TEST_CASE("an HPA written through one version reads through the other", "[apiserver][strategy]") {
  Server s;
  s.ok("POST", "/apis/autoscaling/v1/namespaces/s/horizontalpodautoscalers",
       json::parse(R"({"metadata":{"name":"h"},"spec":{"scaleTargetRef":{"kind":"Deployment",
         "name":"web","apiVersion":"apps/v1"},"maxReplicas":4,"targetCPUUtilizationPercentage":70}})"),
       201);
  json v2 = s.ok("GET", "/apis/autoscaling/v2/namespaces/s/horizontalpodautoscalers/h");
  CHECK(v2["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"] == 70);
  json listed = s.ok("GET", "/apis/autoscaling/v2/namespaces/s/horizontalpodautoscalers");
  CHECK(listed["items"][0]["apiVersion"] == "autoscaling/v2");
  CHECK(listed["items"][0]["spec"]["metrics"][0]["resource"]["name"] == "cpu");
  // A v1 patch changes the v2 metric; the v1 view shows it without annotations.
  json patched = s.ok("PATCH", "/apis/autoscaling/v1/namespaces/s/horizontalpodautoscalers/h",
                      json::parse(R"({"spec":{"targetCPUUtilizationPercentage":55}})"), 200,
                      "application/merge-patch+json");
  CHECK(patched["spec"]["targetCPUUtilizationPercentage"] == 55);
  CHECK_FALSE(patched["metadata"].contains("annotations"));
  v2 = s.ok("GET", "/apis/autoscaling/v2/namespaces/s/horizontalpodautoscalers/h");
  CHECK(v2["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"] == 55);
  CHECK(v2["status"]["desiredReplicas"] == 0);
}

TEST_CASE("resourceVersion \"0\" on update is no precondition", "[apiserver][strategy]") {
  Server s;
  s.ok("POST", "/api/v1/namespaces/s/configmaps",
       json::parse(R"({"metadata":{"name":"c"},"data":{"a":"1"}})"), 201);
  json out =
      s.ok("PUT", "/api/v1/namespaces/s/configmaps/c",
           json::parse(R"({"metadata":{"name":"c","resourceVersion":"0"},"data":{"a":"2"}})"));
  CHECK(out["data"]["a"] == "2");
  // Any other stale version still conflicts.
  s.ok("PUT", "/api/v1/namespaces/s/configmaps/c",
       json::parse(R"({"metadata":{"name":"c","resourceVersion":"1"},"data":{"a":"3"}})"), 409);
}

TEST_CASE("an embedded kind carries its TypeMeta, a template does not", "[apiserver][strategy]") {
  Server s;
  json sts = json::parse(R"({"metadata":{"name":"db"},"spec":{"serviceName":"db",
    "selector":{"matchLabels":{"a":"b"}},
    "template":{"metadata":{"labels":{"a":"b"}},"spec":{"containers":[{"name":"c","image":"i"}]}},
    "volumeClaimTemplates":[{"apiVersion":"v1","kind":"PersistentVolumeClaim",
      "metadata":{"name":"data"},"spec":{"accessModes":["ReadWriteOnce"],
        "resources":{"requests":{"storage":"1Gi"}}}}]}})");
  json out =
      s.ok("POST", "/apis/apps/v1/namespaces/s/statefulsets?fieldValidation=Strict", sts, 201);
  CHECK(out["spec"]["volumeClaimTemplates"][0]["kind"] == "PersistentVolumeClaim");

  json cj = json::parse(R"({"metadata":{"name":"cj"},"spec":{"schedule":"* * * * *",
    "jobTemplate":{"apiVersion":"batch/v1","spec":{"template":{"spec":{"restartPolicy":"Never",
      "containers":[{"name":"c","image":"i"}]}}}}}})");
  auto r = s.call("POST", "/apis/batch/v1/namespaces/s/cronjobs?fieldValidation=Strict", cj);
  CHECK(r.status == 400);
  CHECK(r.body.find("unknown field \\\"spec.jobTemplate.apiVersion\\\"") != std::string::npos);
}

TEST_CASE("a LoadBalancer Service becomes a ClusterIP one by a merge patch",
          "[apiserver][strategy]") {
  Server s;
  json svc = s.ok("POST", "/api/v1/namespaces/s/services",
                  json::parse(R"({"metadata":{"name":"web"},"spec":{"type":"LoadBalancer",
                    "selector":{"app":"web"},"ports":[{"port":80}]}})"),
                  201);
  REQUIRE(svc["spec"]["ports"][0].contains("nodePort"));
  json out = s.ok("PATCH", "/api/v1/namespaces/s/services/web",
                  json::parse(R"({"spec":{"type":"ClusterIP"}})"), 200,
                  "application/strategic-merge-patch+json");
  CHECK(out["spec"]["type"] == "ClusterIP");
  CHECK_FALSE(out["spec"]["ports"][0].contains("nodePort"));
  CHECK_FALSE(out["spec"].contains("externalTrafficPolicy"));
  CHECK_FALSE(out["spec"].contains("allocateLoadBalancerNodePorts"));
}

}  // namespace
}  // namespace vkube::apiserver

namespace vkube::apiserver {
namespace {

TEST_CASE("a Deployment's status write keeps its spec and labels, not its other metadata",
          "[apiserver][strategy]") {
  Server s;
  const std::string path = "/apis/apps/v1/namespaces/s/deployments/web";
  json d = s.ok("POST", "/apis/apps/v1/namespaces/s/deployments",
                json::parse(R"({"apiVersion":"apps/v1","kind":"Deployment",
    "metadata":{"name":"web","namespace":"s","labels":{"app":"web"}},
    "spec":{"replicas":1,"selector":{"matchLabels":{"app":"web"}},
      "template":{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"name":"c","image":"nginx"}]}}}})"),
                201);
  d["metadata"]["annotations"]["deployment.kubernetes.io/revision"] = "1";
  d["metadata"]["labels"]["extra"] = "dropped";
  d["spec"]["replicas"] = 5;
  d["status"]["observedGeneration"] = 1;
  json written = s.ok("PUT", path + "/status", d);
  // kube's deploymentStatusStrategy: spec and labels are the old ones, the
  // rest of the metadata (the controller's revision annotation) is written.
  CHECK(written["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "1");
  CHECK(written["metadata"]["labels"] == json{{"app", "web"}});
  CHECK(written["spec"]["replicas"] == 1);
  CHECK(written["status"]["observedGeneration"] == 1);
  CHECK(written["metadata"]["generation"] == 1);
  json read = s.ok("GET", path);
  CHECK(read["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "1");
  CHECK(read["spec"]["replicas"] == 1);
}

}  // namespace
}  // namespace vkube::apiserver
