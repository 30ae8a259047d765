// Helpers shared by the libFuzzer harnesses in tests/fuzz. Each harness file
// defines LLVMFuzzerTestOneInput; the standalone smoke driver compiles every
// harness into one binary with that name renamed per file (see CMakeLists.txt).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <utility>

#include "vkube/common/log.h"

namespace vkube::fuzz {

inline std::string_view as_text(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// Splits at the first NUL byte: harnesses that need two inputs (a document
// and a patch, a pattern and a text) take them this way, so a mutation that
// inserts or removes a NUL moves bytes from one input to the other.
inline std::pair<std::string_view, std::string_view> split2(std::string_view in) {
  size_t nul = in.find('\0');
  if (nul == std::string_view::npos) return {in, {}};
  return {in.substr(0, nul), in.substr(nul + 1)};
}

// An invariant the harness checks failed: print it and abort, which both
// libFuzzer and the smoke driver report as a crash with the input saved.
[[noreturn]] inline void invariant_failed(const char* what, const char* file, int line) {
  std::fprintf(stderr, "fuzz invariant failed at %s:%d: %s\n", file, line, what);
  std::abort();
}

// Warnings about malformed input are the expected outcome millions of times
// over: logging them would only slow the fuzzer down.
inline const bool kQuietLogs = (log::set_level(log::Level::off), true);

}  // namespace vkube::fuzz

#define FUZZ_CHECK(cond)                                                     \
  do {                                                                       \
    if (!(cond)) ::vkube::fuzz::invariant_failed(#cond, __FILE__, __LINE__); \
  } while (0)
