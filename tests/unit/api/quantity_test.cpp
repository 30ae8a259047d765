// Quantities as numbers: the readings tenants' requests and limits get.
#include <catch2/catch.hpp>

#include <cstdint>

#include <nlohmann/json.hpp>

#include "vkube/api/quantity.h"

namespace vkube::api {
namespace {

using nlohmann::json;
using namespace std::string_view_literals;

TEST_CASE("quantities read as thousandths and rounded-up units", "[api]") {
  CHECK(quantity_milli("100m"sv) == 100);
  CHECK(quantity_milli("1Ki"sv) == 1024000);
  CHECK(quantity_value(json("1Gi")) == 1073741824);
  CHECK(quantity_value(json("100m")) == 1);
  CHECK(quantity_milli(json(2)) == 2000);
  CHECK_FALSE(quantity_milli("1x"sv).has_value());
}

// Found by tests/fuzz/fuzz_quantity.cpp: a JSON integer was multiplied into
// thousandths unchecked, so a request of 2^63-1 CPUs overflowed (a negative
// request to the scheduler), and 2^64-1 read as -1.
TEST_CASE("JSON integer quantities too large to count are malformed, never wrapped", "[api]") {
  CHECK_FALSE(quantity_milli(json(INT64_MAX)).has_value());
  CHECK_FALSE(quantity_milli(json(INT64_MIN)).has_value());
  CHECK_FALSE(quantity_milli(json(UINT64_MAX)).has_value());
  CHECK_FALSE(quantity_value(json(UINT64_MAX)).has_value());
  CHECK(quantity_value(json(INT64_MIN + 1)) == std::nullopt);
  // The same bounds as the text forms.
  CHECK(quantity_milli(json(int64_t{9'000'000'000'000'000})) == int64_t{9'000'000'000'000'000'000});
  CHECK_FALSE(quantity_milli(json(int64_t{9'000'000'000'000'001})).has_value());
  CHECK_FALSE(quantity_milli("9000000000000001"sv).has_value());
  CHECK(quantity_value(json(uint64_t{9'000'000'000'000'000'000u})) ==
        int64_t{9'000'000'000'000'000'000});
  CHECK(quantity_milli(json(-5)) == -5000);
}

// Found by fuzz_quantity: zero with a huge exponent was 0 * inf, a NaN that
// was then converted to an integer (undefined behaviour; garbage in practice).
TEST_CASE("zero with any exponent is zero; a huge exponent is too large to count", "[api]") {
  CHECK(quantity_milli("0e72007"sv) == 0);
  CHECK(quantity_value(json("0e72007")) == 0);
  CHECK(quantity_number(json("-0E99999")) == 0);
  CHECK_FALSE(quantity_milli("1e72007"sv).has_value());
  CHECK_FALSE(quantity_value(json("1e72007")).has_value());
}

}  // namespace
}  // namespace vkube::api
