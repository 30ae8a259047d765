// CEL validation rules of CustomResourceDefinitions: expressions parse and evaluate as cel-go
// evaluates them, a failing x-kubernetes-validations rule reaches the user as kube-apiserver's
// field error, transition rules see the correlated old value, and a CRD whose rules do not
// compile is told why.
#include <catch2/catch.hpp>

#include <chrono>
#include <string>
#include <vector>

#include "cel_rules.h"

namespace vkube::apiserver::crd::cel {
namespace {

using nlohmann::json;

EvalResult eval(const std::string& expr, const json& self = json::object(),
                const json* old = nullptr, const json* schema = nullptr) {
  std::string error;
  auto program = compile(expr, &error);
  INFO(expr << ": " << error);
  REQUIRE(program != nullptr);
  EvalOptions options;
  options.schema = schema;
  return evaluate(*program, self, old, options);
}

json value_of(const std::string& expr, const json& self = json::object()) {
  EvalResult r = eval(expr, self);
  INFO(expr << " -> " << r.error);
  REQUIRE(r.ok);
  return r.value;
}

std::string error_of(const std::string& expr, const json& self = json::object()) {
  EvalResult r = eval(expr, self);
  INFO(expr << " -> " << r.value.dump());
  REQUIRE_FALSE(r.ok);
  return r.error;
}

std::string compile_error(const std::string& expr) {
  std::string error;
  auto program = compile(expr, &error);
  INFO(expr);
  REQUIRE(program == nullptr);
  return error;
}

std::vector<std::string> messages(const json& schema, const json& obj, const json* old = nullptr) {
  FieldErrors errs;
  validate_rules(schema, obj, old, errs);
  std::vector<std::string> out;
  for (const auto& e : errs) out.push_back(e.to_string());
  return out;
}

json object_schema(json properties, json rules = json::array()) {
  json s = {{"type", "object"}, {"properties", std::move(properties)}};
  if (!rules.empty()) s["x-kubernetes-validations"] = std::move(rules);
  return s;
}

TEST_CASE("CEL expressions evaluate as cel-go evaluates them", "[apiserver][crd]") {
  json self = {{"name", "web-1"},
               {"replicas", 3},
               {"ratio", 0.5},
               {"tags", {"a", "b", "c"}},
               {"labels", {{"app", "web"}, {"tier", "front"}}},
               {"ports", {{{"name", "http"}, {"port", 80}}, {{"name", "https"}, {"port", 443}}}}};
  struct Case {
    std::string expr;
    json want;
  };
  const std::vector<Case> cases = {
      {"1 + 2 * 3 - 4 / 2 % 3", 5},
      {"-9223372036854775808", INT64_MIN},
      {"7u / 2u", 3u},
      {"0x1F + 1", 32},
      {"1.5 * 2.0", 3.0},
      {"'a' + \"b\" + '''c''' + r'\\d'", "abc\\d"},
      {"'\\x41\\u00e9\\101\\n'",
       "A\xC3\xA9"
       "A\n"},
      {"size('héllo') == 5 && size(b'\\xff\\x00') == 2", true},
      {"1 == 1.0 && 1u == 1 && 2 > 1.5 && 1u < 2 && -1 < 1u", true},
      {"[1, 2] == [1, 2] && {'a': 1} == {'a': 1} && [1] != [1, 2]", true},
      {"1 == 'a'", false},
      {"self.replicas > 2 ? 'many' : 'few'", "many"},
      {"has(self.name) && !has(self.missing)", true},
      {"self.tags[1] + self.labels['app'] + self.labels.tier", "bwebfront"},
      {"'b' in self.tags && 'app' in self.labels && !(5 in [1, 2])", true},
      {"self.tags.all(t, t.size() == 1) && self.tags.exists(t, t == 'c')", true},
      {"self.tags.exists_one(t, t > 'a')", false},
      {"self.ports.map(p, p.port)", {80, 443}},
      {"self.ports.map(p, p.port > 100, p.name)", {"https"}},
      {"self.ports.filter(p, p.name.startsWith('http')).size()", 2},
      {"self.labels.all(k, k.size() > 2)", true},
      {"[[1, 2], [3]].map(l, l.map(x, x * 10))", {{10, 20}, {30}}},
      {"self.name.matches('^[a-z]+-[0-9]$') && !self.name.matches('^web$')", true},
      {"self.name.contains('b-') && self.name.endsWith('-1')", true},
      {"int('42') + int(2.9) + int(7u)", 51},
      {"uint(3) + uint('4')", 7u},
      {"double(1) + double('2.5')", 3.5},
      {"string(1.5) + '|' + string(1e6) + '|' + string(123456.0) + '|' + string(true)",
       "1.5|1e+06|123456|true"},
      {"type(1) == int && type('') == string && type(self.tags) == list", true},
      {"bool('true') && !bool('0')", true},
      {"' Hello '.trim().lowerAscii() + 'x'.upperAscii()", "helloX"},
      {"'a,b,,c'.split(',')", {"a", "b", "", "c"}},
      {"'a,b,c'.split(',', 2)", {"a", "b,c"}},
      {"['x', 'y'].join('-') + ['z'].join()", "x-yz"},
      {"'hello'.indexOf('l') * 10 + 'hello'.lastIndexOf('l')", 23},
      {"'héllo'.indexOf('llo') + 'abc'.indexOf('')", 2},
      {"'aaa'.replace('a', 'b', 2) + 'xy'.replace('', '-')", "bba-x-y-"},
      {"'héllo'.substring(1, 3) + 'abc'.substring(2) + 'héllo'.charAt(1)", "élcé"},
      {"[3, 1, 2].min() * 100 + [3, 1, 2].max() * 10 + [1, 2, 3].sum()", 136},
      {"[1, 2, 2].isSorted() && !['b', 'a'].isSorted() && [].sum() == 0", true},
      {"[1, 2, 3, 2].indexOf(2) * 10 + [1, 2, 3, 2].lastIndexOf(2)", 13},
      {"'abc123def45'.find('[0-9]+')", "123"},
      {"'abc123def45'.findAll('[0-9]+')", {"123", "45"}},
      {"sets.contains([1, 2, 3], [2]) && sets.intersects([1], [1, 5]) && "
       "sets.equivalent([1, 2], [2, 1, 1])",
       true},
      {"{'k': [1, {'n': null}]}", {{"k", {1, {{"n", nullptr}}}}}},
      {"self.x__dash__y", 1},
  };
  for (const auto& c : cases) {
    json input = self;
    input["x-y"] = 1;
    EvalResult r = eval(c.expr, input);
    INFO(c.expr << " -> " << r.error);
    REQUIRE(r.ok);
    CHECK(r.value == c.want);
  }
}

TEST_CASE("CEL runtime errors carry cel-go's wording", "[apiserver][crd]") {
  json self = {{"spec", {{"replicas", 3}}}, {"list", {1, 2}}};
  CHECK(error_of("self.spec.missing > 1", self) == "no such key: missing");
  CHECK(error_of("self.list[5]", self) == "index '5' out of range in list size '2'");
  CHECK(error_of("{'a': 1}['b']") == "no such key: b");
  CHECK(error_of("1 / 0") == "division by zero");
  CHECK(error_of("1 % 0") == "modulus by zero");
  CHECK(error_of("9223372036854775807 + 1") == "integer overflow");
  CHECK(error_of("-(-9223372036854775808)") == "integer overflow");
  CHECK(error_of("0u - 1u") == "unsigned integer overflow");
  CHECK(error_of("1 + 1.0") == "no such overload");
  CHECK(error_of("'a' < 1") == "no such overload");
  CHECK(error_of("int('x')") == "strconv.ParseInt: parsing \"x\": invalid syntax");
  CHECK(error_of("int(1e19)") == "integer overflow");
  CHECK(error_of("'abc'.substring(2, 1)") == "invalid substring range. start: 2, end: 1");
  CHECK(error_of("'abc'.charAt(4)") == "index out of range: 4");
  CHECK(error_of("[].max()") == "max called on empty list");
  CHECK(error_of("'x'.matches(self.spec.missing)", self) == "no such key: missing");
  CHECK(error_of("'x'.matches('(' + 'a')").find("error parsing regexp: missing closing )") == 0);
}

TEST_CASE("CEL optional values: .?, [?], optional.*, orValue, or, hasValue, value",
          "[apiserver][crd]") {
  json self = {{"metadata", {{"labels", {{"tier", "prod"}}}}},
               {"spec", {{"ports", {80, 443}}, {"empty", ""}}}};
  CHECK(value_of("self.metadata.?labels.?tier.orValue('none')", self) == "prod");
  CHECK(value_of("self.metadata.?annotations.?tier.orValue('none')", self) == "none");
  // A selection on an optional is optional too: a missing key further on is absence.
  CHECK(value_of("self.?status.phase.orValue('Pending')", self) == "Pending");
  CHECK(value_of("self.metadata.labels[?'tier'].hasValue()", self) == true);
  CHECK(value_of("self.metadata.labels[?'app'].hasValue()", self) == false);
  CHECK(value_of("self.spec.ports[?1].value()", self) == 443);
  CHECK(value_of("self.spec.ports[?5].orValue(0)", self) == 0);
  CHECK(value_of("self.?spec.ports[1].value()", self) == 443);
  CHECK(value_of("optional.of(1).value() + optional.none().orValue(2)") == 3);
  CHECK(value_of("optional.none().or(optional.of('b')).value()") == "b");
  CHECK(value_of("optional.of('a').or(optional.of('b')).value()") == "a");
  CHECK(value_of("optional.ofNonZeroValue(self.spec.empty).hasValue()", self) == false);
  CHECK(value_of("optional.ofNonZeroValue([0]).hasValue()") == true);
  CHECK(value_of("optional.of(1) == optional.of(1) && optional.none() == optional.none()") == true);
  CHECK(value_of("optional.of(1) != optional.of(2)") == true);
  // Optional list elements and map entries are there only with a value.
  CHECK(value_of("[1, ?optional.none(), ?optional.of(3)]") == json({1, 3}));
  CHECK(value_of("{'a': 1, ?'b': optional.none(), ?'c': self.metadata.labels[?'tier']}", self) ==
        json({{"a", 1}, {"c", "prod"}}));
  // orValue and or evaluate their argument only when needed.
  CHECK(value_of("optional.of(1).orValue(1 / 0)") == 1);
  CHECK(error_of("optional.none().value()") == "optional.none() dereference");
  CHECK(error_of("optional.none().orValue(1 / 0)") == "division by zero");
  CHECK(error_of("self.spec.ports[?'x']", self) == "unsupported index type 'string' in list");
  CHECK(error_of("[?1]") == "no such overload");
  CHECK(error_of("1.hasValue()") == "no such overload");
}

TEST_CASE("CEL quantities compare, add and convert as kube's library does", "[apiserver][crd]") {
  json self = {{"memory", "1536Mi"}, {"gpu", "500m"}, {"cpu", 2}};
  CHECK(value_of("quantity(self.memory).isGreaterThan(quantity('1Gi'))", self) == true);
  CHECK(value_of("quantity(self.memory).isLessThan(quantity('1.5G'))", self) == false);
  CHECK(value_of("quantity(self.gpu).compareTo(quantity('0.5'))", self) == 0);
  CHECK(value_of("quantity('1') == quantity('1000m')") == true);
  CHECK(value_of("quantity('1Ki') != quantity('1k')") == true);
  CHECK(value_of("quantity(self.gpu).isInteger()", self) == false);
  CHECK(value_of("quantity('2Gi').asInteger()") == 2147483648);
  CHECK(value_of("quantity(self.gpu).asApproximateFloat()", self) == 0.5);
  CHECK(value_of("quantity('-3').sign()") == -1);
  CHECK(value_of("quantity(self.gpu).add(quantity('1500m')).asInteger()", self) == 2);
  CHECK(value_of("quantity('5').sub(3).asInteger()") == 2);
  CHECK(value_of("isQuantity('1.5Gi') && !isQuantity('1.5 Gi') && !isQuantity('Gi')") == true);
  CHECK(value_of("type(quantity('1')) == type(quantity('2'))") == true);
  CHECK(value_of("quantity('250m')") == "250m");
  CHECK(error_of("quantity('12 apples')") ==
        "quantities must match the regular expression "
        "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'");
  CHECK(error_of("quantity(self.gpu).asInteger()", self) == "cannot convert value to integer");
  CHECK(error_of("quantity(string(self.cpu)).isLessThan(2)", self) == "no such overload");
  // docs/admission.md's GPU cap, over a pod spec.
  const std::string cap =
      "self.containers.all(c, quantity(c.resources.?limits[?'nvidia.com/gpu'].orValue('0'))"
      ".compareTo(quantity('2')) <= 0)";
  json pod = {{"containers",
               {{{"name", "a"}, {"resources", {{"limits", {{"nvidia.com/gpu", "2"}}}}}},
                {{"name", "b"}, {"resources", json::object()}}}}};
  CHECK(value_of(cap, pod) == true);
  pod["containers"][1]["resources"]["limits"]["nvidia.com/gpu"] = "3";
  CHECK(value_of(cap, pod) == false);
}

TEST_CASE("CEL format and strings.quote write values as cel-go's strings extension does",
          "[apiserver][crd]") {
  json self = {{"name", "web"},
               {"replicas", 3},
               {"ratio", 0.25},
               {"tags", {"a", "b"}},
               {"labels", {{"b", "2"}, {"a", "1"}}}};
  CHECK(value_of("'%s has %d replicas'.format([self.name, self.replicas])", self) ==
        "web has 3 replicas");
  CHECK(value_of("'%.2f / %f / %e'.format([self.ratio, 1.5, 1234.5])", self) ==
        "0.25 / 1.500000 / 1.234500e+03");
  CHECK(value_of("'%s %s %s'.format([self.tags, self.labels, null])", self) ==
        "[\"a\", \"b\"] {\"a\":\"1\", \"b\":\"2\"} null");
  CHECK(value_of("'%s|%s|%s'.format([[1, 2.5, true], 1.5, type(1)])") ==
        "[1, 2.500000, true]|1.5|int");
  CHECK(value_of("'%b %o %x %X %x'.format([5, 8, 255, 255, 'hi'])") == "101 10 ff FF 6869");
  CHECK(value_of("'%d%%'.format([50])") == "50%");
  CHECK(value_of("strings.quote('say \"hi\"\\n')") == "\"say \\\"hi\\\"\\n\"");
  CHECK(error_of("'%d'.format(['x'])") ==
        "error during formatting: decimal clause can only be used on integers, was given string");
  CHECK(error_of("'%s %s'.format(['x'])") == "index 1 out of range");
  CHECK(error_of("'%q'.format(['x'])") ==
        "could not parse formatting clause: unrecognized formatting clause \"q\"");
  CHECK(error_of("'%f'.format([1])") ==
        "error during formatting: fixed-point clause can only be used on doubles, was given int");
}

TEST_CASE("CEL IP and CIDR values parse and test as kube's libraries do", "[apiserver][crd]") {
  CHECK(value_of("isIP('10.0.0.1') && isIP('2001:db8::1') && !isIP('10.0.0.01') && "
                 "!isIP('fe80::1%eth0') && !isIP('::ffff:1.2.3.4') && !isIP('x')") == true);
  CHECK(value_of("ip('10.0.0.1').family() == 4 && ip('::1').family() == 6") == true);
  CHECK(value_of("ip('::1').isLoopback() && ip('127.1.2.3').isLoopback()") == true);
  CHECK(value_of("ip('0.0.0.0').isUnspecified() && ip('::').isUnspecified()") == true);
  CHECK(value_of("ip('169.254.1.1').isLinkLocalUnicast() && ip('fe80::1').isLinkLocalUnicast()") ==
        true);
  CHECK(value_of(
            "ip('224.0.0.251').isLinkLocalMulticast() && ip('ff02::fb').isLinkLocalMulticast()") ==
        true);
  CHECK(value_of("ip('10.1.2.3').isGlobalUnicast() && !ip('255.255.255.255').isGlobalUnicast()") ==
        true);
  CHECK(value_of("ip('2001:db8:0:0::1') == ip('2001:db8::1')") == true);
  CHECK(value_of("string(ip('2001:DB8::1'))") == "2001:db8::1");
  CHECK(value_of("ip.isCanonical('2001:db8::1') && !ip.isCanonical('2001:DB8::1')") == true);
  CHECK(value_of("cidr('10.0.0.0/8').containsIP(ip('10.20.30.40'))") == true);
  CHECK(value_of("cidr('10.0.0.0/8').containsIP('11.0.0.1')") == false);
  CHECK(value_of("cidr('10.0.0.0/8').containsCIDR('10.1.0.0/16')") == true);
  CHECK(value_of("cidr('10.1.0.0/16').containsCIDR(cidr('10.0.0.0/8'))") == false);
  CHECK(value_of("cidr('192.168.1.5/24').ip() == ip('192.168.1.5')") == true);
  CHECK(value_of("string(cidr('192.168.1.5/24').masked())") == "192.168.1.0/24");
  CHECK(value_of("cidr('2001:db8::/32').prefixLength()") == 32);
  CHECK(value_of("isCIDR('10.0.0.0/8') && !isCIDR('10.0.0.0/33') && !isCIDR('10.0.0.0')") == true);
  CHECK(value_of("cidr('10.0.0.0/8').containsIP('2001:db8::1')") == false);
  CHECK(error_of("ip('fe80::1%eth0')") == "IP address with zone value is not allowed");
  CHECK(error_of("ip('::ffff:1.2.3.4')") == "IPv4-mapped IPv6 address is not allowed");
  CHECK_THAT(error_of("ip('nope')"),
             Catch::StartsWith("IP Address \"nope\" parse error during conversion from string"));
  CHECK_THAT(error_of("cidr('10.0.0.0/40')"),
             Catch::StartsWith("network address parse error during conversion from string"));
  // Gateway API's address rule.
  json addr = {{"type", "IPAddress"}, {"value", "10.0.0.300"}};
  CHECK(value_of("self.type == 'IPAddress' ? isIP(self.value) : true", addr) == false);
}

TEST_CASE("CEL URLs parse and split as kube's library does", "[apiserver][crd]") {
  CHECK(value_of("isURL('https://example.com:8443/a/b?x=1&y=2&x=3#frag') && isURL('/path') && "
                 "!isURL('example.com') && !isURL('') && !isURL('https://h:port/')") == true);
  const std::string u = "url('https://user@example.com:8443/a b/c?x=1&y=two+words&x=3#frag')";
  CHECK(value_of(u + ".getScheme()") == "https");
  CHECK(value_of(u + ".getHost()") == "example.com:8443");
  CHECK(value_of(u + ".getHostname()") == "example.com");
  CHECK(value_of(u + ".getPort()") == "8443");
  CHECK(value_of(u + ".getEscapedPath()") == "/a%20b/c");
  CHECK(value_of(u + ".getQuery()") == json({{"x", {"1", "3"}}, {"y", {"two words"}}}));
  CHECK(value_of("url('http://[::1]:80/').getHostname()") == "::1");
  CHECK(value_of("url('http://[::1]/').getPort()") == "");
  CHECK(value_of("url('/just/a/path').getHost()") == "");
  CHECK(value_of("url('https://a') == url('https://a')") == true);
  CHECK(error_of("url('example.com')") ==
        "URL parse error during conversion from string: parse \"example.com\": invalid URI for "
        "request");
  CHECK(error_of("url('https://h:port/')") ==
        "URL parse error during conversion from string: parse \"https://h:port/\": invalid port "
        "\":port\" after host");
}

TEST_CASE("CEL durations parse, compare and convert as cel-go's do", "[apiserver][crd]") {
  CHECK(value_of("duration('1h30m') == duration('90m') && duration('1.5h') == duration('5400s')") ==
        true);
  CHECK(value_of("duration('300ms') < duration('1s') && duration('-1m') < duration('0')") == true);
  CHECK(value_of("string(duration('1h30m'))") == "5400s");
  CHECK(value_of("string(duration('1.5s') + duration('1ns'))") == "1.500000001s");
  CHECK(value_of("string(duration('1m') - duration('90s'))") == "-30s");
  CHECK(value_of("int(duration('2us'))") == 2000);
  CHECK(value_of(
            "duration('2h45m').getHours() == 2 && duration('2h45m').getMinutes() == 165 && "
            "duration('1.5s').getSeconds() == 1 && duration('1.5s').getMilliseconds() == 1500") ==
        true);
  CHECK(value_of("type(duration('1s')) == type(duration('2s'))") == true);
  CHECK(value_of("duration('1s')") == "1s");
  CHECK(error_of("duration('1 hour')") ==
        "type conversion error from 'string' to 'google.protobuf.Duration'");
  CHECK(error_of("duration('5')") ==
        "type conversion error from 'string' to 'google.protobuf.Duration'");
  CHECK(error_of("duration('1s') + 1") == "no such overload");
  // Gateway API's HTTPRoute timeouts rule.
  const std::string rule =
      "!(has(self.request) && has(self.backendRequest) && duration(self.request) != "
      "duration('0s') && duration(self.backendRequest) > duration(self.request))";
  CHECK(value_of(rule, {{"request", "10s"}, {"backendRequest", "2s"}}) == true);
  CHECK(value_of(rule, {{"request", "1s"}, {"backendRequest", "2s"}}) == false);
}

TEST_CASE("CEL timestamps parse, move, compare and read as cel-go's do", "[apiserver][crd]") {
  const std::string t = "timestamp('2023-06-01T10:30:45.5Z')";
  CHECK(value_of(t + ".getFullYear()") == 2023);
  CHECK(value_of(t + ".getMonth()") == 5);  // 0-based
  CHECK(value_of(t + ".getDate()") == 1);   // 1-based
  CHECK(value_of(t + ".getDayOfMonth()") == 0);
  CHECK(value_of(t + ".getDayOfWeek()") == 4);  // a Thursday; Sunday is 0
  CHECK(value_of(t + ".getDayOfYear()") == 151);
  CHECK(value_of(t + ".getHours()") == 10);
  CHECK(value_of(t + ".getMinutes()") == 30);
  CHECK(value_of(t + ".getSeconds()") == 45);
  CHECK(value_of(t + ".getMilliseconds()") == 500);
  // In a time zone given as an offset: +05:30 is 16:00, -11:00 the day before.
  CHECK(value_of(t + ".getHours('+05:30')") == 16);
  CHECK(value_of(t + ".getMinutes('+05:30')") == 0);
  CHECK(value_of(t + ".getDate('-11:00')") == 31);
  CHECK(value_of(t + ".getMonth('-11:00')") == 4);
  CHECK(value_of(t + ".getDayOfWeek('-11:00')") == 3);
  CHECK(value_of(t + ".getHours('UTC')") == 10);
  CHECK(error_of(t + ".getHours('Europe/Paris')") ==
        "time zone Europe/Paris is not supported by vkube: use \"UTC\" or an offset such as "
        "\"-08:00\"");
  // Offsets are folded into UTC; string() is RFC 3339 with the nanoseconds that are there.
  CHECK(value_of("string(timestamp('2023-06-01T12:00:00+02:00'))") == "2023-06-01T10:00:00Z");
  CHECK(value_of("timestamp('2023-06-01T12:00:00+02:00')") == "2023-06-01T10:00:00Z");
  CHECK(value_of("string(timestamp('2023-01-01T00:00:00Z') - duration('1ns'))") ==
        "2022-12-31T23:59:59.999999999Z");
  CHECK(value_of("int(timestamp('1970-01-01T00:01:00Z'))") == 60);
  CHECK(value_of("timestamp(60) == timestamp('1970-01-01T00:01:00Z')") == true);
  CHECK(value_of("int(timestamp('1969-12-31T23:59:59Z'))") == -1);
  CHECK(value_of("timestamp('1969-12-31T23:59:59Z').getFullYear()") == 1969);
  CHECK(value_of("timestamp('1969-12-31T23:59:59Z').getSeconds()") == 59);
  CHECK(value_of("timestamp('2023-01-01T00:00:00Z') + duration('36h') == "
                 "timestamp('2023-01-02T12:00:00Z')") == true);
  CHECK(value_of("duration('1h') + timestamp('2023-01-01T00:00:00Z') == "
                 "timestamp('2023-01-01T01:00:00Z')") == true);
  CHECK(value_of("timestamp('2023-01-02T00:00:00Z') - timestamp('2023-01-01T00:00:00Z') == "
                 "duration('24h')") == true);
  CHECK(value_of("timestamp('2023-01-01T00:00:00.1Z') > timestamp('2023-01-01T00:00:00Z')") ==
        true);
  CHECK(value_of("type(timestamp(1)) == type(timestamp(2)) && type(timestamp(1)) != "
                 "type(duration('1s'))") == true);
  CHECK(value_of("timestamp('2024-02-29T00:00:00Z').getDayOfYear()") == 59);
  for (const char* bad : {"2023-02-29T00:00:00Z", "2023-13-01T00:00:00Z", "2023-06-01 10:00:00Z",
                          "2023-06-01T10:00:00", "2023-06-01T24:00:00Z", "2023-06-01T10:00:00.Z",
                          "2023-06-01T10:00:00+0200"})
    CHECK(error_of("timestamp('" + std::string(bad) + "')") ==
          "type conversion error from 'string' to 'google.protobuf.Timestamp'");
  CHECK(error_of("timestamp('9999-12-31T23:59:59Z') + duration('1s')") == "timestamp overflow");
  CHECK(error_of("timestamp(253402300800)") == "timestamp overflow");
  CHECK(error_of("timestamp(1) + 1") == "no such overload");
  // A certificate-style rule: the end comes after the start.
  const std::string rule = "timestamp(self.notAfter) > timestamp(self.notBefore)";
  CHECK(value_of(rule, {{"notBefore", "2026-01-01T00:00:00Z"},
                        {"notAfter", "2026-12-31T00:00:00Z"}}) == true);
  CHECK(value_of(rule, {{"notBefore", "2026-01-01T00:00:00Z"},
                        {"notAfter", "2026-01-01T01:00:00+02:00"}}) == false);
}

TEST_CASE("CEL two-variable comprehensions work as kube 1.32's do", "[apiserver][crd]") {
  // Over a list: the index and the element; over a map: the key and the value.
  CHECK(value_of("[1, 2, 3].all(i, v, v > i)") == true);
  CHECK(value_of("[1, 2, 3].exists(i, v, i == 2 && v == 3)") == true);
  CHECK(value_of("[1, 2, 3].existsOne(i, v, v > 1)") == false);
  CHECK(value_of("[1, 2, 3].existsOne(i, v, v > 2)") == true);
  CHECK(value_of("[1, 2].existsOne(x, x > 1)") == true);
  CHECK(value_of("{'a': 1, 'b': 2}.all(k, v, k.size() == 1 && v > 0)") == true);
  CHECK(value_of("['a', 'b'].transformList(i, v, v + string(i))") == json({"a0", "b1"}));
  CHECK(value_of("['a', 'b', 'c'].transformList(i, v, i % 2 == 0, v.upperAscii())") ==
        json({"A", "C"}));
  CHECK(value_of("{'a': 1, 'b': 2}.transformList(k, v, k + '=' + string(v))") ==
        json({"a=1", "b=2"}));
  CHECK(value_of("['x', 'y'].transformMap(i, v, v) == {0: 'x', 1: 'y'}") == true);
  CHECK(value_of("{'a': 1, 'b': 2}.transformMap(k, v, v > 1, v * 10)") == json({{"b", 20}}));
  CHECK(value_of("{'a': 1, 'b': 2}.transformMapEntry(k, v, {k + k: v})") ==
        json({{"aa", 1}, {"bb", 2}}));
  CHECK(error_of("{'a': 1, 'b': 1}.transformMapEntry(k, v, {v: k})") ==
        "insert failed: key 1 already exists");
  CHECK(error_of("[1].transformMapEntry(i, v, v)") == "no such overload");
  // A policy over labels: every key under example.com/ has a non-empty value.
  const json labels = {{"example.com/team", "gpu"}, {"app", "x"}};
  CHECK(value_of("self.all(k, v, !k.startsWith('example.com/') || v != '')", labels) == true);
  CHECK(value_of("self.all(k, v, k.startsWith('example.com/'))", labels) == false);
  CHECK(compile_error("[1].all(i, i, true)").find("duplicate variable name: i") !=
        std::string::npos);
  CHECK(compile_error("[1].all(i, 2, true)").find("argument must be a simple name") !=
        std::string::npos);
  CHECK(compile_error("[1].transformList(i, v, w)").find("undeclared reference to 'w'") !=
        std::string::npos);
}

TEST_CASE("CEL logical operators absorb errors the other side decides", "[apiserver][crd]") {
  json self = {{"a", 1}};
  CHECK(value_of("self.missing == 1 || true", self) == true);
  CHECK(value_of("true || self.missing == 1", self) == true);
  CHECK(value_of("self.missing == 1 && false", self) == false);
  CHECK(error_of("self.missing == 1 && true", self) == "no such key: missing");
  CHECK(error_of("false || self.missing == 1", self) == "no such key: missing");
  CHECK(value_of("[0, 1].exists(x, 1 / x == 1)") == true);
  CHECK(value_of("[0, 1].all(x, 1 / x > 5)") == false);
  CHECK(error_of("[0, 1].all(x, 1 / x == 1)") == "division by zero");
  CHECK(value_of("!!true") == true);
}

TEST_CASE("CEL compile errors are worded and located as cel-go reports them", "[apiserver][crd]") {
  CHECK(compile_error("self.a == foo") ==
        "ERROR: <input>:1:11: undeclared reference to 'foo' (in container '')\n"
        " | self.a == foo\n"
        " | ..........^");
  CHECK(compile_error("self.a ==") ==
        "ERROR: <input>:1:10: Syntax error: mismatched input '<EOF>' expecting {'[', '{', '(', "
        "'.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, "
        "IDENTIFIER}\n | self.a ==\n | .........^");
  CHECK(compile_error("self this").find("Syntax error: mismatched input 'this' expecting <EOF>") !=
        std::string::npos);
  CHECK(compile_error("self.a # 1").find("Syntax error: token recognition error at: '#'") !=
        std::string::npos);
  CHECK(compile_error("isSemver(self.v)").find("function 'isSemver' is not supported by vkube") !=
        std::string::npos);
  CHECK(compile_error("self.x.frobnicate()").find("undeclared reference to 'frobnicate'") !=
        std::string::npos);
  CHECK(compile_error("has(self)").find("invalid argument to has() macro") != std::string::npos);
  CHECK(compile_error("self.all(x.y, true)").find("argument must be a simple name") !=
        std::string::npos);
  CHECK(compile_error("self.startsWith('a', 'b')").find("found no matching overload") !=
        std::string::npos);
  CHECK(compile_error("self.matches('[z-a]')").find("invalid character class range: `z-a`") !=
        std::string::npos);
  CHECK(compile_error("self.a == 99999999999999999999").find("invalid int literal") !=
        std::string::npos);
  CHECK(compile_error(std::string(150, '(') + "1" + std::string(150, ')'))
            .find("expression recursion limit exceeded: 100") != std::string::npos);
  CHECK(compile_error("'a'\n  + b").find("ERROR: <input>:2:5: undeclared reference to 'b'") == 0);

  std::string error;
  auto program = compile("self.x == oldSelf.x", &error);
  REQUIRE(program != nullptr);
  CHECK(program->uses_old_self());
  CHECK_FALSE(compile("self.x == 1", &error)->uses_old_self());
  CHECK(compile("self.x + 1", &error)->result_type() == "");
  CHECK(compile("size(self.x) + 1", &error)->result_type() == "int");
}

TEST_CASE("CEL values are typed by the structural schema", "[apiserver][crd]") {
  json schema = object_schema({{"count", {{"type", "integer"}}}, {"weight", {{"type", "number"}}}});
  json self = {{"count", 2}, {"weight", 2}};
  auto typed = [&](const std::string& expr) {
    EvalResult r = eval(expr, self, nullptr, &schema);
    INFO(expr << " -> " << r.error);
    REQUIRE(r.ok);
    return r.value;
  };
  CHECK(typed("type(self.count) == int && type(self.weight) == double") == true);
  CHECK(typed("self.weight / 4.0") == 0.5);
  CHECK(typed("self.count == self.weight") == true);

  // Strings of format date-time and date are timestamps, of format duration durations, as kube
  // types them: a rule may subtract and compare them as they are.
  json times = object_schema({{"start", {{"type", "string"}, {"format", "date-time"}}},
                              {"end", {{"type", "string"}, {"format", "date-time"}}},
                              {"day", {{"type", "string"}, {"format", "date"}}},
                              {"ttl", {{"type", "string"}, {"format", "duration"}}}});
  json when = {{"start", "2026-12-07T22:00:00Z"},
               {"end", "2026-12-08T01:00:00+01:00"},
               {"day", "2026-12-07"},
               {"ttl", "3h"}};
  auto timed = [&](const std::string& expr) {
    EvalResult r = eval(expr, when, nullptr, &times);
    INFO(expr << " -> " << r.error);
    REQUIRE(r.ok);
    return r.value;
  };
  CHECK(timed("type(self.start) == type(timestamp(0)) && type(self.ttl) == type(duration('1s'))") ==
        true);
  CHECK(timed("self.end - self.start") == "7200s");
  CHECK(timed("self.end - self.start <= self.ttl && self.end > self.start") == true);
  CHECK(timed("timestamp(self.start) == self.start && self.day.getDayOfWeek() == 1") == true);
  CHECK(timed("self.end") == "2026-12-08T00:00:00Z");
  json bad_day = {{"day", "7 Dec"}};
  EvalResult bad = eval("self.day.getDate() == 7", bad_day, nullptr, &times);
  CHECK_FALSE(bad.ok);
  CHECK(bad.error == "Invalid date formatted string 7 Dec");

  json sets = {
      {"type", "array"}, {"x-kubernetes-list-type", "set"}, {"items", {{"type", "string"}}}};
  json a = {"x", "y"};
  json b = {"y", "x"};
  EvalResult r = eval("self == oldSelf && self + ['z', 'x'] == ['x', 'y', 'z']", a, &b, &sets);
  REQUIRE(r.ok);
  CHECK(r.value == true);
}

TEST_CASE("A failing rule is kube-apiserver's field error", "[apiserver][crd]") {
  json schema = object_schema(
      {{"spec", object_schema({{"min", {{"type", "integer"}}}, {"max", {{"type", "integer"}}}},
                              {{{"rule", "self.min <= self.max"}},
                               {{"rule", "self.max < 100"}, {"message", "max must stay below 100"}},
                               {{"rule", "self.min > 0"},
                                {"messageExpression", "'min is ' + string(self.min)"},
                                {"reason", "FieldValueForbidden"},
                                {"fieldPath", ".min"}}})}},
      {{{"rule", "self.metadata.name.startsWith('a')"}}});
  json obj = {{"apiVersion", "x/v1"},
              {"kind", "X"},
              {"metadata", {{"name", "b"}, {"labels", {{"k", "v"}}}}},
              {"spec", {{"min", -5}, {"max", 200}}}};
  CHECK(messages(schema, obj) ==
        std::vector<std::string>{
            "<nil>: Invalid value: \"object\": failed rule: self.metadata.name.startsWith('a')",
            "spec: Invalid value: \"object\": max must stay below 100",
            "spec.min: Forbidden: min is -5"});
  obj["metadata"]["name"] = "a";
  obj["spec"] = {{"min", 10}, {"max", 5}};
  CHECK(messages(schema, obj) ==
        std::vector<std::string>{
            "spec: Invalid value: \"object\": failed rule: self.min <= self.max"});
  obj["spec"] = {{"min", 1}, {"max", 5}};
  CHECK(messages(schema, obj).empty());
}

TEST_CASE("Rule evaluation errors and the resource root's metadata", "[apiserver][crd]") {
  json schema = object_schema(
      {{"spec", object_schema({{"n", {{"x-kubernetes-int-or-string", true}}}},
                              {{{"rule", "self.n + 1 > 2"}}, {{"rule", "self.other > 1"}}})}},
      {{{"rule", "!has(self.metadata.labels)"}}});
  json obj = {{"metadata", {{"name", "x"}, {"labels", {{"a", "b"}}}}}, {"spec", {{"n", "five"}}}};
  CHECK(messages(schema, obj) ==
        std::vector<std::string>{
            "spec: Invalid value: \"object\": 'no such overload': call arguments did not match a "
            "supported operator, function or macro signature for rule: self.n + 1 > 2",
            "spec: Invalid value: \"object\": no such key: other evaluating rule: self.other > 1"});
}

TEST_CASE("Transition rules see the correlated old value", "[apiserver][crd]") {
  json item =
      object_schema({{"name", {{"type", "string"}}}, {"size", {{"type", "integer"}}}},
                    {{{"rule", "self.size >= oldSelf.size"}, {"message", "cannot shrink"}}});
  json schema = object_schema(
      {{"spec",
        object_schema({{"mode",
                        {{"type", "string"},
                         {"x-kubernetes-validations",
                          {{{"rule", "self == oldSelf"}, {"message", "mode is immutable"}}}}}},
                       {"disks",
                        {{"type", "array"},
                         {"x-kubernetes-list-type", "map"},
                         {"x-kubernetes-list-map-keys", {"name"}},
                         {"items", item}}},
                       {"atomic", {{"type", "array"}, {"items", item}}}})}});
  json old = {{"spec",
               {{"mode", "a"},
                {"disks", {{{"name", "d1"}, {"size", 10}}, {{"name", "d2"}, {"size", 5}}}},
                {"atomic", {{{"name", "x"}, {"size", 10}}}}}}};
  json obj = {{"spec",
               {{"mode", "b"},
                {"disks", {{{"name", "d2"}, {"size", 4}}, {{"name", "d3"}, {"size", 1}}}},
                {"atomic", {{{"name", "x"}, {"size", 1}}}}}}};
  CHECK(messages(schema, obj).empty());  // create: transition rules do not run
  CHECK(messages(schema, obj, &old) ==
        std::vector<std::string>{"spec.disks[0]: Invalid value: \"object\": cannot shrink",
                                 "spec.mode: Invalid value: \"string\": mode is immutable"});
  obj["spec"]["mode"] = "a";
  obj["spec"]["disks"][0]["size"] = 5;
  CHECK(messages(schema, obj, &old).empty());
}

TEST_CASE("Rules vkube cannot run are skipped; broken rules are reported", "[apiserver][crd]") {
  std::string error;
  CHECK(compile("isSemver(self.q)", &error) == nullptr);
  CHECK(unsupported_by_vkube(error));
  CHECK(compile("isSemver(self.q", &error) == nullptr);
  CHECK_FALSE(unsupported_by_vkube(error));
  json schema = object_schema({{"q", {{"type", "string"}}}},
                              {{{"rule", "isSemver(self.q)"}}, {{"rule", "self.q == nope"}}});
  std::vector<std::string> got = messages(schema, {{"q", "1Gi"}});
  REQUIRE(got.size() == 1);
  CHECK(got[0].find("<nil>: Invalid value: \"object\": rule compile error: compilation failed: "
                    "ERROR: <input>:1:11: undeclared reference to 'nope'") == 0);
}

TEST_CASE("A null old value or a new list item has no oldSelf", "[apiserver][crd]") {
  json schema = object_schema(
      {{"v",
        {{"type", "string"},
         {"nullable", true},
         {"x-kubernetes-validations", {{{"rule", "self == oldSelf"}}}}}},
       {"m",
        {{"type", "object"},
         {"additionalProperties",
          {{"type", "integer"}, {"x-kubernetes-validations", {{{"rule", "self >= oldSelf"}}}}}}}}});
  json old = {{"v", nullptr}, {"m", {{"a", 5}}}};
  CHECK(messages(schema, {{"v", "x"}, {"m", {{"b", 1}}}}, &old).empty());
  CHECK(messages(schema, {{"v", "x"}, {"m", {{"a", 1}}}}, &old) ==
        std::vector<std::string>{"m[a]: Invalid value: \"integer\": failed rule: self >= oldSelf"});
  json root_null = nullptr;
  CHECK(messages(schema, {{"v", "x"}}, &root_null).empty());
}

TEST_CASE("fieldPath names the reported field", "[apiserver][crd]") {
  json schema = object_schema(
      {{"spec", object_schema(
                    {{"map", {{"type", "object"}, {"additionalProperties", {{"type", "string"}}}}},
                     {"a.b", {{"type", "string"}}}})}},
      {{{"rule", "false"}, {"fieldPath", ".spec.map['k.1']"}},
       {{"rule", "false"}, {"fieldPath", ".spec['a.b']"}, {"reason", "FieldValueRequired"}}});
  CHECK(messages(schema, {{"spec", json::object()}}) ==
        std::vector<std::string>{"spec.map[k.1]: Invalid value: \"object\": failed rule: false",
                                 "spec.a.b: Required value: failed rule: false"});
}

TEST_CASE("messageExpression falls back to the message when unusable", "[apiserver][crd]") {
  json schema = {
      {"type", "integer"},
      {"x-kubernetes-validations",
       {{{"rule", "self < 10"}, {"message", "too big"}, {"messageExpression", "'a\\nb'"}},
        {{"rule", "self < 5"}, {"messageExpression", "self.x"}},
        {{"rule", "self < 3"}, {"messageExpression", "'value ' + string(self) + ' >= 3'"}},
        {{"rule", "self < 2"}, {"reason", "FieldValueDuplicate"}}}}};
  json root = object_schema({{"v", schema}});
  CHECK(messages(root, {{"v", 20}}) ==
        std::vector<std::string>{"v: Invalid value: \"integer\": too big",
                                 "v: Invalid value: \"integer\": failed rule: self < 5",
                                 "v: Invalid value: \"integer\": value 20 >= 3",
                                 "v: Duplicate value: \"integer\""});
}

TEST_CASE("CRD rules that cannot run are reported for the CRD", "[apiserver][crd]") {
  json schema = object_schema(
      {{"spec",
        object_schema({{"list",
                        {{"type", "array"},
                         {"items",
                          {{"type", "string"},
                           {"x-kubernetes-validations", {{{"rule", "self == oldSelf"}}}}}}}}},
                      {{{"rule", "self.a == undefinedThing"}},
                       {{"rule", "self.a.size() + 1"}},
                       {{"rule", "true"}, {"messageExpression", "'x' +"}},
                       {{"rule", "isSemver(self.u)"}},
                       {{"rule", "true"}, {"reason", "Bogus"}, {"fieldPath", ".nope"}}})}});
  std::vector<std::string> got = check_rules(schema, "spec.versions[0].schema.openAPIV3Schema");
  const std::string base = "spec.versions[0].schema.openAPIV3Schema.properties[spec]";
  REQUIRE(got.size() == 7);
  CHECK(got[0].find(base + ".x-kubernetes-validations[0].rule: compilation failed: ERROR: "
                           "<input>:1:11: undeclared reference to 'undefinedThing'") == 0);
  CHECK(got[1] ==
        base + ".x-kubernetes-validations[1].rule: cel expression must evaluate to a bool");
  CHECK(got[2].find(base + ".x-kubernetes-validations[2].messageExpression: messageExpression "
                           "compilation failed: ERROR: <input>:1:6: Syntax error") == 0);
  CHECK(got[3].find("function 'isSemver' is not supported by vkube") != std::string::npos);
  CHECK(got[4].find(".x-kubernetes-validations[4].reason: Unsupported value: \"Bogus\"") !=
        std::string::npos);
  CHECK(got[5] == base + ".x-kubernetes-validations[4].fieldPath: fieldPath must be a valid path");
  CHECK(got[6] == base +
                      ".properties[list].items.x-kubernetes-validations[0].rule: oldSelf cannot "
                      "be used on the uncorrelatable portion of the schema within " +
                      base + ".properties[list]");
  CHECK(check_rules(object_schema({{"a", {{"type", "string"}}}}, {{{"rule", "self.a != ''"}}}), "s")
            .empty());
}

TEST_CASE("Evaluation is bounded on hostile input", "[apiserver][crd]") {
  // Pathological patterns run in linear time: no backtracking.
  auto start = std::chrono::steady_clock::now();
  json long_a = std::string(200000, 'a');
  CHECK(eval("self.matches('^(a+)+b$') || self.matches('^(a|aa)*$')", long_a).value == true);
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(20));

  // Runaway comprehensions hit the cost limit.
  EvalResult r =
      eval("self.all(x, self.all(y, self.all(z, x + y + z >= 0)))", json(std::vector<int>(200, 1)));
  CHECK(r.cost_exceeded);
  CHECK(r.error == "operation cancelled: actual cost limit exceeded");
  json schema = {
      {"type", "array"},
      {"items", {{"type", "integer"}}},
      {"x-kubernetes-validations",
       {{{"rule", "self.all(x, self.all(y, self.all(z, x + y + z >= 0)))"}}, {{"rule", "false"}}}}};
  CHECK(messages(object_schema({{"l", schema}}), {{"l", std::vector<int>(200, 1)}}) ==
        std::vector<std::string>{
            "l: Invalid value: \"array\": 'operation cancelled: actual cost limit exceeded': no "
            "further validation rules will be run due to call cost exceeds limit for rule: "
            "self.all(x, self.all(y, self.all(z, x + y + z >= 0)))"});

  // Deeply nested data compares without exhausting the stack.
  json deep = 1;
  for (int i = 0; i < 5000; ++i) deep = json::array({deep});
  EvalResult d = eval("self == oldSelf", deep, &deep);
  CHECK_FALSE(d.ok);

  // Long operator chains stay within the AST depth limit or are refused, never crash.
  std::string chain = "1";
  for (int i = 0; i < 300; ++i) chain += " + 1";
  CHECK(compile_error(chain).find("expression recursion limit exceeded: 250") != std::string::npos);
  std::string ors = "false";
  for (int i = 0; i < 2000; ++i) ors += " || false";
  CHECK(value_of(ors) == false);
}

TEST_CASE("Random token soup never crashes the compiler, the evaluator or the checker",
          "[apiserver][crd]") {
  // Deterministic: the same 100000 expressions each run, built from the syntax CRD rules and
  // admission expressions use (optionals, quantities, timestamps and the authorizer included).
  // clang-format off
  static const char* kTokens[] = {
      "self", "object", "params", "authorizer", ".", ".?", "[", "[?", "]", "(", ")", "{", "{?",
      "}", ",", ":", "?", "!", "-", "+", "*", "/", "%", "==", "!=", "<", ">=", "&&", "||", " in ",
      "1", "0u", "2.5", "'a'", "b'x'", "true", "null", "a", "spec", "metadata", "labels", "size()",
      "all(x, x", "exists(", "map(", "filter(", "x", "has(", "optional.of(", "optional.none()",
      ".orValue(", ".value()", ".hasValue()", "quantity('1Gi')", ".add(", ".compareTo(",
      "isQuantity(", ".group('')", ".resource('pods')", ".check('get')", ".allowed()",
      ".requestResource", ".serviceAccount('n', 's')", "type(", "dyn(", "int(", "string(",
      ".matches('^a+$')", ".split(','", ".join()", "sets.contains(", "[1, 2]", "{'k': 1}",
      "ip('10.0.0.1')", "cidr('10.0.0.0/8')", ".containsIP(", ".family()", "'%s'.format(", "isIP(",
      "url('https://a:1/p?q=1')", ".getQuery()", ".getPort()", "duration('1h')", ".getMinutes()",
      "timestamp('2023-06-01T10:00:00Z')", "timestamp(", ".getFullYear(",
      ".getDayOfWeek('-08:00')", "all(k, v, v", ".transformList(i, v,",
      ".transformMapEntry(k, v, {k: v})"};
  // clang-format on
  const std::size_t n = sizeof kTokens / sizeof kTokens[0];
  uint64_t seed = 0x9e3779b97f4a7c15ull;
  auto next = [&] {
    seed ^= seed << 13;
    seed ^= seed >> 7;
    seed ^= seed << 17;
    return seed;
  };
  json self = {{"spec", {{"a", 1}, {"labels", {{"x", "y"}}}, {"list", {1, 2, 3}}}},
               {"metadata", {{"name", "n"}}}};
  json schema = {{"type", "object"},
                 {"properties",
                  {{"spec",
                    {{"type", "object"},
                     {"properties",
                      {{"a", {{"type", "integer"}}},
                       {"list", {{"type", "array"}, {"items", {{"type", "integer"}}}}}}}}}}}};
  crd::cel::Authorizer authz;
  authz.user = "u";
  authz.authorize = [](const AuthzAttributes&) { return AuthzDecision{true, "ok", ""}; };
  EvalOptions options;
  options.authorizer = &authz;
  TypeEnv env;
  env.object = &schema;
  const std::vector<std::string>& names = admission_names(true, true);
  int compiled = 0;
  for (int i = 0; i < 100000; ++i) {
    std::string expr;
    const int len = 1 + static_cast<int>(next() % 12);
    for (int t = 0; t < len; ++t) expr += kTokens[next() % n];
    std::string error;
    for (bool admission : {false, true}) {
      auto program = admission ? compile_in(expr, names, &error) : compile(expr, &error);
      if (!program) {
        CHECK_FALSE(error.empty());
        continue;
      }
      ++compiled;
      json activation = {{"object", self}, {"params", self}, {"oldObject", nullptr}};
      EvalResult r = evaluate(*program, admission ? activation : self, nullptr, options);
      CHECK((r.ok || !r.error.empty()));
      if (admission) (void)check_types(*program, env);
    }
  }
  CHECK(compiled > 2000);  // the soup is not all syntax errors
}

TEST_CASE("The regex engine follows RE2's syntax", "[apiserver][crd]") {
  struct Case {
    std::string pattern, text;
    bool want;
  };
  const std::vector<Case> cases = {
      {"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", "my-name-1", true},
      {"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", "-bad", false},
      {"(?i)^ABC$", "abc", true},
      {"^\\d{2,3}$", "1234", false},
      {"^\\d{2,3}$", "123", true},
      {"\\bword\\b", "a word here", true},
      {"\\bword\\b", "swordfish", false},
      {"^[[:alpha:]]+$", "Abc", true},
      {"^a.c$", "a\nc", false},
      {"(?s)^a.c$", "a\nc", true},
      {"^\\Qa.b\\E$", "a.b", true},
      {"^\\Qa.b\\E$", "axb", false},
      {"^(?:ab|cd)+$", "abcdab", true},
      {"^x*?y$", "xxy", true},
      {"^é.$", "éà", true},
      {"a$", "a\n", false},
      {"(?m)a$", "a\nb", true},
  };
  for (const auto& c : cases) {
    std::string error;
    auto re = detail::Regex::compile(c.pattern, &error);
    INFO(c.pattern << " on " << c.text << ": " << error);
    REQUIRE(re != nullptr);
    CHECK(re->search(c.text) == c.want);
  }
  std::string error;
  CHECK(detail::Regex::compile("a**", &error) == nullptr);
  CHECK(error == "error parsing regexp: invalid nested repetition operator: `**`");
  CHECK(detail::Regex::compile("(abc", &error) == nullptr);
  CHECK(error == "error parsing regexp: missing closing ): `(abc`");
  CHECK(detail::Regex::compile("a{1001}", &error) == nullptr);
  CHECK(error == "error parsing regexp: invalid repeat count: `{1001}`");
  CHECK(detail::Regex::compile("\\1", &error) == nullptr);
  CHECK(error == "error parsing regexp: invalid escape sequence: `\\1`");
}

}  // namespace
}  // namespace vkube::apiserver::crd::cel
