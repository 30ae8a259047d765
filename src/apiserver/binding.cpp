// POST pods/<name>/binding and the older POST bindings: how a scheduler
// assigns a pod to a node (kube's BindingREST and LegacyBindingREST).
//
// A binding is no object of its own: it is one guaranteed update of the
// stored pod that sets spec.nodeName, merges the binding's annotations and
// marks the pod PodScheduled, so a watcher of pods sees one MODIFIED event.
// As in kube the write bypasses the pod's update strategy (no validation, no
// managedFields entry): the scheduler owns these fields.
#include "codec.h"
#include "field_manager.h"
#include "object.h"
#include "server_impl.h"

namespace vkube::apiserver {

namespace {

// validation.ValidatePodBinding.
FieldErrors validate_binding(const json& binding) {
  FieldErrors errs;
  const json target = binding.value("target", json::object());
  json kind = target.is_object() ? target.value("kind", json("")) : json("");
  if (kind.is_null()) kind = "";  // Go decodes null as the empty string
  if (!kind.is_string() || (kind != "" && kind != "Node"))
    errs.push_back({FieldError::Type::kNotSupported, "target.kind",
                    "supported values: \"Node\", \"<empty>\"", kind});
  if (!target.is_object() || str_at(target, "name").empty())
    errs.push_back({FieldError::Type::kRequired, "target.name", "", {}});
  return errs;
}

// The annotations a binding carries: a map of strings, or a 400 as kube's
// decoder answers a body that does not fit the Binding type.
Result<json> binding_annotations(const json& binding) {
  const json annotations = binding["metadata"].value("annotations", json::object());
  if (annotations.is_null()) return json::object();
  if (!annotations.is_object())
    return Status::bad_request("metadata.annotations: the field must be a map of strings");
  for (const auto& [key, value] : annotations.items()) {
    if (!value.is_string())
      return Status::bad_request("metadata.annotations[" + key + "]: the value must be a string");
  }
  return annotations;
}

// podutil.UpdatePodCondition with PodScheduled=True: the condition replaces
// any earlier one (a scheduler's Unschedulable reason goes with it) and keeps
// its lastTransitionTime only when it was True already.
void mark_scheduled(json& pod) {
  json condition = {{"type", "PodScheduled"},
                    {"status", "True"},
                    {"lastProbeTime", nullptr},
                    {"lastTransitionTime", now_rfc3339()}};
  if (!pod.contains("status") || !pod["status"].is_object()) pod["status"] = json::object();
  json& conditions = pod["status"]["conditions"];
  if (!conditions.is_array()) conditions = json::array();
  for (json& old : conditions) {
    if (!old.is_object() || str_at(old, "type") != "PodScheduled") continue;
    if (str_at(old, "status") == "True")
      condition["lastTransitionTime"] = old.value("lastTransitionTime", json());
    old = std::move(condition);
    return;
  }
  conditions.push_back(std::move(condition));
}

// Binds pod `c.info.name` (c addresses the pod, subresource "binding").
http::Response bind_pod(Context& c, const json& binding, const json& annotations) {
  const std::string& name = c.info.name;
  const std::string node = str_at(binding, "target", "name");
  const std::string uid = str_at(binding["metadata"], "uid");
  const std::string rv = str_at(binding["metadata"], "resourceVersion");
  // Refusals are conflicts on "pods/binding", not on the pod.
  api::Resource subresource = c.resource();
  subresource.plural += "/binding";
  std::optional<ApiError> refused;
  auto refuse = [&](const std::string& why) -> Status {
    refused = conflict(subresource, name, why);
    return refused->status;
  };
  http::Response resp = guaranteed_update(
      c,
      [&](const json& cur) -> Result<json> {
        refused.reset();
        if (cur["metadata"].contains("deletionTimestamp"))
          return refuse("pod " + name + " is being deleted, cannot be assigned to a host");
        const json spec = cur.value("spec", json::object());
        if (const std::string assigned = str_at(spec, "nodeName"); !assigned.empty())
          return refuse("pod " + name + " is already assigned to node \"" + assigned + "\"");
        const json gates = spec.value("schedulingGates", json::array());
        if (gates.is_array() && !gates.empty())
          return refuse("pod " + name + " has non-empty .spec.schedulingGates");
        json next = cur;
        next["spec"]["nodeName"] = node;
        json& meta = next["metadata"];
        if (!meta.contains("annotations") || !meta["annotations"].is_object())
          meta["annotations"] = json::object();
        for (const auto& [key, value] : annotations.items()) meta["annotations"][key] = value;
        if (meta["annotations"].empty()) meta.erase("annotations");
        mark_scheduled(next);
        // The binding's uid and resourceVersion are the update's
        // preconditions; without them a lost race is retried.
        if (!uid.empty()) meta["uid"] = uid;
        if (rv.empty())
          meta.erase("resourceVersion");
        else
          meta["resourceVersion"] = rv;
        return next;
      },
      [](const json&, json&) {});
  if (refused) return error_response(*refused);
  if (resp.status != 200) return resp;
  // Kube answers a created Binding with a Status, not with the pod.
  return body_response(c.req, 201,
                       {{"kind", "Status"},
                        {"apiVersion", "v1"},
                        {"metadata", json::object()},
                        {"status", "Success"},
                        {"code", 201}});
}

}  // namespace

http::Response handle_binding(Context& c) {
  const Registry& reg = c.server.registry();
  const Kind* binding_kind = reg.builtin("", "v1", "bindings");
  const Kind* pod_kind = reg.builtin("", "v1", "pods");
  if (binding_kind == nullptr || pod_kind == nullptr)
    return error_response(Status::internal("the built-in table lacks pods or bindings"));
  const bool legacy = c.kind.strategy.handler == builtin::Handler::kBinding;
  if (c.info.verb != "create" || (legacy && !c.info.name.empty()))
    return error_response(
        method_not_supported(legacy ? binding_kind->resource : pod_kind->resource, c.info.verb));
  if (auto err = check_write_options(c, "CreateOptions", false)) return error_response(*err);
  if (Status s = check_dry_run(c); !s.is_ok()) return error_response(s);

  // The body is decoded and its fields checked as a Binding, whichever URL
  // it came to.
  Context bc{c.server, c.req, c.info, *binding_kind, c.user, c.kinds, {}, {}};
  auto decoded = decode_body(bc);
  c.warnings.insert(c.warnings.end(), bc.warnings.begin(), bc.warnings.end());
  if (!decoded.is_ok()) return error_response(decoded.status());
  const json binding = std::move(decoded).value();
  if (str_at(binding, "kind") != "Binding")
    return error_response(bad_request("the kind in the data (" + str_at(binding, "kind") +
                                      ") does not match the expected kind (Binding)"));

  const json& meta = binding["metadata"];
  const std::string name = legacy ? str_at(meta, "name") : c.info.name;
  if (name.empty()) return error_response(bad_request("Name parameter required."));
  if (str_at(meta, "name") != name)
    return error_response(bad_request("name in URL does not match name in Binding object"));
  const std::string body_ns = str_at(meta, "namespace");
  if (!body_ns.empty() && body_ns != c.info.namespace_)
    return error_response(bad_request(
        "the namespace of the provided object does not match the namespace sent on the request"));
  if (FieldErrors errs = validate_binding(binding); !errs.empty())
    return error_response(invalid(binding_kind->resource, name, errs));
  auto annotations = binding_annotations(binding);
  if (!annotations.is_ok()) return error_response(annotations.status());

  RequestInfo pod_info = c.info;
  pod_info.resource = "pods";
  pod_info.name = name;
  pod_info.subresource = "binding";
  Context pc{c.server, c.req, pod_info, *pod_kind, c.user, c.kinds, {}, {}};
  http::Response resp = bind_pod(pc, binding, *annotations);
  c.warnings.insert(c.warnings.end(), pc.warnings.begin(), pc.warnings.end());
  return resp;
}

}  // namespace vkube::apiserver
