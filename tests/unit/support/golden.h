// Golden files for translator tests: inputs and expected outputs under a
// test's golden/ directory. VKUBE_UPDATE_GOLDEN=1 rewrites the expected
// output (review the diff before committing).
#pragma once

#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "support/source_dir.h"

namespace vkube::testing {

// `name` in the golden/ directory beside the test file `test_file` (__FILE__).
inline std::string golden_path(const char* test_file, const std::string& name) {
  return (source_dir_of(test_file) / "golden" / name).string();
}

inline nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  REQUIRE(in);
  std::stringstream ss;
  ss << in.rdbuf();
  return nlohmann::json::parse(ss.str());
}

// CHECKs `got` against the file at `path` (rewriting it first under
// VKUBE_UPDATE_GOLDEN).
inline void check_golden(const std::string& path, const nlohmann::json& got) {
  if (std::getenv("VKUBE_UPDATE_GOLDEN") != nullptr) std::ofstream(path) << got.dump(2) << "\n";
  INFO("got: " << got.dump(2));
  CHECK(got == read_json(path));
}

}  // namespace vkube::testing
