// Events: what the host says about a tenant's pod (scheduled, pulled,
// killed, FailedScheduling with the host scheduler's reasons) shows up in
// `kubectl describe pod` in the tenant, about the tenant's pod.
#include "syncer_impl.h"
#include "vkube/syncer/gpu_sharing.h"

namespace vkube::syncer {

Status SyncerImpl::reconcile_event(const std::string& hkey) {
  ObjectPtr ev = h_events->informer.get(hkey);
  if (!ev) return Status::ok();  // gone (events expire); the tenant's expire on their own
  const json involved = ev->value("involvedObject", json::object());
  if (involved.value("kind", "") != "Pod") return Status::ok();
  ObjectPtr hpod = h_pods->get(o_.host_namespace + "/" + involved.value("name", ""));
  if (!hpod) return Status::ok();
  auto origin = names_.origin(*hpod);
  if (!origin) return Status::ok();
  ObjectPtr tpod = t_pods->get(origin->ns + "/" + origin->name);
  if (!tpod || str_at(*tpod, "metadata", "uid") != origin->uid) return Status::ok();

  // <tenant pod>.<the host event's own suffix>: one tenant event per host
  // event, found again after a restart.
  const std::string hname = str_at(*ev, "metadata", "name");
  const auto dot = hname.rfind('.');
  const std::string name =
      origin->name + "." + (dot == std::string::npos ? hname : hname.substr(dot + 1));
  const std::string path = "/api/v1/namespaces/" + origin->ns + "/events";

  json want = {{"apiVersion", "v1"},
               {"kind", "Event"},
               {"metadata", {{"name", name}, {"namespace", origin->ns}}},
               {"involvedObject",
                {{"apiVersion", "v1"},
                 {"kind", "Pod"},
                 {"namespace", origin->ns},
                 {"name", origin->name},
                 {"uid", origin->uid}}}};
  for (const char* field :
       {"reason", "message", "type", "count", "firstTimestamp", "lastTimestamp", "eventTime",
        "source", "reportingComponent", "reportingInstance", "action"})
    if (auto it = ev->find(field); it != ev->end() && !it->is_null()) want[field] = *it;
  if (auto fp = involved.find("fieldPath"); fp != involved.end())
    want["involvedObject"]["fieldPath"] = *fp;
  // The message names the tenant's pod, not its host name.
  if (want.contains("message") && want["message"].is_string()) {
    std::string m = want["message"].get<std::string>();
    const std::string host_name = involved.value("name", "");
    const std::string qualified = o_.host_namespace + "/" + host_name;
    for (const auto& [from, to] : {std::pair{qualified, origin->ns + "/" + origin->name},
                                   std::pair{host_name, origin->name}})
      for (size_t at; !from.empty() && (at = m.find(from)) != std::string::npos;)
        m.replace(at, from.size(), to);
    // ... and the objects it names by theirs: kubelet's `secret "db-x-ns-x-t" not found`.
    const std::string suffix = names_.host_name(origin->ns, "n").substr(1) + "\"";
    for (size_t at; (at = m.find(suffix)) != std::string::npos;) m.replace(at, suffix.size(), "\"");
    want["message"] = tenant_view_of_group(std::move(m), *tpod, names_);
  }

  ObjectPtr have = t_events->get(origin->ns + "/" + name);
  if (!have) {
    auto r = tenant_call("POST", path, want);
    if (!r.ok() && r.code != 409)
      return Status::internal("create tenant event " + name + ": " + r.body.dump());
    return Status::ok();
  }
  json patch = json::object();
  for (const char* field : {"message", "count", "lastTimestamp", "type"})
    if (want.contains(field) && have->value(field, json()) != want[field])
      patch[field] = want[field];
  if (patch.empty()) return Status::ok();
  auto r = tenant_call("PATCH", path + "/" + name, patch, "application/merge-patch+json");
  if (!r.ok() && r.code != 404)
    return Status::internal("update tenant event " + name + ": " + r.body.dump());
  return Status::ok();
}

}  // namespace vkube::syncer
