// Table columns and cells of the built-in kinds, checked against what
// kube-apiserver 1.32's printers produce for the same objects: durations,
// column sets, and the rows of services, storage, RBAC and config kinds.
#include <catch2/catch.hpp>

#include "apiserver/tables_support.h"

namespace vkube::apiserver::builtin {
namespace {

using namespace table_testing;

TEST_CASE("human_duration follows kubectl's HumanDuration", "[tables]") {
  const std::vector<std::pair<int64_t, std::string>> cases = {
      {-5, "<invalid>"},  {-2, "<invalid>"},  {-1, "0s"},         {0, "0s"},
      {59, "59s"},        {119, "119s"},      {120, "2m"},        {121, "2m1s"},
      {599, "9m59s"},     {600, "10m"},       {10799, "179m"},    {10800, "3h"},
      {10860, "3h1m"},    {28799, "7h59m"},   {28800, "8h"},      {172799, "47h"},
      {172800, "2d"},     {176400, "2d1h"},   {691199, "7d23h"},  {691200, "8d"},
      {63071999, "729d"}, {63072000, "2y"},   {63158400, "2y1d"}, {252201600, "7y364d"},
      {252288000, "8y"},  {315360000, "10y"},
  };
  for (const auto& [seconds, want] : cases) {
    INFO(seconds);
    CHECK(human_duration(seconds) == want);
  }
}

TEST_CASE("every built-in kind has a table that never fails on odd objects", "[tables]") {
  const std::vector<json> objects = {
      {{"metadata", {{"name", "x"}, {"creationTimestamp", kOneHourAgo}}}},
      json::object(),
      json(nullptr),
      json::array({1, 2}),
      {{"metadata", {{"name", 5}, {"creationTimestamp", "yesterday"}, {"labels", "no"}}},
       {"spec",
        {{"containers", "none"},
         {"selector", {{"matchExpressions", {{{"op", 1}}}}}},
         {"replicas", "3"},
         {"ports", {{{"port", "http"}}}},
         {"metrics", {1, "x"}}}},
       {"status",
        {{"conditions", {nullptr, 3}},
         {"containerStatuses", {{{"state", 7}}}},
         {"hard", {{"cpu", nullptr}}},
         {"podIPs", {nullptr}}}},
       {"subsets", {{{"addresses", {nullptr}}, {"ports", {nullptr}}}}},
       {"series", "often"},
       {"involvedObject", 3}},
  };
  for (const Kind& k : builtin_kinds()) {
    const api::Resource& r = k.resource;
    INFO(r.group_resource() << " " << r.gv.version);
    const std::vector<api::Column> cols = table_columns(r);
    REQUIRE_FALSE(cols.empty());
    // The registry row carries the same columns the printer fills.
    REQUIRE(r.columns.size() == cols.size());
    bool has_name = false;
    for (std::size_t i = 0; i < cols.size(); ++i) {
      CHECK(r.columns[i].name == cols[i].name);
      CHECK_FALSE(cols[i].description.empty());
      CHECK((cols[i].type == "string" || cols[i].type == "integer" || cols[i].type == "boolean" ||
             cols[i].type == "date"));
      if (cols[i].name == "Name") {
        has_name = true;
        CHECK(cols[i].format == "name");
      }
    }
    CHECK(has_name);
    // Only the kinds kube-apiserver has no printer for fall back to the
    // default NAME / CREATED AT table; any other kind showing it lost its
    // printer. The reviews are never stored, so never listed.
    const bool printerless = r.plural == "roles" || r.plural == "clusterroles" ||
                             r.plural == "limitranges" || r.plural == "customresourcedefinitions" ||
                             k.create_only;
    CHECK((cols.back().name == "Created At") == printerless);
    for (const json& obj : objects) {
      INFO(obj.dump());
      const json cells = table_cells(r, obj, kNow);
      REQUIRE(cells.is_array());
      CHECK(cells.size() == cols.size());
    }
    // A minimal object names itself and shows its age.
    const auto cells = row(r.gv.group, r.plural, objects[0]);
    if (cells.count("Age")) CHECK(cells.at("Age") == "60m");
    if (cells.count("Created At")) CHECK(cells.at("Created At") == kOneHourAgo);
    CHECK(cells.at("Name") == "x");
  }
}

TEST_CASE("columns and wide columns match kubectl get", "[tables]") {
  using V = std::vector<std::string>;
  CHECK(column_names("", "pods") == V{"Name", "Ready", "Status", "Restarts", "Age", "IP", "Node",
                                      "Nominated Node", "Readiness Gates"});
  CHECK(column_names("apps", "deployments") ==
        V{"Name", "Ready", "Up-to-date", "Available", "Age", "Containers", "Images", "Selector"});
  CHECK(column_names("", "services") ==
        V{"Name", "Type", "Cluster-IP", "External-IP", "Port(s)", "Age", "Selector"});
  CHECK(column_names("", "nodes") == V{"Name", "Status", "Roles", "Age", "Version", "Internal-IP",
                                       "External-IP", "OS-Image", "Kernel-Version",
                                       "Container-Runtime"});
  CHECK(column_names("", "events") == V{"Last Seen", "Type", "Reason", "Object", "Subobject",
                                        "Source", "Message", "First Seen", "Count", "Name"});
  CHECK(column_names("events.k8s.io", "events") == column_names("", "events"));
  CHECK(column_names("batch", "jobs") ==
        V{"Name", "Status", "Completions", "Duration", "Age", "Containers", "Images", "Selector"});
  CHECK(column_names("batch", "cronjobs") == V{"Name", "Schedule", "Timezone", "Suspend", "Active",
                                               "Last Schedule", "Age", "Containers", "Images",
                                               "Selector"});
  CHECK(column_names("", "serviceaccounts") == V{"Name", "Secrets", "Age"});
  CHECK(column_names("", "configmaps") == V{"Name", "Data", "Age"});
  CHECK(column_names("", "secrets") == V{"Name", "Type", "Data", "Age"});
  CHECK(column_names("", "namespaces") == V{"Name", "Status", "Age"});
  CHECK(column_names("", "resourcequotas") == V{"Name", "Age", "Request", "Limit"});
  CHECK(column_names("rbac.authorization.k8s.io", "rolebindings") ==
        V{"Name", "Role", "Age", "Users", "Groups", "ServiceAccounts"});
  CHECK(column_names("", "podtemplates") == V{"Name", "Containers", "Images", "Pod Labels"});
  CHECK(column_names("autoscaling", "horizontalpodautoscalers") ==
        V{"Name", "Reference", "Targets", "MinPods", "MaxPods", "Replicas", "Age"});
  for (const char* kind : {"roles", "clusterroles", "limitranges", "customresourcedefinitions"}) {
    const std::string group = std::string(kind) == "limitranges" ? ""
                              : std::string(kind) == "customresourcedefinitions"
                                  ? "apiextensions.k8s.io"
                                  : "rbac.authorization.k8s.io";
    INFO(kind);
    const std::vector<api::Column> cols = table_columns(resource(group, kind));
    REQUIRE(cols.size() == 2);
    CHECK(cols[1].name == "Created At");
    CHECK(cols[1].type == "date");
  }

  const std::vector<api::Column> pods = table_columns(resource("", "pods"));
  for (const api::Column& c : pods) {
    INFO(c.name);
    const bool wide = c.name == "IP" || c.name == "Node" || c.name == "Nominated Node" ||
                      c.name == "Readiness Gates";
    CHECK(c.priority == (wide ? 1 : 0));
  }
  const std::vector<api::Column> events = table_columns(resource("", "events"));
  CHECK(events.front().format.empty());
  CHECK(events.back().format == "name");
  CHECK(events.back().priority == 1);
}

TEST_CASE("service rows format addresses and ports", "[tables]") {
  auto svc = [](json spec, json status = json::object()) {
    return json{
        {"metadata", meta("web")}, {"spec", std::move(spec)}, {"status", std::move(status)}};
  };
  auto r = row(
      "", "services",
      svc({{"type", "ClusterIP"},
           {"clusterIP", "10.96.0.10"},
           {"clusterIPs", {"10.96.0.10"}},
           {"ports", {{{"port", 80}, {"protocol", "TCP"}}, {{"port", 443}, {"protocol", "TCP"}}}},
           {"selector", {{"app", "web"}}}}));
  CHECK(r["Type"] == "ClusterIP");
  CHECK(r["Cluster-IP"] == "10.96.0.10");
  CHECK(r["External-IP"] == "<none>");
  CHECK(r["Port(s)"] == "80/TCP,443/TCP");
  CHECK(r["Selector"] == "app=web");

  r = row("", "services",
          svc({{"type", "NodePort"},
               {"clusterIPs", {"10.96.0.11"}},
               {"ports",
                {{{"port", 80}, {"nodePort", 30080}, {"protocol", "TCP"}},
                 {{"port", 53}, {"protocol", "UDP"}}}}}));
  CHECK(r["Port(s)"] == "80:30080/TCP,53/UDP");
  CHECK(r["Selector"] == "<none>");

  json lb = {{"type", "LoadBalancer"},
             {"clusterIPs", {"10.96.0.12"}},
             {"ports", {{{"port", 443}, {"nodePort", 30443}, {"protocol", "TCP"}}}}};
  CHECK(row("", "services", svc(lb))["External-IP"] == "<pending>");
  r = row("", "services",
          svc(lb, {{"loadBalancer",
                    {{"ingress", {{{"ip", "203.0.113.9"}}, {{"hostname", "lb.example.com"}}}}}}}));
  CHECK(r["External-IP"] == "203.0.113.9,lb.example.com");
  CHECK(r["Port(s)"] == "443:30443/TCP");

  r = row("", "services", svc({{"type", "ExternalName"}, {"externalName", "db.example.com"}}));
  CHECK(r["External-IP"] == "db.example.com");
  CHECK(r["Cluster-IP"] == "<none>");
  CHECK(r["Port(s)"] == "<none>");
  CHECK(row("", "services", svc({{"type", "ClusterIP"}, {"clusterIPs", {"None"}}}))["Cluster-IP"] ==
        "None");
}

TEST_CASE("node rows show readiness, roles, version and the node's system info",
          "[apiserver][tables]") {
  json gpu_node = {{"metadata",
                    {{"name", "gpu-node-1"},
                     {"creationTimestamp", kOneHourAgo},
                     {"labels",
                      {{"node-role.kubernetes.io/worker", ""},
                       {"node-role.kubernetes.io/gpu", ""},
                       {"node-role.kubernetes.io/", ""},  // no role name: not a role
                       {"kubernetes.io/role", "infra"},
                       {"nvidia.com/gpu.product", "H100"}}}}},
                   {"spec", json::object()},
                   {"status",
                    {{"conditions",
                      {{{"type", "MemoryPressure"}, {"status", "False"}},
                       {{"type", "Ready"}, {"status", "True"}}}},
                     {"addresses",
                      {{{"type", "Hostname"}, {"address", "gpu-node-1"}},
                       {{"type", "InternalIP"}, {"address", "10.0.0.11"}},
                       {{"type", "InternalIP"}, {"address", "10.0.0.12"}}}},
                     {"nodeInfo",
                      {{"kubeletVersion", "v1.32.0"},
                       {"osImage", "Ubuntu 24.04 LTS"},
                       {"kernelVersion", "6.8.0-1015-nvidia"},
                       {"containerRuntimeVersion", "containerd://1.7.22"}}}}}};
  auto r = row("", "nodes", gpu_node);
  CHECK(r["Name"] == "gpu-node-1");
  CHECK(r["Status"] == "Ready");
  CHECK(r["Roles"] == "gpu,infra,worker");
  CHECK(r["Age"] == "60m");
  CHECK(r["Version"] == "v1.32.0");
  CHECK(r["Internal-IP"] == "10.0.0.11");  // the first one
  CHECK(r["External-IP"] == "<none>");
  CHECK(r["OS-Image"] == "Ubuntu 24.04 LTS");
  CHECK(r["Kernel-Version"] == "6.8.0-1015-nvidia");
  CHECK(r["Container-Runtime"] == "containerd://1.7.22");

  gpu_node["spec"]["unschedulable"] = true;
  gpu_node["status"]["conditions"][1]["status"] = "Unknown";
  gpu_node["status"]["addresses"].push_back({{"type", "ExternalIP"}, {"address", "203.0.113.7"}});
  r = row("", "nodes", gpu_node);
  CHECK(r["Status"] == "NotReady,SchedulingDisabled");
  CHECK(r["External-IP"] == "203.0.113.7");

  // A node no kubelet reported on yet.
  r = row("", "nodes", {{"metadata", meta("bare")}});
  CHECK(r["Status"] == "Unknown");
  CHECK(r["Roles"] == "<none>");
  CHECK(r["Version"] == "");
  CHECK(r["Internal-IP"] == "<none>");
  CHECK(r["OS-Image"] == "<unknown>");
  CHECK(r["Kernel-Version"] == "<unknown>");
  CHECK(r["Container-Runtime"] == "<unknown>");
  r = row("", "nodes",
          {{"metadata", meta("cordoned")},
           {"spec", {{"unschedulable", true}}},
           {"status", {{"conditions", {{{"type", "Ready"}, {"status", "False"}}}}}}});
  CHECK(r["Status"] == "NotReady,SchedulingDisabled");
  r = row("", "nodes", {{"metadata", meta("cordoned")}, {"spec", {{"unschedulable", true}}}});
  CHECK(r["Status"] == "Unknown,SchedulingDisabled");
}

TEST_CASE("endpoints and endpoint slices list a few addresses", "[tables]") {
  json addrs = json::array();
  for (int i = 1; i <= 5; ++i) addrs.push_back({{"ip", "10.0.0." + std::to_string(i)}});
  auto r = row("", "endpoints",
               {{"metadata", meta("web")},
                {"subsets", {{{"addresses", addrs}, {"ports", {{{"port", 80}}}}}}}});
  CHECK(r["Endpoints"] == "10.0.0.1:80,10.0.0.2:80,10.0.0.3:80 + 2 more...");
  r = row("", "endpoints",
          {{"metadata", meta("web")},
           {"subsets", {{{"addresses", {{{"ip", "fd00::1"}}}}, {"ports", {{{"port", 8080}}}}}}}});
  CHECK(r["Endpoints"] == "[fd00::1]:8080");
  CHECK(row("", "endpoints", {{"metadata", meta("web")}})["Endpoints"] == "<none>");

  r = row("discovery.k8s.io", "endpointslices",
          {{"metadata", meta("web-abc")},
           {"addressType", "IPv4"},
           {"ports", {{{"port", 80}}, {{"name", "metrics"}}}},
           {"endpoints", {{{"addresses", {"10.0.0.1"}}}, {{"addresses", {"10.0.0.2"}}}}}});
  CHECK(r["AddressType"] == "IPv4");
  CHECK(r["Ports"] == "80,metrics");
  CHECK(r["Endpoints"] == "10.0.0.1,10.0.0.2");
  r = row("discovery.k8s.io", "endpointslices", {{"metadata", meta("empty")}});
  CHECK(r["Ports"] == "<unset>");
  CHECK(r["Endpoints"] == "<unset>");
}

TEST_CASE("storage, rbac, policy and config rows", "[tables]") {
  auto r = row("storage.k8s.io", "storageclasses",
               {{"metadata",
                 {{"name", "standard"},
                  {"creationTimestamp", kTwoDaysAgo},
                  {"annotations", {{"storageclass.kubernetes.io/is-default-class", "true"}}}}},
                {"provisioner", "rancher.io/local-path"},
                {"volumeBindingMode", "WaitForFirstConsumer"}});
  CHECK(r["Name"] == "standard (default)");
  CHECK(r["ReclaimPolicy"] == "Delete");
  CHECK(r["VolumeBindingMode"] == "WaitForFirstConsumer");
  CHECK(r["AllowVolumeExpansion"] == false);

  r = row("", "persistentvolumeclaims",
          {{"metadata", meta("data")},
           {"spec",
            {{"volumeName", "pv-1"},
             {"storageClassName", "standard"},
             {"resources", {{"requests", {{"storage", "1Gi"}}}}}}},
           {"status",
            {{"phase", "Bound"},
             {"capacity", {{"storage", "2Gi"}}},
             {"accessModes", {"ReadWriteOnce", "ReadOnlyMany", "ReadWriteOnce"}}}}});
  CHECK(r["Status"] == "Bound");
  CHECK(r["Capacity"] == "2Gi");
  CHECK(r["Access Modes"] == "RWO,ROX");
  CHECK(r["StorageClass"] == "standard");
  CHECK(r["VolumeAttributesClass"] == "<unset>");
  CHECK(r["VolumeMode"] == "<unset>");
  r = row("", "persistentvolumeclaims",
          {{"metadata", meta("pending")}, {"status", {{"phase", "Pending"}}}});
  CHECK(r["Capacity"] == "");
  CHECK(r["Access Modes"] == "");

  r = row("", "persistentvolumes",
          {{"metadata", meta("pv-1")},
           {"spec",
            {{"capacity", {{"storage", "2Gi"}}},
             {"accessModes", {"ReadWriteOncePod"}},
             {"persistentVolumeReclaimPolicy", "Retain"},
             {"claimRef", {{"namespace", "default"}, {"name", "data"}}}}},
           {"status", {{"phase", "Bound"}}}});
  CHECK(r["Claim"] == "default/data");
  CHECK(r["Access Modes"] == "RWOP");
  CHECK(r["Reclaim Policy"] == "Retain");

  r = row("rbac.authorization.k8s.io", "rolebindings",
          {{"metadata", meta("read")},
           {"roleRef", {{"kind", "Role"}, {"name", "reader"}}},
           {"subjects",
            {{{"kind", "User"}, {"name", "alice"}},
             {{"kind", "User"}, {"name", "bob"}},
             {{"kind", "Group"}, {"name", "devs"}},
             {{"kind", "ServiceAccount"}, {"namespace", "ci"}, {"name", "runner"}}}}});
  CHECK(r["Role"] == "Role/reader");
  CHECK(r["Users"] == "alice, bob");
  CHECK(r["Groups"] == "devs");
  CHECK(r["ServiceAccounts"] == "ci/runner");

  r = row("policy", "poddisruptionbudgets",
          {{"metadata", meta("web")},
           {"spec", {{"minAvailable", "50%"}}},
           {"status", {{"disruptionsAllowed", 1}}}});
  CHECK(r["Min Available"] == "50%");
  CHECK(r["Max Unavailable"] == "N/A");
  CHECK(r["Allowed Disruptions"] == 1);

  r = row("", "configmaps",
          {{"metadata", meta("cfg")},
           {"data", {{"a", "1"}, {"b", "2"}}},
           {"binaryData", {{"c", "AA=="}}}});
  CHECK(r["Data"] == 3);
  r = row("", "secrets",
          {{"metadata", meta("tls")},
           {"type", "kubernetes.io/tls"},
           {"data", {{"tls.crt", "x"}, {"tls.key", "y"}}}});
  CHECK(r["Type"] == "kubernetes.io/tls");
  CHECK(r["Data"] == 2);
  CHECK(row("", "serviceaccounts", {{"metadata", meta("default")}})["Secrets"] == 0);

  r = row("", "resourcequotas",
          {{"metadata", meta("quota")},
           {"status",
            {{"hard", {{"pods", "10"}, {"requests.cpu", "2"}, {"limits.memory", "4Gi"}}},
             {"used", {{"pods", "3"}, {"requests.cpu", "500m"}}}}}});
  CHECK(r["Request"] == "pods: 3/10, requests.cpu: 500m/2");
  CHECK(r["Limit"] == "limits.memory: 0/4Gi");

  r = row("", "podtemplates",
          {{"metadata", meta("tmpl")},
           {"template",
            {{"metadata", {{"labels", {{"app", "web"}}}}},
             {"spec", {{"containers", {{{"name", "web"}, {"image", "nginx"}}}}}}}}});
  CHECK(r["Containers"] == "web");
  CHECK(r["Pod Labels"] == "app=web");

  r = row("networking.k8s.io", "ingresses",
          {{"metadata", meta("web")},
           {"spec",
            {{"ingressClassName", "nginx"},
             {"rules", {{{"host", "a.example.com"}}, {{"host", "b.example.com"}}}},
             {"tls", {{{"hosts", {"a.example.com"}}}}}}}});
  CHECK(r["Class"] == "nginx");
  CHECK(r["Hosts"] == "a.example.com,b.example.com");
  CHECK(r["Ports"] == "80, 443");
  CHECK(r["Address"] == "");
  CHECK(row("networking.k8s.io", "ingresses", {{"metadata", meta("x")}})["Hosts"] == "*");
}

TEST_CASE("kinds without a printer show their creation time as a date", "[tables]") {
  auto r = row(
      "apiextensions.k8s.io", "customresourcedefinitions",
      {{"metadata",
        {{"name", "widgets.example.com"}, {"creationTimestamp", "2026-12-02T15:40:01+02:00"}}}});
  CHECK(r["Name"] == "widgets.example.com");
  CHECK(r["Created At"] == "2026-12-02T13:40:01Z");
  r = row("rbac.authorization.k8s.io", "clusterroles", {{"metadata", {{"name", "admin"}}}});
  CHECK(r["Created At"] == "0001-01-01T00:00:00Z");
  CHECK(row("", "limitranges", {{"metadata", meta("limits")}})["Created At"] == kTwoDaysAgo);
  CHECK(row("", "namespaces", {{"metadata", {{"name", "x"}}}})["Age"] == "<unknown>");
}

}  // namespace
}  // namespace vkube::apiserver::builtin
