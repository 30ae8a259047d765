// The words kube-apiserver uses for a body it cannot read: Go's encoding/json
// syntax errors and apiserver's summary of the body, as clients see them.
#include <catch2/catch.hpp>

#include "apiserver/decode_error.h"

namespace vkube::apiserver {
namespace {

std::string syntax(std::string_view data) {
  return go_json_syntax_error(data).value_or("valid");
}

TEST_CASE("JSON syntax errors are worded as Go's encoding/json words them",
          "[apiserver][outside]") {
  CHECK(syntax("apiVersion: v1\nkind: Pod\n") ==
        "invalid character 'a' looking for beginning of value");
  CHECK(syntax("") == "unexpected end of JSON input");
  CHECK(syntax("  {\"a\": [1, 2") == "unexpected end of JSON input");
  CHECK(syntax("{foo}") == "invalid character 'f' looking for beginning of object key string");
  CHECK(syntax(R"({"a" 1})") == "invalid character '1' after object key");
  CHECK(syntax(R"({"a":1 "b":2})") == "invalid character '\"' after object key:value pair");
  CHECK(syntax("[1 2]") == "invalid character '2' after array element");
  CHECK(syntax("{}x") == "invalid character 'x' after top-level value");
  CHECK(syntax(std::string_view("{}\0", 3)) == "invalid character '\\x00' after top-level value");
  CHECK(syntax(R"("\q")") == "invalid character 'q' in string escape code");
  CHECK(syntax("\"a\nb\"") == "invalid character '\\n' in string literal");
  CHECK(syntax(R"("\u12x4")") == "invalid character 'x' in \\u hexadecimal character escape");
  CHECK(syntax("tru") == "invalid character ' ' in literal true (expecting 'e')");
  CHECK(syntax("nul!") == "invalid character '!' in literal null (expecting 'l')");
  CHECK(syntax("1.") == "invalid character ' ' after decimal point in numeric literal");
  CHECK(syntax("1e+") == "invalid character ' ' in exponent of numeric literal");
  CHECK(syntax("-x") == "invalid character 'x' in numeric literal");
  CHECK(syntax("'a'") == R"(invalid character '\'' looking for beginning of value)");
  CHECK(syntax("\xe9") == "invalid character '\xc3\xa9' looking for beginning of value");
  CHECK(syntax("\x85") == "invalid character '\\u0085' looking for beginning of value");

  for (const char* ok :
       {R"({"a":[1,-2.5e-3,0,true,false,null,"x\u00e9\n"]})", "{}", " [] ", "\"s\"", "12", "null"})
    CHECK(syntax(ok) == "valid");
}

TEST_CASE("a body is summarised as apiserver's summarizeData does", "[apiserver][outside]") {
  CHECK(summarize_body("") == "<empty>");
  CHECK(summarize_body(R"({"kind":"Pod"})") == R"({"kind":"Pod"})");
  CHECK(summarize_body("ab") == "6162");
  CHECK(summarize_body(std::string(40, '{')) == std::string(30, '{') + " ...");
  std::string hex;
  for (int i = 0; i < 30; ++i) hex += "61";
  CHECK(summarize_body(std::string(31, 'a')) == hex + " ...");
}

TEST_CASE("an unreadable body names the kind the URL wants", "[apiserver][outside]") {
  CHECK(unrecognized_body_message("Namespace", "apiVersion: v1\nkind: Pod\n") ==
        "the object provided is unrecognized (must be of type Namespace): couldn't get "
        "version/kind; json parse error: invalid character 'a' looking for beginning of value "
        "(61706956657273696f6e3a2076310a6b696e643a20506f640a)");
  CHECK(unrecognized_body_message("ConfigMap", R"("just text")") ==
        "the object provided is unrecognized (must be of type ConfigMap): couldn't get "
        "version/kind; json parse error: json: cannot unmarshal string into Go value of type "
        R"(struct { APIVersion string "json:\"apiVersion,omitempty\""; Kind string )"
        R"("json:\"kind,omitempty\"" } (226a757374207465787422))");
  CHECK_FALSE(unrecognized_body_message("Pod", R"({"kind":"Pod"})"));
  CHECK_FALSE(unrecognized_body_message("Pod", "null"));
}

}  // namespace
}  // namespace vkube::apiserver
