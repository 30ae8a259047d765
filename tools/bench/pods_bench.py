#!/usr/bin/env python3
"""bench_pods: pods/log and port-forward through the real system.

Starts `vkube host` (and, with --tenant, a tenant on it) from this build tree,
creates `vkube workload` pods, which the host runs as local processes, and
measures:

  logs      the first line of a follow (`GET .../log?follow=true`): from the
            request to the first line of the body, over a fresh TLS
            connection, --runs times (median, p95; the target is < 50 ms);
            then `kubectl logs -f` from fork to its first printed line, next
            to `kubectl version --client` (the kubectl process alone).
  streams   --streams concurrent follows of a pod that prints a line every
            100 ms, for 5 s: how many got their first line, and the lines
            each received (min, median).
  forward   `kubectl port-forward` to the pod's echo and source ports, over
            WebSocket (kubectl's default) and SPDY: --mib MiB written through
            the echo by one thread while another reads it back (MB/s of
            payload in one direction), and --mib MiB downloaded from the
            source (the target is >= 500 MB/s); next to the same against
            the pod's address directly. Runs are 1.5 s apart (see bench_forward).

It is a benchmark, not a test: a missed target prints MISS, the exit code
stays 0; a setup error exits 1 and keeps the temporary directory.

  tools/bench/pods_bench.py [--vkube build/vkube] [--kubectl PATH] [--tenant]
      [--runs 20] [--streams 100] [--mib 1024] [--keep]
"""
import argparse
import base64
import http.client
import os
import re
import shutil
import signal
import socket
import ssl
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """A vkube process on a free port, its kubeconfig in its data dir."""

    def __init__(self, vkube, workdir, name, args):
        self.dir = os.path.join(workdir, name)
        os.makedirs(self.dir)
        self.port = free_port()
        self.log = open(os.path.join(self.dir, "log"), "w")
        self.proc = subprocess.Popen(
            [vkube] + args + ["--data-dir", self.dir, "--listen", f"127.0.0.1:{self.port}",
                              "--log-level", "warn"],
            stdout=self.log, stderr=subprocess.STDOUT)
        self.kubeconfig = os.path.join(self.dir, "admin.kubeconfig")
        deadline = time.time() + 30
        while time.time() < deadline:
            if os.path.exists(self.kubeconfig) and self.ready():
                return
            if self.proc.poll() is not None:
                break
            time.sleep(0.1)
        raise RuntimeError(f"{name} did not come up; see {self.dir}/log")

    def ready(self):
        try:
            conn = self.connect()
            conn.request("GET", "/readyz")
            return conn.getresponse().status == 200
        except (OSError, ValueError, KeyError):
            return False

    def tls(self):
        if not hasattr(self, "_ctx"):
            text = open(self.kubeconfig).read()

            def field(key):
                return base64.b64decode(re.search(key + r": (\S+)", text).group(1))

            ca, cert, key = (os.path.join(self.dir, n) for n in ("b-ca", "b-cert", "b-key"))
            open(ca, "wb").write(field("certificate-authority-data"))
            open(cert, "wb").write(field("client-certificate-data"))
            open(key, "wb").write(field("client-key-data"))
            ctx = ssl.create_default_context(cafile=ca)
            ctx.load_cert_chain(cert, key)
            self._ctx = ctx
        return self._ctx

    def connect(self, timeout=10):
        return http.client.HTTPSConnection("127.0.0.1", self.port, context=self.tls(),
                                           timeout=timeout)

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def workload(name, args):
    quoted = ", ".join(f'"{a}"' for a in ["workload"] + args)
    return (f"apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\nspec:\n  containers:\n"
            f"  - name: main\n    image: vkube\n    args: [{quoted}]\n---\n")


def kubectl(opts, server, *args, check=True):
    env = dict(os.environ, KUBECONFIG=server.kubeconfig)
    r = subprocess.run([opts.kubectl] + list(args), env=env, capture_output=True, text=True,
                       timeout=120)
    if check and r.returncode != 0:
        raise RuntimeError(f"kubectl {' '.join(args)}: {r.stderr.strip()}")
    return r.stdout


def pct(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]


def verdict(ok):
    return "ok" if ok else "MISS"


def first_line_ms(server, path):
    start = time.perf_counter()
    conn = server.connect()
    conn.request("GET", path)
    resp = conn.getresponse()
    if resp.status != 200:
        raise RuntimeError(f"GET {path}: {resp.status} {resp.read()[:200]!r}")
    line = resp.readline()
    took = (time.perf_counter() - start) * 1000
    conn.close()
    if not line:
        raise RuntimeError(f"GET {path}: no line")
    return took


def process_first_line_ms(cmd, env):
    start = time.perf_counter()
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    p.stdout.readline()
    took = (time.perf_counter() - start) * 1000
    p.kill()
    p.wait()
    return took


def bench_logs(opts, server):
    path = "/api/v1/namespaces/default/pods/logs/log?follow=true"
    first_line_ms(server, path)  # warm
    times = [first_line_ms(server, path) for _ in range(opts.runs)]
    med, p95 = statistics.median(times), pct(times, 95)
    print(f"logs  follow, first line over HTTPS (fresh connection): median {med:.1f} ms, "
          f"p95 {p95:.1f} ms  (target < 50 ms: {verdict(p95 < 50)})")
    env = dict(os.environ, KUBECONFIG=server.kubeconfig,
               KUBECACHEDIR=os.path.join(server.dir, "kube-cache"))
    k = [process_first_line_ms([opts.kubectl, "logs", "-f", "logs"], env)
         for _ in range(max(5, opts.runs // 2))]
    v = []
    for _ in range(max(5, opts.runs // 2)):
        start = time.perf_counter()
        subprocess.run([opts.kubectl, "version", "--client"], env=env, capture_output=True)
        v.append((time.perf_counter() - start) * 1000)
    print(f"logs  kubectl logs -f, fork to first line: median {statistics.median(k):.0f} ms, "
          f"p95 {pct(k, 95):.0f} ms; kubectl version --client alone: median "
          f"{statistics.median(v):.0f} ms")


def bench_streams(opts, server):
    path = "/api/v1/namespaces/default/pods/ticker/log?follow=true&tailLines=1"
    counts = [0] * opts.streams
    firsts = [None] * opts.streams
    errors = []
    stop = time.time() + 5
    start = time.perf_counter()

    def follow(i):
        try:
            conn = server.connect(timeout=10)
            conn.request("GET", path)
            resp = conn.getresponse()
            if resp.status != 200:
                errors.append(f"{resp.status}")
                return
            while time.time() < stop:
                line = resp.readline()
                if not line:
                    break
                if firsts[i] is None:
                    firsts[i] = (time.perf_counter() - start) * 1000
                counts[i] += 1
            conn.close()
        except OSError as e:
            errors.append(str(e))

    threads = [threading.Thread(target=follow, args=(i,)) for i in range(opts.streams)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    got = [f for f in firsts if f is not None]
    held = sum(1 for c in counts if c >= 30)
    print(f"streams {opts.streams} concurrent follows for 5 s (a line every 100 ms): "
          f"{len(got)} got a first line (last after {max(got) if got else 0:.0f} ms), "
          f"{held} received >= 30 lines; lines per stream min {min(counts)}, median "
          f"{statistics.median(counts):.0f}; errors {len(errors)}  "
          f"({verdict(held == opts.streams)})")


def pump(port, mib, host="127.0.0.1"):
    """Writes `mib` MiB to host:port from one thread, reads the echo in
    another; MB/s (10^6 bytes) of payload in one direction."""
    sock = socket.create_connection((host, port), timeout=30)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    chunk = os.urandom(1 << 20)
    total = mib << 20
    received = [0]

    def reader():
        buf = bytearray(1 << 20)
        view = memoryview(buf)
        while received[0] < total:
            n = sock.recv_into(view)
            if n == 0:
                break
            received[0] += n

    start = time.perf_counter()
    t = threading.Thread(target=reader)
    t.start()
    for _ in range(mib):
        sock.sendall(chunk)
    t.join()
    took = time.perf_counter() - start
    sock.close()
    if received[0] != total:
        raise RuntimeError(f"echo returned {received[0]} of {total} bytes")
    return total / took / 1e6


def download(port, mib, host="127.0.0.1"):
    """Reads `mib` MiB from host:port (a source port); MB/s."""
    sock = socket.create_connection((host, port), timeout=30)
    buf = bytearray(1 << 20)
    view = memoryview(buf)
    total, got = mib << 20, 0
    start = time.perf_counter()
    while got < total:
        n = sock.recv_into(view)
        if n == 0:
            raise RuntimeError(f"the source ended after {got} bytes")
        got += n
    took = time.perf_counter() - start
    sock.close()
    return total / took / 1e6


def bench_forward(opts, server, pod_ip):
    direct = pump(9000, opts.mib, host=pod_ip)
    down = download(9001, opts.mib, host=pod_ip)
    print(f"forward direct to the pod ({pod_ip}), no kubectl: echo {direct:.0f} MB/s, "
          f"download {down:.0f} MB/s")
    for wire, env_value in (("WebSocket", "true"), ("SPDY", "false")):
        env = dict(os.environ, KUBECONFIG=server.kubeconfig,
                   KUBECACHEDIR=os.path.join(server.dir, "kube-cache"),
                   KUBECTL_PORT_FORWARD_WEBSOCKETS=env_value)
        p = subprocess.Popen([opts.kubectl, "port-forward", "pod/echo", ":9000", ":9001"],
                             env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                             text=True)
        ports = {}
        while len(ports) < 2:
            line = p.stdout.readline()
            m = re.search(r"127\.0\.0\.1:(\d+) -> (\d+)", line)
            if not line or (not m and "[::1]" not in line):
                p.kill()
                raise RuntimeError(f"kubectl port-forward said {line!r}")
            if m:
                ports[int(m.group(2))] = int(m.group(1))
        pump(ports[9000], 16)  # warm
        # Runs are 1.5 s apart: after kubectl ends a connection, the pod's side has 1 s to
        # finish what it sends (as containerd gives it), and the source sends until then.
        echo, down = [], []
        for _ in range(3):
            time.sleep(1.5)
            echo.append(pump(ports[9000], opts.mib))
        for _ in range(3):
            time.sleep(1.5)
            down.append(download(ports[9001], opts.mib))
        p.kill()
        p.wait()
        print(f"forward kubectl port-forward over {wire}, {opts.mib} MiB: echo (both ways at "
              f"once) {', '.join(f'{r:.0f}' for r in echo)} MB/s; download "
              f"{', '.join(f'{r:.0f}' for r in down)} MB/s (target >= 500: "
              f"{verdict(max(down) >= 500)})")


def add_common_args(ap):
    """--vkube, --kubectl, --tenant and --keep, shared by the Python benchmarks."""
    ap.add_argument("--vkube", default=os.path.join(ROOT, "build", "vkube"))
    default_kubectl = os.path.join(ROOT, ".tools", "bin", "kubectl")
    ap.add_argument("--kubectl", default=default_kubectl if os.path.exists(default_kubectl)
                    else shutil.which("kubectl") or "/usr/bin/kubectl")
    ap.add_argument("--tenant", action="store_true", help="measure through a tenant")
    ap.add_argument("--keep", action="store_true")


def start_cluster(opts, workdir, tenant_name):
    """`vkube host`, and with --tenant a tenant on it: (servers, the one to measure)."""
    host = Server(opts.vkube, workdir, "host", ["host"])
    servers = [host]
    if opts.tenant:
        servers.append(Server(opts.vkube, workdir, "tenant",
                              ["serve", "--name", tenant_name, "--host-kubeconfig",
                               host.kubeconfig]))
    return servers, servers[-1]


def finish(servers, workdir, ok, keep):
    for s in reversed(servers):
        s.stop()
    if ok and not keep:
        shutil.rmtree(workdir, ignore_errors=True)
    else:
        print(f"kept {workdir}", file=sys.stderr)
    return 0 if ok else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_common_args(ap)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--streams", type=int, default=100)
    ap.add_argument("--mib", type=int, default=1024)
    opts = ap.parse_args()

    workdir = tempfile.mkdtemp(prefix="bench-pods-")
    servers = []
    ok = False
    try:
        servers, target = start_cluster(opts, workdir, "bench")
        host = servers[0]
        pods = (workload("logs", ["--log-lines", "10"]) +
                workload("ticker", ["--log-lines", "1000000", "--log-interval-ms", "100"]) +
                workload("echo", ["--log-lines", "0", "--echo-listen", "0.0.0.0:9000",
                                  "--source-listen", "0.0.0.0:9001"]))
        path = os.path.join(workdir, "pods.yaml")
        open(path, "w").write(pods)
        kubectl(opts, target, "create", "-f", path, "--validate=false")
        kubectl(opts, target, "wait", "--for=condition=Ready", "pod/logs", "pod/ticker",
                "pod/echo", "--timeout=60s")
        # The echo pod's address on this machine, from the host's side.
        pod_ip = kubectl(opts, host, "get", "pods", "-A", "-o",
                         "jsonpath={range .items[*]}{.metadata.name} {.status.podIP}\n{end}")
        pod_ip = next(l.split()[1] for l in pod_ip.splitlines()
                      if l.split()[0].startswith("echo"))
        print(f"vkube host{' + a tenant (measured through the tenant)' if opts.tenant else ''}"
              f", {os.cpu_count()} cores, kubectl {opts.kubectl}")
        bench_logs(opts, target)
        bench_streams(opts, target)
        bench_forward(opts, target, pod_ip)
        ok = True
    except (RuntimeError, OSError, subprocess.SubprocessError, StopIteration) as e:
        print(f"bench_pods: {e}", file=sys.stderr)
    finally:
        rc = finish(servers, workdir, ok, opts.keep)
    return rc


if __name__ == "__main__":
    sys.exit(main())
