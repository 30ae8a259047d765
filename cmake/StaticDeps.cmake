# Links the libraries vkube depends on statically (all but glibc), when their
# archives are installed (Debian's -dev packages ship them).
#
# Every tenant is a process of the vkube binary, and so is every `vkube create`.
# With a dozen shared libraries the dynamic loader mapped, relocated and
# resolved symbols in each of them at every start: a tenant started with
# ~120 more page faults and ~8 ms more CPU (of ~65 ms), and `vkube version`
# took 13 ms instead of 10.
#
# Include before the find_package calls: OpenSSL and Protobuf take their
# choice from variables; yaml-cpp's and RocksDB's packages name shared
# libraries, which vkube_static_deps() then swaps for the archives.
option(VKUBE_STATIC_DEPS "Link OpenSSL, protobuf, yaml-cpp, re2, the compression libraries and libstdc++ statically" ON)

if(VKUBE_STATIC_DEPS)
  set(OPENSSL_USE_STATIC_LIBS TRUE)
  set(Protobuf_USE_STATIC_LIBS ON)
  add_link_options(-static-libstdc++ -static-libgcc)
endif()

function(vkube_static_deps)
  if(NOT VKUBE_STATIC_DEPS)
    return()
  endif()
  find_library(VKUBE_YAML_CPP_A NAMES libyaml-cpp.a)
  if(VKUBE_YAML_CPP_A AND TARGET yaml-cpp)
    set_target_properties(yaml-cpp PROPERTIES IMPORTED_LOCATION "${VKUBE_YAML_CPP_A}"
                                              IMPORTED_LOCATION_NONE "${VKUBE_YAML_CPP_A}")
  endif()
  find_library(VKUBE_RE2_A NAMES libre2.a)
  if(VKUBE_RE2_A AND TARGET PkgConfig::re2)
    set_target_properties(PkgConfig::re2 PROPERTIES INTERFACE_LINK_LIBRARIES
                                                    "${VKUBE_RE2_A};Threads::Threads")
  endif()
  set(archives)
  foreach(lib snappy z bz2 lz4 zstd)
    find_library(VKUBE_${lib}_A NAMES lib${lib}.a)
    if(NOT VKUBE_${lib}_A)
      message(STATUS "lib${lib}.a not found: RocksDB's compression libraries stay shared")
      return()
    endif()
    list(APPEND archives "${VKUBE_${lib}_A}")
  endforeach()
  if(TARGET RocksDB::rocksdb)
    get_target_property(rocksdb_location RocksDB::rocksdb IMPORTED_LOCATION_NONE)
    if(rocksdb_location MATCHES "\\.a$")
      set_target_properties(RocksDB::rocksdb PROPERTIES INTERFACE_LINK_LIBRARIES "${archives};Threads::Threads")
    endif()
  endif()
endfunction()
