#include "vkube/common/memory.h"

#include <malloc.h>
#include <sys/mman.h>

#include <cctype>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

// jemalloc's control interface, present when the program links jemalloc
// (weak: null in programs that do not).
extern "C" int mallctl(const char* name, void* oldp, size_t* oldlenp, void* newp, size_t newlen)
    __attribute__((weak));

namespace vkube {

namespace {

struct Mapping {
  uintptr_t start = 0, end = 0;
  bool candidate = false;  // read-only and backed by a file
  int64_t rss_kib = 0, anonymous_kib = -1;
};

// Whether a maps/smaps header line names a file that still exists: not
// [vdso], [stack] and the like (no slash), not a deleted file.
bool names_live_file(std::string_view header) {
  return header.find('/') != std::string_view::npos &&
         header.find(" (deleted)") == std::string_view::npos;
}

int64_t kib_of(const std::string& line) {
  auto colon = line.find(':');
  return colon == std::string::npos ? 0 : std::atoll(line.c_str() + colon + 1);
}

}  // namespace

size_t release_file_pages() {
  std::ifstream in("/proc/self/smaps");
  if (!in) return 0;
  std::vector<Mapping> maps;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    // A mapping's header: "start-end perms offset dev inode [path]".
    if (std::isxdigit(static_cast<unsigned char>(line[0])) && line.find('-') < line.find(' ')) {
      Mapping m;
      char perms[8] = {};
      unsigned long long start = 0, end = 0;
      if (std::sscanf(line.c_str(), "%llx-%llx %7s", &start, &end, perms) != 3) continue;
      m.start = start;
      m.end = end;
      // Not writable, not shared, a live file.
      m.candidate = perms[1] == '-' && perms[3] == 'p' && names_live_file(line);
      maps.push_back(m);
      continue;
    }
    if (maps.empty()) continue;
    if (line.rfind("Rss:", 0) == 0)
      maps.back().rss_kib = kib_of(line);
    else if (line.rfind("Anonymous:", 0) == 0)
      maps.back().anonymous_kib = kib_of(line);
    else if (line.rfind("Locked:", 0) == 0 && kib_of(line) > 0)
      maps.back().candidate = false;
  }
  size_t released = 0;
  for (const Mapping& m : maps) {
    // Anonymous pages in a private file mapping are copies someone wrote
    // (relocations made read-only afterwards): dropping them would lose them.
    if (!m.candidate || m.anonymous_kib != 0 || m.rss_kib == 0) continue;
    if (madvise(reinterpret_cast<void*>(m.start), m.end - m.start, MADV_DONTNEED) == 0)
      released += static_cast<size_t>(m.rss_kib) * 1024;
  }
  return released;
}

size_t release_code_pages() {
  FILE* in = std::fopen("/proc/self/maps", "re");
  if (in == nullptr) return 0;
  size_t released = 0;
  char line[4096];
  while (std::fgets(line, sizeof line, in) != nullptr) {
    unsigned long long start = 0, end = 0;
    char perms[8] = {};
    if (std::sscanf(line, "%llx-%llx %7s", &start, &end, perms) != 3) continue;
    if (std::strcmp(perms, "r-xp") != 0 || !names_live_file(line)) continue;
    if (madvise(reinterpret_cast<void*>(start), end - start, MADV_DONTNEED) == 0)
      released += end - start;
  }
  std::fclose(in);
  return released;
}

void trim_heap() {
  if (mallctl == nullptr) {
    malloc_trim(0);
    return;
  }
  // "arena.<MALLCTL_ARENAS_ALL>.purge": every arena's unused dirty and
  // muzzy pages go back now rather than after their decay time, which
  // only passes while the process allocates.
  mallctl("arena.4096.purge", nullptr, nullptr, nullptr, 0);
}

const char* heap_allocator() {
  return mallctl != nullptr ? "jemalloc" : "glibc";
}

}  // namespace vkube
