// Identical LISTs served with one body (list.cpp): a burst of clients
// listing the same collection at once (informers of many controllers
// starting, `kubectl get` in a loop) costs one serialisation, and one copy
// of the answer in memory, instead of one per client.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "vkube/http/server.h"
#include "vkube/storage/backend.h"

namespace vkube::apiserver {

// A LIST's answer (200) as shared between requests.
struct ListBody {
  std::shared_ptr<const std::string> body;  // null: the builder failed
  std::vector<http::Header> headers;        // Content-Type
  storage::Revision revision = 0;           // the revision the list was read at
};

// The answers of LISTs by request (path, query, Accept: whatever changes the
// bytes), each kept only while a response still holds it: the burst's body
// goes once the last client has it. A request may take an answer read at or
// after the revision current when it arrived (a LIST sees every write
// acknowledged before it), so a LIST after a write never gets an older one.
// Authentication and authorization stay each request's own: only the bytes
// are shared. Thread-safe.
class ListBodies {
 public:
  class Build;

  // What a request gets: an answer to send (`body` set), or the duty to
  // build it (`build` set; others asking meanwhile wait for it), or neither
  // (build it alone: an answer being built was older than `arrived`).
  struct Claim {
    ListBody answer;
    std::unique_ptr<Build> build;
  };
  // `arrived`: the store's revision when the request came in. Blocks while
  // another request builds the same answer.
  Claim claim(const std::string& key, storage::Revision arrived);

  // The duty to build one answer. Publish it, or let it go unpublished
  // (an error answer): the requests waiting for it then build their own.
  class Build {
   public:
    ~Build();
    Build(const Build&) = delete;
    Build& operator=(const Build&) = delete;
    void publish(ListBody answer);

   private:
    friend class ListBodies;
    struct Slot;
    Build(ListBodies& owner, std::string key, std::shared_ptr<Slot> slot);
    void finish(ListBody answer);
    ListBodies& owner_;
    std::string key_;
    std::shared_ptr<Slot> slot_;
    bool finished_ = false;
  };

  // Requests with an answer kept or being built (for tests).
  size_t size();

 private:
  struct Entry {
    std::shared_ptr<Build::Slot> building;  // set while one is built
    std::weak_ptr<const std::string> body;  // the last answer, while held
    std::vector<http::Header> headers;
    storage::Revision revision = 0;
  };
  std::mutex mu_;
  std::unordered_map<std::string, Entry> entries_;  // guarded by mu_
};

}  // namespace vkube::apiserver
