// The watch cache (kube-apiserver's Cacher): a Backend that keeps the latest
// state of every key in memory, kept current by a watch on the backend it
// wraps, and serves latest-revision reads from memory. Writes, reads at past
// revisions and watches go to the wrapped backend. Events are applied before
// the writer is acknowledged, so a client always reads its own writes.
#pragma once

#include <memory>

#include "vkube/storage/backend.h"

namespace vkube::storage {

// Wraps `inner` (not owned; it must outlive the cache). kInternal when the
// initial list or watch fails.
Result<std::unique_ptr<Backend>> make_watch_cache(Backend& inner);

}  // namespace vkube::storage
