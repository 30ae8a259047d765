// Name and value rules with the messages kube-apiserver gives for them
// (checked against k8s.io/apimachinery 1.32).
#include "vkube/api/validation.h"

#include <catch2/catch.hpp>

#include <functional>
#include <string>
#include <vector>

namespace vkube::api {
namespace {

using Errors = std::vector<std::string>;
using Validator = std::function<Errors(std::string_view)>;

const std::string kSubdomainMsg =
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used "
    "for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
const std::string kLabelMsg =
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and "
    "must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex "
    "used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
const std::string kDns1035Msg =
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
    "alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or "
    "'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";
const std::string kNameMsg =
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
    "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
const std::string kLabelValueMsg =
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
    "'my_value',  or '12345', regex used for validation is "
    "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";
const std::string kEnvVarMsg =
    "a valid environment variable name must consist of alphabetic characters, digits, '_', '-', "
    "or '.', and must not start with a digit (e.g. 'my.env-name',  or 'MY_ENV.NAME',  or "
    "'MyEnvName1', regex used for validation is '[-._a-zA-Z][-._a-zA-Z0-9]*')";

void check_valid(const Validator& validate, const std::vector<std::string>& values) {
  for (const std::string& v : values) {
    INFO("value: \"" << v << "\"");
    CHECK(validate(v).empty());
  }
}

void check_invalid(const Validator& validate, const std::vector<std::string>& values) {
  for (const std::string& v : values) {
    INFO("value: \"" << v << "\"");
    CHECK_FALSE(validate(v).empty());
  }
}

TEST_CASE("RFC 1123 labels", "[api]") {
  check_valid(validate_dns1123_label, {"a", "0", "a-b", "a--b", "123-abc", std::string(63, 'x')});
  check_invalid(validate_dns1123_label, {"", "-", "-a", "a-", "A", "a_b", "a.b", "a b", "é",
                                         "abc\n", std::string(64, 'x')});
  CHECK(validate_dns1123_label("My-Name") == Errors{kLabelMsg});
  CHECK(validate_dns1123_label("a.b") == Errors{"must not contain dots"});
  CHECK(validate_dns1123_label(std::string(64, 'x')) ==
        Errors{"must be no more than 63 characters"});
  CHECK(validate_dns1123_label(std::string(64, '-')) ==
        Errors{"must be no more than 63 characters", kLabelMsg});
}

TEST_CASE("RFC 1123 subdomains", "[api]") {
  std::string longest;
  while (longest.size() < 253) longest += longest.empty() ? "a" : ".a";
  check_valid(validate_dns1123_subdomain,
              {"a", "example.com", "a-1.b-2.c", std::string(253, 'x'), longest});
  check_invalid(validate_dns1123_subdomain, {"", ".", "a.", ".a", "a..b", "a.-b", "Example.com",
                                             "a_b.com", "a/b", std::string(254, 'x')});
  CHECK(validate_dns1123_subdomain("Example.com") == Errors{kSubdomainMsg});
  CHECK(validate_dns1123_subdomain(std::string(254, 'x')) ==
        Errors{"must be no more than 253 characters"});
  CHECK(validate_dns1123_subdomain(std::string(254, '.')) ==
        Errors{"must be no more than 253 characters", kSubdomainMsg});
}

TEST_CASE("RFC 1035 labels", "[api]") {
  check_valid(validate_dns1035_label, {"a", "my-name", "abc-123", std::string(63, 'x')});
  check_invalid(validate_dns1035_label, {"", "1abc", "-a", "a-", "A", "a.b", std::string(64, 'x')});
  CHECK(validate_dns1035_label("1abc") == Errors{kDns1035Msg});
  CHECK(validate_dns1035_label(std::string(64, 'x')) ==
        Errors{"must be no more than 63 characters"});
}

TEST_CASE("path segment names", "[api]") {
  check_valid(validate_path_segment_name, {"", "a", "system:admin", "a.b", "...", "..a", "A b"});
  CHECK(validate_path_segment_name(".") == Errors{"may not be '.'"});
  CHECK(validate_path_segment_name("..") == Errors{"may not be '..'"});
  CHECK(validate_path_segment_name("a/b") == Errors{"may not contain '/'"});
  CHECK(validate_path_segment_name("a/%") == Errors{"may not contain '/'", "may not contain '%'"});
}

TEST_CASE("qualified names (label and annotation keys)", "[api]") {
  check_valid(validate_qualified_name,
              {"a", "A", "MyName", "my.name", "123-abc", "a_b", "example.com/MyName", "k8s.io/a",
               std::string(63, 'x'), std::string(253, 'p') + "/" + std::string(63, 'n')});
  check_invalid(validate_qualified_name,
                {"", "-a", "a-", "_a", ".a", "a b", "a/", "/a", "a/b/c", "A.io/b", "a_b/c",
                 std::string(64, 'x'), std::string(254, 'p') + "/n"});
  CHECK(validate_qualified_name("_a") == Errors{"name part " + kNameMsg});
  CHECK(validate_qualified_name("") ==
        Errors{"name part must be non-empty", "name part " + kNameMsg});
  CHECK(validate_qualified_name("/a") == Errors{"prefix part must be non-empty"});
  CHECK(validate_qualified_name(std::string(64, 'x')) ==
        Errors{"name part must be no more than 63 characters"});
  CHECK(validate_qualified_name("Example.com/") == Errors{"prefix part " + kSubdomainMsg,
                                                          "name part must be non-empty",
                                                          "name part " + kNameMsg});
  CHECK(validate_qualified_name("a/b/c") ==
        Errors{"a qualified name " + kNameMsg +
               " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"});
}

TEST_CASE("label values", "[api]") {
  check_valid(validate_label_value,
              {"", "a", "MyValue", "my_value", "12345", "a.b-c_d", std::string(63, 'x')});
  check_invalid(validate_label_value,
                {"-a", "a-", "_", "a b", "a/b", "a=b", "é", std::string(64, 'x')});
  CHECK(validate_label_value("-a") == Errors{kLabelValueMsg});
  CHECK(validate_label_value(std::string(64, 'x')) == Errors{"must be no more than 63 characters"});
}

TEST_CASE("environment variable names", "[api]") {
  check_valid(validate_env_var_name,
              {"A", "my.env-name", "MY_ENV.NAME", "MyEnvName1", "_", "-", "a..b", ".a"});
  check_invalid(validate_env_var_name, {"", "1A", "a b", "a=b", "a$", ".", "..", "..a"});
  CHECK(validate_env_var_name("1A") == Errors{kEnvVarMsg});
  CHECK(validate_env_var_name(".") == Errors{"must not be '.'"});
  CHECK(validate_env_var_name("..") == Errors{"must not be '..'"});
  CHECK(validate_env_var_name("..a") == Errors{"must not start with '..'"});
  CHECK(validate_env_var_name("") == Errors{kEnvVarMsg});

  check_valid(validate_relaxed_env_var_name, {"1 A.b!", "a$b", "~", "."});
  CHECK(validate_relaxed_env_var_name("") == Errors{"environment variable name must be non-empty"});
  const Errors relaxed = {
      "a valid environment variable name must consist only of printable ASCII characters other "
      "than '='"};
  CHECK(validate_relaxed_env_var_name("a=b") == relaxed);
  CHECK(validate_relaxed_env_var_name("a\tb") == relaxed);
  CHECK(validate_relaxed_env_var_name("é") == relaxed);
}

}  // namespace
}  // namespace vkube::api
