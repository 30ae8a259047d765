// A service-account signing key for tests, made once per algorithm per run
// (RSA generation costs ~100 ms).
#pragma once

#include <map>
#include <mutex>
#include <string>

#include "support/temp_dir.h"
#include "vkube/pki/pki.h"

namespace vkube::testing {

inline std::string service_account_key(const std::string& alg = "ES256") {
  static std::mutex mu;
  static std::map<std::string, std::string> keys;
  std::lock_guard lock(mu);
  auto it = keys.find(alg);
  if (it != keys.end()) return it->second;
  TempDir dir;
  auto pem = pki::ensure_service_account_key(dir.path(), alg);
  std::string key = pem.is_ok() ? *pem : std::string();
  keys[alg] = key;
  return key;
}

}  // namespace vkube::testing
