# An HTTPS server on 127.0.0.1 for aggregation_test.cpp, standing in for two things kube-apiserver
# calls: an aggregated API server for wardle.example.com/v1alpha1 (flunders, answered with the
# front-proxy user it was told about), and a CRD conversion webhook at /convert (v1 spec.hostPort
# "h:p" <-> v2 spec.host and spec.port). Usage: aggregation_server.py CERT KEY LOG; prints
# "listening PORT" once it accepts; every request is appended to LOG as one JSON line.
import json
import ssl
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

CERT, KEY, LOG = sys.argv[1], sys.argv[2], sys.argv[3]
GV = "wardle.example.com/v1alpha1"
RESOURCES = {
    "kind": "APIResourceList", "apiVersion": "v1", "groupVersion": GV,
    "resources": [{"name": "flunders", "singularName": "flunder", "namespaced": True,
                   "kind": "Flunder", "verbs": ["get", "list"], "shortNames": ["fl"]}],
}


def flunder(name, ns, user):
    return {"apiVersion": GV, "kind": "Flunder",
            "metadata": {"name": name, "namespace": ns,
                         "creationTimestamp": "2026-01-01T00:00:00Z"},
            "spec": {"owner": user}}


def convert(obj, desired):
    obj = json.loads(json.dumps(obj))
    spec = obj.setdefault("spec", {})
    if desired.endswith("/v2") and "hostPort" in spec:
        host, _, port = spec.pop("hostPort").partition(":")
        spec["host"], spec["port"] = host, port
    elif desired.endswith("/v1") and "host" in spec:
        spec["hostPort"] = spec.pop("host") + ":" + spec.pop("port", "")
    obj["apiVersion"] = desired
    return obj


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def record(self, body):
        with open(LOG, "a") as f:
            f.write(json.dumps({"method": self.command, "path": self.path,
                                "user": self.headers.get("X-Remote-User"),
                                "groups": self.headers.get_all("X-Remote-Group") or [],
                                "authorization": self.headers.get("Authorization"),
                                "body": body}) + "\n")

    def answer(self, code, obj):
        data = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        self.record(None)
        path = self.path.split("?")[0]
        user = self.headers.get("X-Remote-User", "")
        parts = path.strip("/").split("/")
        if path == "/apis/" + GV:
            return self.answer(200, RESOURCES)
        # /apis/wardle.example.com/v1alpha1/namespaces/NS/flunders[/NAME]
        if len(parts) in (6, 7) and "/".join(parts[1:3]) == GV and parts[3] == "namespaces" \
                and parts[5] == "flunders":
            ns = parts[4]
            if len(parts) == 7:
                return self.answer(200, flunder(parts[6], ns, user))
            items = [flunder("first", ns, user), flunder("second", ns, user)]
            if "as=Table" in self.headers.get("Accept", ""):
                return self.answer(200, {
                    "kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": {},
                    "columnDefinitions": [
                        {"name": "Name", "type": "string", "format": "name"},
                        {"name": "Owner", "type": "string", "format": ""}],
                    "rows": [{"cells": [i["metadata"]["name"], user],
                              "object": {"kind": "PartialObjectMetadata",
                                         "apiVersion": "meta.k8s.io/v1",
                                         "metadata": i["metadata"]}} for i in items]})
            return self.answer(200, {"apiVersion": GV, "kind": "FlunderList",
                                     "metadata": {}, "items": items})
        self.answer(404, {"kind": "Status", "apiVersion": "v1", "status": "Failure",
                          "message": "not found", "reason": "NotFound", "code": 404})

    def do_POST(self):
        length = int(self.headers.get("Content-Length", "0"))
        review = json.loads(self.rfile.read(length) or b"{}")
        self.record(review)
        if self.path.split("?")[0] != "/convert":
            return self.answer(404, {})
        req = review["request"]
        desired = req["desiredAPIVersion"]
        if any(o.get("metadata", {}).get("labels", {}).get("fail") == "yes"
               for o in req["objects"]):
            result = {"status": "Failure", "message": "refusing to convert a failing object"}
            return self.answer(200, {"apiVersion": review["apiVersion"], "kind": "ConversionReview",
                                     "response": {"uid": req["uid"], "result": result,
                                                  "convertedObjects": []}})
        converted = [convert(o, desired) for o in req["objects"]]
        for o in converted:  # a webhook that breaks the rules: renames what it converts
            if o.get("metadata", {}).get("labels", {}).get("rename") == "yes":
                o["metadata"]["name"] += "-x"
        self.answer(200, {"apiVersion": review["apiVersion"], "kind": "ConversionReview",
                          "response": {"uid": req["uid"], "result": {"status": "Success"},
                                       "convertedObjects": converted}})


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
context.load_cert_chain(CERT, KEY)
server.socket = context.wrap_socket(server.socket, server_side=True)
print("listening", server.server_address[1], flush=True)
server.serve_forever()
