// HorizontalPodAutoscaler conversion between autoscaling/v1 and v2, as
// kube's autoscaling/v1 conversion does: v1 holds one CPU utilization
// target; what else v2 says (other metrics, behavior, current metrics,
// conditions) travels in v1 annotations, so a v2 object written back
// through v1 loses nothing. Objects are stored in v2.
#include "kind_util.h"
#include "strategy.h"

namespace vkube::apiserver::builtin {

namespace {

using util::get;
using util::get_object;
using util::get_string;

constexpr const char* kMetrics = "autoscaling.alpha.kubernetes.io/metrics";
constexpr const char* kCurrentMetrics = "autoscaling.alpha.kubernetes.io/current-metrics";
constexpr const char* kConditions = "autoscaling.alpha.kubernetes.io/conditions";
constexpr const char* kBehavior = "autoscaling.alpha.kubernetes.io/behavior";
constexpr int kDefaultCpuUtilization = 80;

// Copies in[from] to out[to] when present.
void move_key(const json& in, const char* from, json& out, const char* to) {
  if (const json* v = get(in, from)) out[to] = *v;
}

// The member of a MetricSpec / MetricStatus that holds its source.
const char* source_key(const std::string& type) {
  return type == "Resource"            ? "resource"
         : type == "ContainerResource" ? "containerResource"
         : type == "Pods"              ? "pods"
         : type == "Object"            ? "object"
                                       : "external";
}

const json& source_of(const json& m, const char* key) {
  static const json kEmpty = json::object();
  const json* s = get_object(m, key);
  return s ? *s : kEmpty;
}

json metric_id(const json& in, const char* name_key, const char* selector_key) {
  json id = {{"name", get_string(in, name_key)}};
  move_key(in, selector_key, id, "selector");
  return id;
}

// A v1 annotation metric (autoscaling/v1 MetricSpec) as a v2 MetricSpec.
json metric_to_v2(const json& m) {
  const std::string type = get_string(m, "type");
  json out = {{"type", type}};
  auto source = [&](const char* key) -> const json& { return source_of(m, key); };
  if (type == "Resource" || type == "ContainerResource") {
    const char* key = type == "Resource" ? "resource" : "containerResource";
    const json& s = source(key);
    json r = {{"name", get_string(s, "name")}};
    if (type == "ContainerResource") r["container"] = get_string(s, "container");
    if (get(s, "targetAverageUtilization"))
      r["target"] = {{"type", "Utilization"},
                     {"averageUtilization", s["targetAverageUtilization"]}};
    else
      r["target"] = {{"type", "AverageValue"},
                     {"averageValue", s.value("targetAverageValue", json())}};
    out[key] = std::move(r);
  } else if (type == "Pods") {
    const json& s = source("pods");
    out["pods"] = {
        {"metric", metric_id(s, "metricName", "selector")},
        {"target",
         {{"type", "AverageValue"}, {"averageValue", s.value("targetAverageValue", json())}}}};
  } else if (type == "Object") {
    const json& s = source("object");
    json target = {{"type", "Value"}, {"value", s.value("targetValue", json())}};
    if (get(s, "averageValue"))
      target = {{"type", "AverageValue"}, {"averageValue", s["averageValue"]}};
    out["object"] = {{"describedObject", s.value("target", json::object())},
                     {"metric", metric_id(s, "metricName", "selector")},
                     {"target", std::move(target)}};
  } else if (type == "External") {
    const json& s = source("external");
    json target = get(s, "targetAverageValue")
                      ? json{{"type", "AverageValue"}, {"averageValue", s["targetAverageValue"]}}
                      : json{{"type", "Value"}, {"value", s.value("targetValue", json())}};
    out["external"] = {{"metric", metric_id(s, "metricName", "metricSelector")},
                       {"target", std::move(target)}};
  }
  return out;
}

// A v2 MetricSpec as v1's annotation form.
json metric_to_v1(const json& m) {
  const std::string type = get_string(m, "type");
  json out = {{"type", type}};
  auto source = [&](const char* key) -> const json& { return source_of(m, key); };
  auto target_of = [](const json& s) -> json { return s.value("target", json::object()); };
  auto metric_of = [](const json& s) -> json { return s.value("metric", json::object()); };
  if (type == "Resource" || type == "ContainerResource") {
    const char* key = type == "Resource" ? "resource" : "containerResource";
    const json& s = source(key);
    json r = {{"name", get_string(s, "name")}};
    if (type == "ContainerResource") r["container"] = get_string(s, "container");
    json t = target_of(s);
    move_key(t, "averageUtilization", r, "targetAverageUtilization");
    move_key(t, "averageValue", r, "targetAverageValue");
    out[key] = std::move(r);
  } else if (type == "Pods") {
    const json& s = source("pods");
    json id = metric_of(s), t = target_of(s);
    json p = {{"metricName", get_string(id, "name")},
              {"targetAverageValue", t.value("averageValue", json("0"))}};
    move_key(id, "selector", p, "selector");
    out["pods"] = std::move(p);
  } else if (type == "Object") {
    const json& s = source("object");
    json id = metric_of(s), t = target_of(s);
    json o = {{"target", s.value("describedObject", json::object())},
              {"metricName", get_string(id, "name")},
              {"targetValue", t.value("value", json("0"))}};
    move_key(id, "selector", o, "selector");
    move_key(t, "averageValue", o, "averageValue");
    out["object"] = std::move(o);
  } else if (type == "External") {
    const json& s = source("external");
    json id = metric_of(s), t = target_of(s);
    json e = {{"metricName", get_string(id, "name")}};
    move_key(id, "selector", e, "metricSelector");
    move_key(t, "value", e, "targetValue");
    move_key(t, "averageValue", e, "targetAverageValue");
    out["external"] = std::move(e);
  }
  return out;
}

// The same for the metrics of status.currentMetrics.
json status_to_v2(const json& m) {
  const std::string type = get_string(m, "type");
  json out = {{"type", type}};
  const char* key = source_key(type);
  const json& s = source_of(m, key);
  json current = json::object();
  json r = json::object();
  if (type == "Resource" || type == "ContainerResource") {
    r["name"] = get_string(s, "name");
    if (type == "ContainerResource") r["container"] = get_string(s, "container");
    move_key(s, "currentAverageUtilization", current, "averageUtilization");
    move_key(s, "currentAverageValue", current, "averageValue");
  } else {
    r["metric"] = metric_id(s, "metricName", type == "External" ? "metricSelector" : "selector");
    if (type == "Object") move_key(s, "target", r, "describedObject");
    move_key(s, "currentValue", current, "value");
    move_key(s, type == "Object" ? "averageValue" : "currentAverageValue", current, "averageValue");
  }
  r["current"] = std::move(current);
  out[key] = std::move(r);
  return out;
}

json status_to_v1(const json& m) {
  const std::string type = get_string(m, "type");
  json out = {{"type", type}};
  const char* key = source_key(type);
  const json& s = source_of(m, key);
  const json current = s.value("current", json::object());
  json r = json::object();
  if (type == "Resource" || type == "ContainerResource") {
    r["name"] = get_string(s, "name");
    if (type == "ContainerResource") r["container"] = get_string(s, "container");
    move_key(current, "averageUtilization", r, "currentAverageUtilization");
    r["currentAverageValue"] = current.value("averageValue", json("0"));
  } else {
    const json id = s.value("metric", json::object());
    r["metricName"] = get_string(id, "name");
    move_key(id, "selector", r, type == "External" ? "metricSelector" : "selector");
    if (type == "Object") move_key(s, "describedObject", r, "target");
    if (type == "Pods")
      r["currentAverageValue"] = current.value("averageValue", json("0"));
    else
      r["currentValue"] = current.value("value", json("0"));
    move_key(current, "averageValue", r, type == "Object" ? "averageValue" : "currentAverageValue");
  }
  out[key] = std::move(r);
  return out;
}

bool is_cpu_resource(const json& m, const char* value_key, const char* utilization_key) {
  if (get_string(m, "type") != "Resource") return false;
  const json* r = get_object(m, "resource");
  if (r == nullptr || get_string(*r, "name") != "cpu") return false;
  const json* v = get_object(*r, value_key);
  return v != nullptr && util::get_int(*v, utilization_key).has_value();
}

json cpu_metric(const json& utilization) {
  return {{"type", "Resource"},
          {"resource",
           {{"name", "cpu"},
            {"target", {{"type", "Utilization"}, {"averageUtilization", utilization}}}}}};
}

// Reads and removes the JSON list an annotation holds ([] when absent or
// not a list, as kube ignores an annotation it cannot decode).
json take_annotation(json& obj, const char* key) {
  json* ann = get_object(obj["metadata"], "annotations");
  if (ann == nullptr || !ann->contains(key)) return json();
  json v = (*ann)[key].is_string()
               ? json::parse((*ann)[key].get<std::string>(), nullptr, /*allow_exceptions=*/false)
               : json();
  ann->erase(key);
  if (ann->empty()) obj["metadata"].erase("annotations");
  return v.is_discarded() ? json() : v;
}

void put_annotation(json& obj, const char* key, const json& value) {
  obj["metadata"]["annotations"][key] = value.dump();
}

void to_v2(json& obj) {
  json& spec = obj["spec"];
  if (!spec.is_object()) spec = json::object();
  json metrics = json::array();
  json other = take_annotation(obj, kMetrics);
  if (other.is_array())
    for (const json& m : other) metrics.push_back(metric_to_v2(m));
  if (const json* cpu = get(spec, "targetCPUUtilizationPercentage"))
    metrics.push_back(cpu_metric(*cpu));
  spec.erase("targetCPUUtilizationPercentage");
  // v2's defaulting when no metric is given: 80 % CPU utilization.
  if (metrics.empty()) metrics.push_back(cpu_metric(kDefaultCpuUtilization));
  spec["metrics"] = std::move(metrics);
  json behavior = take_annotation(obj, kBehavior);
  if (behavior.is_object()) spec["behavior"] = std::move(behavior);

  json current = take_annotation(obj, kCurrentMetrics);
  json conditions = take_annotation(obj, kConditions);
  json* status = get_object(obj, "status");
  if (status == nullptr) return;
  json current_metrics = json::array();
  if (current.is_array())
    for (const json& m : current) current_metrics.push_back(status_to_v2(m));
  if (const json* cpu = get(*status, "currentCPUUtilizationPercentage"))
    current_metrics.push_back(
        {{"type", "Resource"},
         {"resource", {{"name", "cpu"}, {"current", {{"averageUtilization", *cpu}}}}}});
  status->erase("currentCPUUtilizationPercentage");
  if (!current_metrics.empty()) (*status)["currentMetrics"] = std::move(current_metrics);
  if (conditions.is_array() && !conditions.empty()) (*status)["conditions"] = std::move(conditions);
}

void to_v1(json& obj) {
  json& spec = obj["spec"];
  if (!spec.is_object()) spec = json::object();
  json other = json::array();
  bool have_cpu = false;
  for (const json& m : spec.value("metrics", json::array())) {
    if (!have_cpu && is_cpu_resource(m, "target", "averageUtilization")) {
      spec["targetCPUUtilizationPercentage"] = m["resource"]["target"]["averageUtilization"];
      have_cpu = true;
    } else {
      other.push_back(metric_to_v1(m));
    }
  }
  if (!other.empty()) put_annotation(obj, kMetrics, other);
  if (const json* b = get_object(spec, "behavior")) put_annotation(obj, kBehavior, *b);
  spec.erase("metrics");
  spec.erase("behavior");

  json* status = get_object(obj, "status");
  if (status == nullptr) return;
  json current = json::array();
  bool have_current_cpu = false;
  for (const json& m : status->value("currentMetrics", json::array())) {
    if (!have_current_cpu && is_cpu_resource(m, "current", "averageUtilization")) {
      (*status)["currentCPUUtilizationPercentage"] = m["resource"]["current"]["averageUtilization"];
      have_current_cpu = true;
    } else {
      current.push_back(status_to_v1(m));
    }
  }
  if (!current.empty()) put_annotation(obj, kCurrentMetrics, current);
  if (const json* c = util::get_array(*status, "conditions"); c && !c->empty())
    put_annotation(obj, kConditions, *c);
  status->erase("currentMetrics");
  status->erase("conditions");
}

}  // namespace

void convert_hpa(json& obj, std::string_view to_version) {
  if (!obj.is_object() || !obj.contains("metadata") || !obj["metadata"].is_object()) return;
  if (to_version == "v1")
    to_v1(obj);
  else if (to_version == "v2")
    to_v2(obj);
  else
    return;
  obj["apiVersion"] = "autoscaling/" + std::string(to_version);
  fill_required_status(obj);
}

}  // namespace vkube::apiserver::builtin
