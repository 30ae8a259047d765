#!/usr/bin/python3
"""The Python kubernetes client (Debian python3-kubernetes) against a vkube
tenant: loads $KUBECONFIG, then creates, lists with label selectors, patches,
deletes and watches. Each check raises on failure; the exit code is non-zero
then, and the failing check is printed. Run by python_client_test.cpp."""

import sys
import threading
import time

from kubernetes import client, config, dynamic, watch
from kubernetes.client.rest import ApiException

NS = "py-e2e"


def check(cond, what):
    if not cond:
        raise AssertionError(what)
    print("ok:", what)


def expect_status(code, fn, *args, **kwargs):
    try:
        fn(*args, **kwargs)
    except ApiException as e:
        check(e.status == code, f"{fn.__name__} -> {code} (got {e.status}: {e.body})")
        return e
    raise AssertionError(f"{fn.__name__} succeeded, expected {code}")


def names(items):
    return sorted(i.metadata.name for i in items)


def cm(name, labels, data):
    return client.V1ConfigMap(metadata=client.V1ObjectMeta(name=name, labels=labels), data=data)


def main():
    config.load_kube_config()
    api = client.ApiClient()
    core = client.CoreV1Api(api)
    apps = client.AppsV1Api(api)

    check(client.VersionApi(api).get_code().git_version.startswith("v1."), "GET /version")

    # Namespace and configmaps. The bodies carry no apiVersion/kind (the
    # client leaves them out); the server fills them in from the URL.
    ns = core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=NS)))
    check(ns.metadata.uid and ns.status.phase == "Active", "namespace created, Active")
    for i, (tier, color) in enumerate([("front", "red"), ("back", "blue"), (None, "red")]):
        labels = {"app": "py", "color": color}
        if tier:
            labels["tier"] = tier
        created = core.create_namespaced_config_map(NS, cm(f"cm-{i}", labels, {"i": str(i)}))
        check(created.metadata.resource_version and created.metadata.creation_timestamp,
              f"cm-{i} created with server-set metadata")
    expect_status(409, core.create_namespaced_config_map, NS, cm("cm-0", {}, {}))
    expect_status(422, core.create_namespaced_config_map, NS, cm("Not_Valid", {}, {}))
    expect_status(404, core.read_namespaced_config_map, "nope", NS)

    # List with label selectors.
    def listed(selector):
        # kube-root-ca.crt is in every namespace; these checks are about our own.
        return [n for n in names(core.list_namespaced_config_map(NS, label_selector=selector).items)
                if n.startswith("cm-")]

    check(listed("app=py") == ["cm-0", "cm-1", "cm-2"], "labelSelector =")
    check(listed("color!=red") == ["cm-1"], "labelSelector !=")
    check(listed("tier in (front,back)") == ["cm-0", "cm-1"], "labelSelector in")
    check(listed("tier notin (front)") == ["cm-1", "cm-2"], "labelSelector notin")
    check(listed("tier") == ["cm-0", "cm-1"], "labelSelector exists")
    check(listed("!tier") == ["cm-2"], "labelSelector does not exist")
    check(listed("color=red,tier") == ["cm-0"], "labelSelector with two requirements")
    everywhere = core.list_config_map_for_all_namespaces(label_selector="app=py")
    check(names(everywhere.items) == ["cm-0", "cm-1", "cm-2"], "list across namespaces")
    by_field = core.list_namespaced_config_map(NS, field_selector="metadata.name=cm-1")
    check(names(by_field.items) == ["cm-1"], "fieldSelector metadata.name")
    page = core.list_namespaced_config_map(NS, limit=2)
    check(len(page.items) == 2 and page.metadata._continue, "limit gives a continue token")
    rest = core.list_namespaced_config_map(NS, limit=2, _continue=page.metadata._continue)
    check(names(page.items + rest.items) == ["cm-0", "cm-1", "cm-2", "kube-root-ca.crt"],
          "continue gives the rest")

    # Patches: a dict is sent as a strategic-merge patch, a list as JSON patch.
    p = core.patch_namespaced_config_map("cm-0", NS, {"data": {"extra": "yes"},
                                                      "metadata": {"labels": {"patched": "1"}}})
    check(p.data == {"i": "0", "extra": "yes"}, "strategic-merge patch merges data")
    check(listed("patched=1") == ["cm-0"], "patched labels select")
    p = core.patch_namespaced_config_map(
        "cm-0", NS, [{"op": "replace", "path": "/data/i", "value": "zero"},
                     {"op": "remove", "path": "/data/extra"}])
    check(p.data == {"i": "zero"}, "JSON patch replaces and removes")
    check(core.read_namespaced_config_map("cm-0", NS).data == {"i": "zero"}, "patch stored")

    # Update with a stale resourceVersion conflicts.
    stale = core.read_namespaced_config_map("cm-1", NS)
    core.patch_namespaced_config_map("cm-1", NS, {"data": {"i": "one"}})
    stale.data = {"i": "stale"}
    expect_status(409, core.replace_namespaced_config_map, "cm-1", NS, stale)

    # A deployment and its scale subresource; the dynamic client uses legacy
    # discovery (/apis, /apis/apps/v1).
    dep = {"apiVersion": "apps/v1", "kind": "Deployment",
           "metadata": {"name": "web", "namespace": NS},
           "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
                    "template": {"metadata": {"labels": {"app": "web"}},
                                 "spec": {"containers": [{"name": "c", "image": "nginx:1.27"}]}}}}
    deployments = dynamic.DynamicClient(api).resources.get(api_version="apps/v1", kind="Deployment")
    deployments.create(body=dep, namespace=NS)
    apps.patch_namespaced_deployment_scale("web", NS, {"spec": {"replicas": 4}})
    check(apps.read_namespaced_deployment_scale("web", NS).spec.replicas == 4, "scale read back")
    check(deployments.get(name="web", namespace=NS).spec.replicas == 4, "scale changed the spec")

    # Watch from the list's resourceVersion while another thread writes.
    rv = core.list_namespaced_config_map(NS).metadata.resource_version

    def writer():
        time.sleep(0.3)
        core.create_namespaced_config_map(NS, cm("cm-new", {"app": "py"}, {"n": "1"}))
        core.patch_namespaced_config_map("cm-new", NS, {"data": {"n": "2"}})
        core.delete_namespaced_config_map("cm-new", NS)

    t = threading.Thread(target=writer)
    t.start()
    seen = []
    w = watch.Watch()
    start = time.monotonic()
    for ev in w.stream(core.list_namespaced_config_map, NS, resource_version=rv,
                       timeout_seconds=10):
        seen.append((ev["type"], ev["object"].metadata.name, (ev["object"].data or {}).get("n")))
        if ev["type"] == "DELETED":
            w.stop()
    t.join()
    check(seen == [("ADDED", "cm-new", "1"), ("MODIFIED", "cm-new", "2"),
                   ("DELETED", "cm-new", "2")], f"watch events in order: {seen}")
    check(time.monotonic() - start < 8, "watch delivered the events before its timeout")

    # A quiet watch ends by itself at timeoutSeconds.
    start = time.monotonic()
    rv = core.list_namespaced_config_map(NS).metadata.resource_version
    quiet = list(watch.Watch().stream(core.list_namespaced_config_map, NS, resource_version=rv,
                                      timeout_seconds=1))
    check(quiet == [] and time.monotonic() - start < 5, "a quiet watch ends at timeoutSeconds")

    # Deletes: one object, a labelled collection, then the namespace.
    core.delete_namespaced_config_map("cm-2", NS)
    expect_status(404, core.read_namespaced_config_map, "cm-2", NS)
    core.delete_collection_namespaced_config_map(NS, label_selector="app=py")
    check(listed("app=py") == [], "deletecollection by label")
    core.delete_namespace(NS)
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        try:
            core.read_namespace(NS)
        except ApiException as e:
            check(e.status == 404, "namespace gone after delete")
            break
        time.sleep(0.2)
    else:
        raise AssertionError("namespace still there 15 s after delete")
    print("PASS")


if __name__ == "__main__":
    try:
        main()
    except Exception as e:  # noqa: BLE001 - any failure fails the test
        print(f"FAIL: {type(e).__name__}: {e}", file=sys.stderr)
        sys.exit(1)
