#include "vkube/common/memory.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include <catch2/catch.hpp>

namespace {

// Resident KiB of the mapping of this process that holds `address`.
int64_t resident_kib_at(const void* address) {
  auto at = reinterpret_cast<uintptr_t>(address);
  FILE* in = std::fopen("/proc/self/smaps", "re");
  REQUIRE(in != nullptr);
  char line[4096];
  bool inside = false;
  int64_t rss = -1;
  while (std::fgets(line, sizeof line, in) != nullptr) {
    unsigned long long start = 0, end = 0;
    if (std::sscanf(line, "%llx-%llx ", &start, &end) == 2 &&
        std::strchr(line, '-') < std::strchr(line, ' ')) {
      inside = start <= at && at < end;
      continue;
    }
    if (inside && std::strncmp(line, "Rss:", 4) == 0) {
      rss = std::atoll(line + 4);
      break;
    }
  }
  std::fclose(in);
  return rss;
}

int square(int x) {
  return x * x;
}

}  // namespace

TEST_CASE("release_code_pages unmaps resident code, which still runs after", "[common]") {
  auto* code = reinterpret_cast<const void*>(&square);
  int64_t before = resident_kib_at(code);
  REQUIRE(before > 0);  // this very test's code is resident
  size_t released = vkube::release_code_pages();
  CHECK(released > 0);
  int64_t after = resident_kib_at(code);
  // Only what ran since (the smaps reader, Catch2) is back in.
  CHECK(after < before);
  volatile int x = 7;
  CHECK(square(x) == 49);
}
