// The type registry and the Kubernetes protobuf codec built on it.
#include <catch2/catch.hpp>

#include "vkube/schema/protobuf.h"
#include "vkube/schema/schema.h"

namespace vkube::schema {
namespace {

// A few wire helpers, written out here so the tests do not trust the
// encoder they test.
std::string varint(uint64_t v) {
  std::string out;
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
  return out;
}
std::string len_field(int number, const std::string& bytes) {
  return varint(static_cast<uint64_t>(number) << 3 | 2) + varint(bytes.size()) + bytes;
}
std::string varint_field(int number, uint64_t v) {
  return varint(static_cast<uint64_t>(number) << 3) + varint(v);
}

const Message& kind(const char* group, const char* version, const char* k) {
  const Message* m = Registry::get().find_kind(group, version, k);
  REQUIRE(m != nullptr);
  return *m;
}

TEST_CASE("the registry describes the built-in kinds with their merge keys", "[schema]") {
  const Message& pod = kind("", "v1", "Pod");
  CHECK(pod.full_name == "k8s.io.api.core.v1.Pod");
  CHECK(pod.openapi_name() == "io.k8s.api.core.v1.Pod");
  const Field* spec = pod.field("spec");
  REQUIRE(spec);
  REQUIRE(spec->message);
  const Field* containers = spec->message->field("containers");
  REQUIRE(containers);
  CHECK(containers->repeated);
  CHECK(containers->patch_strategy == "merge");
  CHECK(containers->patch_merge_key == "name");
  const Field* ports = containers->message->field("ports");
  REQUIRE(ports);
  CHECK(ports->patch_merge_key == "containerPort");
  CHECK(ports->list_map_keys == std::vector<std::string>{"containerPort", "protocol"});

  const Message& deploy = kind("apps", "v1", "Deployment");
  const Field* replicas = deploy.field("spec")->message->field("replicas");
  REQUIRE(replicas);
  CHECK(replicas->nullable);
  CHECK(Registry::get().find_kind("apps", "v1", "DeploymentList") != nullptr);
  CHECK(Registry::get().find_kind("apps", "v1", "DeleteOptions") != nullptr);
  CHECK(Registry::get().find_kind("apps", "v1", "Nope") == nullptr);

  // Every served kind of the API server has a description.
  for (auto [g, v, k] : std::vector<std::tuple<const char*, const char*, const char*>>{
           {"", "v1", "ConfigMap"}, {"", "v1", "Secret"}, {"", "v1", "Service"},
           {"", "v1", "Namespace"}, {"", "v1", "ServiceAccount"}, {"batch", "v1", "Job"},
           {"rbac.authorization.k8s.io", "v1", "ClusterRole"},
           {"networking.k8s.io", "v1", "Ingress"},
           {"apiextensions.k8s.io", "v1", "CustomResourceDefinition"}}) {
    INFO(g << "/" << v << " " << k);
    CHECK(Registry::get().find_kind(g, v, k) != nullptr);
  }
}

TEST_CASE("gogo zero values mean unset, pointer fields keep their zero", "[schema]") {
  // ObjectMeta as gogo writes it: name set, namespace and generateName empty.
  std::string meta = len_field(1, "web") + len_field(2, "") + len_field(3, "");
  // DeploymentSpec: replicas = 0 (a pointer), minReadySeconds = 0 (not one).
  std::string spec = varint_field(1, 0) + varint_field(5, 0);
  std::string deployment = len_field(1, meta) + len_field(2, spec) + len_field(3, "");
  auto obj = decode(kind("apps", "v1", "Deployment"), deployment);
  REQUIRE(obj.is_ok());
  CHECK((*obj)["metadata"] == json{{"name", "web"}});
  CHECK((*obj)["spec"] == json{{"replicas", 0}});
  CHECK((*obj)["status"] == json::object());
}

TEST_CASE("a protobuf body decodes to the JSON object kubectl meant", "[schema]") {
  json cm = {{"apiVersion", "v1"},
             {"kind", "ConfigMap"},
             {"metadata", {{"name", "cfg"}, {"namespace", "ns"}, {"labels", {{"a", "b"}, {"empty", ""}}}}},
             {"data", {{"k", "v"}}},
             {"binaryData", {{"bin", "AAEC"}}}};
  auto body = encode_object(cm);
  REQUIRE(body.is_ok());
  CHECK(body->starts_with(std::string_view("k8s\0", 4)));
  auto back = decode_object(*body);
  REQUIRE(back.is_ok());
  CHECK(*back == cm);

  json secret = {{"apiVersion", "v1"},
                 {"kind", "Secret"},
                 {"metadata", {{"name", "s"}}},
                 {"type", "Opaque"},
                 {"data", {{"password", "c2VjcmV0"}}},
                 {"immutable", false}};
  auto sb = encode_object(secret);
  REQUIRE(sb.is_ok());
  auto sback = decode_object(*sb);
  REQUIRE(sback.is_ok());
  CHECK(*sback == secret);
}

TEST_CASE("special messages take their JSON forms", "[schema]") {
  json pod = {
      {"apiVersion", "v1"},
      {"kind", "Pod"},
      {"metadata", {{"name", "p"}, {"creationTimestamp", "2024-05-06T07:08:09Z"}}},
      {"spec",
       {{"containers",
         {{{"name", "c"},
           {"image", "nginx"},
           {"resources", {{"limits", {{"cpu", "500m"}, {"nvidia.com/gpu", "1"}}}}},
           {"ports", {{{"containerPort", 80}, {"protocol", "TCP"}}}},
           {"readinessProbe", {{"httpGet", {{"path", "/", }, {"port", "http"}}}}},
           {"livenessProbe", {{"tcpSocket", {{"port", 8080}}}, {"periodSeconds", 5}}},
           {"envFrom", {{{"configMapRef", {{"name", "app-config"}}}}}}}}},
        {"volumes",
         {{{"name", "scratch"}, {"emptyDir", json::object()}},
          {{"name", "cfg"}, {"configMap", {{"name", "app-config"}, {"defaultMode", 420}}}}}},
        {"terminationGracePeriodSeconds", 0}}},
      {"status", json::object()}};
  auto body = encode_object(pod);
  REQUIRE(body.is_ok());
  auto back = decode_object(*body);
  REQUIRE(back.is_ok());
  CHECK(*back == pod);
}

TEST_CASE("bad protobuf bodies are clear errors", "[schema]") {
  CHECK(decode_object("{\"kind\":\"Pod\"}").status().code() == Code::kBadRequest);
  std::string cm = *encode_object({{"apiVersion", "v1"}, {"kind", "ConfigMap"}, {"metadata", {{"name", "x"}}}});
  auto truncated = decode_object(cm.substr(0, cm.size() - 3));
  CHECK(truncated.status().code() == Code::kBadRequest);
  std::string unknown = write_envelope("v1", "Gizmo", "");
  auto r = decode_object(unknown);
  REQUIRE_FALSE(r.is_ok());
  CHECK_THAT(r.status().message(), Catch::Contains("Gizmo"));
  // A field with the wrong wire type.
  std::string bad = write_envelope("v1", "ConfigMap", varint_field(1, 7));
  CHECK(decode_object(bad).status().code() == Code::kBadRequest);
}

TEST_CASE("durations print as Go prints them", "[schema]") {
  CHECK(format_duration(0) == "0s");
  CHECK(format_duration(1500000) == "1.5ms");
  CHECK(format_duration(90LL * 1000000000) == "1m30s");
  CHECK(format_duration(3600LL * 1000000000) == "1h0m0s");
  CHECK(format_duration(-2LL * 1000000000) == "-2s");
  int64_t d = 0;
  REQUIRE(parse_duration("1h2m3.5s", d));
  CHECK(d == 3723500000000LL);
  CHECK_FALSE(parse_duration("5 parsecs", d));
}

// Found by tests/fuzz/fuzz_duration.cpp: "-.m2s" threw std::invalid_argument
// out of the decoder (std::stold of "."), and values past the int64 range
// were converted unchecked. Go's ParseDuration refuses both.
TEST_CASE("durations parse as Go's ParseDuration, refusing what it refuses", "[schema]") {
  int64_t d = 0;
  CHECK_FALSE(parse_duration("-.m2s", d));
  CHECK_FALSE(parse_duration(".s", d));
  CHECK_FALSE(parse_duration("1.2.3s", d));
  CHECK_FALSE(parse_duration("1", d));
  CHECK_FALSE(parse_duration("9223372036854775808ns", d));
  CHECK_FALSE(parse_duration("2562048h", d));
  CHECK_FALSE(parse_duration("2562047h47m16.854775808s", d));
  REQUIRE(parse_duration("-2562047h47m16.854775808s", d));
  CHECK(d == INT64_MIN);
  REQUIRE(parse_duration("2562047h47m16.854775807s", d));
  CHECK(d == INT64_MAX);
  REQUIRE(parse_duration("1.s", d));
  CHECK(d == 1000000000);
  REQUIRE(parse_duration(".5µs", d));
  CHECK(d == 500);
  REQUIRE(parse_duration("+1h0.000000000000000000001s", d));
  CHECK(d == 3600LL * 1000000000);
  CHECK(format_duration(INT64_MIN) == "-2562047h47m16.854775808s");
}

// Found by tests/fuzz/fuzz_protobuf.cpp: negative nanoseconds printed as
// "1970-01-01T00:00:00.-00395Z", and a seconds count past year 9999 as a
// date gmtime never filled in. Go's time.Unix carries the nanoseconds; its
// JSON encoding refuses years past 9999.
TEST_CASE("protobuf times carry their nanoseconds and stay within years 0-9999", "[schema]") {
  const Message* event = Registry::get().find_kind("events.k8s.io", "v1", "Event");
  REQUIRE(event != nullptr);
  auto at = [&](int64_t secs, int64_t nanos) {
    std::string micro = varint_field(1, static_cast<uint64_t>(secs)) +
                        varint_field(2, static_cast<uint64_t>(nanos));
    return decode(*event, len_field(2, micro));  // eventTime, a MicroTime
  };
  auto before_epoch = at(0, -395000);
  REQUIRE(before_epoch.is_ok());
  CHECK((*before_epoch)["eventTime"] == "1969-12-31T23:59:59.999605Z");
  auto carried = at(10, 1500000000);
  REQUIRE(carried.is_ok());
  CHECK((*carried)["eventTime"] == "1970-01-01T00:00:11.500000Z");
  auto early = at(-62135596800, 0);  // year 1
  REQUIRE(early.is_ok());
  CHECK((*early)["eventTime"] == "0001-01-01T00:00:00.000000Z");
  CHECK(at(253402300800, 0).status().code() == Code::kBadRequest);  // year 10000
  CHECK(at(INT64_MIN, 0).status().code() == Code::kBadRequest);
}

}  // namespace
}  // namespace vkube::schema

namespace vkube::schema {
namespace {

// Damaged bodies (every truncation, and random byte flips of a Deployment)
// are answered with a value or an error, never a crash or a hang.
TEST_CASE("damaged protobuf bodies never crash the decoder", "[schema]") {
  json d = json::parse(R"({"apiVersion":"apps/v1","kind":"Deployment",
    "metadata":{"name":"web","labels":{"a":"b"}},
    "spec":{"replicas":2,"selector":{"matchLabels":{"a":"b"}},
      "template":{"metadata":{"labels":{"a":"b"}},
        "spec":{"containers":[{"name":"c","image":"i","ports":[{"containerPort":80}],
          "resources":{"limits":{"cpu":"1"}}}]}}}})");
  std::string body = *encode_object(d);
  size_t decoded = 0;
  for (size_t n = 0; n < body.size(); ++n)
    if (decode_object(body.substr(0, n)).is_ok()) ++decoded;
  CHECK(decoded < body.size());
  uint64_t seed = 0x9e3779b97f4a7c15ULL;
  for (int round = 0; round < 2000; ++round) {
    std::string b = body;
    for (int flips = 0; flips < 3; ++flips) {
      seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
      b[4 + seed % (b.size() - 4)] = static_cast<char>(seed >> 32);
    }
    auto r = decode_object(b);
    if (r.is_ok()) CHECK(r->is_object());
    else CHECK(r.status().code() == Code::kBadRequest);
  }
}

}  // namespace
}  // namespace vkube::schema

namespace vkube::schema {
namespace {

TEST_CASE("envelopes nested in RawExtensions are bounded", "[schema]") {
  // A WatchEvent-like chain: Status.details... is not needed; an
  // autoscaling Scale has no RawExtension, so use meta/v1 WatchEvent when
  // present, else any message whose field holds a RawExtension.
  const Message* we = Registry::get().find("k8s.io.apimachinery.pkg.apis.meta.v1.WatchEvent");
  REQUIRE(we != nullptr);
  const Field* object = we->field("object");
  REQUIRE(object);
  std::string inner = write_envelope("v1", "ConfigMap", "");
  for (int i = 0; i < 5000; ++i) {
    std::string raw_ext = len_field(1, inner);  // RawExtension.raw
    std::string event = len_field(object->number, raw_ext);
    inner = write_envelope("v1", "WatchEvent", event);
  }
  auto r = decode_object(inner);
  REQUIRE_FALSE(r.is_ok());
  CHECK_THAT(r.status().message(), Catch::Contains("nests too deeply"));
}

}  // namespace
}  // namespace vkube::schema
