# The Python client against a cluster with the webhooks and the admission policy of
# kubectl_admission_test.cpp installed (KUBECONFIG names it): a mutated create, a webhook's
# denial and a policy's denial come back as the client's objects and ApiExceptions. Exits
# non-zero on the first check that fails; prints PASS at the end.
import json
import sys

from kubernetes import client, config
from kubernetes.client.rest import ApiException

config.load_kube_config()
v1 = client.CoreV1Api()
apps = client.AppsV1Api()


def check(what, got, want):
    if got != want:
        print(f"FAIL {what}: got {got!r}, want {want!r}")
        sys.exit(1)


cm = v1.create_namespaced_config_map(
    "default", client.V1ConfigMap(metadata=client.V1ObjectMeta(name="py-cm"), data={"a": "b"}))
check("mutated label", (cm.metadata.labels or {}).get("team"), "gpu")

try:
    v1.create_namespaced_config_map("default", client.V1ConfigMap(
        metadata=client.V1ObjectMeta(name="py-denied", labels={"forbidden": "x"})))
    print("FAIL the webhook's denial did not come")
    sys.exit(1)
except ApiException as e:
    body = json.loads(e.body)
    check("denial code", e.status, 403)
    check("denial message", body["message"],
          'admission webhook "deny.hooks.vkube.io" denied the request: '
          'the label forbidden is not allowed here')

dep = client.V1Deployment(
    metadata=client.V1ObjectMeta(name="py-big"),
    spec=client.V1DeploymentSpec(
        replicas=9,
        selector=client.V1LabelSelector(match_labels={"app": "py"}),
        template=client.V1PodTemplateSpec(
            metadata=client.V1ObjectMeta(labels={"app": "py"}),
            spec=client.V1PodSpec(containers=[client.V1Container(name="c", image="nginx")]))))
try:
    apps.create_namespaced_deployment("default", dep)
    print("FAIL the policy's denial did not come")
    sys.exit(1)
except ApiException as e:
    body = json.loads(e.body)
    check("policy code", e.status, 422)
    check("policy reason", body["reason"], "Invalid")
    check("policy message", body["message"],
          "deployments.apps \"py-big\" is forbidden: ValidatingAdmissionPolicy 'max-replicas' "
          "with binding 'max-replicas-default' denied request: replicas must be at most 2, not 9")

print("PASS")
