// Placeholder until this controller is written: the factory returns null,
// and the manager skips it.
#include "controller.h"

namespace vkube::controllers {

std::unique_ptr<Controller> make_replicaset_controller(Context&) { return nullptr; }

std::unique_ptr<Controller> make_replication_controller(Context&) { return nullptr; }

}  // namespace vkube::controllers
