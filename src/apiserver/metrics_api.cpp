// metrics.k8s.io/v1beta1, as metrics-server serves it: NodeMetrics and
// PodMetrics, read and list only, measured by the MetricsProvider on every
// request and never stored. `kubectl top node|pod` reads them (the node
// percentages come from the nodes' allocatable, which kubectl reads itself).
#include "errors.h"
#include "list_common.h"
#include "server_impl.h"
#include "table.h"

namespace vkube::apiserver {

namespace {

std::string meta_str(const json& obj, const char* key) {
  const json& m = obj.value("metadata", json::object());
  auto it = m.find(key);
  return it != m.end() && it->is_string() ? it->get<std::string>() : std::string();
}

}  // namespace

http::Response handle_metrics(Context& c) {
  std::shared_ptr<MetricsProvider> provider = c.server.metrics_provider();
  if (!provider)
    return error_response(
        Status::unavailable("the server is currently unable to handle the request"));
  const api::Resource& r = c.resource();
  const bool nodes = r.kind == "NodeMetrics";
  Result<std::vector<json>> got =
      nodes ? provider->node_metrics() : provider->pod_metrics(c.info.namespace_);
  if (!got.is_ok()) return error_response(got.status());
  std::vector<json> items = std::move(got).value();
  for (json& item : items) {
    item["kind"] = r.kind;
    item["apiVersion"] = "metrics.k8s.io/v1beta1";
    item["metadata"]["creationTimestamp"] = item.value("timestamp", json());
  }

  if (c.info.verb == "get") {
    for (json& item : items)
      if (meta_str(item, "name") == c.info.name) return object_response(c, 200, std::move(item));
    api::Resource named = r;  // metrics-server's wording: podmetrics.metrics.k8s.io "x"
    named.plural = nodes ? "nodemetrics" : "podmetrics";
    return error_response(not_found(named, c.info.name));
  }
  ListQuery q = ListQuery::from_context(c, false);
  if (!q.error.is_ok()) return error_response(q.error);
  json list = {{"kind", r.kind + "List"},
               {"apiVersion", "metrics.k8s.io/v1beta1"},
               {"metadata", json::object()},
               {"items", json::array()}};
  for (json& item : items) {
    const json& labels = item["metadata"].value("labels", json::object());
    if (!q.labels.matches(labels)) continue;
    bool fields = q.fields.matches([&](std::string_view field) -> std::optional<std::string> {
      if (field == "metadata.name") return meta_str(item, "name");
      if (field == "metadata.namespace") return meta_str(item, "namespace");
      return std::nullopt;
    });
    if (fields) list["items"].push_back(std::move(item));
  }
  if (wants_table(c.req.header("Accept"))) {
    auto include = parse_include_object(c.param("includeObject").value_or(""));
    std::vector<json> rows(list["items"].begin(), list["items"].end());
    return json_response(200, make_table(c.kind, rows, include, json::object()));
  }
  return json_response(200, list);
}

}  // namespace vkube::apiserver
