#!/usr/bin/env python3
"""Writes the seed corpora of tests/fuzz/corpus/<harness>/: a few valid inputs
each, small on purpose (libFuzzer and the smoke driver mutate from them).
Run from anywhere; rewrites the seed files it owns (seed-*), keeps others."""
import os
import struct
import zlib

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")


def put(harness, seeds):
    d = os.path.join(ROOT, harness)
    os.makedirs(d, exist_ok=True)
    for i, s in enumerate(seeds):
        if isinstance(s, str):
            s = s.encode()
        with open(os.path.join(d, "seed-%02d" % i), "wb") as f:
            f.write(s)


POD = ('{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"default",'
       '"labels":{"app":"web"}},"spec":{"containers":[{"name":"c","image":"nginx",'
       '"ports":[{"containerPort":80}],"env":[{"name":"A","value":"1"}]}]}}')
DEPLOY = ('{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d"},"spec":'
          '{"replicas":2,"selector":{"matchLabels":{"app":"web"}},"template":{"metadata":'
          '{"labels":{"app":"web"}},"spec":{"containers":[{"name":"c","image":"nginx"}]}}}}')

put("json", [POD, DEPLOY, '{"a":1,"a":2,"b":[1.5e3,-0,true,null,"\\u00e9\\n"]}', '[]',
             '{"metadata":{"name":"x","name":"y"}}', '"s"'])

put("yaml", ["apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  labels: {app: web}\n"
             "spec:\n  containers:\n  - name: c\n    image: nginx\n    ports:\n"
             "    - containerPort: 80\n",
             "a: &x [1, 2]\nb: *x\nc: yes\nd: 0x1F\ne: 1_000\nf: ~\ng: !!str 12\n",
             "- 1.5\n- .inf\n- 'quoted'\n- \"esc\\u00e9\"\n- |\n  block\n- >\n  folded\n",
             POD, "---\na: 1\n---\nb: 2\n", "key: {nested: [a, {b: c}]}\n"])


def varint(n):
    out = b""
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])


def field(num, payload):
    if isinstance(payload, str):
        payload = payload.encode()
    if isinstance(payload, int):
        return varint(num << 3) + varint(payload)
    return varint(num << 3 | 2) + varint(len(payload)) + payload


def envelope(api_version, kind, raw):
    unknown = field(1, field(1, api_version) + field(2, kind)) + field(2, raw)
    return b"k8s\x00" + unknown


labels = field(11, field(1, "app") + field(2, "web"))
meta = field(1, "p") + field(3, "default") + labels
container = field(1, "c") + field(2, "nginx")
pod = field(1, meta) + field(2, field(2, container))
cm = field(1, field(1, "cm")) + field(2, field(1, "k") + field(2, "v"))
put("protobuf", [envelope("v1", "Pod", pod), envelope("v1", "ConfigMap", cm),
                 envelope("apps/v1", "Deployment", field(1, field(1, "d"))),
                 b"\x00" + pod, b"\x07" + meta, b"\x13" + field(2, 3) + field(1, meta)])

put("duration", ["1h30m", "1.5s", "-2m3.000000004s", "300ms", "1us", "0", "2562047h47m16.854775807s"])

put("selector", ["app=web,tier!=db", "env in (prod, staging),!legacy", "x notin (a),y",
                 "n>3,m<10", "metadata.name=x,spec.nodeName!=,status.phase==Running",
                 "a\\,b=c\\=d", '{"matchLabels":{"app":"web"},"matchExpressions":'
                 '[{"key":"tier","operator":"In","values":["a","b"]}]}'])

put("quantity", ["100m", "1Gi", "1.5e3", "2", "-3.5Ki", "9223372036854775807", "0.001n", "1E18",
                 "123456789012345678901234567890"])

JSONPATCH = ('[{"op":"add","path":"/metadata/labels/x","value":"y"},'
             '{"op":"copy","from":"/spec","path":"/metadata/annotations"},'
             '{"op":"test","path":"/kind","value":"Pod"},{"op":"remove","path":"/spec/containers/0"}]')
SMP = ('{"spec":{"containers":[{"name":"c","image":"busybox"},{"name":"d","image":"x"}],'
       '"$setElementOrder/containers":[{"name":"d"},{"name":"c"}]},'
       '"metadata":{"labels":{"app":null},"$patch":"merge"}}')
put("patch", [b"\x00" + POD.encode() + b"\x00" + JSONPATCH.encode(),
              b"\x01" + POD.encode() + b"\x00" + b'{"metadata":{"labels":{"app":null,"b":"c"}}}',
              b"\x02" + POD.encode() + b"\x00" + SMP.encode(),
              b"\x05" + DEPLOY.encode() + b"\x00" +
              b'{"spec":{"template":{"spec":{"containers":[{"name":"c","$patch":"delete"}]}}}}',
              b"\x08" + b'{"a":{"b":[1,2]}}' + b"\x00" +
              b'[{"op":"move","from":"/a/b","path":"/c"}]'])

put("apply", [b"\x00apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  containers:\n"
              b"  - name: c\n    image: nginx\n",
              b"\x00apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  labels: {a: b}\n\x00" +
              POD.encode(),
              b"\x01" + DEPLOY.encode() + b"\x00" + DEPLOY.encode(),
              b"\x12spec:\n  replicas: 3\n\x00" + DEPLOY.encode(),
              b"\x02apiVersion: example.com/v1\nkind: Foo\nmetadata: {name: f}\nspec: {x: [1]}\n"])

put("cel", ["self.spec.a < 10 && self.spec.s.startsWith('a')",
            "self.spec.list.all(x, x > 0) && size(self.spec.labels) == 1",
            "self.spec.list.map(x, x * 2).filter(y, y > 2).exists(z, z == 6)",
            "quantity(self.spec.q).isGreaterThan(quantity('1Mi'))",
            "self.spec.s.matches('^[a-z]+$') ? 'yes'.upperAscii() : string(self.spec.a)",
            "timestamp(self.spec.t) + duration('1h') > timestamp('2023-01-01T00:00:00Z')",
            "object.spec.?labels.orValue({}).size() >= 0",
            "authorizer.group('').resource('pods').check('get').allowed()",
            "'%s-%d'.format([object.metadata.name, 3])",
            "isIP('10.0.0.1') && cidr('10.0.0.0/8').containsIP(ip('10.1.2.3'))",
            "url('https://a:1/p?q=1').getQuery()",
            "self.spec.labels.transformMapEntry(k, v, {v: k}) == {'y': 'x'}",
            "[1, 2, 3].sum() + [1.0].max() == 7.0"])

put("regex", [b"^[a-z]([-a-z0-9]*[a-z0-9])?$\x00my-name", b"(a+)+$\x00aaaaaaaaaaaaaaaaaaaaaaab",
              b"(?i)h(?P<x>el+)o\\b\x00say HELLO world", b"\\d{2,4}|[[:alpha:]]\x00ab 1234 5",
              b"(?s).*?x\\Q.*\\E\x00line\nx.*", b"a{0}b*?$|^\x00"])

put("query", ["/api/v1/namespaces/default/pods?labelSelector=app%3Dweb&limit=500&watch=true",
              "/apis/apps/v1/namespaces/ns/deployments/d/scale?fieldManager=kubectl",
              "/api/v1/pods?fieldSelector=spec.nodeName%3Dn1&continue=abc&resourceVersion=0",
              "http://host:6443/apis/example.com/v1/foos/f/status?dryRun=All&a=b+c&a=%zz",
              "/api/v1/namespaces/x/pods/p/exec?command=sh&command=-c&stdin=1",
              "/healthz?verbose", "/openapi/v3/apis/apps/v1"])

put("http", ["GET /api/v1/pods HTTP/1.1\r\nHost: x\r\n\r\n",
             "POST /api/v1/namespaces/d/pods HTTP/1.1\r\nHost: x\r\nContent-Type: "
             "application/json\r\nContent-Length: 2\r\n\r\n{}",
             "PUT /a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
             "4\r\nabcd\r\n0\r\n\r\nGET /b HTTP/1.1\r\nHost: x\r\n\r\n",
             "POST /x HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\nabc",
             "GET http://h/p?q HTTP/1.0\r\nConnection: keep-alive\r\n\r\n",
             "GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999\r\n\r\n"])


def dns_name(name):
    out = b""
    for label in name.split("."):
        if label:
            out += bytes([len(label)]) + label.encode()
    return out + b"\x00"


def dns_query(qid, name, qtype, opt=False):
    head = struct.pack(">HHHHHH", qid, 0x0100, 1, 0, 0, 1 if opt else 0)
    q = dns_name(name) + struct.pack(">HH", qtype, 1)
    if opt:
        q += b"\x00" + struct.pack(">HHIH", 41, 1232, 0, 0)
    return head + q


answer = (struct.pack(">HHHHHH", 7, 0x8180, 1, 1, 0, 0) + dns_name("example.com") +
          struct.pack(">HH", 1, 1) + b"\xc0\x0c" + struct.pack(">HHIH", 1, 1, 60, 4) +
          bytes([93, 184, 216, 34]))
put("dns", [dns_query(1, "web.default.svc.cluster.local", 1),
            dns_query(2, "_http._tcp.web.default.svc.cluster.local", 33, opt=True),
            dns_query(3, "ext.default.svc.cluster.local", 1) + b"\x00" + b"example.com",
            dns_query(4, "10-244-1-2.default.pod.cluster.local", 28),
            dns_query(5, "example.com", 1) + b"\x00" + answer,
            dns_query(6, "db-0.db.default.svc.cluster.local", 255, opt=True)])

put("cron", ["*/5 * * * *", "0 9-17 * * MON-FRI", "@hourly", "@every 1h30m",
             "CRON_TZ=America/New_York 30 2 * * *", b"0 0 29 2 *\x00\x02",
             b"15,45 */2 1-7 JAN,jul ?\x00\x05", "TZ=UTC 0 0 1 1 *"])


def spdy_dictionary():
    words = ["options", "head", "post", "put", "delete", "trace", "accept", "accept-charset",
             "accept-encoding", "accept-language", "accept-ranges", "age", "allow",
             "authorization", "cache-control", "connection", "content-base", "content-encoding",
             "content-language", "content-length", "content-location", "content-md5",
             "content-range", "content-type", "date", "etag", "expect", "expires", "from", "host",
             "if-match", "if-modified-since", "if-none-match", "if-range", "if-unmodified-since",
             "last-modified", "location", "max-forwards", "pragma", "proxy-authenticate",
             "proxy-authorization", "range", "referer", "retry-after", "server", "te", "trailer",
             "transfer-encoding", "upgrade", "user-agent", "vary", "via", "warning",
             "www-authenticate", "method", "get", "status", "200 OK", "version", "HTTP/1.1", "url",
             "public", "set-cookie", "keep-alive", "origin"]
    d = b"".join(struct.pack(">I", len(w)) + w.encode() for w in words)
    d += (b"100101201202205206300302303304305306307402405406407408409410411412413414415416417502504"
          b"505203 Non-Authoritative Information204 No Content301 Moved Permanently400 Bad "
          b"Request401 Unauthorized403 Forbidden404 Not Found500 Internal Server Error501 Not "
          b"Implemented503 Service UnavailableJan Feb Mar Apr May Jun Jul Aug Sept Oct Nov Dec "
          b"00:00:00 Mon, Tue, Wed, Thu, Fri, Sat, Sun, GMTchunked,text/html,image/png,image/jpg,"
          b"image/gif,application/xml,application/xhtml+xml,text/plain,text/javascript,"
          b"publicprivatemax-age=gzip,deflate,sdchcharset=utf-8charset=iso-8859-1,utf-,*,enq=0.")
    return d


def spdy_session(streams):
    z = zlib.compressobj(zdict=spdy_dictionary())
    out = b""
    for sid, headers, data in streams:
        block = struct.pack(">I", len(headers))
        for k, v in headers.items():
            block += struct.pack(">I", len(k)) + k.encode() + struct.pack(">I", len(v)) + v.encode()
        comp = z.compress(block) + z.flush(zlib.Z_SYNC_FLUSH)
        body = struct.pack(">II", sid, 0) + b"\x00\x00" + comp
        out += struct.pack(">HHB", 0x8003, 1, 0) + len(body).to_bytes(3, "big") + body
        if data:
            out += struct.pack(">IB", sid, 1) + len(data).to_bytes(3, "big") + data
    return out


ping = struct.pack(">HHB", 0x8003, 6, 0) + (4).to_bytes(3, "big") + struct.pack(">I", 1)
rst = struct.pack(">HHB", 0x8003, 3, 0) + (8).to_bytes(3, "big") + struct.pack(">II", 1, 5)
put("spdy", [spdy_session([(1, {"streamtype": "error"}, b""), (3, {"streamtype": "stdin"}, b"ls\n")]),
             spdy_session([(1, {"streamtype": "data", "port": "80", "requestid": "0"}, b"GET /")]) +
             ping + rst,
             spdy_session([(5, {"streamtype": "resize"}, b'{"Width":80,"Height":24}')])])


def ws_frame(opcode, payload, fin=True, mask=b"\x01\x02\x03\x04"):
    b0 = (0x80 if fin else 0) | opcode
    n = len(payload)
    if n < 126:
        head = bytes([b0, 0x80 | n])
    elif n < 65536:
        head = bytes([b0, 0x80 | 126]) + struct.pack(">H", n)
    else:
        head = bytes([b0, 0x80 | 127]) + struct.pack(">Q", n)
    masked = bytes(c ^ mask[i % 4] for i, c in enumerate(payload))
    return head + mask + masked


put("websocket", [ws_frame(2, b"\x00ls -l\n") + ws_frame(8, b"\x03\xe8"),
                  ws_frame(1, b"hel", fin=False) + ws_frame(0, b"lo") + ws_frame(9, b"p"),
                  ws_frame(2, b"\x04" + b'{"width":80,"height":24}') + ws_frame(10, b""),
                  ws_frame(2, b"x" * 300)])
