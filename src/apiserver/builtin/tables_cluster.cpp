// Table printers of RBAC bindings, disruption budgets, volumes and storage
// classes, CSI objects, priority classes and leases.
#include "kinds.h"
#include "tables_util.h"
#include "vkube/api/quantity.h"

namespace vkube::apiserver::builtin::tables {

namespace {

// --- rbac ------------------------------------------------------------------

// The ROLE and wide USERS / GROUPS / SERVICEACCOUNTS cells of a binding.
json binding_cells(const json& b, int64_t now) {
  std::vector<std::string> users, groups, service_accounts;
  for (const json& s : array(b, {"subjects"})) {
    const std::string kind = str(s, {"kind"});
    if (kind == "ServiceAccount") {
      service_accounts.push_back(str(s, {"namespace"}) + "/" + str(s, {"name"}));
    } else if (kind == "User") {
      users.push_back(str(s, {"name"}));
    } else if (kind == "Group") {
      groups.push_back(str(s, {"name"}));
    }
  }
  return json::array({str(b, {"metadata", "name"}),
                      str(b, {"roleRef", "kind"}) + "/" + str(b, {"roleRef", "name"}), age(b, now),
                      join(users, ", "), join(groups, ", "), join(service_accounts, ", ")});
}

Printer binding_printer() {
  return {
      {name_column(), column("Role", "string", "The role granted, as Kind/name."), age_column(),
       column("Users", "string", "Users the binding grants the role to.", 1),
       column("Groups", "string", "Groups the binding grants the role to.", 1),
       column("ServiceAccounts", "string", "Service accounts the binding grants the role to.", 1)},
      binding_cells};
}

// --- policy ----------------------------------------------------------------

json pdb_cells(const json& pdb, int64_t now) {
  auto bound = [&](std::string_view field) {
    const json* v = find(pdb, {"spec", field});
    return v == nullptr ? std::string("N/A") : int_or_string(v);
  };
  return json::array({str(pdb, {"metadata", "name"}), bound("minAvailable"),
                      bound("maxUnavailable"), integer(pdb, {"status", "disruptionsAllowed"}),
                      age(pdb, now)});
}

// --- volumes -----------------------------------------------------------------

// GetAccessModesAsString: "RWO,ROX,RWX,RWOP" in that order, duplicates once.
std::string access_modes(const json& modes) {
  static constexpr std::pair<std::string_view, std::string_view> kModes[] = {
      {"ReadWriteOnce", "RWO"},
      {"ReadOnlyMany", "ROX"},
      {"ReadWriteMany", "RWX"},
      {"ReadWriteOncePod", "RWOP"}};
  std::vector<std::string> out;
  for (const auto& [mode, abbrev] : kModes) {
    for (const json& m : modes) {
      if (m.is_string() && m.get<std::string>() == mode) {
        out.emplace_back(abbrev);
        break;
      }
    }
  }
  return join(out, ",");
}

// The beta storage-class annotation still wins over the field.
std::string storage_class(const json& obj) {
  if (const json* a =
          find(obj, {"metadata", "annotations", "volume.beta.kubernetes.io/storage-class"});
      a != nullptr && a->is_string()) {
    return a->get<std::string>();
  }
  return str(obj, {"spec", "storageClassName"});
}

std::string phase_or_terminating(const json& obj) {
  if (find(obj, {"metadata", "deletionTimestamp"}) != nullptr) return "Terminating";
  return str(obj, {"status", "phase"});
}

json pv_cells(const json& pv, int64_t now) {
  std::string claim;
  if (const json* ref = find(pv, {"spec", "claimRef"})) {
    claim = str(*ref, {"namespace"}) + "/" + str(*ref, {"name"});
  }
  return json::array(
      {str(pv, {"metadata", "name"}), quantity(find(pv, {"spec", "capacity", "storage"})),
       access_modes(array(pv, {"spec", "accessModes"})),
       str(pv, {"spec", "persistentVolumeReclaimPolicy"}), phase_or_terminating(pv), claim,
       storage_class(pv), str(pv, {"spec", "volumeAttributesClassName"}, "<unset>"),
       str(pv, {"status", "reason"}), age(pv, now), str(pv, {"spec", "volumeMode"}, "<unset>")});
}

json pvc_cells(const json& pvc, int64_t now) {
  const std::string volume = str(pvc, {"spec", "volumeName"});
  std::string capacity, modes;
  if (!volume.empty()) {  // capacity and modes show once bound
    capacity = quantity(find(pvc, {"status", "capacity", "storage"}));
    modes = access_modes(array(pvc, {"status", "accessModes"}));
  }
  return json::array({str(pvc, {"metadata", "name"}), phase_or_terminating(pvc), volume, capacity,
                      modes, storage_class(pvc),
                      str(pvc, {"spec", "volumeAttributesClassName"}, "<unset>"), age(pvc, now),
                      str(pvc, {"spec", "volumeMode"}, "<unset>")});
}

// --- storage.k8s.io ------------------------------------------------------------

json storageclass_cells(const json& sc, int64_t now) {
  std::string name = str(sc, {"metadata", "name"});
  const json& annotations = object(sc, {"metadata", "annotations"});
  for (const char* key : {"storageclass.kubernetes.io/is-default-class",
                          "storageclass.beta.kubernetes.io/is-default-class"}) {
    if (str(annotations, {key}) == "true") {
      name += " (default)";
      break;
    }
  }
  return json::array({name, str(sc, {"provisioner"}), str(sc, {"reclaimPolicy"}, "Delete"),
                      str(sc, {"volumeBindingMode"}, "Immediate"),
                      opt_bool(sc, {"allowVolumeExpansion"}).value_or(false), age(sc, now)});
}

json csidriver_cells(const json& d, int64_t now) {
  std::string token_requests = "<unset>";
  if (const json* tr = find(d, {"spec", "tokenRequests"}); tr != nullptr && tr->is_array()) {
    std::vector<std::string> audiences;
    for (const json& t : *tr) audiences.push_back(str(t, {"audience"}));
    token_requests = join(audiences, ",");
  }
  std::vector<std::string> modes;
  for (const json& m : array(d, {"spec", "volumeLifecycleModes"})) {
    if (m.is_string()) modes.push_back(m.get<std::string>());
  }
  return json::array({str(d, {"metadata", "name"}),
                      opt_bool(d, {"spec", "attachRequired"}).value_or(true),
                      opt_bool(d, {"spec", "podInfoOnMount"}).value_or(false),
                      opt_bool(d, {"spec", "storageCapacity"}).value_or(false), token_requests,
                      opt_bool(d, {"spec", "requiresRepublish"}).value_or(false),
                      modes.empty() ? "<none>" : join(modes, ","), age(d, now)});
}

json csinode_cells(const json& n, int64_t now) {
  return json::array({str(n, {"metadata", "name"}),
                      static_cast<int64_t>(array(n, {"spec", "drivers"}).size()), age(n, now)});
}

json volumeattachment_cells(const json& va, int64_t now) {
  return json::array({str(va, {"metadata", "name"}), str(va, {"spec", "attacher"}),
                      str(va, {"spec", "source", "persistentVolumeName"}),
                      str(va, {"spec", "nodeName"}),
                      opt_bool(va, {"status", "attached"}).value_or(false), age(va, now)});
}

// --- scheduling and coordination -----------------------------------------------

json priorityclass_cells(const json& pc, int64_t now) {
  return json::array({str(pc, {"metadata", "name"}), integer(pc, {"value"}),
                      opt_bool(pc, {"globalDefault"}).value_or(false), age(pc, now),
                      str(pc, {"preemptionPolicy"})});
}

json runtimeclass_cells(const json& rc, int64_t now) {
  return json::array({str(rc, {"metadata", "name"}), str(rc, {"handler"}), age(rc, now)});
}

// --- apiregistration: as kube-aggregator's table (Local, or namespace/name; the
// Available condition, with its reason when False) -------------------------------

json apiservice_cells(const json& s, int64_t now) {
  const json* service = find(s, {"spec", "service"});
  std::string where = "Local";
  if (service != nullptr && service->is_object())
    where = str(*service, {"namespace"}) + "/" + str(*service, {"name"});
  std::string available = "Unknown";
  for (const json& c : array(s, {"status", "conditions"})) {
    if (str(c, {"type"}) != "Available") continue;
    available = str(c, {"status"});
    if (available == "False") available += " (" + str(c, {"reason"}) + ")";
  }
  return json::array({str(s, {"metadata", "name"}), where, available, age(s, now)});
}

// --- admissionregistration -----------------------------------------------------

json webhook_configuration_cells(const json& c, int64_t now) {
  return json::array({str(c, {"metadata", "name"}),
                      static_cast<int64_t>(array(c, {"webhooks"}).size()), age(c, now)});
}

json admission_policy_cells(const json& p, int64_t now) {
  const std::string group = str(p, {"spec", "paramKind", "apiVersion"});
  const std::string kind = str(p, {"spec", "paramKind", "kind"});
  return json::array({str(p, {"metadata", "name"}),
                      static_cast<int64_t>(array(p, {"spec", "validations"}).size()),
                      kind.empty() ? std::string("<unset>") : group + "/" + kind, age(p, now)});
}

json admission_policy_binding_cells(const json& b, int64_t now) {
  std::string ref = str(b, {"spec", "paramRef", "name"});
  const std::string ns = str(b, {"spec", "paramRef", "namespace"});
  if (!ref.empty() && !ns.empty()) ref = ns + "/" + ref;
  if (ref.empty()) ref = "<unset>";
  return json::array({str(b, {"metadata", "name"}), str(b, {"spec", "policyName"}), ref,
                      age(b, now)});
}

json lease_cells(const json& l, int64_t now) {
  return json::array(
      {str(l, {"metadata", "name"}), str(l, {"spec", "holderIdentity"}), age(l, now)});
}

// metrics.k8s.io: what metrics-server's Table shows, the usage (a pod's summed over its
// containers) and the window it was measured over.
std::string usage_sum(const json& containers, const char* resource) {
  if (!containers.is_array() || containers.empty()) return "";
  if (containers.size() == 1) return str(containers[0], {"usage", resource});
  long double total = 0;
  for (const json& c : containers) {
    auto v = api::quantity_number(object(c, {"usage"}).value(resource, json()));
    if (v) total += *v;
  }
  // CPU in nanocores and memory in KiB, as the node agent reports them.
  if (std::string_view(resource) == "cpu")
    return std::to_string(static_cast<int64_t>(total * 1e9L + 0.5L)) + "n";
  return std::to_string(static_cast<int64_t>(total / 1024 + 0.5L)) + "Ki";
}

json pod_metrics_cells(const json& p, int64_t) {
  const json& containers = array(p, {"containers"});
  return json::array({str(p, {"metadata", "name"}), usage_sum(containers, "cpu"),
                      usage_sum(containers, "memory"), str(p, {"window"})});
}

json node_metrics_cells(const json& n, int64_t) {
  return json::array({str(n, {"metadata", "name"}), str(n, {"usage", "cpu"}),
                      str(n, {"usage", "memory"}), str(n, {"window"})});
}

std::vector<api::Column> metrics_columns() {
  return {name_column(), column("cpu", "string", "CPU in use."),
          column("memory", "string", "Memory in use."),
          column("Window", "string", "The time the usage was measured over.")};
}

}  // namespace

void add_cluster_printers(PrinterMap& m) {
  m["metrics.k8s.io/pods"] = {metrics_columns(), pod_metrics_cells};
  m["metrics.k8s.io/nodes"] = {metrics_columns(), node_metrics_cells};
  m["rbac.authorization.k8s.io/rolebindings"] = binding_printer();
  m["rbac.authorization.k8s.io/clusterrolebindings"] = binding_printer();
  m["policy/poddisruptionbudgets"] = {
      {name_column(), column("Min Available", "string", "Pods that must stay available."),
       column("Max Unavailable", "string", "Pods that may be unavailable."),
       column("Allowed Disruptions", "integer", "Pods that may be disrupted right now."),
       age_column()},
      pdb_cells};
  m["/persistentvolumes"] = {
      {name_column(), column("Capacity", "string", "Storage capacity of the volume."),
       column("Access Modes", "string", "Ways the volume can be mounted."),
       column("Reclaim Policy", "string", "What happens to the volume once released."),
       column("Status", "string", "Phase of the volume."),
       column("Claim", "string", "The claim bound to the volume, as namespace/name."),
       column("StorageClass", "string", "Storage class of the volume."),
       column("VolumeAttributesClass", "string", "Volume attributes class of the volume."),
       column("Reason", "string", "Why the volume is in its phase."), age_column(),
       column("VolumeMode", "string", "Filesystem or Block.", 1)},
      pv_cells};
  m["/persistentvolumeclaims"] = {
      {name_column(), column("Status", "string", "Phase of the claim."),
       column("Volume", "string", "The volume bound to the claim."),
       column("Capacity", "string", "Storage capacity of the bound volume."),
       column("Access Modes", "string", "Ways the bound volume can be mounted."),
       column("StorageClass", "string", "Storage class of the claim."),
       column("VolumeAttributesClass", "string", "Volume attributes class of the claim."),
       age_column(), column("VolumeMode", "string", "Filesystem or Block.", 1)},
      pvc_cells};
  m["storage.k8s.io/storageclasses"] = {
      {name_column(), column("Provisioner", "string", "The volume plugin provisioning volumes."),
       column("ReclaimPolicy", "string", "Reclaim policy of provisioned volumes."),
       column("VolumeBindingMode", "string", "When volumes are bound and provisioned."),
       column("AllowVolumeExpansion", "string", "Whether volumes can be expanded."), age_column()},
      storageclass_cells};
  m["storage.k8s.io/csidrivers"] = {
      {name_column(), column("AttachRequired", "boolean", "Whether volumes need attaching."),
       column("PodInfoOnMount", "boolean", "Whether pod details are passed on mount."),
       column("StorageCapacity", "boolean", "Whether the driver reports storage capacity."),
       column("TokenRequests", "string", "Audiences of the service account tokens passed."),
       column("RequiresRepublish", "boolean", "Whether volumes are mounted periodically again."),
       column("Modes", "string", "Volume lifecycle modes supported."), age_column()},
      csidriver_cells};
  m["storage.k8s.io/csinodes"] = {
      {name_column(), column("Drivers", "integer", "Number of CSI drivers on the node."),
       age_column()},
      csinode_cells};
  api::Column attacher = column("Attacher", "string", "The CSI driver attaching the volume.");
  attacher.format = "name";  // as kube-apiserver declares it
  m["storage.k8s.io/volumeattachments"] = {
      {name_column(), attacher, column("PV", "string", "The persistent volume attached."),
       column("Node", "string", "The node the volume is attached to."),
       column("Attached", "boolean", "Whether the volume is attached."), age_column()},
      volumeattachment_cells};
  m["scheduling.k8s.io/priorityclasses"] = {
      {name_column(), column("Value", "integer", "Priority of pods using the class."),
       column("Global-Default", "boolean", "Whether the class is the default."), age_column(),
       column("PreemptionPolicy", "string", "Whether pods of the class preempt others.")},
      priorityclass_cells};
  m["node.k8s.io/runtimeclasses"] = {
      {name_column(), column("Handler", "string", "The CRI handler running the class's pods."),
       age_column()},
      runtimeclass_cells};
  for (const char* r : {"mutatingwebhookconfigurations", "validatingwebhookconfigurations"})
    m[std::string("admissionregistration.k8s.io/") + r] = {
        {name_column(), column("Webhooks", "integer", "The number of webhooks."), age_column()},
        webhook_configuration_cells};
  m["admissionregistration.k8s.io/validatingadmissionpolicies"] = {
      {name_column(), column("Validations", "integer", "The number of validations."),
       column("ParamKind", "string", "The kind of the policy's parameters."), age_column()},
      admission_policy_cells};
  m["admissionregistration.k8s.io/validatingadmissionpolicybindings"] = {
      {name_column(), column("PolicyName", "string", "The policy bound."),
       column("ParamRef", "string", "The parameters' object."), age_column()},
      admission_policy_binding_cells};
  m["apiregistration.k8s.io/apiservices"] = {
      {name_column(),
       column("Service", "string", "The reference to the service that hosts this API endpoint."),
       column("Available", "string", "Whether this service is available."), age_column()},
      apiservice_cells};
  m["coordination.k8s.io/leases"] = {
      {name_column(), column("Holder", "string", "Identity of the lease holder."), age_column()},
      lease_cells};
}

}  // namespace vkube::apiserver::builtin::tables
