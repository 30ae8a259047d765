// apiregistration.k8s.io/v1 APIService validation, worded as kube-aggregator's
// (pkg/apis/apiregistration/validation).
#include "kind_util.h"
#include "validation_kinds.h"
#include "vkube/api/validation.h"

namespace vkube::apiserver::builtin {

using namespace util;

void validate_api_service(const json& obj, FieldErrors& errs) {
  static const json kEmpty = json::object();
  const json* spec_p = get_object(obj, "spec");
  const json& spec = spec_p ? *spec_p : kEmpty;
  const std::string group = get_string(spec, "group");
  const std::string version = get_string(spec, "version");
  const std::string name =
      get_string(get_object(obj, "metadata") ? obj["metadata"] : kEmpty, "name");
  // The name must be version.group: it is how kube finds the service of a group version.
  const std::string wanted = version + "." + group;
  if (!name.empty() && api::validate_path_segment_name(name).empty() && name != wanted)
    invalid(errs, "metadata.name", name,
            "must be `spec.version+\".\"+spec.group`: \"" + wanted + "\"");
  if (group.empty() && version != "v1")
    required(errs, "spec.group", "only v1 may have an empty group and it better be legacy kube");
  if (!group.empty())
    for (const std::string& why : api::validate_dns1123_subdomain(group))
      invalid(errs, "spec.group", group, why);
  for (const std::string& why : api::validate_dns1035_label(version))
    invalid(errs, "spec.version", version, why);
  const int64_t group_min = get_int(spec, "groupPriorityMinimum").value_or(0);
  if (group_min <= 0 || group_min > 20000)
    invalid(errs, "spec.groupPriorityMinimum", group_min, "must be positive and less than 20000");
  const int64_t version_priority = get_int(spec, "versionPriority").value_or(0);
  if (version_priority <= 0 || version_priority > 1000)
    invalid(errs, "spec.versionPriority", version_priority, "must be positive and less than 1000");
  const std::string ca = get_string(spec, "caBundle");
  const json* skip = get(spec, "insecureSkipTLSVerify");
  const bool insecure = skip != nullptr && skip->is_boolean() && skip->get<bool>();
  const json* service = get_object(spec, "service");
  if (service == nullptr) {
    if (!ca.empty()) {
      const size_t bytes = base64_decode(ca).value_or(ca).size();
      invalid(errs, "spec.caBundle", std::to_string(bytes) + " bytes",
              "local APIServices may not have a caBundle");
    }
    if (insecure)
      invalid(errs, "spec.insecureSkipTLSVerify", true,
              "local APIServices may not have insecureSkipTLSVerify");
    return;
  }
  if (get_string(*service, "namespace").empty()) required(errs, "spec.service.namespace");
  if (get_string(*service, "name").empty()) required(errs, "spec.service.name");
  if (insecure && !ca.empty())
    invalid(errs, "spec.insecureSkipTLSVerify", true, "may not be true if caBundle is present");
}

}  // namespace vkube::apiserver::builtin
