// Table rows of pods, workloads, nodes, events and autoscalers, checked
// against what kube-apiserver 1.32's printers produce for the same objects.
#include <catch2/catch.hpp>

#include "apiserver/tables_support.h"

namespace vkube::apiserver::builtin {
namespace {

using namespace table_testing;

json container_status(const std::string& name, json state, bool ready = false, int restarts = 0) {
  return {
      {"name", name}, {"state", std::move(state)}, {"ready", ready}, {"restartCount", restarts}};
}

json pod(json spec, json status, json metadata = meta("web-1")) {
  return {
      {"metadata", std::move(metadata)}, {"spec", std::move(spec)}, {"status", std::move(status)}};
}

const json kRunning = {{"running", {{"startedAt", kOneHourAgo}}}};

TEST_CASE("pod rows show readiness, status and restarts as kubectl does", "[tables]") {
  const json two = {{"containers", {{{"name", "a"}}, {{"name", "b"}}}}, {"nodeName", "node-1"}};
  const json one = {{"containers", {{{"name", "a"}}}}};

  SECTION("running and ready") {
    auto r = row(
        "", "pods",
        pod(two,
            {{"phase", "Running"},
             {"podIPs", {{{"ip", "10.0.0.5"}}}},
             {"containerStatuses",
              {container_status("a", kRunning, true), container_status("b", kRunning, true)}}}));
    CHECK(r["Name"] == "web-1");
    CHECK(r["Ready"] == "2/2");
    CHECK(r["Status"] == "Running");
    CHECK(r["Restarts"] == "0");
    CHECK(r["Age"] == "2d");
    CHECK(r["IP"] == "10.0.0.5");
    CHECK(r["Node"] == "node-1");
    CHECK(r["Nominated Node"] == "<none>");
    CHECK(r["Readiness Gates"] == "<none>");
  }
  SECTION("pending and unscheduled") {
    auto r = row("", "pods", pod(one, {{"phase", "Pending"}}));
    CHECK(r["Ready"] == "0/1");
    CHECK(r["Status"] == "Pending");
    CHECK(r["IP"] == "<none>");
    CHECK(r["Node"] == "<none>");
  }
  SECTION("container creating") {
    auto r = row(
        "", "pods",
        pod(one, {{"phase", "Pending"},
                  {"containerStatuses",
                   {container_status("a", {{"waiting", {{"reason", "ContainerCreating"}}}})}}}));
    CHECK(r["Status"] == "ContainerCreating");
  }
  SECTION("crash loop with restarts shows when the last one was") {
    json c = container_status("a", {{"waiting", {{"reason", "CrashLoopBackOff"}}}}, false, 5);
    c["lastState"] = {
        {"terminated", {{"exitCode", 1}, {"reason", "Error"}, {"finishedAt", kFiveMinutesAgo}}}};
    auto r = row("", "pods", pod(one, {{"phase", "Running"}, {"containerStatuses", {c}}}));
    CHECK(r["Status"] == "CrashLoopBackOff");
    CHECK(r["Restarts"] == "5 (5m ago)");
    CHECK(r["Ready"] == "0/1");
  }
  SECTION("terminated without a reason shows the exit code or signal") {
    auto r =
        row("", "pods",
            pod(one,
                {{"phase", "Failed"},
                 {"containerStatuses",
                  {container_status("a", {{"terminated", {{"exitCode", 137}, {"signal", 9}}}})}}}));
    CHECK(r["Status"] == "Signal:9");
    r = row("", "pods",
            pod(one, {{"phase", "Failed"},
                      {"containerStatuses",
                       {container_status("a", {{"terminated", {{"exitCode", 3}}}})}}}));
    CHECK(r["Status"] == "ExitCode:3");
  }
  SECTION("completed") {
    auto r =
        row("", "pods",
            pod(one, {{"phase", "Succeeded"},
                      {"containerStatuses",
                       {container_status(
                           "a", {{"terminated", {{"exitCode", 0}, {"reason", "Completed"}}}})}}}));
    CHECK(r["Status"] == "Completed");
    CHECK(r["Ready"] == "0/1");
  }
  SECTION("completed with a container still running") {
    json statuses = {
        container_status("a", {{"terminated", {{"exitCode", 0}, {"reason", "Completed"}}}}),
        container_status("b", kRunning, true)};
    auto r = row("", "pods", pod(two, {{"phase", "Running"}, {"containerStatuses", statuses}}));
    CHECK(r["Status"] == "NotReady");
    r = row("", "pods",
            pod(two, {{"phase", "Running"},
                      {"conditions", {{{"type", "Ready"}, {"status", "True"}}}},
                      {"containerStatuses", statuses}}));
    CHECK(r["Status"] == "Running");
  }
  SECTION("init containers") {
    json spec = one;
    spec["initContainers"] = {{{"name", "init-a"}}, {{"name", "init-b"}}};
    json done = container_status("init-a", {{"terminated", {{"exitCode", 0}}}});
    auto with_init = [&](json second) {
      return row(
          "", "pods",
          pod(spec, {{"phase", "Pending"},
                     {"initContainerStatuses", {done, std::move(second)}},
                     {"containerStatuses",
                      {container_status("a", {{"waiting", {{"reason", "PodInitializing"}}}})}}}));
    };
    CHECK(with_init(container_status("init-b", kRunning))["Status"] == "Init:1/2");
    CHECK(with_init(container_status(
              "init-b", {{"waiting", {{"reason", "PodInitializing"}}}}))["Status"] == "Init:1/2");
    CHECK(with_init(container_status("init-b",
                                     {{"waiting", {{"reason", "CrashLoopBackOff"}}}}))["Status"] ==
          "Init:CrashLoopBackOff");
    CHECK(with_init(container_status(
              "init-b", {{"terminated", {{"exitCode", 1}, {"reason", "Error"}}}}))["Status"] ==
          "Init:Error");
    CHECK(with_init(container_status("init-b", {{"terminated", {{"exitCode", 2}}}}))["Status"] ==
          "Init:ExitCode:2");
    auto first =
        row("", "pods",
            pod(spec,
                {{"phase", "Pending"},
                 {"initContainerStatuses",
                  {container_status("init-a", {{"waiting", {{"reason", "PodInitializing"}}}})}}}));
    CHECK(first["Status"] == "Init:0/2");
  }
  SECTION("sidecars count as containers") {
    json spec = one;
    spec["initContainers"] = {{{"name", "proxy"}, {"restartPolicy", "Always"}}};
    json sidecar = container_status("proxy", kRunning, true, 2);
    sidecar["started"] = true;
    auto r = row("", "pods",
                 pod(spec, {{"phase", "Running"},
                            {"conditions", {{{"type", "Initialized"}, {"status", "True"}}}},
                            {"initContainerStatuses", {sidecar}},
                            {"containerStatuses", {container_status("a", kRunning, true, 1)}}}));
    CHECK(r["Ready"] == "2/2");
    CHECK(r["Status"] == "Running");
    CHECK(r["Restarts"] == "3");
  }
  SECTION("deletion") {
    json m = meta("web-1");
    m["deletionTimestamp"] = kFiveMinutesAgo;
    auto r = row(
        "", "pods",
        pod(one,
            {{"phase", "Running"}, {"containerStatuses", {container_status("a", kRunning, true)}}},
            m));
    CHECK(r["Status"] == "Terminating");
    r = row("", "pods",
            pod(one,
                {{"phase", "Succeeded"},
                 {"containerStatuses",
                  {container_status(
                      "a", {{"terminated", {{"exitCode", 0}, {"reason", "Completed"}}}})}}},
                m));
    CHECK(r["Status"] == "Completed");
    r = row("", "pods", pod(one, {{"phase", "Running"}, {"reason", "NodeLost"}}, m));
    CHECK(r["Status"] == "Unknown");
  }
  SECTION("scheduling gates, readiness gates and nomination") {
    json spec = one;
    spec["readinessGates"] = {{{"conditionType", "example.com/lb"}},
                              {{"conditionType", "example.com/dns"}}};
    auto r = row(
        "", "pods",
        pod(spec, {{"phase", "Pending"},
                   {"nominatedNodeName", "node-2"},
                   {"conditions",
                    {{{"type", "PodScheduled"}, {"status", "False"}, {"reason", "SchedulingGated"}},
                     {{"type", "example.com/lb"}, {"status", "True"}},
                     {{"type", "example.com/dns"}, {"status", "False"}}}}}));
    CHECK(r["Status"] == "SchedulingGated");
    CHECK(r["Readiness Gates"] == "1/2");
    CHECK(r["Nominated Node"] == "node-2");
  }
  SECTION("evicted pods show the status reason") {
    auto r = row("", "pods", pod(one, {{"phase", "Failed"}, {"reason", "Evicted"}}));
    CHECK(r["Status"] == "Evicted");
  }
}

TEST_CASE("deployment, replica set, stateful set and daemon set rows", "[tables]") {
  const json tmpl = {
      {"spec",
       {{"containers",
         {{{"name", "web"}, {"image", "nginx:1.27"}}, {{"name", "log"}, {"image", "busybox"}}}}}}};
  const json d = {
      {"metadata", meta("web")},
      {"spec",
       {{"replicas", 3},
        {"template", tmpl},
        {"selector",
         {{"matchLabels", {{"app", "web"}}},
          {"matchExpressions", {{{"key", "tier"}, {"operator", "In"}, {"values", {"b", "a"}}}}}}}}},
      {"status", {{"readyReplicas", 2}, {"updatedReplicas", 3}, {"availableReplicas", 2}}}};
  auto r = row("apps", "deployments", d);
  CHECK(r["Ready"] == "2/3");
  CHECK(r["Up-to-date"] == 3);
  CHECK(r["Available"] == 2);
  CHECK(r["Containers"] == "web,log");
  CHECK(r["Images"] == "nginx:1.27,busybox");
  CHECK(r["Selector"] == "app=web,tier in (a,b)");
  CHECK(row("apps", "deployments", {{"metadata", meta("x")}})["Selector"] == "");

  r = row("apps", "replicasets", d);
  CHECK(r["Desired"] == 3);
  CHECK(r["Current"] == 0);
  CHECK(r["Ready"] == 2);
  CHECK(row("apps", "replicasets", {{"metadata", meta("x")}})["Selector"] == "<none>");

  CHECK(row("apps", "statefulsets", d)["Ready"] == "2/3");

  const json ds = {
      {"metadata", meta("agent")},
      {"spec", {{"template", {{"spec", {{"nodeSelector", {{"os", "linux"}, {"gpu", "yes"}}}}}}}}},
      {"status", {{"desiredNumberScheduled", 4}, {"numberReady", 3}}}};
  r = row("apps", "daemonsets", ds);
  CHECK(r["Desired"] == 4);
  CHECK(r["Ready"] == 3);
  CHECK(r["Node Selector"] == "gpu=yes,os=linux");

  const json rev = {{"metadata",
                     {{"name", "web-6d4b"},
                      {"ownerReferences",
                       {{{"apiVersion", "apps/v1"},
                         {"kind", "StatefulSet"},
                         {"name", "web"},
                         {"controller", true}}}}}},
                    {"revision", 4}};
  r = row("apps", "controllerrevisions", rev);
  CHECK(r["Controller"] == "statefulset.apps/web");
  CHECK(r["Revision"] == 4);
}

TEST_CASE("node rows show readiness, roles and system info", "[tables]") {
  json node = {{"metadata",
                {{"name", "node-1"},
                 {"creationTimestamp", kTwoDaysAgo},
                 {"labels",
                  {{"node-role.kubernetes.io/control-plane", ""},
                   {"node-role.kubernetes.io/worker", ""},
                   {"kubernetes.io/hostname", "node-1"}}}}},
               {"status",
                {{"conditions",
                  {{{"type", "MemoryPressure"}, {"status", "False"}},
                   {{"type", "Ready"}, {"status", "True"}}}},
                 {"addresses",
                  {{{"type", "InternalIP"}, {"address", "192.168.1.10"}},
                   {{"type", "Hostname"}, {"address", "node-1"}}}},
                 {"nodeInfo",
                  {{"kubeletVersion", "v1.32.0"},
                   {"osImage", "Debian 12"},
                   {"kernelVersion", "6.1.0"},
                   {"containerRuntimeVersion", "containerd://1.7.24"}}}}}};
  auto r = row("", "nodes", node);
  CHECK(r["Status"] == "Ready");
  CHECK(r["Roles"] == "control-plane,worker");
  CHECK(r["Version"] == "v1.32.0");
  CHECK(r["Internal-IP"] == "192.168.1.10");
  CHECK(r["External-IP"] == "<none>");
  CHECK(r["OS-Image"] == "Debian 12");
  CHECK(r["Container-Runtime"] == "containerd://1.7.24");

  node["spec"] = {{"unschedulable", true}};
  node["status"]["conditions"] = {{{"type", "Ready"}, {"status", "Unknown"}}};
  r = row("", "nodes", node);
  CHECK(r["Status"] == "NotReady,SchedulingDisabled");

  r = row("", "nodes",
          {{"metadata", {{"name", "bare"}, {"labels", {{"kubernetes.io/role", "gpu"}}}}}});
  CHECK(r["Status"] == "Unknown");
  CHECK(r["Roles"] == "gpu");
  CHECK(r["OS-Image"] == "<unknown>");
  CHECK(row("", "nodes", {{"metadata", {{"name", "x"}}}})["Roles"] == "<none>");
}

TEST_CASE("job and cron job rows", "[tables]") {
  auto job = [](json spec, json status, json m = meta("pi")) {
    return json{
        {"metadata", std::move(m)}, {"spec", std::move(spec)}, {"status", std::move(status)}};
  };
  auto r = row(
      "batch", "jobs",
      job({{"completions", 1}}, {{"succeeded", 1},
                                 {"startTime", kOneHourAgo},
                                 {"completionTime", kFiveMinutesAgo},
                                 {"conditions", {{{"type", "Complete"}, {"status", "True"}}}}}));
  CHECK(r["Status"] == "Complete");
  CHECK(r["Completions"] == "1/1");
  CHECK(r["Duration"] == "55m");
  CHECK(r["Selector"] == "<none>");

  r = row("batch", "jobs", job({{"parallelism", 3}}, {{"startTime", kFiveMinutesAgo}}));
  CHECK(r["Status"] == "Running");
  CHECK(r["Completions"] == "0/1 of 3");
  CHECK(r["Duration"] == "5m");
  CHECK(row("batch", "jobs", job(json::object(), json::object()))["Duration"] == "");

  r = row("batch", "jobs",
          job({{"completions", 5}}, {{"conditions", {{{"type", "Failed"}, {"status", "True"}}}}}));
  CHECK(r["Status"] == "Failed");
  CHECK(r["Completions"] == "0/5");
  r = row(
      "batch", "jobs",
      job({{"suspend", true}}, {{"conditions", {{{"type", "Suspended"}, {"status", "True"}}}}}));
  CHECK(r["Status"] == "Suspended");
  json deleting = meta("pi");
  deleting["deletionTimestamp"] = kFiveMinutesAgo;
  CHECK(row("batch", "jobs", job(json::object(), json::object(), deleting))["Status"] ==
        "Terminating");

  r = row("batch", "cronjobs",
          {{"metadata", meta("nightly")},
           {"spec", {{"schedule", "0 3 * * *"}, {"suspend", false}}},
           {"status", {{"active", {{{"name", "nightly-1"}}}}, {"lastScheduleTime", kOneHourAgo}}}});
  CHECK(r["Schedule"] == "0 3 * * *");
  CHECK(r["Timezone"] == "<none>");
  CHECK(r["Suspend"] == "False");
  CHECK(r["Active"] == 1);
  CHECK(r["Last Schedule"] == "60m");
  r = row("batch", "cronjobs", {{"metadata", meta("x")}, {"spec", {{"timeZone", "Etc/UTC"}}}});
  CHECK(r["Timezone"] == "Etc/UTC");
  CHECK(r["Suspend"] == "<unset>");
  CHECK(r["Last Schedule"] == "<none>");
}

TEST_CASE("event rows read core and events.k8s.io fields alike", "[tables]") {
  const json core = {{"metadata", meta("web-1.17f")},
                     {"involvedObject",
                      {{"kind", "Pod"}, {"name", "web-1"}, {"fieldPath", "spec.containers{web}"}}},
                     {"type", "Warning"},
                     {"reason", "BackOff"},
                     {"message", "Back-off restarting failed container\n"},
                     {"source", {{"component", "kubelet"}, {"host", "node-1"}}},
                     {"firstTimestamp", kOneHourAgo},
                     {"lastTimestamp", kFiveMinutesAgo},
                     {"count", 12}};
  auto r = row("", "events", core);
  CHECK(r["Last Seen"] == "5m");
  CHECK(r["Type"] == "Warning");
  CHECK(r["Reason"] == "BackOff");
  CHECK(r["Object"] == "pod/web-1");
  CHECK(r["Subobject"] == "spec.containers{web}");
  CHECK(r["Source"] == "kubelet, node-1");
  CHECK(r["Message"] == "Back-off restarting failed container");
  CHECK(r["First Seen"] == "60m");
  CHECK(r["Count"] == 12);
  CHECK(r["Name"] == "web-1.17f");

  const json v1 = {{"metadata", meta("web.18a")},
                   {"regarding", {{"kind", "Deployment"}, {"name", "web"}}},
                   {"type", "Normal"},
                   {"reason", "ScalingReplicaSet"},
                   {"note", "Scaled up replica set web-6d4b to 3"},
                   {"reportingController", "deployment-controller"},
                   {"eventTime", "2026-12-02T12:59:30.123456Z"}};
  r = row("events.k8s.io", "events", v1);
  CHECK(r["Last Seen"] == "60m");
  CHECK(r["First Seen"] == "60m");
  CHECK(r["Object"] == "deployment/web");
  CHECK(r["Source"] == "deployment-controller");
  CHECK(r["Message"] == "Scaled up replica set web-6d4b to 3");
  CHECK(r["Count"] == 1);

  json series = v1;
  series["series"] = {{"count", 7}, {"lastObservedTime", "2026-12-02T13:39:30.25Z"}};
  r = row("events.k8s.io", "events", series);
  CHECK(r["Last Seen"] == "20m");
  CHECK(r["Count"] == 7);

  json legacy = v1;
  legacy["deprecatedFirstTimestamp"] = kTwoDaysAgo;
  legacy["deprecatedLastTimestamp"] = kOneHourAgo;
  legacy["deprecatedCount"] = 4;
  legacy["deprecatedSource"] = {{"component", "old-controller"}};
  r = row("events.k8s.io", "events", legacy);
  CHECK(r["First Seen"] == "2d");
  CHECK(r["Last Seen"] == "60m");
  CHECK(r["Count"] == 4);
  CHECK(r["Source"] == "old-controller");

  r = row("", "events", {{"metadata", meta("x")}, {"involvedObject", {{"kind", "Node"}}}});
  CHECK(r["Object"] == "node");
  CHECK(r["Last Seen"] == "<unknown>");
}

TEST_CASE("autoscaler rows summarise metrics", "[tables]") {
  json hpa = {{"metadata", meta("web")},
              {"spec",
               {{"scaleTargetRef", {{"kind", "Deployment"}, {"name", "web"}}},
                {"minReplicas", 2},
                {"maxReplicas", 10},
                {"metrics",
                 {{{"type", "Resource"},
                   {"resource",
                    {{"name", "cpu"},
                     {"target", {{"type", "Utilization"}, {"averageUtilization", 80}}}}}}}}}},
              {"status", {{"currentReplicas", 3}}}};
  auto r = row("autoscaling", "horizontalpodautoscalers", hpa);
  CHECK(r["Reference"] == "Deployment/web");
  CHECK(r["Targets"] == "cpu: <unknown>/80%");
  CHECK(r["MinPods"] == "2");
  CHECK(r["MaxPods"] == 10);
  CHECK(r["Replicas"] == 3);

  hpa["status"]["currentMetrics"] = {
      {{"type", "Resource"},
       {"resource", {{"name", "cpu"}, {"current", {{"averageUtilization", 50}}}}}}};
  hpa["spec"]["metrics"].push_back(
      {{"type", "Resource"},
       {"resource",
        {{"name", "memory"}, {"target", {{"type", "AverageValue"}, {"averageValue", "500Mi"}}}}}});
  CHECK(row("autoscaling", "horizontalpodautoscalers", hpa)["Targets"] ==
        "cpu: 50%/80%, memory: <unknown>/500Mi");
  hpa["spec"]["metrics"].push_back(
      {{"type", "Pods"},
       {"pods",
        {{"metric", {{"name", "qps"}}},
         {"target", {{"type", "AverageValue"}, {"averageValue", "1k"}}}}}});
  CHECK(row("autoscaling", "horizontalpodautoscalers", hpa)["Targets"] ==
        "cpu: 50%/80%, memory: <unknown>/500Mi + 1 more...");

  const json v1 = {{"metadata", meta("old")},
                   {"spec",
                    {{"scaleTargetRef", {{"kind", "Deployment"}, {"name", "old"}}},
                     {"maxReplicas", 4},
                     {"targetCPUUtilizationPercentage", 70}}},
                   {"status", {{"currentCPUUtilizationPercentage", 35}}}};
  r = row("autoscaling", "horizontalpodautoscalers", v1);
  CHECK(r["Targets"] == "cpu: 35%/70%");
  CHECK(r["MinPods"] == "<unset>");
}

}  // namespace
}  // namespace vkube::apiserver::builtin
