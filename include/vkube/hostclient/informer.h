// client-go's reflector + informer over HTTP: lists one resource of the host
// (optionally one namespace, label and field selectors), then watches from
// the list's resourceVersion, keeps the objects in a cache that implements
// controllers::Lister, and tells handlers about every change after the
// cache holds it. A broken watch resumes from the last seen revision; 410
// Gone relists and dispatches the difference, so handlers never miss a final
// state. Used by the syncer for the host side.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "vkube/controllers/informers.h"
#include "vkube/hostclient/client.h"

namespace vkube::hostclient {

struct InformerOptions {
  // The collection path, e.g. "/api/v1/namespaces/vkube-a/pods" or
  // "/api/v1/nodes".
  std::string path;
  std::string label_selector;
  std::string field_selector;
  // Names the resource in the events handlers get (ObjectEvent::resource).
  controllers::ResourceKey resource;
  size_t page_size = 500;  // list pages (limit/continue)
};

class Informer final : public controllers::Lister {
 public:
  Informer(Client& client, InformerOptions options);
  ~Informer() override;
  Informer(const Informer&) = delete;
  Informer& operator=(const Informer&) = delete;

  // Before start(): `handler` sees every event, after the cache changed, on
  // the informer's one thread, in order. It must be quick (queue keys).
  void on_event(controllers::Handler handler);

  // Starts the list + watch loop on its own thread; returns at once. Failed
  // lists are retried with backoff until stop().
  void start();
  void stop();
  // Blocks until the first list has been dispatched; false on timeout.
  bool wait_synced(std::chrono::milliseconds timeout) const;
  bool synced() const;

  // controllers::Lister (keys "ns/name", or "name" when cluster-scoped).
  using controllers::Lister::get;
  controllers::ObjectPtr get(std::string_view key) const override;
  std::vector<controllers::ObjectPtr> list(std::string_view ns = {}) const override;
  std::vector<controllers::ObjectPtr> controlled_by(std::string_view owner_uid) const override;
  size_t size() const override;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace vkube::hostclient
