// Watch streams: storage watch events encoded as Kubernetes watch events
// ({"type":...,"object":...} lines) on chunked HTTP responses.
//
// A storage watch's notifier only queues its stream on a lane; the lane
// encodes and writes, so writers never wait on watch clients, and an event
// shared by many watchers is encoded once per lane. A stream's lane is the
// transport thread of its connection (http::StreamHome): one task there
// drains every stream an event woke and writes each straight to its socket.
// Streams whose sink has no home are drained by the dispatcher's own thread,
// which also times out streams and sends bookmarks.
#pragma once

#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "list_common.h"
#include "metrics.h"
#include "table.h"

namespace vkube::apiserver {

class WatchStream;

struct WatchSpec {
  const Kind* kind = nullptr;
  std::shared_ptr<const KindSet> kinds;  // owns `kind` for the watch's life
  ListQuery query;         // selectors (limit/continue unused)
  bool table = false;      // objects as meta.k8s.io Tables (kubectl get -w)
  IncludeObject include = IncludeObject::kMetadata;
  bool bookmarks = false;  // allowWatchBookmarks
  int64_t timeout_seconds = 1800;
  storage::Backend* backend = nullptr;
  storage::Revision start_revision = 0;  // the watch delivers events after it
  // Brings an event's object to the version watched (a CRD's conversion webhook, called on
  // the stream's thread); empty: nothing to do. A failure becomes an ERROR event.
  std::function<Status(json&)> convert;
};

class WatchDispatcher {
 public:
  explicit WatchDispatcher(Metrics& metrics);
  ~WatchDispatcher();

  // A stream over `watch`, first sending `initial` (encoded event lines).
  std::shared_ptr<http::ResponseStream> open(std::unique_ptr<storage::Watch> watch, WatchSpec spec,
                                             std::string initial);
  // A stream that sends one ERROR event and ends (e.g. 410 Expired).
  std::shared_ptr<http::ResponseStream> error_stream(const ApiError& e);
  // Ends every stream; later streams end at once.
  void shutdown();

  // Encodes one event as a watch event line for a spec ("" when filtered out).
  std::string encode(const WatchSpec& spec, const storage::Event& e);
  std::string encode_object(const WatchSpec& spec, const char* type, json obj);

 private:
  friend class WatchStream;
  struct Lane;
  // The lane of the streams written from `home`'s thread; own_ for none.
  std::shared_ptr<Lane> lane_for(const std::shared_ptr<http::StreamHome>& home);
  void wake_own();
  void add(const std::shared_ptr<WatchStream>& s);
  void remove(WatchStream* s);
  void run();
  void tick_all();

  Metrics& metrics_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::shared_ptr<Lane> own_;  // drained by thread_
  bool own_ready_ = false;
  std::map<http::StreamHome*, std::shared_ptr<Lane>> lanes_;
  std::set<std::shared_ptr<WatchStream>> streams_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace vkube::apiserver
