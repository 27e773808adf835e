/*!
 * \file target/gpu_pipeline.cc
 * \brief The current target, asked whether it is a GPU.
 */
#include "target/gpu_pipeline.h"

#include "ir/target.h"

namespace tvm_memplan {
namespace target {

bool CompilingForGPU() {
  std::optional<ir::Target> target = ir::CurrentTarget();
  return target && target->HasKey("gpu");
}

}  // namespace target
}  // namespace tvm_memplan
