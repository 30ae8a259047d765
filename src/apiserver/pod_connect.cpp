// pods/log, pods/exec, pods/attach and pods/portforward: what kube-apiserver
// checks itself (the pod, its node, the container) before it reaches the
// pod's kubelet; the reaching is the PodConnector's (apiserver.h).
#include <algorithm>

#include "authz.h"
#include "server_impl.h"

namespace vkube::apiserver {

namespace {

const json& member(const json& obj, const char* key) {
  static const json kNull;
  if (!obj.is_object()) return kNull;
  auto it = obj.find(key);
  return it == obj.end() ? kNull : *it;
}

std::vector<std::string> container_names(const json& pod, const char* list) {
  std::vector<std::string> out;
  for (const json& c : member(member(pod, "spec"), list)) {
    const json& name = member(c, "name");
    if (name.is_string()) out.push_back(name.get<std::string>());
  }
  return out;
}

// Go's %v of a []string: "[a b]".
std::string go_list(const std::vector<std::string>& names) {
  std::string out = "[";
  for (size_t i = 0; i < names.size(); ++i) out += (i ? " " : "") + names[i];
  return out + "]";
}

// The container a log, exec or attach request is for, as kube-apiserver's
// pod strategy picks it: the one named, or the only one.
Result<std::string> pick_container(const json& pod, const std::string& name, std::string asked) {
  const auto containers = container_names(pod, "containers");
  const auto init = container_names(pod, "initContainers");
  const auto ephemeral = container_names(pod, "ephemeralContainers");
  if (asked.empty()) {
    if (containers.size() == 1) return containers[0];
    std::string msg = "a container name must be specified for pod " + name +
                      ", choose one of: " + go_list(containers);
    if (!init.empty()) msg += " or one of the init containers: " + go_list(init);
    if (!ephemeral.empty()) msg += " or one of the ephemeral containers: " + go_list(ephemeral);
    return Status::bad_request(std::move(msg));
  }
  for (const auto* list : {&containers, &init, &ephemeral})
    if (std::find(list->begin(), list->end(), asked) != list->end()) return asked;
  return Status::bad_request("container " + asked + " is not valid for pod " + name);
}

bool is_connect(const std::string& sub) {
  return sub == "exec" || sub == "attach" || sub == "portforward";
}

}  // namespace

bool is_pod_connect_subresource(const std::string& sub) {
  return sub == "log" || is_connect(sub);
}

namespace {

// Validating admission of a CONNECT: the webhooks and policies are shown the options (kube's
// PodExecOptions, PodAttachOptions, PodPortForwardOptions) as the query gave them.
std::optional<ApiError> admit_connect(Context& c, const std::string& container) {
  const std::string& sub = c.info.subresource;
  json options = {{"apiVersion", "v1"}};
  auto flag = [&](const char* name) {
    auto v = c.param(name);
    return v && (*v == "true" || *v == "1" || *v == "True");
  };
  if (sub == "portforward") {
    options["kind"] = "PodPortForwardOptions";
    json ports = json::array();
    for (const auto& [k, v] : http::parse_query(c.req.query))
      if (k == "ports") {
        try {
          ports.push_back(std::stoi(v));
        } catch (...) {
        }
      }
    if (!ports.empty()) options["ports"] = std::move(ports);
  } else {
    options["kind"] = sub == "exec" ? "PodExecOptions" : "PodAttachOptions";
    for (const char* f : {"stdin", "stdout", "stderr", "tty"})
      if (flag(f)) options[f] = true;
    options["container"] = container;
    if (sub == "exec") {
      json command = json::array();
      for (const auto& [k, v] : http::parse_query(c.req.query))
        if (k == "command") command.push_back(v);
      options["command"] = std::move(command);
    }
  }
  const std::string kind = options["kind"];
  AdmissionRequest a{"CONNECT", sub, c.info.name, c.info.namespace_, std::move(options), nullptr,
                     nullptr, kind};
  return c.server.admission().validate(c, a);
}

}  // namespace

http::Response handle_pod_connect(Context& c) {
  const std::string& sub = c.info.subresource;
  const std::string& name = c.info.name;
  if (name.empty())
    return error_response(Status::not_found("the server could not find the requested resource"));
  const bool get = c.req.method == "GET";
  if (sub == "log" ? !get : !(get || c.req.method == "POST"))
    return error_response(
        Status(Code::kMethodNotAllowed,
               "the server does not allow this method on the requested resource"));
  // A WebSocket upgrade is a GET, but it starts a process or opens a port as
  // SPDY's POST does: kube (AuthorizePodWebsocketUpgradeCreatePermission,
  // on since 1.31) asks for `create` too.
  if (get && is_connect(sub) && !rbac::is_privileged(c.user.groups)) {
    rbac::Attributes attrs = request_attributes(c.req, c.info, c.user);
    attrs.verb = "create";
    rbac::Decision d = c.server.authorizer().authorize(attrs);
    if (!d.allowed) return error_response(forbidden(attrs, d.reason));
  }
  auto pod = read_object(c, name);
  if (!pod.is_ok()) return error_response(storage_error(c, pod.status(), name));

  PodRequest r;
  r.subresource = sub;
  if (sub != "portforward") {
    auto container = pick_container(*pod, name, c.param("container").value_or(""));
    if (!container.is_ok()) return error_response(container.status());
    r.container = std::move(container).value();
  }
  if (is_connect(sub) && c.server.admission().active()) {
    if (auto err = admit_connect(c, r.container)) return error_response(*err);
  }
  const json& node = member(member(*pod, "spec"), "nodeName");
  if (!node.is_string() || node.get<std::string>().empty()) {
    // kube answers an empty log for a pod no node runs yet.
    if (sub == "log") {
      http::Response empty;
      empty.set_header("Content-Type", "text/plain");
      return empty;
    }
    return error_response(Status::bad_request("pod " + name + " does not have a host assigned"));
  }
  std::shared_ptr<PodConnector> connector = c.server.pod_connector();
  if (!connector)
    return error_response(Status::unavailable(
        "no node agent serves pod " + name + " on node " + node.get<std::string>() +
        ": this vkube runs without a host cluster (--host-kubeconfig), so no container runs"));
  r.pod = std::move(pod).value();
  return connector->connect(r, c.req);
}

}  // namespace vkube::apiserver
