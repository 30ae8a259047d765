// Where a test's own files are. __FILE__ is not enough: with ccache's
// base_dir it is relative to the build folder, not to where a test runs.
#pragma once

#include <filesystem>
#include <string>

namespace vkube::testing {

// The folder of the test file `test_file` (__FILE__), absolute.
inline std::filesystem::path source_dir_of(const char* test_file) {
  std::filesystem::path p(test_file);
  if (p.is_absolute()) return p.parent_path();
  const std::string s = p.generic_string();
  const size_t at = s.find("tests/unit/");
  if (at == std::string::npos) return p.parent_path();
  return (std::filesystem::path(VKUBE_SOURCE_DIR) / s.substr(at)).parent_path();
}

}  // namespace vkube::testing
