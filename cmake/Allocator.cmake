# jemalloc for the embedded host (`vkube host`).
#
# The host's API server, controllers and node agent allocate and free the
# JSON trees of every object they handle from dozens of threads. With glibc's
# malloc that was a quarter of the host's CPU while a hundred tenants were
# created (malloc_consolidate and the bins' searches under _int_malloc, per
# `perf`); with jemalloc the host used about 15 % less CPU.
#
# Tenants keep glibc's malloc: a tenant is mostly start-up and then idles,
# and with jemalloc it held 3.5 MiB more (8.7 against 5.2 MiB of heap) and
# did not start faster. As both run from one binary, jemalloc is not linked
# in: `vkube host` runs itself again with Debian's libjemalloc.so.2 preloaded
# (src/cli/main.cpp), which this finds at configure time.
option(VKUBE_HOST_JEMALLOC "Preload jemalloc into vkube host, when installed" ON)

function(vkube_host_allocator target)
  if(NOT VKUBE_HOST_JEMALLOC OR VKUBE_SANITIZE)  # ASan must come first in the library list
    return()
  endif()
  find_library(VKUBE_JEMALLOC_SO NAMES libjemalloc.so.2)
  if(NOT VKUBE_JEMALLOC_SO)
    message(STATUS "libjemalloc.so.2 not found: vkube host uses glibc's malloc")
    return()
  endif()
  target_compile_definitions(${target} PRIVATE VKUBE_JEMALLOC_SO="${VKUBE_JEMALLOC_SO}")
endfunction()
