/*!
 * \file target/gpu_pipeline.h
 * \brief Whether the module is being compiled for a GPU: there, TVM's Relax pipeline schedules
 *        the PrimFuncs it fuses (dlight's default schedules) after legalization, and only a
 *        PrimFunc already bound to threads may be rewritten in place.
 *
 * \code
 *   with tvm.target.Target("cuda"):  CompilingForGPU() == true   (the target has key "gpu")
 *   with tvm.target.Target("llvm"):  CompilingForGPU() == false
 *   outside a target scope:          CompilingForGPU() == false
 * \endcode
 */
#ifndef TVM_MEMPLAN_TARGET_GPU_PIPELINE_H_
#define TVM_MEMPLAN_TARGET_GPU_PIPELINE_H_

namespace tvm_memplan {
namespace target {

/*! \brief Whether the current target (tvm.target.Target.current()) has the key "gpu". */
bool CompilingForGPU();

}  // namespace target
}  // namespace tvm_memplan

#endif  // TVM_MEMPLAN_TARGET_GPU_PIPELINE_H_
