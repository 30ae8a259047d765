// The RE2-syntax regex engine behind CEL's matches()/find()/findAll() and the schema `pattern`
// keyword: user-supplied patterns on user-supplied values must never hang the API server
// (catastrophic backtracking) nor crash it (recursion over a long input), and a pattern the
// engine cannot run must not refuse what kube accepts.
#include <catch2/catch.hpp>

#include <chrono>
#include <string>
#include <vector>

#include "cel_rules.h"
#include "vkube/cel/re2_regex.h"
#include "structural.h"

namespace vkube::apiserver::crd {
namespace {

using Clock = std::chrono::steady_clock;

// Generous for a loaded 2-core CI machine or a sanitizer build; a backtracking engine needs
// 2^n steps on these inputs and never gets near it.
constexpr auto kPrompt = std::chrono::seconds(10);

std::vector<std::string> pattern_errors(const std::string& pattern, const std::string& value) {
  json schema = {{"type", "object"},
                 {"properties",
                  {{"spec",
                    {{"type", "object"},
                     {"properties", {{"v", {{"type", "string"}, {"pattern", pattern}}}}}}}}}};
  json object = {{"apiVersion", "stable.example.com/v1"},
                 {"kind", "CronTab"},
                 {"metadata", {{"name", "c"}, {"namespace", "default"}}},
                 {"spec", {{"v", value}}}};
  FieldErrors errs;
  validate(schema, object, errs);
  std::vector<std::string> out;
  for (const FieldError& e : errs) out.push_back(e.to_string());
  return out;
}

TEST_CASE("a pattern with nested repetition refuses a long value promptly", "[apiserver][crd]") {
  const std::string value(100000, 'a');
  auto start = Clock::now();
  std::vector<std::string> errors = pattern_errors("^(a+)+b$", value);
  CHECK(Clock::now() - start < kPrompt);
  REQUIRE(errors.size() == 1);
  CHECK(errors[0].rfind("spec.v: Invalid value: \"aaaa", 0) == 0);
  CHECK(errors[0].find("spec.v in body should match '^(a+)+b$'") != std::string::npos);
  CHECK(pattern_errors("^(a+)+b$", value + "b").empty());
}

TEST_CASE("a 1 MiB value is matched without recursion over the input", "[apiserver][crd]") {
  const std::string value(1 << 20, 'a');
  auto start = Clock::now();
  CHECK(pattern_errors("^(a|aa)*$", value).empty());
  CHECK(pattern_errors("^(?:a*)*$", value).empty());
  CHECK(pattern_errors("(a+a+)+y", value).size() == 1);
  CHECK(pattern_errors("^[a-z]+\\z", value + "\n").size() == 1);
  CHECK(Clock::now() - start < kPrompt);

  std::string error;
  auto re = Regex::compile("(a*)*b|a{3}$", &error);
  REQUIRE(re != nullptr);
  std::size_t begin = 0, end = 0;
  REQUIRE(re->find(value, 0, &begin, &end));
  CHECK(begin == value.size() - 3);
  CHECK(end == value.size());
}

TEST_CASE("CEL's matches() on a 1 MiB string stays within its cost budget", "[apiserver][crd]") {
  json self = {{"s", std::string(1 << 20, 'a')}};
  std::string error;
  auto program = cel::compile("self.s.matches('^(a+)+b$')", &error);
  REQUIRE(program != nullptr);
  cel::EvalResult r = cel::evaluate(*program, self, nullptr);
  // Either answer is fine; what matters is that it returns (no hang, no crash).
  CHECK((r.ok ? r.value == false : r.cost_exceeded));
}

TEST_CASE("the regex API compiles once, reports Go's errors and refuses nothing kube accepts",
          "[apiserver][crd]") {
  std::string error;
  auto a = Regex::compile_cached("^v[0-9]+$", &error);
  auto b = Regex::compile_cached("^v[0-9]+$", &error);
  REQUIRE(a != nullptr);
  CHECK(a == b);
  CHECK(error.empty());
  CHECK(a->search("v12"));
  CHECK_FALSE(a->search("v12x"));

  CHECK(Regex::compile_cached("a(b", &error) == nullptr);
  CHECK(error == "error parsing regexp: missing closing ): `a(b`");
  CHECK(Regex::compile("a(b", nullptr) == nullptr);  // the error is optional

  // Nesting is bounded as in Go, so the parser's recursion is too.
  std::string deep = std::string(2000, '(') + "a" + std::string(2000, ')');
  CHECK(Regex::compile(deep, &error) == nullptr);
  CHECK(error.find("expression nests too deeply") != std::string::npos);

  // Unicode classes are RE2 syntax the engine lacks: CEL learns why, the schema keyword skips it.
  CHECK(Regex::compile("^\\p{L}+$", &error) == nullptr);
  CHECK(error.find("not supported by vkube") != std::string::npos);
  CHECK(pattern_errors("^\\p{L}+$", "123").empty());
  // Invalid patterns still read as Go's error, as before.
  CHECK(pattern_errors("(a", "x") ==
        std::vector<std::string>{"spec.v: Invalid value: \"x\": spec.v in body should match '(a, "
                                 "but pattern is invalid: error parsing regexp: missing closing ): "
                                 "`(a`'"});
}

}  // namespace
}  // namespace vkube::apiserver::crd
