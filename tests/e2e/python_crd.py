#!/usr/bin/python3
"""The Python kubernetes client (Debian python3-kubernetes) with a custom
resource on a vkube tenant: creates a CRD with ApiextensionsV1Api, waits for
Established, then uses CustomObjectsApi and the dynamic client to create,
list with label and field selectors, patch, watch and delete custom
resources, and checks that an invalid one gets a 422 naming the field.
Exits non-zero on the first failed check. Run by kubectl_crd_test.cpp."""

import json
import sys
import threading
import time

from kubernetes import client, config, dynamic, watch
from kubernetes.client.rest import ApiException

GROUP, VERSION, PLURAL, NS = "ml.example.com", "v1", "trainingjobs", "default"

CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": f"{PLURAL}.{GROUP}"},
    "spec": {
        "group": GROUP,
        "scope": "Namespaced",
        "names": {"plural": PLURAL, "singular": "trainingjob", "kind": "TrainingJob"},
        "versions": [{
            "name": VERSION, "served": True, "storage": True,
            "selectableFields": [{"jsonPath": ".spec.queue"}],
            "schema": {"openAPIV3Schema": {
                "type": "object",
                "properties": {"spec": {
                    "type": "object",
                    "required": ["gpus"],
                    "properties": {
                        "gpus": {"type": "integer", "minimum": 1, "maximum": 64},
                        "queue": {"type": "string", "default": "batch"},
                    }}}}},
        }],
    },
}


def check(cond, what):
    if not cond:
        raise AssertionError(what)
    print("ok:", what)


def job(name, gpus, labels=None, queue=None):
    spec = {"gpus": gpus}
    if queue:
        spec["queue"] = queue
    return {"apiVersion": f"{GROUP}/{VERSION}", "kind": "TrainingJob",
            "metadata": {"name": name, "labels": labels or {}}, "spec": spec}


def main():
    config.load_kube_config()
    api = client.ApiClient()
    ext = client.ApiextensionsV1Api(api)
    co = client.CustomObjectsApi(api)

    ext.create_custom_resource_definition(CRD)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        crd = ext.read_custom_resource_definition(f"{PLURAL}.{GROUP}")
        conds = {c.type: c.status for c in (crd.status.conditions or [])}
        if conds.get("Established") == "True":
            break
        time.sleep(0.1)
    check(conds.get("Established") == "True", "CRD Established")

    a = co.create_namespaced_custom_object(GROUP, VERSION, NS, PLURAL,
                                           job("a", 8, {"team": "vision"}))
    check(a["spec"]["queue"] == "batch", "default filled in on create")
    co.create_namespaced_custom_object(GROUP, VERSION, NS, PLURAL,
                                       job("b", 2, {"team": "nlp"}, queue="interactive"))
    try:
        co.create_namespaced_custom_object(GROUP, VERSION, NS, PLURAL, job("c", 100))
        raise AssertionError("an invalid custom resource was accepted")
    except ApiException as e:
        body = json.loads(e.body)
        fields = [c.get("field") for c in body["details"]["causes"]]
        check(e.status == 422 and "spec.gpus" in fields, f"422 naming spec.gpus: {fields}")

    listed = co.list_namespaced_custom_object(GROUP, VERSION, NS, PLURAL, label_selector="team=nlp")
    check([i["metadata"]["name"] for i in listed["items"]] == ["b"], "label selector")
    listed = co.list_namespaced_custom_object(GROUP, VERSION, NS, PLURAL,
                                              field_selector="spec.queue=batch")
    check([i["metadata"]["name"] for i in listed["items"]] == ["a"], "selectable field")

    # A watch sees a patch and a delete.
    rv = co.list_namespaced_custom_object(GROUP, VERSION, NS, PLURAL)["metadata"]["resourceVersion"]

    def writer():
        time.sleep(0.3)
        co.patch_namespaced_custom_object(GROUP, VERSION, NS, PLURAL, "a", {"spec": {"gpus": 16}})
        co.delete_namespaced_custom_object(GROUP, VERSION, NS, PLURAL, "a")

    t = threading.Thread(target=writer)
    t.start()
    seen = []
    w = watch.Watch()
    for ev in w.stream(co.list_namespaced_custom_object, GROUP, VERSION, NS, PLURAL,
                       resource_version=rv, timeout_seconds=10):
        seen.append((ev["type"], ev["object"]["metadata"]["name"], ev["object"]["spec"]["gpus"]))
        if ev["type"] == "DELETED":
            w.stop()
    t.join()
    check(seen == [("MODIFIED", "a", 16), ("DELETED", "a", 16)], f"watch events: {seen}")

    # The dynamic client finds the kind through legacy discovery.
    jobs = dynamic.DynamicClient(api).resources.get(api_version=f"{GROUP}/{VERSION}",
                                                    kind="TrainingJob")
    check(jobs.get(name="b", namespace=NS).spec.queue == "interactive", "dynamic client get")
    print("PASS")


if __name__ == "__main__":
    try:
        main()
    except Exception as e:  # noqa: BLE001 - any failure fails the test
        print(f"FAIL: {type(e).__name__}: {e}", file=sys.stderr)
        sys.exit(1)
