/*!
 * \file target/gpu_pipeline.cc
 * \brief The current target, asked whether it is a GPU.
 */
#include "target/gpu_pipeline.h"

#include "ir/pass.h"
#include "ir/schema.h"
#include "ir/target.h"

namespace tvm_memplan {
namespace target {

bool CompilingForGPU() {
  std::optional<ir::Target> target = ir::CurrentTarget();
  return target && target->HasKey("gpu");
}

bool CapturingCudaGraphs() {
  ffi::ObjectRef pass_context = ir::schema::func::GetCurrentPassContext().cast<ffi::ObjectRef>();
  std::optional<ffi::Any> value =
      ir::PassConfigValue(pass_context, ir::schema::config::UseCudaGraph);
  return value && value->try_cast<bool>().value_or(false);
}

}  // namespace target
}  // namespace tvm_memplan
