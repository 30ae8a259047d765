// The namespace lifecycle controller: when a namespace is deleted it deletes
// everything in it (every namespaced resource that supports
// deletecollection, as found through discovery), reports progress in the
// namespace's status conditions, and finally clears the "kubernetes"
// finalizer so the namespace itself goes.
#pragma once

#include <memory>

#include "vkube/apiserver/apiserver.h"
#include "vkube/storage/backend.h"

namespace vkube::controllers {

class NamespaceController {
 public:
  // Starts the controller's thread, fed by a watch on the namespaces.
  static std::unique_ptr<NamespaceController> start(apiserver::ApiServer& api,
                                                    storage::Backend& store);
  virtual ~NamespaceController() = default;
  virtual void stop() = 0;
};

}  // namespace vkube::controllers
