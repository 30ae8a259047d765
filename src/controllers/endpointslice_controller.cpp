// Placeholder until this controller is written: the factory returns null,
// and the manager skips it.
#include "controller.h"

namespace vkube::controllers {

std::unique_ptr<Controller> make_endpointslice_controller(Context&) { return nullptr; }

}  // namespace vkube::controllers
