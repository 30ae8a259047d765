// WatchHub: serves many watchers from the one ordered stream of committed
// events. The committing writer publishes each commit group once; the hub
// appends it to a bounded in-memory history and to the bounded queue of every
// watcher whose prefix matches. A watcher whose queue overflows is ended
// alone, with kExpired ("re-list"), so a slow reader never blocks writers or
// other watchers.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_set>
#include <vector>

#include "vkube/storage/backend.h"

namespace vkube::storage {

// Reads the events with revision in (after, until] whose key has `prefix`
// from durable history, at most `max` of them, in revision order. Sets *next
// to the revision after the last one examined. kExpired if compacted.
using HistoryReader = std::function<Status(const std::string& prefix, Revision after,
                                           Revision until, size_t max,
                                           std::vector<EventPtr>* out, Revision* next)>;

class WatchHub {
 public:
  // history_events: how many recent events to keep in memory;
  // buffer_events: per-watcher bound on undelivered events.
  WatchHub(size_t history_events, size_t buffer_events, size_t history_bytes = 16u << 20);
  ~WatchHub();
  WatchHub(const WatchHub&) = delete;
  WatchHub& operator=(const WatchHub&) = delete;

  // The revision of the last published event; set once at open.
  void reset(Revision last_revision);

  // Publishes committed events, in revision order, contiguous with the last.
  // Called by one thread at a time (the commit leader).
  void publish(const std::vector<EventPtr>& events);

  // A watcher for events with revision > after (after == 0: from now).
  // Events older than the in-memory history are read through `reader` by
  // the watcher's own poll calls.
  std::unique_ptr<Watch> subscribe(std::string prefix, Revision after, HistoryReader reader);

  // Ends every watcher with kCancelled (store closing). Later subscriptions
  // are ended at once.
  void close();

  size_t watcher_count() const;

  struct Core;

 private:
  std::shared_ptr<Core> core_;
};

}  // namespace vkube::storage
