// Table printers of the workload kinds: apps/v1, replication controllers,
// batch/v1 jobs and cron jobs, and horizontal pod autoscalers.
#include "kinds.h"
#include "tables_util.h"

namespace vkube::apiserver::builtin::tables {

namespace {

// The v1 APIs default replicas to 1; an object stored without the field
// means that.
int64_t replicas(const json& obj) {
  return integer(obj, {"spec", "replicas"}, 1);
}

std::string ratio(int64_t a, int64_t b) {
  return std::to_string(a) + "/" + std::to_string(b);
}

// Appends the wide CONTAINERS and IMAGES cells of a pod template.
void add_containers(json& cells, const json& pod_template) {
  auto [names, images] = container_cells(array(pod_template, {"spec", "containers"}));
  cells.push_back(names);
  cells.push_back(images);
}

// --- apps/v1 ---------------------------------------------------------------

json deployment_cells(const json& d, int64_t now) {
  json cells = json::array({str(d, {"metadata", "name"}),
                            ratio(integer(d, {"status", "readyReplicas"}), replicas(d)),
                            integer(d, {"status", "updatedReplicas"}),
                            integer(d, {"status", "availableReplicas"}), age(d, now)});
  add_containers(cells, object(d, {"spec", "template"}));
  cells.push_back(selector_string(find(d, {"spec", "selector"})));
  return cells;
}

json replicaset_cells(const json& rs, int64_t now) {
  json cells =
      json::array({str(rs, {"metadata", "name"}), replicas(rs), integer(rs, {"status", "replicas"}),
                   integer(rs, {"status", "readyReplicas"}), age(rs, now)});
  add_containers(cells, object(rs, {"spec", "template"}));
  cells.push_back(format_label_selector(find(rs, {"spec", "selector"})));
  return cells;
}

// ReplicationControllers select with a plain label map.
json replicationcontroller_cells(const json& rc, int64_t now) {
  json cells =
      json::array({str(rc, {"metadata", "name"}), replicas(rc), integer(rc, {"status", "replicas"}),
                   integer(rc, {"status", "readyReplicas"}), age(rc, now)});
  add_containers(cells, object(rc, {"spec", "template"}));
  cells.push_back(format_labels(find(rc, {"spec", "selector"})));
  return cells;
}

json statefulset_cells(const json& sts, int64_t now) {
  json cells =
      json::array({str(sts, {"metadata", "name"}),
                   ratio(integer(sts, {"status", "readyReplicas"}), replicas(sts)), age(sts, now)});
  add_containers(cells, object(sts, {"spec", "template"}));
  return cells;
}

json daemonset_cells(const json& ds, int64_t now) {
  json cells = json::array(
      {str(ds, {"metadata", "name"}), integer(ds, {"status", "desiredNumberScheduled"}),
       integer(ds, {"status", "currentNumberScheduled"}), integer(ds, {"status", "numberReady"}),
       integer(ds, {"status", "updatedNumberScheduled"}),
       integer(ds, {"status", "numberAvailable"}),
       format_labels(find(ds, {"spec", "template", "spec", "nodeSelector"})), age(ds, now)});
  add_containers(cells, object(ds, {"spec", "template"}));
  cells.push_back(format_label_selector(find(ds, {"spec", "selector"})));
  return cells;
}

// "statefulset.apps/web" for the controlling owner reference, else "<none>".
json controllerrevision_cells(const json& cr, int64_t now) {
  std::string controller = "<none>";
  for (const json& ref : array(cr, {"metadata", "ownerReferences"})) {
    if (!opt_bool(ref, {"controller"}).value_or(false)) continue;
    const std::string api_version = str(ref, {"apiVersion"});
    const std::size_t slash = api_version.find('/');
    const std::string group = slash == std::string::npos ? "" : api_version.substr(0, slash);
    const std::string kind = str(ref, {"kind"});
    const std::string group_kind = group.empty() ? kind : kind + "." + group;
    const std::string name = str(ref, {"name"});
    controller = group_kind.empty() ? name : lower(group_kind) + "/" + name;
    break;
  }
  return json::array(
      {str(cr, {"metadata", "name"}), controller, integer(cr, {"revision"}), age(cr, now)});
}

// --- batch/v1 ----------------------------------------------------------------

bool job_condition(const json& job, std::string_view type) {
  for (const json& c : array(job, {"status", "conditions"})) {
    if (str(c, {"type"}) == type) return str(c, {"status"}) == "True";
  }
  return false;
}

json job_cells(const json& job, int64_t now) {
  const int64_t succeeded = integer(job, {"status", "succeeded"});
  std::string completions;
  if (std::optional<int64_t> want = opt_integer(job, {"spec", "completions"})) {
    completions = ratio(succeeded, *want);
  } else if (int64_t parallelism = integer(job, {"spec", "parallelism"}); parallelism > 1) {
    completions = ratio(succeeded, 1) + " of " + std::to_string(parallelism);
  } else {
    completions = ratio(succeeded, 1);
  }
  std::string duration;
  if (std::optional<int64_t> start = parse_time(find(job, {"status", "startTime"}))) {
    std::optional<int64_t> end = parse_time(find(job, {"status", "completionTime"}));
    duration = human_duration(end.value_or(now) - *start);
  }
  std::string status = "Running";
  if (job_condition(job, "Complete")) {
    status = "Complete";
  } else if (job_condition(job, "Failed")) {
    status = "Failed";
  } else if (find(job, {"metadata", "deletionTimestamp"}) != nullptr) {
    status = "Terminating";
  } else if (job_condition(job, "Suspended")) {
    status = "Suspended";
  } else if (job_condition(job, "FailureTarget")) {
    status = "FailureTarget";
  }
  json cells =
      json::array({str(job, {"metadata", "name"}), status, completions, duration, age(job, now)});
  add_containers(cells, object(job, {"spec", "template"}));
  cells.push_back(format_label_selector(find(job, {"spec", "selector"})));
  return cells;
}

json cronjob_cells(const json& cj, int64_t now) {
  const json* last = find(cj, {"status", "lastScheduleTime"});
  const json& job_spec = object(cj, {"spec", "jobTemplate", "spec"});
  json cells = json::array({str(cj, {"metadata", "name"}), str(cj, {"spec", "schedule"}),
                            str(cj, {"spec", "timeZone"}, "<none>"),
                            bool_ptr(opt_bool(cj, {"spec", "suspend"})),
                            static_cast<int64_t>(array(cj, {"status", "active"}).size()),
                            last == nullptr ? "<none>" : since(last, now), age(cj, now)});
  add_containers(cells, object(job_spec, {"template"}));
  cells.push_back(format_label_selector(find(job_spec, {"selector"})));
  return cells;
}

// --- autoscaling ---------------------------------------------------------------

std::string percent(std::optional<int64_t> v, std::string_view absent) {
  return v ? std::to_string(*v) + "%" : std::string(absent);
}

// One entry of TARGETS: "cpu: 50%/80%", "<unknown>/100 (avg)", ...
std::string format_metric(const json& spec, const json* status) {
  const std::string type = str(spec, {"type"});
  if (type == "External" || type == "Object" || type == "Pods") {
    const std::string key = type == "External" ? "external" : type == "Object" ? "object" : "pods";
    const json& target = object(spec, {key, "target"});
    const json* current = status == nullptr ? nullptr : find(*status, {key});
    if (type != "Pods" && find(target, {"averageValue"}) == nullptr) {
      std::string cur = "<unknown>";
      if (current != nullptr) cur = quantity(find(*current, {"current", "value"}), "<nil>");
      return cur + "/" + quantity(find(target, {"value"}), "<nil>");
    }
    std::string cur = "<unknown>";
    if (current != nullptr && (type == "Pods" || find(*current, {"current", "averageValue"}))) {
      cur = quantity(find(*current, {"current", "averageValue"}), "<nil>");
    }
    return cur + "/" + quantity(find(target, {"averageValue"}), "<nil>") +
           (type == "Pods" ? "" : " (avg)");
  }
  if (type == "Resource" || type == "ContainerResource") {
    const std::string key = type == "Resource" ? "resource" : "containerResource";
    const std::string name = str(spec, {key, "name"});
    const json& target = object(spec, {key, "target"});
    const json* current = status == nullptr ? nullptr : find(*status, {key, "current"});
    const bool has_status = status != nullptr && find(*status, {key}) != nullptr;
    std::string cur = "<unknown>";
    if (const json* avg = find(target, {"averageValue"})) {
      if (has_status)
        cur = quantity(current == nullptr ? nullptr : find(*current, {"averageValue"}), "<nil>");
      return name + ": " + cur + "/" + quantity(avg, "<nil>");
    }
    if (current != nullptr) cur = percent(opt_integer(*current, {"averageUtilization"}), cur);
    return name + ": " + cur + "/" + percent(opt_integer(target, {"averageUtilization"}), "<auto>");
  }
  return "<unknown type>";
}

// autoscaling/v1 keeps a single CPU target; present it as the v2 metric it
// converts to.
std::pair<json, json> hpa_metrics(const json& hpa) {
  json specs = array(hpa, {"spec", "metrics"});
  json statuses = array(hpa, {"status", "currentMetrics"});
  if (std::optional<int64_t> cpu = opt_integer(hpa, {"spec", "targetCPUUtilizationPercentage"});
      cpu && specs.empty()) {
    specs.push_back(
        {{"type", "Resource"},
         {"resource",
          {{"name", "cpu"}, {"target", {{"type", "Utilization"}, {"averageUtilization", *cpu}}}}}});
    if (std::optional<int64_t> cur =
            opt_integer(hpa, {"status", "currentCPUUtilizationPercentage"})) {
      statuses = json::array(
          {{{"type", "Resource"},
            {"resource", {{"name", "cpu"}, {"current", {{"averageUtilization", *cur}}}}}}});
    }
  }
  return {std::move(specs), std::move(statuses)};
}

json hpa_cells(const json& hpa, int64_t now) {
  auto [specs, statuses] = hpa_metrics(hpa);
  std::vector<std::string> metrics;
  for (std::size_t i = 0; i < specs.size(); ++i) {
    metrics.push_back(format_metric(specs[i], i < statuses.size() ? &statuses[i] : nullptr));
  }
  std::optional<int64_t> min = opt_integer(hpa, {"spec", "minReplicas"});
  return json::array({str(hpa, {"metadata", "name"}),
                      str(hpa, {"spec", "scaleTargetRef", "kind"}) + "/" +
                          str(hpa, {"spec", "scaleTargetRef", "name"}),
                      list_with_more(metrics, 2, ", ", "<none>"),
                      min ? std::to_string(*min) : "<unset>", integer(hpa, {"spec", "maxReplicas"}),
                      integer(hpa, {"status", "currentReplicas"}), age(hpa, now)});
}

}  // namespace

void add_workload_printers(PrinterMap& m) {
  const api::Column desired = column("Desired", "integer", "Number of replicas wanted.");
  const api::Column current = column("Current", "integer", "Number of replicas that exist.");
  const api::Column ready = column("Ready", "integer", "Number of ready replicas.");
  m["apps/deployments"] = {
      concat({name_column(), column("Ready", "string", "Ready replicas out of those wanted."),
              column("Up-to-date", "string", "Replicas running the latest pod template."),
              column("Available", "string", "Replicas available to serve."), age_column()},
             template_columns("Label selector of the deployment's pods.")),
      deployment_cells};
  m["apps/replicasets"] = {concat({name_column(), desired, current, ready, age_column()},
                                  template_columns("Label selector of the replica set's pods.")),
                           replicaset_cells};
  m["/replicationcontrollers"] = {
      concat({name_column(), desired, current, ready, age_column()},
             template_columns("Labels of the pods the controller manages.")),
      replicationcontroller_cells};
  m["apps/statefulsets"] = {
      concat({name_column(), column("Ready", "string", "Ready replicas out of those wanted."),
              age_column()},
             template_columns()),
      statefulset_cells};
  m["apps/daemonsets"] = {
      concat(
          {name_column(), column("Desired", "integer", "Nodes that should run the pod."),
           column("Current", "integer", "Nodes running the pod."),
           column("Ready", "integer", "Nodes whose pod is ready."),
           column("Up-to-date", "integer", "Nodes running the latest pod template."),
           column("Available", "integer", "Nodes whose pod is available."),
           column("Node Selector", "string", "Node selector of the pod template."), age_column()},
          template_columns("Label selector of the daemon set's pods.")),
      daemonset_cells};
  m["apps/controllerrevisions"] = {
      {name_column(), column("Controller", "string", "The object controlling this revision."),
       column("Revision", "string", "Revision number of the state."), age_column()},
      controllerrevision_cells};
  m["batch/jobs"] = {
      concat({name_column(), column("Status", "string", "Status of the job."),
              column("Completions", "string", "Succeeded pods out of the completions wanted."),
              column("Duration", "string", "Time the job took, or has run so far."), age_column()},
             template_columns("Label selector of the job's pods.")),
      job_cells};
  m["batch/cronjobs"] = {
      concat(
          {name_column(), column("Schedule", "string", "The cron schedule."),
           column("Timezone", "string", "Time zone of the schedule."),
           column("Suspend", "boolean", "Whether new runs are suspended."),
           column("Active", "integer", "Number of running jobs."),
           column("Last Schedule", "string", "Time since a job was last scheduled."), age_column()},
          template_columns("Label selector of the jobs' pods.")),
      cronjob_cells};
  const Printer hpa{
      {name_column(), column("Reference", "string", "The scaled object, as Kind/name."),
       column("Targets", "string", "Current and target values of the metrics."),
       column("MinPods", "string", "Lower limit of the replica count."),
       column("MaxPods", "string", "Upper limit of the replica count."),
       column("Replicas", "string", "Current number of replicas."), age_column()},
      hpa_cells};
  m["autoscaling/horizontalpodautoscalers"] = hpa;
}

}  // namespace vkube::apiserver::builtin::tables
