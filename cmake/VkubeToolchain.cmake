# Compiler cache, warnings and sanitizers shared by every vkube target.

find_program(VKUBE_CCACHE ccache)
if(VKUBE_CCACHE AND NOT CMAKE_CXX_COMPILER_LAUNCHER)
  # ccache caches TUs that use a precompiled header only with these
  # sloppinesses (its manual, "Precompiled headers"; -fpch-preprocess is added
  # in cmake/BuildSpeed.cmake). ccache 4.7 takes them from the environment.
  set(CMAKE_CXX_COMPILER_LAUNCHER
      env CCACHE_SLOPPINESS=pch_defines,time_macros,include_file_mtime,include_file_ctime
      ${VKUBE_CCACHE})
  message(STATUS "vkube: using ccache at ${VKUBE_CCACHE}")
endif()

# vkube_warnings is linked PRIVATE by every vkube target so third-party
# headers (included as SYSTEM) stay out of the warning set.
add_library(vkube_warnings INTERFACE)
target_compile_options(vkube_warnings INTERFACE
  -Wall -Wextra -Wpedantic -Wshadow=local -Wnon-virtual-dtor -Wcast-align
  -Woverloaded-virtual -Wimplicit-fallthrough)
if(VKUBE_WERROR)
  target_compile_options(vkube_warnings INTERFACE -Werror)
endif()

if(VKUBE_SANITIZE)
  add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
  add_link_options(-fsanitize=address,undefined)
  # GCC 12's flow analysis under the sanitizers reports std::function members
  # inside std::regex as maybe uninitialized: a false positive.
  target_compile_options(vkube_warnings INTERFACE -Wno-maybe-uninitialized)
endif()

# vkube_module(NAME SOURCES... [PUBLIC_DEPS ...] [PRIVATE_DEPS ...])
# declares library vkube_NAME with the public headers in include/.
function(vkube_module name)
  cmake_parse_arguments(ARG "" "" "SOURCES;PUBLIC_DEPS;PRIVATE_DEPS" ${ARGN})
  add_library(vkube_${name} STATIC ${ARG_SOURCES})
  target_include_directories(vkube_${name} PUBLIC ${PROJECT_SOURCE_DIR}/include
                                           PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
  target_link_libraries(vkube_${name} PUBLIC ${ARG_PUBLIC_DEPS} PRIVATE ${ARG_PRIVATE_DEPS} vkube_warnings)
endfunction()
