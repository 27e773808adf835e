/*!
 * \file target/gpu_pipeline.h
 * \brief Whether the module is being compiled for a GPU: there, TVM's Relax pipeline schedules
 *        the PrimFuncs it fuses (dlight's default schedules) after legalization, and only a
 *        PrimFunc already bound to threads may be rewritten in place. And whether its kernels
 *        will be captured into CUDA graphs (RewriteCUDAGraph, which TVM's cuda pipeline and
 *        MLC-LLM's run after memory planning).
 *
 * \code
 *   with tvm.target.Target("cuda"):  CompilingForGPU() == true   (the target has key "gpu")
 *   with tvm.target.Target("llvm"):  CompilingForGPU() == false
 *   outside a target scope:          CompilingForGPU() == false
 *   with PassContext(config={"relax.backend.use_cuda_graph": True}):
 *                                    CapturingCudaGraphs() == true
 * \endcode
 */
#ifndef TVM_MEMPLAN_TARGET_GPU_PIPELINE_H_
#define TVM_MEMPLAN_TARGET_GPU_PIPELINE_H_

namespace tvm_memplan {
namespace target {

/*! \brief Whether the current target (tvm.target.Target.current()) has the key "gpu". */
bool CompilingForGPU();

/*! \brief Whether the current PassContext sets `relax.backend.use_cuda_graph` (what
 *         RewriteCUDAGraph reads to capture). */
bool CapturingCudaGraphs();

}  // namespace target
}  // namespace tvm_memplan

#endif  // TVM_MEMPLAN_TARGET_GPU_PIPELINE_H_
