// Giving memory back while idle.
#pragma once

#include <cstddef>

namespace vkube {

// Unmaps this process's resident pages of read-only file mappings (the
// binary's and the shared libraries' code and constants) that hold no
// private copy, as after exec: start-up touched far more code than an idle
// server runs. The pages stay in the page cache, shared with every other
// process of the binary; those still needed are mapped again by a minor
// fault on first use. So RSS shows the working set, not start-up's
// footprint. Mappings that are or were written (.data, relocated RELRO
// pages: they hold "Anonymous" pages) are never touched. Returns the bytes
// that were resident in the mappings released.
size_t release_file_pages();

// The same for executable mappings only (code is never written, so no
// private copies to check for), read from /proc/self/maps instead of
// smaps: it costs tens of microseconds rather than milliseconds, cheap
// enough to run soon after start-up while hundreds of tenants start.
// Returns the bytes of the mappings released (resident or not).
size_t release_code_pages();

// Gives the heap's free memory back to the system: jemalloc's dirty pages
// of every arena when the process runs jemalloc (preloaded, as `vkube host`
// does: cmake/Allocator.cmake), else glibc's malloc_trim.
void trim_heap();

// "jemalloc" when this process runs jemalloc (linked or preloaded), else
// "glibc".
const char* heap_allocator();

}  // namespace vkube
