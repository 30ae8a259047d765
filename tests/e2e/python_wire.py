#!/usr/bin/python3
"""What the Python kubernetes client reads as text from a vkube tenant: YAML
request and response bodies (Content-Type and Accept application/yaml), a
Status error in YAML, and discovery documents in kube's field order with a
final newline and storageVersionHash. Exits non-zero on the first failed
check. Run by wire_shape_test.cpp."""

import json
import sys

import yaml
from kubernetes import client, config, dynamic
from kubernetes.client.rest import ApiException

NS = "default"
CMS = f"/api/v1/namespaces/{NS}/configmaps"


def check(cond, what):
    if not cond:
        raise AssertionError(what)
    print("ok:", what)


def raw(api, method, path, body=None, content_type=None, accept=None):
    headers = {}
    if content_type:
        headers["Content-Type"] = content_type
    if accept:
        headers["Accept"] = accept
    try:
        resp, status, hdrs = api.call_api(path, method, header_params=headers, body=body,
                                          auth_settings=["BearerToken"], _preload_content=False)
        return status, hdrs.get("Content-Type", ""), resp.data.decode()
    except ApiException as e:
        return e.status, (e.headers or {}).get("Content-Type", ""), e.body.decode() if isinstance(
            e.body, bytes) else e.body


def main():
    config.load_kube_config()
    api = client.ApiClient()

    manifest = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: wire\ndata:\n  a: \"1\"\n"
    status, ctype, body = raw(api, "POST", CMS, manifest, "application/yaml", "application/yaml")
    check(status == 201, f"POST YAML -> 201 (got {status}: {body})")
    check(ctype == "application/yaml", f"answered in YAML (got {ctype})")
    check(body.startswith("apiVersion: v1\ndata:\n  a: \"1\"\nkind: ConfigMap\n"), body)

    status, ctype, body = raw(api, "GET", CMS + "/wire", accept="application/yaml")
    obj = yaml.safe_load(body)
    check(status == 200 and obj["data"] == {"a": "1"} and obj["metadata"]["name"] == "wire",
          "GET in YAML reads back")
    obj["data"]["a"] = "2"
    status, _, body = raw(api, "PUT", CMS + "/wire", yaml.safe_dump(obj), "application/yaml")
    check(status == 200 and json.loads(body)["data"] == {"a": "2"}, f"PUT YAML -> 200 ({body})")

    status, ctype, body = raw(api, "GET", CMS + "/nope", accept="application/yaml")
    err = yaml.safe_load(body)
    check(status == 404 and ctype == "application/yaml" and err["kind"] == "Status" and
          err["reason"] == "NotFound", f"a Status error in YAML ({body})")

    status, _, body = raw(api, "GET", "/api/v1", accept="application/json")
    check(body.endswith("}\n"), "discovery ends with a newline")
    doc = json.loads(body, object_pairs_hook=lambda pairs: pairs)
    check([k for k, _ in doc] == ["kind", "apiVersion", "groupVersion", "resources"],
          f"APIResourceList keys in kube's order: {[k for k, _ in doc]}")
    pods = [dict(r) for r in dict(doc)["resources"] if dict(r)["name"] == "pods"][0]
    check(pods.get("storageVersionHash") == "xPOwRZ+Yhw8=", f"pods storageVersionHash {pods}")

    status, _, body = raw(api, "GET", CMS + "/nope", accept="application/json")
    keys = [k for k, _ in json.loads(body, object_pairs_hook=lambda pairs: pairs)]
    check(keys == ["kind", "apiVersion", "metadata", "status", "message", "reason", "details",
                   "code"], f"Status keys in kube's order: {keys}")

    # Objects and lists end with a newline, as kube's encoder ends them.
    # (the client serialises a JSON body itself)
    status, _, body = raw(api, "POST", CMS, {"metadata": {"name": "nl"}}, "application/json",
                          "application/json")
    check(status == 201 and body.endswith("}\n"), f"a created object ends with a newline ({status})")
    status, _, body = raw(api, "GET", CMS, accept="application/json")
    check(status == 200 and body.endswith("}\n"), "a list ends with a newline")

    # A watch as Table: each event's Table in kube's field order.
    table = "application/json;as=Table;v=v1;g=meta.k8s.io"
    status, _, body = raw(api, "GET", CMS + "?watch=1&timeoutSeconds=1&fieldSelector=metadata.name%3Dnl",
                          accept=table)
    first = body.split("\n")[0]
    check(status == 200 and first.startswith(
        '{"type":"ADDED","object":{"kind":"Table","apiVersion":"meta.k8s.io/v1","metadata":'),
        f"a watch event's Table in kube's order: {first[:120]}")

    # The client's own discovery reads the documents.
    dyn = dynamic.DynamicClient(api)
    cms = dyn.resources.get(api_version="v1", kind="ConfigMap")
    check(any(i.metadata.name == "wire" for i in cms.get(namespace=NS).items),
          "the dynamic client lists through discovery")
    print("PASS")


if __name__ == "__main__":
    try:
        main()
    except Exception as e:  # noqa: BLE001 - report any failure as the exit status
        print("FAIL:", e)
        sys.exit(1)
