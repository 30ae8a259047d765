// A process-wide, bounded, thread-safe cache of compiled expressions (CEL
// programs, regexes) keyed by their source text, remembering compile errors
// too: rules and patterns run on every write, and are compiled once.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

namespace vkube::cel {

template <typename T>
class CompileCache {
 public:
  explicit CompileCache(size_t max_entries) : max_entries_(max_entries) {}

  // The compiled form of `source` (nullptr and *error set when it does not
  // compile), calling compile(source, error) on a miss. The cache is emptied
  // when full, so memory stays bounded whatever sources clients send.
  template <typename Compile>
  std::shared_ptr<const T> get(std::string_view source, std::string* error, Compile&& compile) {
    std::string key(source);
    {
      std::lock_guard lock(mu_);
      if (auto it = entries_.find(key); it != entries_.end()) {
        if (error != nullptr) *error = it->second.error;
        return it->second.compiled;
      }
    }
    Entry e;
    e.compiled = compile(source, &e.error);  // outside the lock: compiling may take a while
    if (error != nullptr) *error = e.error;
    std::lock_guard lock(mu_);
    if (entries_.size() >= max_entries_) entries_.clear();
    entries_.emplace(std::move(key), e);
    return e.compiled;
  }

 private:
  struct Entry {
    std::shared_ptr<const T> compiled;
    std::string error;
  };
  const size_t max_entries_;
  std::mutex mu_;
  std::unordered_map<std::string, Entry> entries_;
};

}  // namespace vkube::cel
