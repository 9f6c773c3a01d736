#include "controller/core/controller.h"

#include "controller/core/controller_impl.h"

namespace tlbfleet::core {

std::unique_ptr<Controller> Controller::Create(store::Store& store, ControllerOptions options,
                                               const Clock& clock) {
  return std::make_unique<ControllerImpl>(store, options, clock);
}

}  // namespace tlbfleet::core
