// The controllers' shared view of the tenant's objects (client-go's shared
// informers, fed by the internal watch instead of HTTP): one watch over the
// whole "/registry/" keyspace, each stored object parsed once, per-resource
// caches, and handlers told about every change after the cache holds it.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "vkube/storage/backend.h"

namespace vkube::controllers {

using json = nlohmann::json;
// An object as stored, with metadata.resourceVersion set and without
// metadata.managedFields (no controller reads them). Immutable and shared:
// copy it (json copy = *ptr) before changing it.
using ObjectPtr = std::shared_ptr<const json>;

// A resource as stored: "/registry/<group>/<plural>/" with group "core" for
// the legacy group (e.g. {"apps", "deployments"}, {"core", "pods"}).
struct ResourceKey {
  std::string group;
  std::string plural;
  bool operator==(const ResourceKey&) const = default;
};

enum class EventType { kAdded, kModified, kDeleted };

struct ObjectEvent {
  EventType type = EventType::kAdded;
  ResourceKey resource;
  std::string key;     // "ns/name" for namespaced objects, "name" otherwise
  ObjectPtr object;    // the new state; for deletes the last state
  ObjectPtr old;       // the state before (modified and deleted); null for adds
};

using Handler = std::function<void(const ObjectEvent&)>;

// A read-only, thread-safe view of one resource's objects.
class Lister {
 public:
  virtual ~Lister() = default;
  // The object "ns/name" (or "name" when cluster-scoped); null when absent.
  virtual ObjectPtr get(std::string_view key) const = 0;
  ObjectPtr get(std::string_view ns, std::string_view name) const;
  // Every object (ns empty) or those in one namespace, in key order.
  virtual std::vector<ObjectPtr> list(std::string_view ns = {}) const = 0;
  // Objects whose controller ownerReference (controller: true) has this uid.
  virtual std::vector<ObjectPtr> controlled_by(std::string_view owner_uid) const = 0;
  virtual size_t size() const = 0;
};

class Informers {
 public:
  explicit Informers(storage::Backend& store);
  ~Informers();
  Informers(const Informers&) = delete;
  Informers& operator=(const Informers&) = delete;

  // Which objects of a resource a cache keeps, by key ("ns/name" or "name").
  using KeyFilter = std::function<bool(std::string_view key)>;

  // Before start(): caches the objects of `resource` and returns their view.
  // Calling it twice for one resource returns the same view. With `only`,
  // the cache keeps just the objects it accepts (a controller that reads one
  // ConfigMap per namespace need not parse every ConfigMap written); a call
  // without it for the same resource makes the cache keep everything.
  const Lister& cache(const ResourceKey& resource, KeyFilter only = nullptr);
  // Before start(): `handler` sees every event of `resource` (which is then
  // cached), after the cache changed. Objects the cache's filter leaves out
  // come to it with apiVersion, kind and metadata only. Handlers run on the one dispatch
  // thread, in revision order: they must be quick (queue keys, no writes).
  void on_event(const ResourceKey& resource, Handler handler);
  // Before start(): `handler` sees every event of every resource (the
  // garbage collector). Objects of resources nobody caches come to it with
  // apiVersion, kind and metadata only (the rest is not even parsed).
  void on_any_event(Handler handler);

  // Lists everything, dispatches it as kAdded, then follows the watch on the
  // dispatch thread. Returns once the initial list is dispatched. When the
  // watch expires (fell behind or compacted) it re-lists and dispatches the
  // difference, so handlers never miss a final state.
  Status start();
  void stop();

  // Blocks until every event up to `revision` has been dispatched; false on
  // timeout. Controllers call it after their writes (with the store's
  // current revision) so their next look at the caches includes them.
  bool wait_for(storage::Revision revision,
                std::chrono::milliseconds timeout = std::chrono::seconds(5));
  // wait_for(the store's current revision).
  bool sync(std::chrono::milliseconds timeout = std::chrono::seconds(5));
  storage::Revision dispatched_revision() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace vkube::controllers
