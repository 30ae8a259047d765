// The storage conformance suite: the behaviour every Backend must have
// (kube-apiserver's storage/testing plays this role upstream). Run it from a
// TEST_CASE with a factory that opens the backend under test on a directory;
// opening the same directory again must find the same data.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "vkube/storage/backend.h"

namespace vkube::storage::testing {

using BackendFactory = std::function<std::unique_ptr<Backend>(const std::string& dir)>;

// Runs every conformance section against backends made by `open`.
void run_conformance(const BackendFactory& open);

}  // namespace vkube::storage::testing
