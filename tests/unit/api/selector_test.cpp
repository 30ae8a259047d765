// Label and field selectors as kubectl users meet them: what parses, what it
// matches, its canonical form, and Kubernetes' exact error messages (checked
// against k8s.io/apimachinery 1.32).
#include "vkube/api/selector.h"

#include <catch2/catch.hpp>

#include <map>
#include <optional>
#include <string>

namespace vkube::api {
namespace {

const std::string kNameRegexMsg =
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
    "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
const std::string kLabelValueMsg =
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
    "'my_value',  or '12345', regex used for validation is "
    "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";

LabelSelector must_parse(std::string_view text) {
  Result<LabelSelector> s = LabelSelector::parse(text);
  INFO("selector: " << text);
  REQUIRE(s.is_ok());
  return s.value();
}

TEST_CASE("label selectors parse to Kubernetes' canonical form", "[api]") {
  struct Case {
    std::string in, canonical;
  };
  const Case cases[] = {
      {"", ""},
      {" \t\n", ""},
      {"a", "a"},
      {"!a", "!a"},
      {"a=b", "a=b"},
      {"a==b", "a=b"},
      {"a!=b", "a!=b"},
      {"a=", "a="},
      {" x in ( b , a , b ) ", "x in (a,b)"},
      {"x\tnotin\n(a)", "x notin (a)"},
      {"x in ()", "x in ()"},      // the set of the empty value
      {"x in (,a)", "x in (,a)"},  // an empty value before the comma
      {"x in (a,)", "x in (,a)"},  // and after it
      {"x in (,,,)", "x in ()"},
      {"in in (in,notin)", "in in (in,notin)"},  // keywords as key and values
      {"z=1,a=2,m", "a=2,m,z=1"},                // sorted by key
      {"a,a=b,!a", "a,a=b,!a"},                  // stable for equal keys
      {"k8s.io/app=web,tier notin (db)", "k8s.io/app=web,tier notin (db)"},
      {"a>1,a<10", "a>1,a<10"},
      {std::string("\0a=b", 4), ""},  // a NUL byte ends the input, as in Kubernetes
      {std::string("a=\0b", 4), "a=b"},
  };
  for (const Case& c : cases) {
    INFO("selector: " << c.in);
    Result<LabelSelector> s = LabelSelector::parse(c.in);
    REQUIRE(s.is_ok());
    CHECK(s->to_string() == c.canonical);
    CHECK(s->empty() == c.canonical.empty());
  }
}

TEST_CASE("label selector requirements", "[api]") {
  LabelSelector s = must_parse("tier notin (b,a), app = web, !legacy, gpu");
  using Op = LabelRequirement::Op;
  const auto& reqs = s.requirements();
  REQUIRE(reqs.size() == 4);
  CHECK((reqs[0].key == "app" && reqs[0].op == Op::kEquals && reqs[0].values.size() == 1));
  CHECK((reqs[1].key == "gpu" && reqs[1].op == Op::kExists && reqs[1].values.empty()));
  CHECK((reqs[2].key == "legacy" && reqs[2].op == Op::kDoesNotExist));
  CHECK((reqs[3].key == "tier" && reqs[3].op == Op::kNotIn));
  CHECK(reqs[3].values == std::vector<std::string>{"a", "b"});
}

TEST_CASE("label selectors match as Kubernetes' do, missing keys included", "[api]") {
  struct Case {
    std::string selector;
    json labels;
    bool matches;
  };
  const json none = json::object();
  const Case cases[] = {
      {"", nullptr, true},
      {"", {{"a", "b"}}, true},
      {"a=b", {{"a", "b"}}, true},
      {"a=b", {{"a", "c"}}, false},
      {"a=b", none, false},  // = needs the key
      {"a=", {{"a", ""}}, true},
      {"a=", none, false},
      {"a!=b", none, true},  // != matches objects without the key
      {"a!=b", nullptr, true},
      {"a!=b", {{"a", "b"}}, false},
      {"a!=b", {{"a", "c"}}, true},
      {"a in (b,c)", {{"a", "c"}}, true},
      {"a in (b,c)", none, false},    // in needs the key
      {"a notin (b,c)", none, true},  // notin does not
      {"a notin (b,c)", {{"a", "b"}}, false},
      {"a notin (b,c)", {{"a", "d"}}, true},
      {"a", {{"a", ""}}, true},
      {"a", none, false},
      {"!a", {{"a", ""}}, false},
      {"!a", none, true},
      {"a>1", {{"a", "2"}}, true},
      {"a>1", {{"a", "1"}}, false},
      {"a>1", {{"a", "x"}}, false},  // not an integer: no match
      {"a>1", none, false},
      {"a<1", {{"a", "-3"}}, true},
      {"a=b,c", {{"a", "b"}}, false},  // requirements AND together
      {"a=b,c", {{"a", "b"}, {"c", ""}}, true},
      {"a=b,!c", {{"a", "b"}, {"c", ""}}, false},
  };
  for (const Case& c : cases) {
    INFO("selector: " << c.selector << " labels: " << c.labels.dump());
    CHECK(must_parse(c.selector).matches(c.labels) == c.matches);
  }
}

TEST_CASE("label selector syntax errors carry Kubernetes' messages", "[api]") {
  struct Case {
    std::string in, message;
  };
  const Case cases[] = {
      {"a b", "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt"},
      {"a=b c", "found 'c', expected: ',' or 'end of string'"},
      {"a=b,", "found '', expected: identifier after ','"},
      {"a=b,,c", "found ',', expected: identifier after ','"},
      {"=a", "found '=', expected: !, identifier, or 'end of string'"},
      {"!a=b", "found '=', expected: ',' or 'end of string'"},
      {"!", "unable to parse requirement: found '', expected: identifier"},
      {"x in", "unable to parse requirement: found '' expected: '('"},
      {"x in a", "unable to parse requirement: found 'a' expected: '('"},
      {"x in (a b)", "unable to parse requirement: found 'b', expected: ',' or ')'"},
      {"x in (,,)", "unable to parse requirement: found ')', expected: ',', or identifier"},
      {"a=(b)", "unable to parse requirement: found '(', expected: identifier"},
      {"/a",
       "unable to parse requirement: <nil>: Invalid value: \"/a\": prefix part must be "
       "non-empty"},
      {"_a",
       "unable to parse requirement: <nil>: Invalid value: \"_a\": name part " + kNameRegexMsg},
      {"a=b@",
       "unable to parse requirement: values[0][a]: Invalid value: \"b@\": " + kLabelValueMsg},
      {"a>b",
       "unable to parse requirement: values[0]: Invalid value: \"b\": for 'Gt', 'Lt' "
       "operators, the value must be an integer"},
      {"a<99999999999999999999",
       "unable to parse requirement: values[0]: Invalid value: \"99999999999999999999\": for "
       "'Gt', 'Lt' operators, the value must be an integer"},
      // Several problems with one requirement read as a list.
      {"a>b@",
       "unable to parse requirement: [values[0]: Invalid value: \"b@\": for 'Gt', 'Lt' "
       "operators, the value must be an integer, values[0][a]: Invalid value: \"b@\": " +
           kLabelValueMsg + "]"},
      // Go's %q quoting of the bad key.
      {"a\"\x01", "unable to parse requirement: <nil>: Invalid value: \"a\\\"\\x01\": name part " +
                      kNameRegexMsg},
  };
  for (const Case& c : cases) {
    INFO("selector: " << c.in);
    Result<LabelSelector> s = LabelSelector::parse(c.in);
    REQUIRE_FALSE(s.is_ok());
    CHECK(s.status().code() == Code::kBadRequest);
    CHECK(s.status().message() == c.message);
  }
  // Keys and values are held to the label rules: 63 characters at most.
  CHECK_FALSE(LabelSelector::parse(std::string(64, 'k')).is_ok());
  CHECK_FALSE(LabelSelector::parse("a=" + std::string(64, 'v')).is_ok());
  CHECK(LabelSelector::parse("a=" + std::string(63, 'v')).is_ok());
  // "-2" is an integer but no label value, so "gpus>-2" is refused.
  CHECK_FALSE(LabelSelector::parse("gpus>-2").is_ok());
}

TEST_CASE("label selectors from metav1.LabelSelector objects", "[api]") {
  CHECK(LabelSelector::from_json(nullptr)->empty());
  CHECK(LabelSelector::from_json(json::object())->empty());

  Result<LabelSelector> s = LabelSelector::from_json(json::parse(R"({
    "matchLabels": {"tier": "web", "app": "shop"},
    "matchExpressions": [
      {"key": "zone", "operator": "NotIn", "values": ["b", "a", "b"]},
      {"key": "app", "operator": "Exists"},
      {"key": "legacy", "operator": "DoesNotExist", "values": []},
      {"key": "env", "operator": "In", "values": ["prod"]}
    ]})"));
  REQUIRE(s.is_ok());
  // Kubernetes keeps duplicate values of an expression (they show here only).
  CHECK(s->to_string() == "app=shop,app,env in (prod),!legacy,tier=web,zone notin (a,b,b)");
  json labels = {{"app", "shop"}, {"tier", "web"}, {"env", "prod"}};
  CHECK(s->matches(labels));
  labels["zone"] = "a";
  CHECK_FALSE(s->matches(labels));
  labels["zone"] = "c";
  CHECK(s->matches(labels));
  labels["legacy"] = "true";
  CHECK_FALSE(s->matches(labels));
}

TEST_CASE("invalid metav1.LabelSelector objects carry ValidateLabelSelector's errors", "[api]") {
  struct Case {
    std::string selector, path, message;
  };
  const Case cases[] = {
      {R"({"matchExpressions": [{"key": "a", "operator": "In"}]})", "selector",
       "selector.matchExpressions[0].values: Required value: must be specified when `operator` "
       "is 'In' or 'NotIn'"},
      {R"({"matchExpressions": [{"key": "a", "operator": "NotIn", "values": []}]})",
       "spec.selector",
       "spec.selector.matchExpressions[0].values: Required value: must be specified when "
       "`operator` is 'In' or 'NotIn'"},
      {R"({"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]})", "selector",
       "selector.matchExpressions[0].values: Forbidden: may not be specified when `operator` is "
       "'Exists' or 'DoesNotExist'"},
      {R"({"matchExpressions": [{"key": "a", "operator": "Equals", "values": ["x"]}]})", "selector",
       "selector.matchExpressions[0].operator: Invalid value: \"Equals\": not a valid selector "
       "operator"},
      {R"({"matchLabels": {"_a": "b"}})", "spec.selector",
       "spec.selector.matchLabels: Invalid value: \"_a\": name part " + kNameRegexMsg},
      {R"({"matchLabels": {"a": "-b"}})", "selector",
       "selector.matchLabels: Invalid value: \"-b\": " + kLabelValueMsg},
      {R"({"matchExpressions": [{"key": "a", "operator": "In", "values": ["ok", "no!"]}]})",
       "selector",
       "selector.matchExpressions[0].values[1]: Invalid value: \"no!\": " + kLabelValueMsg},
      // Several problems read as a list, in Kubernetes' order.
      {R"({"matchExpressions": [{"key": "/a", "operator": "In"}]})", "selector",
       "[selector.matchExpressions[0].values: Required value: must be specified when `operator` "
       "is 'In' or 'NotIn', selector.matchExpressions[0].key: Invalid value: \"/a\": prefix part "
       "must be non-empty]"},
      // Wrong JSON types.
      {R"("app=web")", "selector", "selector: Invalid value: \"app=web\": must be an object"},
      {R"({"matchLabels": {"a": 1}})", "selector",
       "selector.matchLabels[a]: Invalid value: 1: must be a string"},
      {R"({"matchExpressions": {}})", "selector",
       "selector.matchExpressions: Invalid value: {}: must be an array"},
  };
  for (const Case& c : cases) {
    INFO("selector: " << c.selector);
    Result<LabelSelector> s = LabelSelector::from_json(json::parse(c.selector), c.path);
    REQUIRE_FALSE(s.is_ok());
    CHECK(s.status().code() == Code::kInvalid);
    CHECK(s.status().message() == c.message);
  }
}

FieldSelector must_parse_fields(std::string_view text) {
  Result<FieldSelector> s = FieldSelector::parse(text);
  INFO("field selector: " << text);
  REQUIRE(s.is_ok());
  return s.value();
}

TEST_CASE("field selectors parse, escape and sort as Kubernetes' do", "[api]") {
  struct Case {
    std::string in, canonical;
  };
  const Case cases[] = {
      {"", ""},
      {",,", ""},
      {"a=b", "a=b"},
      {"a==b", "a=b"},
      {"c!=d,a=b", "a=b,c!=d"},  // terms sorted by their text
      {",,a=b,,", "a=b"},
      {"spec.nodeName=", "spec.nodeName="},
      {"a=b\\,c", "a=b\\,c"},
      {"a=b\\=c\\\\", "a=b\\=c\\\\"},
      {"a = b", "a = b"},  // spaces belong to the field and the value
      {"=", ""},           // empty field and value: dropped
      {"!=x", "!=x"},
  };
  for (const Case& c : cases) {
    INFO("field selector: " << c.in);
    CHECK(must_parse_fields(c.in).to_string() == c.canonical);
  }
  FieldSelector s = must_parse_fields("metadata.name==a\\,b,status.phase!=Running");
  REQUIRE(s.requirements().size() == 2);
  CHECK(s.requirements()[0].field == "metadata.name");
  CHECK(s.requirements()[0].equals);
  CHECK(s.requirements()[0].value == "a,b");
  CHECK(s.requirements()[1].field == "status.phase");
  CHECK_FALSE(s.requirements()[1].equals);
}

TEST_CASE("field selectors match, a missing field reading as empty", "[api]") {
  std::map<std::string, std::string> fields = {{"metadata.name", "web"}, {"status.phase", ""}};
  auto get = [&](std::string_view f) -> std::optional<std::string> {
    auto it = fields.find(std::string(f));
    if (it == fields.end()) return std::nullopt;
    return it->second;
  };
  CHECK(must_parse_fields("").matches(get));
  CHECK(must_parse_fields("metadata.name=web").matches(get));
  CHECK_FALSE(must_parse_fields("metadata.name=db").matches(get));
  CHECK(must_parse_fields("metadata.name!=db").matches(get));
  CHECK_FALSE(must_parse_fields("metadata.name=web,status.phase=Running").matches(get));
  CHECK(must_parse_fields("spec.nodeName=").matches(get));  // unscheduled
  CHECK_FALSE(must_parse_fields("spec.nodeName!=").matches(get));
  CHECK(must_parse_fields("spec.nodeName!=node-1").matches(get));
  CHECK_FALSE(must_parse_fields("spec.nodeName=node-1").matches(get));
}

TEST_CASE("field selector errors carry Kubernetes' messages", "[api]") {
  struct Case {
    std::string in, message;
  };
  const Case cases[] = {
      {"a", "invalid selector: 'a'; can't understand 'a'"},
      {"x=y,a", "invalid selector: 'x=y,a'; can't understand 'a'"},
      {"a=b,c", "invalid selector: 'a=b,c'; can't understand 'c'"},
      {"a=b=c", "invalid field selector: unescaped character in value: 61"},
      {"a=b\\!", "invalid field selector: invalid escape sequence: \\!"},
      {"a=b\\", "invalid field selector: invalid escape sequence: \\"},
  };
  for (const Case& c : cases) {
    INFO("field selector: " << c.in);
    Result<FieldSelector> s = FieldSelector::parse(c.in);
    REQUIRE_FALSE(s.is_ok());
    CHECK(s.status().code() == Code::kBadRequest);
    CHECK(s.status().message() == c.message);
  }
}

}  // namespace
}  // namespace vkube::api
