# The Python client's exec and port-forward (kubernetes.stream) against a
# tenant: argv[1] is a running `vkube workload` pod, argv[2] one that serves
# an echo port on 9000 (--echo-listen). KUBECONFIG names the tenant. Exits
# non-zero on the first check that fails; prints PASS at the end.
import sys

from kubernetes import client, config
from kubernetes.stream import portforward, stream

pod, echo_pod = sys.argv[1], sys.argv[2]
config.load_kube_config()
v1 = client.CoreV1Api()


def check(what, got, want):
    if got != want:
        print(f"FAIL {what}: got {got!r}, want {want!r}")
        sys.exit(1)


# Output only: stdout and stderr come back together.
out = stream(v1.connect_get_namespaced_pod_exec, pod, "default",
             command=["sh", "-c", "echo to-stdout; echo to-stderr >&2"],
             stdout=True, stderr=True, stdin=False, tty=False)
check("exec output", sorted(out.split()), ["to-stderr", "to-stdout"])

# stdin in, separate channels, and the exit code from the error channel.
resp = stream(v1.connect_get_namespaced_pod_exec, pod, "default",
              command=["sh", "-c", "read x; echo got $x; echo oops >&2; exit 3"],
              stdout=True, stderr=True, stdin=True, tty=False, _preload_content=False)
resp.write_stdin("abc\n")
resp.run_forever(timeout=10)
check("exec stdout", resp.read_stdout(), "got abc\n")
check("exec stderr", resp.read_stderr(), "oops\n")
check("exec exit code", resp.returncode, 3)

# A port-forward (the v4.channel protocol): 1 MiB out and the same back.
pf = portforward(v1.connect_get_namespaced_pod_portforward, echo_pod, "default", ports="9000")
sock = pf.socket(9000)
sock.setblocking(True)
payload = bytes(range(256)) * 4096
sock.sendall(payload)
got = b""
while len(got) < len(payload):
    chunk = sock.recv(65536)
    if not chunk:
        break
    got += chunk
check("port-forward echo", got == payload, True)
sock.close()
print("PASS")
