// Admission webhooks and ValidatingAdmissionPolicy end to end, with real kubectl and the Python
// client against a tenant: the webhook server is a `vkube workload --webhook-listen` pod of the
// tenant (synced to the host, its certificate from a tenant Secret volume), reached at the
// Service's endpoints, i.e. the synced host pod; then the same on `vkube host` itself.
#include <chrono>
#include <regex>

#include "fixture.h"

namespace vkube::e2e {
namespace {

// A CA and a serving certificate for hooks.default.svc, made with openssl in the cluster's
// directory; returns the CA's PEM file.
std::string make_certificates(Cluster& c) {
  const std::string d = c.dir();
  Result r = c.run(
      {"/bin/sh", "-c",
       "cd " + d + " && openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt "
       "-days 2 -subj /CN=hooks-ca && openssl req -newkey rsa:2048 -nodes -keyout tls.key "
       "-out tls.csr -subj /CN=hooks.default.svc && printf "
       "'subjectAltName=DNS:hooks.default.svc\\n' > ext.cnf && openssl x509 -req -in tls.csr "
       "-CA ca.crt -CAkey ca.key -CAcreateserial -out tls.crt -days 2 -extfile ext.cnf"},
      seconds(30));
  INFO(r);
  REQUIRE_THAT(r, Succeeded());
  return d + "/ca.crt";
}

std::string ca_b64(Cluster& c, const std::string& path) {
  Result r = c.run({"/bin/sh", "-c", "base64 -w0 " + path});
  REQUIRE_THAT(r, Succeeded());
  return r.out;
}

const std::string kServer = R"(apiVersion: v1
kind: Pod
metadata:
  name: hooks
  labels: {app: hooks}
spec:
  containers:
  - name: main
    image: vkube
    args: [workload, --log-lines, "0", --webhook-listen, "0.0.0.0:8443", --webhook-cert-dir, /certs]
    ports: [{containerPort: 8443, name: https}]
    volumeMounts: [{name: certs, mountPath: /certs}]
  volumes:
  - name: certs
    secret: {secretName: hooks-tls}
---
apiVersion: v1
kind: Service
metadata: {name: hooks}
spec:
  selector: {app: hooks}
  ports: [{port: 443, targetPort: https}]
)";

std::string hook(const std::string& name, const std::string& path, const std::string& ca,
                 const std::string& rules, const std::string& extra = "") {
  return "- name: " + name + "\n  clientConfig:\n    service: {name: hooks, namespace: default, "
         "path: " + path + "}\n    caBundle: " + ca + "\n  rules: " + rules +
         "\n  sideEffects: None\n  admissionReviewVersions: [v1]\n" + extra;
}

std::string configurations(const std::string& ca) {
  const std::string cms = R"([{operations: [CREATE, UPDATE, DELETE], apiGroups: [""], apiVersions: [v1], resources: [configmaps]}])";
  const std::string secrets = R"([{operations: [CREATE], apiGroups: [""], apiVersions: [v1], resources: [secrets]}])";
  const std::string svcs = R"([{operations: [CREATE], apiGroups: [""], apiVersions: [v1], resources: [services]}])";
  const std::string sas = R"([{operations: [CREATE], apiGroups: [""], apiVersions: [v1], resources: [serviceaccounts]}])";
  return "apiVersion: admissionregistration.k8s.io/v1\nkind: MutatingWebhookConfiguration\n"
         "metadata: {name: a-team}\nwebhooks:\n" +
         hook("team.hooks.vkube.io", "/label/team/gpu", ca, cms,
              "  objectSelector: {matchExpressions: [{key: skip, operator: DoesNotExist}]}\n") +
         "---\napiVersion: admissionregistration.k8s.io/v1\nkind: MutatingWebhookConfiguration\n"
         "metadata: {name: b-more}\nwebhooks:\n" +
         hook("count.hooks.vkube.io", "/count", ca, secrets, "  reinvocationPolicy: IfNeeded\n") +
         hook("stage.hooks.vkube.io", "/label/stage/two", ca, secrets) +
         hook("slow.hooks.vkube.io", "/slow/3000", ca, svcs,
              "  timeoutSeconds: 1\n  namespaceSelector: {matchLabels: {slow: \"yes\"}}\n") +
         "- name: gone-ignored.hooks.vkube.io\n  failurePolicy: Ignore\n  clientConfig:\n"
         "    service: {name: nothere, namespace: default}\n  rules: " + sas +
         "\n  sideEffects: None\n  admissionReviewVersions: [v1]\n"
         "- name: gone.hooks.vkube.io\n  clientConfig:\n"
         "    service: {name: nothere, namespace: default}\n  rules: " + sas +
         "\n  sideEffects: None\n  admissionReviewVersions: [v1]\n"
         "  matchConditions: [{name: marked, expression: \"has(object.metadata.labels) && "
         "'fail' in object.metadata.labels\"}]\n"
         "---\napiVersion: admissionregistration.k8s.io/v1\n"
         "kind: ValidatingWebhookConfiguration\nmetadata: {name: deny-forbidden}\nwebhooks:\n" +
         hook("deny.hooks.vkube.io", "/deny-label/forbidden", ca, cms) +
         hook("warn.hooks.vkube.io", "/warn", ca, cms,
              "  objectSelector: {matchLabels: {warn: \"yes\"}}\n") +
         hook("protect.hooks.vkube.io", "/deny-label/protected", ca,
              R"([{operations: [DELETE], apiGroups: [""], apiVersions: [v1], resources: [configmaps]}])");
}

const std::string kPolicy = R"yaml(apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: max-replicas}
spec:
  paramKind: {apiVersion: v1, kind: ConfigMap}
  matchConstraints:
    resourceRules: [{apiGroups: [apps], apiVersions: [v1], operations: [CREATE, UPDATE], resources: [deployments]}]
  variables:
  - {name: limit, expression: "int(params.data.max)"}
  validations:
  - expression: "object.spec.replicas <= variables.limit"
    messageExpression: "'replicas must be at most ' + string(variables.limit) + ', not ' + string(object.spec.replicas)"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: max-replicas-default}
spec:
  policyName: max-replicas
  validationActions: [Deny]
  paramRef: {name: limits, namespace: default, parameterNotFoundAction: Deny}
  matchResources:
    namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: default}}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: named}
spec:
  matchConstraints:
    resourceRules: [{apiGroups: [apps], apiVersions: [v1], operations: [CREATE], resources: [deployments]}]
  validations:
  - expression: "!object.metadata.name.startsWith('tmp-')"
    reason: Forbidden
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: named-warn}
spec:
  policyName: named
  validationActions: [Warn]
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: scale-limit}
spec:
  matchConstraints:
    resourceRules: [{apiGroups: [apps], apiVersions: [v1], operations: [UPDATE], resources: [deployments/scale]}]
  validations:
  - expression: "object.kind == 'Scale' && request.kind.group == 'autoscaling' && object.spec.replicas <= 5"
    message: "a scaled Deployment keeps at most 5 replicas"
    reason: Forbidden
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: scale-limit}
spec:
  policyName: scale-limit
  validationActions: [Deny]
)yaml";

void check_webhooks(Cluster& c, const std::string& ca_file) {
  REQUIRE_THAT(c.kubectl({"create", "secret", "tls", "hooks-tls", "--cert=" + c.dir() + "/tls.crt",
                          "--key=" + c.dir() + "/tls.key"}),
               Succeeded());
  REQUIRE_THAT(c.kubectl({"apply", "-f", c.file("hooks.yaml", kServer)}), Succeeded());
  Result ready = c.kubectl({"wait", "--for=condition=Ready", "pod/hooks", "--timeout=60s"},
                           seconds(70));
  INFO(ready << c.server_log());
  REQUIRE_THAT(ready, Succeeded());
  // Endpoints follow the pod's readiness.
  REQUIRE(eventually([&] {
    auto ep = c.get_json({"endpoints", "hooks"});
    return ep.contains("subsets") && !ep["subsets"].empty();
  }));
  const std::string ca = ca_b64(c, ca_file);
  Result applied = c.kubectl({"apply", "-f", c.file("webhooks.yaml", configurations(ca))});
  INFO(applied);
  REQUIRE_THAT(applied, Succeeded());

  // Mutating: the webhook's label is on the stored object.
  REQUIRE_THAT(c.kubectl({"create", "configmap", "a", "--from-literal=x=1"}), Succeeded());
  CHECK(c.get_json({"configmap", "a"})["metadata"]["labels"].value("team", "") == "gpu");
  // objectSelector: an object it excludes is left alone.
  Result skipped = c.kubectl({"create", "-f", c.file("skip.yaml",
                                                     "apiVersion: v1\nkind: ConfigMap\nmetadata:\n"
                                                     "  name: skipped\n  labels: {skip: \"1\"}\n")});
  REQUIRE_THAT(skipped, Succeeded());
  CHECK(!c.get_json({"configmap", "skipped"})["metadata"]["labels"].contains("team"));

  // Reinvocation: /count ran before /label changed the object, so it runs once more.
  REQUIRE_THAT(c.kubectl({"create", "secret", "generic", "s", "--from-literal=a=b"}), Succeeded());
  auto s = c.get_json({"secret", "s"});
  CHECK(s["metadata"]["labels"].value("stage", "") == "two");
  CHECK(s["metadata"]["annotations"].value("webhook.vkube.io/calls", "") == "2");

  // Validating: denials on create, update and delete, with the webhook's code and message.
  const std::string denial =
      "admission webhook \"deny.hooks.vkube.io\" denied the request: the label forbidden is not "
      "allowed here";
  CHECK_THAT(c.kubectl({"label", "configmap", "a", "forbidden=1"}),
             FailedWith("Error from server (Forbidden): " + denial));
  REQUIRE_THAT(c.kubectl({"create", "configmap", "b"}), Succeeded());
  CHECK_THAT(c.kubectl({"delete", "configmap", "b"}), Succeeded());
  CHECK_THAT(c.kubectl({"get", "configmap", "b"}), FailedWith("not found"));
  // A delete is shown the object as it is (oldObject).
  REQUIRE_THAT(c.kubectl({"create", "-f", c.file("kept.yaml",
                                                 "apiVersion: v1\nkind: ConfigMap\nmetadata:\n"
                                                 "  name: kept\n  labels: {protected: \"1\"}\n")}),
               Succeeded());
  CHECK_THAT(c.kubectl({"delete", "configmap", "kept"}),
             FailedWith("admission webhook \"protect.hooks.vkube.io\" denied the request: the "
                        "label protected is not allowed here"));
  CHECK_THAT(c.kubectl({"get", "configmap", "kept"}), Succeeded());
  // A server-side dry run reaches webhooks (their sideEffects say None) and stores nothing.
  CHECK_THAT(c.kubectl({"create", "configmap", "dry", "--dry-run=server", "-o", "yaml"}),
             Succeeded());
  CHECK_THAT(c.kubectl({"get", "configmap", "dry"}), FailedWith("not found"));
  // Warnings of a webhook reach kubectl.
  Result warned = c.kubectl({"create", "-f", c.file("warn.yaml",
                                                    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n"
                                                    "  name: warned\n  labels: {warn: \"yes\"}\n")});
  CHECK_THAT(warned, Succeeded());
  CHECK_THAT(warned.err, Catch::Contains("Warning: webhook.vkube.io: this object was looked at"));

  // timeoutSeconds: the call is abandoned after 1 s (failurePolicy Fail: the request fails);
  // the namespaceSelector keeps other namespaces out of it.
  REQUIRE_THAT(c.kubectl({"create", "namespace", "slowns"}), Succeeded());
  REQUIRE_THAT(c.kubectl({"label", "namespace", "slowns", "slow=yes"}), Succeeded());
  auto t0 = std::chrono::steady_clock::now();
  CHECK_THAT(c.kubectl({"-n", "slowns", "create", "service", "clusterip", "x", "--tcp=80"}),
             FailedWith("Internal error occurred: failed calling webhook \"slow.hooks.vkube.io\": "
                        "failed to call webhook: Post \"https://hooks.default.svc:443/slow/"
                        "3000?timeout=1s\": context deadline exceeded"));
  CHECK(std::chrono::steady_clock::now() - t0 < seconds(3));
  CHECK_THAT(c.kubectl({"create", "service", "clusterip", "fast", "--tcp=80"}), Succeeded());

  // failurePolicy: a webhook whose Service is missing is skipped when Ignore, fails the request
  // when Fail (here only for objects its matchCondition selects).
  CHECK_THAT(c.kubectl({"create", "serviceaccount", "plain"}), Succeeded());
  CHECK_THAT(c.kubectl({"create", "-f", c.file("sa.yaml",
                                               "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n"
                                               "  name: marked\n  labels: {fail: \"yes\"}\n")}),
             FailedWith("failed calling webhook \"gone.hooks.vkube.io\": failed to call webhook: "
                        "Post \"https://nothere.default.svc:443/?timeout=10s\": service "
                        "\"nothere\" not found"));

  // CONNECT: a validating webhook on pods/exec is shown the PodExecOptions.
  Result exec_ok = c.kubectl({"exec", "hooks", "--", "true"});
  CHECK_THAT(exec_ok, Succeeded());
  const std::string connect_hook =
      "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingWebhookConfiguration\n"
      "metadata: {name: no-exec}\nwebhooks:\n" +
      hook("noexec.hooks.vkube.io", "/deny/exec-is-off", ca_b64(c, ca_file),
           R"([{operations: [CONNECT], apiGroups: [""], apiVersions: [v1], resources: [pods/exec]}])",
           "  matchConditions: [{name: rm, expression: \"object.command[0] == 'rm'\"}]\n");
  REQUIRE_THAT(c.kubectl({"apply", "-f", c.file("noexec.yaml", connect_hook)}), Succeeded());
  CHECK_THAT(c.kubectl({"exec", "hooks", "--", "rm", "-rf", "/nothing"}),
             FailedWith("admission webhook \"noexec.hooks.vkube.io\" denied the request: "
                        "exec-is-off"));
  CHECK_THAT(c.kubectl({"exec", "hooks", "--", "true"}), Succeeded());

  // What the webhook server saw: operations, dry run.
  Result log = c.kubectl({"logs", "hooks"});
  CHECK_THAT(log.out, Catch::Contains("admission: CREATE configmaps default/a dryRun=false"));
  CHECK_THAT(log.out, Catch::Contains("admission: UPDATE configmaps default/a dryRun=false"));
  CHECK_THAT(log.out, Catch::Contains("admission: DELETE configmaps default/b dryRun=false"));
  CHECK_THAT(log.out, Catch::Contains("admission: CREATE configmaps default/dry dryRun=true"));
  CHECK(log.out.find("slowns/x") != std::string::npos);
  CHECK(log.out.find("default/fast path=/slow") == std::string::npos);
  CHECK_THAT(log.out, Catch::Contains("admission: CONNECT pods default/hooks dryRun=false "
                                      "path=/deny/exec-is-off"));
}

// Only users who may `approve` configmaps/prod in a namespace may create prod configmaps there.
const std::string kAuthzPolicy = R"yaml(apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: prod-approval}
spec:
  matchConstraints:
    resourceRules: [{apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [configmaps]}]
  matchConditions:
  - {name: prod, expression: "object.metadata.?labels.?tier.orValue('') == 'prod'"}
  validations:
  - expression: "authorizer.group('').resource('configmaps').subresource('prod').namespace(request.namespace).check('approve').allowed()"
    messageExpression: "request.userInfo.username + ' may not approve prod configmaps in ' + request.namespace"
    reason: Forbidden
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: prod-approval}
spec:
  policyName: prod-approval
  validationActions: [Deny]
)yaml";

void check_authorizer(Cluster& c) {
  REQUIRE_THAT(c.kubectl({"apply", "-f", c.file("authz-policy.yaml", kAuthzPolicy)}), Succeeded());
  REQUIRE_THAT(c.kubectl({"create", "namespace", "team"}), Succeeded());
  REQUIRE_THAT(c.kubectl({"-n", "team", "create", "role", "writer", "--verb=create",
                          "--resource=configmaps"}),
               Succeeded());
  REQUIRE_THAT(c.kubectl({"-n", "team", "create", "role", "approver", "--verb=approve",
                          "--resource=configmaps/prod"}),
               Succeeded());
  REQUIRE_THAT(c.kubectl({"-n", "team", "create", "rolebinding", "writers", "--role=writer",
                          "--user=alice", "--user=bob"}),
               Succeeded());
  REQUIRE_THAT(c.kubectl({"-n", "team", "create", "rolebinding", "approvers", "--role=approver",
                          "--user=bob"}),
               Succeeded());
  auto prod = [&](const std::string& user, const std::string& name) {
    return c.kubectl({"-n", "team", "create", "-f",
                      c.file(name + ".yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: " +
                                                 name + ", labels: {tier: prod}}\n"),
                      "--as=" + user});
  };
  CHECK_THAT(prod("alice", "a1"),
             FailedWith("configmaps \"a1\" is forbidden: ValidatingAdmissionPolicy "
                        "'prod-approval' with binding 'prod-approval' denied request: alice may "
                        "not approve prod configmaps in team"));
  CHECK_THAT(c.kubectl({"-n", "team", "create", "configmap", "a2", "--as=alice"}), Succeeded());
  CHECK_THAT(prod("bob", "b1"), Succeeded());

  // The policy status controller type-checks each generation against the matched kinds.
  REQUIRE_THAT(c.kubectl({"apply", "-f", c.file("typo.yaml", R"yaml(apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: typo}
spec:
  matchConstraints:
    resourceRules: [{apiGroups: [apps], apiVersions: [v1], operations: [CREATE], resources: [deployments]}]
  validations:
  - expression: "object.spec.replica <= 5"
)yaml")}),
               Succeeded());
  Result warning;
  CHECK(eventually([&] {
    warning = c.kubectl({"get", "validatingadmissionpolicy", "typo", "-o",
                         "jsonpath={.status.typeChecking.expressionWarnings[0].warning}"});
    return !warning.out.empty();
  }));
  CHECK(warning.out ==
        "apps/v1, Kind=Deployment: ERROR: <input>:1:12: undefined field 'replica'\n"
        " | object.spec.replica <= 5\n"
        " | ...........^\n");
  CHECK(c.kubectl({"get", "validatingadmissionpolicy", "prod-approval", "-o",
                   "jsonpath={.status.observedGeneration}/{.status.typeChecking}"})
            .out == "1/{}");
}

void check_policies(Cluster& c) {
  REQUIRE_THAT(c.kubectl({"apply", "-f", c.file("policy.yaml", kPolicy)}), Succeeded());
  const std::string denied =
      "deployments.apps \"web\" is forbidden: ValidatingAdmissionPolicy 'max-replicas' with "
      "binding 'max-replicas-default' denied request: ";
  CHECK_THAT(c.kubectl({"create", "deployment", "web", "--image=nginx", "--replicas=3"}),
             FailedWith(denied + "no params found for policy binding with `Deny` parameterNotFoundAction"));
  REQUIRE_THAT(c.kubectl({"create", "configmap", "limits", "--from-literal=max=2"}), Succeeded());
  CHECK_THAT(c.kubectl({"create", "deployment", "web", "--image=nginx", "--replicas=3"}),
             FailedWith(denied + "replicas must be at most 2, not 3"));
  CHECK_THAT(c.kubectl({"create", "deployment", "web", "--image=nginx", "--replicas=2"}),
             Succeeded());
  // kubectl words an Invalid Status by its causes, as it does against kube-apiserver.
  CHECK_THAT(c.kubectl({"patch", "deployment", "web", "-p", R"({"spec":{"replicas":4}})"}),
             FailedWith("The deployments \"web\" is invalid: : ValidatingAdmissionPolicy "
                        "'max-replicas' with binding 'max-replicas-default' denied request: "
                        "replicas must be at most 2, not 4"));
  // The binding matches only the default namespace.
  REQUIRE_THAT(c.kubectl({"create", "namespace", "free"}), Succeeded());
  CHECK_THAT(c.kubectl({"-n", "free", "create", "deployment", "big", "--image=nginx",
                        "--replicas=9"}),
             Succeeded());
  // The scale subresource is shown as an autoscaling/v1 Scale.
  CHECK_THAT(c.kubectl({"-n", "free", "scale", "deployment", "big", "--replicas=7"}),
             FailedWith("deployments.apps \"big\" is forbidden: ValidatingAdmissionPolicy "
                        "'scale-limit' with binding 'scale-limit' denied request: a scaled "
                        "Deployment keeps at most 5 replicas"));
  CHECK_THAT(c.kubectl({"-n", "free", "scale", "deployment", "big", "--replicas=4"}),
             Succeeded());
  CHECK(c.kubectl({"-n", "free", "get", "deployment", "big", "-o", "jsonpath={.spec.replicas}"})
            .out == "4");
  // A Warn binding: the request goes through with kube's warning.
  Result warned = c.kubectl({"create", "deployment", "tmp-x", "--image=nginx", "--replicas=1"});
  CHECK_THAT(warned, Succeeded());
  CHECK_THAT(warned.err,
             Catch::Contains("Warning: Validation failed for ValidatingAdmissionPolicy 'named' "
                             "with binding 'named-warn': failed expression: "
                             "!object.metadata.name.startsWith('tmp-')"));
}

}  // namespace

TEST_CASE("admission webhooks and policies in a tenant: kubectl and Python", "[e2e][admission]") {
  Cluster host(Cluster::Host{});
  Cluster t(Cluster::Serve{
      {"--name", "adm", "--host-kubeconfig", host.kubeconfig(), "--host-unsandboxed-local-pods"}});
  const std::string ca = make_certificates(t);
  check_webhooks(t, ca);
  check_policies(t);
  check_authorizer(t);
  Result py = t.run({kPython, std::string(VKUBE_SOURCE_DIR) + "/tests/e2e/python_admission.py"},
                    seconds(60));
  INFO(py);
  CHECK_THAT(py, Succeeded());
  CHECK_THAT(py.out, Catch::EndsWith("PASS\n"));
  // The webhook pod runs on the host as the tenant's synced pod.
  Result hp = host.kubectl({"get", "pods", "-n", "vkube-adm", "-o", "name"});
  CHECK_THAT(hp.out, Catch::Contains("pod/hooks-x-default-x-adm"));
}

TEST_CASE("admission webhooks on vkube host itself", "[e2e][admission]") {
  Cluster host(Cluster::Host{});
  REQUIRE_THAT(host.kubectl({"label", "namespace", "default", "vkube.io/unsandboxed-local-pods=true"}),
               Succeeded());
  const std::string ca = make_certificates(host);
  check_webhooks(host, ca);
}

}  // namespace vkube::e2e
