#!/usr/bin/env python3
"""bench_admission: what dynamic admission adds to a write, through the real system.

Starts `vkube host` (and, with --tenant, a tenant on it) from this build tree and
creates ConfigMaps over one keep-alive HTTPS connection (--creates of them, one at
a time: median and p95 latency) and from --threads connections at once (creates/s),
in four setups, each after the previous one's objects are gone:

  none        no webhook configuration, no policy
  policy      a ValidatingAdmissionPolicy (two CEL validations) and its binding
  webhooks    a mutating webhook (adds a label) and a validating webhook, served by
              a `vkube workload --webhook-listen` pod (TLS, its Service's endpoint)
  both        the policy and the webhooks

It is a benchmark, not a test: the exit code is 0 unless the setup failed (then it
keeps the temporary directory).

  tools/bench/admission_bench.py [--vkube build/vkube] [--tenant] [--creates 300]
      [--threads 8] [--keep]
"""
import argparse
import base64
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pods_bench import add_common_args, finish, kubectl, pct, start_cluster  # noqa: E402

SERVER_YAML = """apiVersion: v1
kind: Pod
metadata:
  name: hooks
  labels: {app: hooks}
spec:
  containers:
  - name: main
    image: vkube
    args: [workload, --log-lines, "0", --webhook-listen, "0.0.0.0:8443", --webhook-cert-dir, /certs]
    ports: [{containerPort: 8443}]
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
  ports: [{port: 443, targetPort: 8443}]
"""

RULES = ('[{operations: [CREATE], apiGroups: [""], apiVersions: [v1], resources: [configmaps]}]')


def webhooks_yaml(ca):
    def hook(name, path):
        return (f"- name: {name}\n  clientConfig:\n    service: {{name: hooks, namespace: default, "
                f"path: {path}}}\n    caBundle: {ca}\n  rules: {RULES}\n  sideEffects: None\n"
                f"  admissionReviewVersions: [v1]\n"
                f"  objectSelector: {{matchLabels: {{bench: \"yes\"}}}}\n")
    return ("apiVersion: admissionregistration.k8s.io/v1\nkind: MutatingWebhookConfiguration\n"
            "metadata: {name: bench}\nwebhooks:\n" + hook("label.bench.vkube.io", "/label/x/y") +
            "---\napiVersion: admissionregistration.k8s.io/v1\n"
            "kind: ValidatingWebhookConfiguration\nmetadata: {name: bench}\nwebhooks:\n" +
            hook("deny.bench.vkube.io", "/deny-label/forbidden"))


POLICY_YAML = f"""apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {{name: bench}}
spec:
  matchConstraints:
    resourceRules: {RULES}
  validations:
  - expression: "size(object.data) <= 16"
  - expression: "!object.metadata.name.startsWith('tmp-')"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {{name: bench}}
spec:
  policyName: bench
  validationActions: [Deny]
"""


def certificates(workdir):
    def run(*args):
        subprocess.run(list(args), cwd=workdir, check=True, capture_output=True)
    run("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out",
        "ca.crt", "-days", "2", "-subj", "/CN=bench-ca")
    run("openssl", "req", "-newkey", "rsa:2048", "-nodes", "-keyout", "tls.key", "-out",
        "tls.csr", "-subj", "/CN=hooks.default.svc")
    open(os.path.join(workdir, "ext.cnf"), "w").write("subjectAltName=DNS:hooks.default.svc\n")
    run("openssl", "x509", "-req", "-in", "tls.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
        "-CAcreateserial", "-out", "tls.crt", "-days", "2", "-extfile", "ext.cnf")
    return base64.b64encode(open(os.path.join(workdir, "ca.crt"), "rb").read()).decode()


def create(conn, name):
    body = json.dumps({"metadata": {"name": name, "labels": {"bench": "yes"}},
                       "data": {"a": "b"}})
    conn.request("POST", "/api/v1/namespaces/default/configmaps", body,
                 {"Content-Type": "application/json"})
    resp = conn.getresponse()
    data = resp.read()
    if resp.status != 201:
        raise RuntimeError(f"create {name}: {resp.status} {data[:300]!r}")
    return json.loads(data)


def measure(opts, server, setup, check_label):
    conn = server.connect()
    create(conn, f"{setup}-warm")
    times = []
    for i in range(opts.creates):
        start = time.perf_counter()
        obj = create(conn, f"{setup}-{i}")
        times.append((time.perf_counter() - start) * 1000)
        if check_label and obj["metadata"]["labels"].get("x") != "y":
            raise RuntimeError("the mutating webhook's label is missing")
    conn.close()
    per_thread = max(1, opts.creates // opts.threads)
    errors = []

    def worker(t):
        try:
            c = server.connect()
            for i in range(per_thread):
                create(c, f"{setup}-p{t}-{i}")
            c.close()
        except (RuntimeError, OSError) as e:
            errors.append(str(e))
    threads = [threading.Thread(target=worker, args=(t,)) for t in range(opts.threads)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    took = time.perf_counter() - start
    if errors:
        raise RuntimeError(errors[0])
    rate = per_thread * opts.threads / took
    print(f"{setup:9s} create latency median {statistics.median(times):6.2f} ms, "
          f"p95 {pct(times, 95):6.2f} ms; {opts.threads} connections: {rate:7.0f} creates/s")
    kubectl(opts, server, "delete", "configmaps", "-l", "bench=yes", "--wait=false")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_common_args(ap)
    ap.add_argument("--creates", type=int, default=300)
    ap.add_argument("--threads", type=int, default=8)
    opts = ap.parse_args()

    workdir = tempfile.mkdtemp(prefix="bench-admission-")
    servers = []
    ok = False
    try:
        servers, target = start_cluster(opts, workdir, "bench")
        ca = certificates(workdir)
        kubectl(opts, target, "create", "secret", "tls", "hooks-tls",
                "--cert=" + os.path.join(workdir, "tls.crt"),
                "--key=" + os.path.join(workdir, "tls.key"))
        path = os.path.join(workdir, "hooks.yaml")
        open(path, "w").write(SERVER_YAML)
        kubectl(opts, target, "apply", "-f", path)
        kubectl(opts, target, "wait", "--for=condition=Ready", "pod/hooks", "--timeout=60s")
        print(f"vkube host{' + a tenant (measured on the tenant)' if opts.tenant else ''}, "
              f"{os.cpu_count()} cores; ConfigMap creates as JSON over HTTPS")
        measure(opts, target, "none", False)
        policy = os.path.join(workdir, "policy.yaml")
        open(policy, "w").write(POLICY_YAML)
        kubectl(opts, target, "apply", "-f", policy)
        measure(opts, target, "policy", False)
        kubectl(opts, target, "delete", "-f", policy)
        hooks = os.path.join(workdir, "webhooks.yaml")
        open(hooks, "w").write(webhooks_yaml(ca))
        kubectl(opts, target, "apply", "-f", hooks)
        measure(opts, target, "webhooks", True)
        kubectl(opts, target, "apply", "-f", policy)
        measure(opts, target, "both", True)
        ok = True
    except (RuntimeError, OSError, subprocess.SubprocessError) as e:
        print(f"bench_admission: {e}", file=sys.stderr)
    finally:
        rc = finish(servers, workdir, ok, opts.keep)
    return rc

if __name__ == "__main__":
    sys.exit(main())
