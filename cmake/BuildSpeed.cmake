# What a fresh build costs (README, "Build times"): debug info, precompiled
# headers, lighter optimisation of the tests.
#
# Measured on a 2-core machine (GCC 12, one TU of the API server and one unit
# test, user CPU): -O2 -g 12.7 s and 13.8 s, of which parsing (-fsyntax-only)
# is 4 s, most of it the standard library (87k of 149k preprocessed lines)
# and nlohmann/json (14k); full debug info costs a third of every compile.

# -g1 keeps functions and line tables, enough for backtraces in gdb, perf and
# core dumps, but no local variables: a third less compiling per TU.
# -DVKUBE_DEBUG_INFO=full gives -g back for a debugging session.
set(VKUBE_DEBUG_INFO lines CACHE STRING "Debug info of RelWithDebInfo builds: lines (-g1) or full (-g)")
set_property(CACHE VKUBE_DEBUG_INFO PROPERTY STRINGS lines full)
if(VKUBE_DEBUG_INFO STREQUAL "lines")
  # After CMAKE_CXX_FLAGS_RELWITHDEBINFO's -g on the command line: the last -g level wins.
  add_compile_options($<$<CONFIG:RelWithDebInfo>:-g1>)
endif()

# Precompiled headers: every module's TUs share one PCH of the standard
# headers most of them include and nlohmann/json; test TUs one more that adds
# Catch2. GCC only (the libFuzzer build is clang, see tools/fuzz.sh). CMake
# passes -Winvalid-pch, so with -Werror a PCH GCC refuses fails the build
# instead of silently costing the time again.
option(VKUBE_PCH "Precompile the standard headers, nlohmann/json and Catch2" ON)
set(VKUBE_PCH_HEADERS
    <algorithm> <atomic> <chrono> <condition_variable> <cstdint> <functional> <map> <memory>
    <mutex> <optional> <set> <string> <string_view> <thread> <unordered_map> <utility> <vector>
    <nlohmann/json.hpp>)

# Tests exercise the libraries as shipped (-O2); their own code, mostly
# Catch2's assertion macros, compiles 40 % faster at -O1 and runs as fast.
set(VKUBE_TEST_OPT -O1)

function(_vkube_pch_enabled out)
  if(VKUBE_PCH AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    set(${out} TRUE PARENT_SCOPE)
  else()
    set(${out} FALSE PARENT_SCOPE)
  endif()
endfunction()

# The targets holding the two PCHs, compiled with the flags of the targets
# that reuse them (GCC refuses a PCH built with other -O or -f options).
function(_vkube_pch_holder name headers)
  set(anchor ${PROJECT_BINARY_DIR}/${name}.cpp)
  if(NOT EXISTS ${anchor})
    file(WRITE ${anchor} "// Holds the precompiled header (cmake/BuildSpeed.cmake).\n")
  endif()
  add_library(${name} STATIC ${anchor})
  target_precompile_headers(${name} PRIVATE ${headers})
  target_link_libraries(${name} PRIVATE vkube_warnings)
endfunction()

# Sources compile in batches (CMake's unity build): the nlohmann/json, std and
# Catch2 templates a batch shares are instantiated and optimised once per batch
# instead of once per file. Eight unit test files took 21 s of CPU as one batch,
# 59 s one by one. A batch holds up to VKUBE_UNITY_BATCH files of one directory.
# Files whose file-local helpers (anonymous namespace, `static`) share a name
# must not meet in one batch: for src/ they are grouped in
# cmake/UnityClashes.cmake (written by tools/unity_clashes.py) and the batches
# are filled so that no two of a group meet; test files listed in
# VKUBE_UNITY_SOLO (tests/CMakeLists.txt) compile alone, as do the files of
# the directories in VKUBE_UNITY_SOLO_DIRS.
option(VKUBE_UNITY "Compile the test sources in batches (unity build)" ON)
option(VKUBE_UNITY_SRC "Compile the vkube sources (src/) in batches (unity build)" ON)
set(VKUBE_UNITY_BATCH 8 CACHE STRING "Sources per unity batch")
include(${CMAKE_CURRENT_LIST_DIR}/UnityClashes.cmake)

# partners_<file id> in the caller's scope: the files that must not share its batch.
macro(_vkube_unity_partners)
  foreach(group IN LISTS VKUBE_UNITY_CLASHES)
    string(REPLACE "|" ";" members "${group}")
    foreach(a IN LISTS members)
      string(MAKE_C_IDENTIFIER "${a}" id)
      foreach(b IN LISTS members)
        if(NOT a STREQUAL b)
          list(APPEND partners_${id} ${b})
        endif()
      endforeach()
    endforeach()
  endforeach()
endmacro()

function(_vkube_unity_groups target)
  get_target_property(sources ${target} SOURCES)
  get_target_property(base ${target} SOURCE_DIR)
  set_target_properties(${target} PROPERTIES UNITY_BUILD ON UNITY_BUILD_MODE GROUP)
  _vkube_unity_partners()
  list(SORT sources)
  foreach(src IN LISTS sources)
    if(NOT src MATCHES "\\.(cpp|cc)$")
      continue()
    endif()
    get_filename_component(abs ${src} ABSOLUTE BASE_DIR ${base})
    file(RELATIVE_PATH rel ${PROJECT_SOURCE_DIR} ${abs})
    get_filename_component(dir ${rel} DIRECTORY)
    if(rel IN_LIST VKUBE_UNITY_SOLO OR rel IN_LIST VKUBE_UNITY_SOLO_SRC
       OR dir IN_LIST VKUBE_UNITY_SOLO_DIRS)
      continue()
    endif()
    string(MAKE_C_IDENTIFIER "${dir}" key)
    string(MAKE_C_IDENTIFIER "${rel}" id)
    # The first batch of the directory with room and none of this file's partners.
    set(batch 0)
    while(TRUE)
      set(members ${batch_${key}_${batch}})
      list(LENGTH members n)
      set(fits TRUE)
      if(n GREATER_EQUAL VKUBE_UNITY_BATCH)
        set(fits FALSE)
      endif()
      foreach(p IN LISTS partners_${id})
        if(p IN_LIST members)
          set(fits FALSE)
        endif()
      endforeach()
      if(fits)
        break()
      endif()
      math(EXPR batch "${batch} + 1")
    endwhile()
    list(APPEND batch_${key}_${batch} ${rel})
    set_source_files_properties(${abs} TARGET_DIRECTORY ${target}
                                PROPERTIES UNITY_GROUP ${key}_${batch})
  endforeach()
endfunction()

# vkube_test_target(TARGET): a Catch2 test executable: -O1, unity batches,
# the test PCH. Its runner comes from vkube_catch_main (tests/CMakeLists.txt):
# CATCH_CONFIG_MAIN must come before the first catch.hpp, which the PCH is.
function(vkube_test_target target)
  target_compile_options(${target} PRIVATE ${VKUBE_TEST_OPT})
  if(VKUBE_UNITY)
    _vkube_unity_groups(${target})
  endif()
  _vkube_pch_enabled(on)
  if(on)
    target_precompile_headers(${target} REUSE_FROM vkube_pch_tests)
  endif()
endfunction()

# Called once at the end of the top-level CMakeLists: gives every library and
# executable of the project that has no PCH of its own the module PCH, so a
# new module (a new CMakeLists with add_library) gets it without a line.
function(vkube_precompile_all)
  _vkube_pch_enabled(on)
  if(NOT on)
    return()
  endif()
  _vkube_code_targets(targets)
  foreach(t IN LISTS targets)
    get_target_property(own ${t} PRECOMPILE_HEADERS)
    get_target_property(reuse ${t} PRECOMPILE_HEADERS_REUSE_FROM)
    if(own OR reuse OR t MATCHES "^vkube_pch")
      continue()
    endif()
    # A PCH pays from about three TUs (compiling it costs about two TUs' parsing).
    get_target_property(sources ${t} SOURCES)
    list(FILTER sources INCLUDE REGEX "\\.(cpp|cc)$")
    list(LENGTH sources n)
    if(n LESS 3)
      continue()
    endif()
    target_precompile_headers(${t} REUSE_FROM vkube_pch)
  endforeach()
endfunction()

# Called once at the end of the top-level CMakeLists: batches the sources of
# every library and executable declared under src/.
function(vkube_unity_src)
  if(NOT VKUBE_UNITY_SRC)
    return()
  endif()
  _vkube_code_targets(targets)
  foreach(t IN LISTS targets)
    get_target_property(dir ${t} SOURCE_DIR)
    if(dir MATCHES "^${PROJECT_SOURCE_DIR}/src/")
      _vkube_unity_groups(${t})
    endif()
  endforeach()
endfunction()

# The project's libraries and executables, in every directory.
function(_vkube_code_targets out)
  _vkube_collect_targets(${PROJECT_SOURCE_DIR} all)
  set(code)
  foreach(t IN LISTS all)
    get_target_property(type ${t} TYPE)
    if(type MATCHES "^(STATIC_LIBRARY|EXECUTABLE)$")
      list(APPEND code ${t})
    endif()
  endforeach()
  set(${out} ${code} PARENT_SCOPE)
endfunction()

function(_vkube_collect_targets dir out)
  get_property(here DIRECTORY ${dir} PROPERTY BUILDSYSTEM_TARGETS)
  get_property(subdirs DIRECTORY ${dir} PROPERTY SUBDIRECTORIES)
  foreach(sub IN LISTS subdirs)
    _vkube_collect_targets(${sub} more)
    list(APPEND here ${more})
  endforeach()
  set(${out} ${here} PARENT_SCOPE)
endfunction()

_vkube_pch_enabled(_vkube_pch_on)
if(_vkube_pch_on AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
  # With a PCH, GCC 12 reports its known false positives on std::string
  # (inlined memcpy, PR 105329) from inside the standard headers, which it
  # otherwise keeps quiet as system headers: warnings, not errors.
  target_compile_options(vkube_warnings INTERFACE -Wno-error=array-bounds
    -Wno-error=stringop-overflow -Wno-error=stringop-overread -Wno-error=restrict)
endif()
if(_vkube_pch_on)
  _vkube_pch_holder(vkube_pch "${VKUBE_PCH_HEADERS}")
  _vkube_pch_holder(vkube_pch_tests "${VKUBE_PCH_HEADERS};<catch2/catch.hpp>")
  target_compile_options(vkube_pch_tests PRIVATE ${VKUBE_TEST_OPT})
endif()
if(_vkube_pch_on AND VKUBE_CCACHE)
  add_compile_options(-fpch-preprocess)
endif()

# LLVM's linker (Debian's lld, installed by tools/setup.sh): the 117 MB vkube
# binary links in 1.3 s instead of GNU ld's 5.5 s, and every test binary too.
option(VKUBE_LLD "Link with lld when the compiler accepts -fuse-ld=lld" ON)
if(VKUBE_LLD)
  include(CheckLinkerFlag)
  check_linker_flag(CXX -fuse-ld=lld VKUBE_HAVE_LLD)
  if(VKUBE_HAVE_LLD)
    add_link_options(-fuse-ld=lld)
  endif()
endif()
