#include "vkube/common/json_scan.h"

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <catch2/catch.hpp>

namespace {

using Members = std::vector<std::pair<std::string, std::string>>;

// The members the scan finds, or nothing when it gives up.
std::optional<Members> members(std::string_view text) {
  Members out;
  bool ok = vkube::json_scan::for_each_member(text, [&](std::string_view k, std::string_view v) {
    out.emplace_back(std::string(k), std::string(v));
    return true;
  });
  if (!ok) return std::nullopt;
  return out;
}

}  // namespace

TEST_CASE("the JSON scan finds an object's members without parsing their values", "[json_scan]") {
  auto m =
      members(R"({"apiVersion":"v1","data":{"a":"}{][\"","b":[1,{"c":"]"}]},"kind":"ConfigMap",)"
              R"("metadata":{"name":"x","n":-1.5e3,"t":true,"z":null}})");
  REQUIRE(m);
  REQUIRE(m->size() == 4);
  CHECK((*m)[0] == std::pair<std::string, std::string>("apiVersion", "\"v1\""));
  CHECK((*m)[1].second == R"({"a":"}{][\"","b":[1,{"c":"]"}]})");
  CHECK((*m)[2].second == "\"ConfigMap\"");
  auto meta = members((*m)[3].second);
  REQUIRE(meta);
  CHECK(*meta == Members{{"name", "\"x\""}, {"n", "-1.5e3"}, {"t", "true"}, {"z", "null"}});
}

TEST_CASE("the JSON scan handles whitespace, escapes and empty objects", "[json_scan]") {
  auto m = members(" {\n \"a\\\"b\" : \"x\\\\\" ,\t\"c\":[ ] , \"d\" : { } } ");
  REQUIRE(m);
  CHECK(*m == Members{{"a\\\"b", "\"x\\\\\""}, {"c", "[ ]"}, {"d", "{ }"}});
  auto empty = members("{}");
  REQUIRE(empty);
  CHECK(empty->empty());
}

TEST_CASE("the JSON scan gives up on text that is not one object", "[json_scan]") {
  for (std::string_view bad :
       {"", "[]", "\"s\"", "{", "{\"a\"}", "{\"a\":}", "{\"a\":1", "{\"a\":\"x}", "{\"a\":1}x",
        "{\"a\":1,}", "{a:1}", "{\"a\":1 \"b\":2}", "{\"a\":{\"b\":1}"}) {
    INFO(bad);
    CHECK_FALSE(members(bad));
  }
}

TEST_CASE("the JSON scan stops when asked to", "[json_scan]") {
  int seen = 0;
  bool ok = vkube::json_scan::for_each_member(R"({"a":1,"b":2,"c":3})", [&](auto k, auto) {
    ++seen;
    return k != "b";
  });
  CHECK(ok);
  CHECK(seen == 2);
  CHECK(vkube::json_scan::skip_value(R"(  {"x":"}"} , 1)", 0) == 11);
  CHECK(vkube::json_scan::skip_value("12,", 0) == 2);
  CHECK(vkube::json_scan::skip_value("   ", 0) == vkube::json_scan::npos);
}

TEST_CASE("the JSON scan walks an array's elements without parsing them", "[json_scan]") {
  auto elements = [](std::string_view text) -> std::optional<std::vector<std::string>> {
    std::vector<std::string> out;
    if (!vkube::json_scan::for_each_element(text, [&](std::string_view v) { out.emplace_back(v); }))
      return std::nullopt;
    return out;
  };
  auto e = elements(R"( [ {"name":"a","args":["]",","]} , "x" ,[1,2],null ] )");
  REQUIRE(e.has_value());
  CHECK(*e ==
        std::vector<std::string>{R"({"name":"a","args":["]",","]})", R"("x")", "[1,2]", "null"});
  CHECK(elements("[]") == std::vector<std::string>{});
  CHECK_FALSE(elements(R"({"a":1})").has_value());
  CHECK_FALSE(elements("[1,2").has_value());
  CHECK_FALSE(elements("[1 2]").has_value());
  CHECK_FALSE(elements("[1],").has_value());
}
