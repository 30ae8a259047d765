// Bad input as kubectl users meet it: 422 Invalid, 409 AlreadyExists and
// Conflict, 404 NotFound. Each request's status code is read from kubectl's
// -v=6 log line ("POST https://... 422 Unprocessable Entity in 3 milliseconds").
#include "fixture.h"

namespace vkube::e2e {
namespace {

const char* kSetup = R"(
apiVersion: v1
kind: Namespace
metadata: {name: errs}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: taken, namespace: errs}
data: {v: "1"}
)";

TEST_CASE("invalid objects are refused with 422 and each field's cause", "[e2e]") {
  Cluster c;
  c.setup(kSetup);
  const std::string bad_name = c.file("bad-name.yaml", R"(
apiVersion: v1
kind: ConfigMap
metadata: {name: Bad_Name, namespace: errs}
)");
  Result r = c.kubectl({"create", "--validate=false", "-f", bad_name, "-v=6"});
  CHECK_THAT(r, FailedWith("The ConfigMap \"Bad_Name\" is invalid: metadata.name: Invalid value: "
                           "\"Bad_Name\": a lowercase RFC 1123 subdomain must consist of"));
  CHECK_THAT(r.err, Catch::Contains(" 422 Unprocessable Entity "));

  const std::string bad_pod = c.file("bad-pod.yaml", R"(
apiVersion: v1
kind: Pod
metadata: {name: bad-pod, namespace: errs}
spec:
  restartPolicy: Sometimes
  containers:
  - {name: Bad_C}
)");
  Result pod = c.kubectl({"create", "--validate=false", "-f", bad_pod});
  CHECK_THAT(pod, FailedWith("The Pod \"bad-pod\" is invalid: \n"));
  CHECK_THAT(pod.err,
             Catch::Contains("* spec.containers[0].name: Invalid value: \"Bad_C\"") &&
                 Catch::Contains("* spec.containers[0].image: Required value") &&
                 Catch::Contains("* spec.restartPolicy: Unsupported value: \"Sometimes\""));
  CHECK_THAT(c.kubectl({"get", "pod", "bad-pod", "-n", "errs"}), FailedWith("NotFound"));

  // A namespace name must be a DNS-1123 label (no dots).
  const std::string bad_ns = c.file("bad-ns.yaml", R"(
apiVersion: v1
kind: Namespace
metadata: {name: a.b}
)");
  CHECK_THAT(c.kubectl({"create", "--validate=false", "-f", bad_ns}),
             FailedWith("The Namespace \"a.b\" is invalid: metadata.name: Invalid value: \"a.b\": "
                        "must not contain dots"));

  // An invalid update is refused too, and the stored object stays.
  CHECK_THAT(c.kubectl({"patch", "configmap", "taken", "-n", "errs", "--type=merge", "-p",
                        R"({"metadata":{"labels":{"bad key!":"x"}}})"}),
             FailedWith("is invalid: metadata.labels: Invalid value: \"bad key!\""));
  CHECK(c.get_json({"configmap", "taken", "-n", "errs"})["metadata"]
            .value("labels", nlohmann::json())
            .is_null());
  // Immutable fields: a deployment's selector.
  c.setup(R"(
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: errs}
spec:
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - {name: nginx, image: "nginx:1.27"}
)");
  CHECK_THAT(c.kubectl({"patch", "deployment", "web", "-n", "errs", "--type=merge", "-p",
                        R"({"spec":{"selector":{"matchLabels":{"app":"other"}},)"
                        R"("template":{"metadata":{"labels":{"app":"other"}}}}})"}),
             FailedWith("The Deployment \"web\" is invalid: spec.selector: Invalid value: ") &&
                 FailedWith("field is immutable"));
  CHECK(c.get_json({"deployment", "web", "-n", "errs"})["spec"]["selector"]["matchLabels"]["app"] ==
        "web");
}

TEST_CASE("JSON patches past kube's limits are refused with kube's message", "[e2e]") {
  Cluster c;
  c.setup(kSetup);
  // 10,001 operations: 413 RequestEntityTooLarge, and nothing changes.
  std::string ops = "[";
  for (int i = 0; i <= 10000; ++i)
    ops += std::string(i ? "," : "") + R"({"op":"add","path":"/data/k)" + std::to_string(i % 10) +
           R"(","value":"x"})";
  const std::string many = c.file("many-ops.json", ops + "]");
  Result r = c.kubectl(
      {"patch", "configmap", "taken", "-n", "errs", "--type=json", "--patch-file", many, "-v=6"});
  CHECK_THAT(r, FailedWith("The allowed maximum operations in a JSON patch is 10000, got 10001"));
  CHECK_THAT(r.err, Catch::Contains(" 413 Request Entity Too Large "));
  // Copies doubling a value: refused past 3 MiB of copies, not built.
  std::string copies = R"([{"op":"add","path":"/data/big","value":")" + std::string(2048, 'x') +
                       R"("})";
  for (int i = 0; i < 12; ++i)
    copies += R"(,{"op":"copy","from":"/data","path":"/data/c)" + std::to_string(i) + R"("})";
  Result copied = c.kubectl({"patch", "configmap", "taken", "-n", "errs", "--type=json",
                             "--patch-file", c.file("copies.json", copies + "]")});
  CHECK_THAT(copied, FailedWith("the accumulated size increase of copy is"));
  CHECK(c.get_json({"configmap", "taken", "-n", "errs"})["data"] == nlohmann::json({{"v", "1"}}));
}

TEST_CASE("conflicts are 409: AlreadyExists on create and Conflict on a stale update", "[e2e]") {
  Cluster c;
  c.setup(kSetup);
  const std::string again = c.file("again.yaml", R"(
apiVersion: v1
kind: ConfigMap
metadata: {name: taken, namespace: errs}
data: {v: "2"}
)");
  Result exists = c.kubectl({"create", "--validate=false", "-f", again, "-v=6"});
  CHECK_THAT(exists, FailedWith("Error from server (AlreadyExists): error when creating \"" +
                                again + "\": configmaps \"taken\" already exists"));
  CHECK_THAT(exists.err, Catch::Contains(" 409 Conflict "));
  CHECK(c.get_json({"configmap", "taken", "-n", "errs"})["data"]["v"] == "1");

  // replace with the resourceVersion of an older read.
  nlohmann::json old = c.get_json({"configmap", "taken", "-n", "errs"});
  REQUIRE_THAT(c.kubectl({"label", "configmap", "taken", "-n", "errs", "moved=on"}), Succeeded());
  old["data"]["v"] = "stale";
  const std::string stale = c.file("stale.json", old.dump());
  Result conflict = c.kubectl({"replace", "--validate=false", "-f", stale, "-v=6"});
  CHECK_THAT(conflict,
             FailedWith("Error from server (Conflict): error when replacing \"" + stale +
                        "\": Operation cannot be fulfilled on configmaps \"taken\": the object has "
                        "been modified; please apply your changes to the latest version and try "
                        "again"));
  CHECK_THAT(conflict.err, Catch::Contains(" 409 Conflict "));
  CHECK(c.get_json({"configmap", "taken", "-n", "errs"})["data"]["v"] == "1");

  // A patch carrying a stale resourceVersion is a precondition too.
  CHECK_THAT(c.kubectl({"patch", "configmap", "taken", "-n", "errs", "--type=merge", "-p",
                        R"({"metadata":{"resourceVersion":")" +
                            old["metadata"]["resourceVersion"].get<std::string>() +
                            R"("},"data":{"v":"stale"}})"}),
             FailedWith("Error from server (Conflict)"));
  CHECK(c.get_json({"configmap", "taken", "-n", "errs"})["data"]["v"] == "1");
}

TEST_CASE("missing objects and namespaces and kinds are NotFound", "[e2e]") {
  Cluster c;
  c.setup(kSetup);
  Result get = c.kubectl({"get", "configmap", "nope", "-n", "errs", "-v=6"});
  CHECK_THAT(get, FailedWith("Error from server (NotFound): configmaps \"nope\" not found"));
  CHECK_THAT(get.err, Catch::Contains(" 404 Not Found "));
  CHECK_THAT(c.kubectl({"delete", "secret", "nope", "-n", "errs"}),
             FailedWith("Error from server (NotFound): secrets \"nope\" not found"));
  CHECK_THAT(c.kubectl({"get", "namespace", "nope"}),
             FailedWith("Error from server (NotFound): namespaces \"nope\" not found"));
  CHECK_THAT(c.kubectl({"get", "deployment", "nope", "-n", "errs"}),
             FailedWith("Error from server (NotFound): deployments.apps \"nope\" not found"));
  CHECK_THAT(c.kubectl({"get", "--raw", "/api/v1/namespaces/errs/nothings"}),
             FailedWith("Error from server (NotFound)"));

  // Creating into a namespace that does not exist.
  const std::string orphan = c.file("orphan.yaml", R"(
apiVersion: v1
kind: ConfigMap
metadata: {name: orphan, namespace: ghost}
)");
  CHECK_THAT(c.kubectl({"create", "--validate=false", "-f", orphan}),
             FailedWith("Error from server (NotFound): error when creating \"" + orphan +
                        "\": namespaces \"ghost\" not found"));
}

TEST_CASE("the API port speaks TLS only, and takes JSON, YAML and protobuf bodies only", "[e2e]") {
  Cluster c;
  c.setup(kSetup);
  const std::string plain = "http://" + c.url().substr(std::string("https://").size());
  // As Go's net/http answers, credentials or not; health probes still may.
  Result cleartext = c.run({"/usr/bin/curl", "-sS", "-i", "--max-time", "5", "-H",
                            "Authorization: Bearer x", plain + "/api/v1/namespaces"});
  CHECK(cleartext.out ==
        "HTTP/1.0 400 Bad Request\r\n\r\nClient sent an HTTP request to an HTTPS server.\n");
  CHECK(c.run({"/usr/bin/curl", "-sS", "--max-time", "5", plain + "/readyz"}).out == "ok");

  const std::string pki = c.dir() + "/data/pki/";
  auto curl = [&](const std::string& method, const std::string& path, const std::string& type,
                  const std::string& file) {
    return c.run({"/usr/bin/curl", "-sS", "--max-time", "10", "--cacert", pki + "ca.crt", "--cert",
                  pki + "admin.crt", "--key", pki + "admin.key", "-X", method, "-H",
                  "Content-Type: " + type, "--data-binary", "@" + file, "-w", " %{http_code}",
                  c.url() + path});
  };
  const std::string cm = c.file("cm.yaml", "apiVersion: v1\nkind: ConfigMap\n"
                                           "metadata: {name: yaml-body}\ndata: {a: \"1\"}\n");
  CHECK_THAT(curl("POST", "/api/v1/namespaces/errs/configmaps", "application/yaml", cm).out,
             Catch::EndsWith(" 201"));
  CHECK(c.get_json({"configmap", "yaml-body", "-n", "errs"})["data"]["a"] == "1");
  CHECK_THAT(curl("POST", "/api/v1/namespaces/errs/configmaps", "text/plain", cm).out,
             Catch::Contains("accepted media types include: application/json, application/yaml, "
                             "application/vnd.kubernetes.protobuf") &&
                 Catch::EndsWith(" 415"));
  // An alias bomb of a few hundred bytes, applied: refused before it expands.
  std::string bomb = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: bomb}\ndata:\n"
                     "  a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n";
  for (char level = 'b'; level <= 'i'; ++level) {
    std::string prev(1, static_cast<char>(level - 1));
    bomb += std::string("  ") + level + ": &" + level + " [";
    for (int i = 0; i < 8; ++i) bomb += (i ? ",*" : "*") + prev;
    bomb += "]\n";
  }
  Result applied = curl("PATCH", "/api/v1/namespaces/errs/configmaps/bomb?fieldManager=e2e",
                        "application/apply-patch+yaml", c.file("bomb.yaml", bomb));
  CHECK_THAT(applied.out, Catch::Contains("yaml: document contains excessive aliasing") &&
                              Catch::EndsWith(" 400"));
  CHECK_THAT(c.kubectl({"get", "configmap", "bomb", "-n", "errs"}), FailedWith("NotFound"));
}

}  // namespace
}  // namespace vkube::e2e
