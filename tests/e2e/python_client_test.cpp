// The Python kubernetes client (Debian python3-kubernetes): the checks live in
// python_client.py, which exits non-zero on the first one that fails.
#include "fixture.h"

namespace vkube::e2e {
namespace {

TEST_CASE("the Python client creates and lists and patches and deletes and watches", "[e2e]") {
  Cluster c;
  Result r =
      c.run({kPython, std::string(VKUBE_SOURCE_DIR) + "/tests/e2e/python_client.py"}, seconds(90));
  REQUIRE_THAT(r, Succeeded());
  CHECK_THAT(r.out, Catch::EndsWith("PASS\n"));
}

}  // namespace
}  // namespace vkube::e2e
