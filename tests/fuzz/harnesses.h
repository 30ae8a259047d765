// The list of fuzz harnesses: tests/fuzz/fuzz_<name>.cpp each. CMakeLists.txt
// keeps the same list (it renames each file's LLVMFuzzerTestOneInput to
// vkube_fuzz_<name> for the smoke driver).
#pragma once

#define VKUBE_FUZZ_HARNESSES(X) \
  X(json)                       \
  X(yaml)                       \
  X(protobuf)                   \
  X(duration)                   \
  X(selector)                   \
  X(quantity)                   \
  X(patch)                      \
  X(apply)                      \
  X(cel)                        \
  X(regex)                      \
  X(query)                      \
  X(http)                       \
  X(dns)                        \
  X(cron)                       \
  X(spdy)                       \
  X(websocket)
