// Catch2's runner, compiled once for the unit and e2e test binaries (tests/CMakeLists.txt).
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
