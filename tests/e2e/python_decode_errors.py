#!/usr/bin/python3
"""The Python kubernetes client sends bodies of the wrong JSON type (as a dict,
so the client does not check them) and must read kube's 400 BadRequest and
kube's words back from a vkube tenant. Exits non-zero on the first failed
check. Run by decode_errors_test.cpp."""

import json
import sys

from kubernetes import client, config
from kubernetes.client.rest import ApiException

NS = "default"


def refused(call):
    try:
        call()
    except ApiException as e:
        body = e.body.decode() if isinstance(e.body, bytes) else e.body
        return e.status, json.loads(body)
    raise AssertionError("the request was accepted")


def check(cond, what):
    if not cond:
        raise AssertionError(what)
    print("ok:", what)


def main():
    config.load_kube_config()
    core = client.CoreV1Api()
    apps = client.AppsV1Api()

    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}, "data": {"a": 1}}
    status, body = refused(lambda: core.create_namespaced_config_map(NS, cm))
    check(status == 400 and body["reason"] == "BadRequest", f"ConfigMap -> 400 ({status}: {body})")
    want = ('ConfigMap in version "v1" cannot be handled as a ConfigMap: json: cannot unmarshal '
            'number into Go struct field ConfigMap.data of type string')
    check(body["message"] == want, body["message"])

    labels = {"app": "d"}
    deploy = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
              "spec": {"replicas": "3", "selector": {"matchLabels": labels},
                       "template": {"metadata": {"labels": labels},
                                    "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}
    status, body = refused(lambda: apps.create_namespaced_deployment(NS, deploy))
    check(status == 400, f"Deployment -> 400 ({status}: {body})")
    want = ('Deployment in version "v1" cannot be handled as a Deployment: json: cannot unmarshal '
            'string into Go struct field DeploymentSpec.spec.replicas of type int32')
    check(body["message"] == want, body["message"])

    # A value of the right type that fails validation: 422, named by GroupKind.
    deploy["spec"]["replicas"] = -1
    status, body = refused(lambda: apps.create_namespaced_deployment(NS, deploy))
    check(status == 422, f"replicas -1 -> 422 ({status})")
    check(body["message"].startswith('Deployment.apps "d" is invalid: spec.replicas: '),
          body["message"])
    print("PASS")


if __name__ == "__main__":
    try:
        main()
    except AssertionError as e:
        print("FAIL:", e)
        sys.exit(1)
