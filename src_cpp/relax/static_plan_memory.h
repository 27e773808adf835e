/*!
 * \file relax/static_plan_memory.h
 * \brief tvm-memplan's StaticPlanBlockMemory: a drop-in for TVM's, at the same point of the
 *        pipeline (after CallTIRRewrite), that packs the tensors of each Relax function at
 *        offsets of one storage per device and storage scope.
 *
 * \code
 *   # before (after CallTIRRewrite)                  # after
 *                                                    storage = R.memory.alloc_storage(
 *                                                        R.shape([768]), 0, "global", "uint8")
 *   a = R.builtin.alloc_tensor(R.shape([64]),        a = R.memory.alloc_tensor(storage, 0,
 *       "float32", 0, "global")                          R.shape([64]), "float32", 0)
 *   cls.exp(x, a)                                    cls.exp(x, a)
 *   b = R.builtin.alloc_tensor(R.shape([128]), ...)  b_at = R.memory.alloc_tensor(storage, 256,
 *                                                        R.shape([128]), "float32", 0)
 *                                                    b = R.memory.ensure_zero_offset(b_at)
 *   cls.concat(a, a, b)                              cls.concat(a, a, b)
 * \endcode
 *
 * First, an in-place write into a constant, or into a value read afterwards, whichever pass
 * made it, gets a copy to write (relax/inplace_guard.h): the guarantee does not depend on the
 * passes between the in-place pass and this one (FoldConstant can make an in-place argument a
 * constant). The plans come from relax/memory_plan_analysis.h (which states the rules); the rewrite
 * only applies them: the storages and placements of ours, or the function as TVM's planner made it
 * where the analysis chose it, and in both the entry checks of the bounds the plan relies on. The
 * storages are allocated at the function's start (the first binding block, or a block of their own
 * before a dataflow block), so a tensor made in an `if` branch and read after it has storage in
 * scope. A tensor at a nonzero offset is bound to `ensure_zero_offset` of the allocation under its
 * own variable, so every use, and every PrimFunc, sees a tensor with no byte offset. Tensors the
 * analysis does not plan stay `R.builtin.alloc_tensor` (LowerAllocTensor gives each its own storage
 * later); functions it gives to the stock planner come out exactly as TVM's pass makes them.
 * Each storage is allocated at the size pool sizing chose (relax/pool_sizes.h): its own, or the
 * module's storage of the same rank, so TVM's pooled allocator reuses one block across functions.
 * The entry checks are calls of the VM's own shape match, first in the function: they need no later
 * pass (MLC-LLM's pipeline runs no ComputePrimValue), no Python in the runtime, and
 * RewriteCUDAGraph leaves them out of every captured graph, so they run on every call.
 * KillAfterLastUse and the VM build run unchanged afterwards.
 */
#ifndef TVM_MEMPLAN_RELAX_STATIC_PLAN_MEMORY_H_
#define TVM_MEMPLAN_RELAX_STATIC_PLAN_MEMORY_H_

#include <vector>

#include "relax/memory_plan_records.h"
#include "relax/planner_choice.h"
#include "relax/pool_sizes.h"

namespace tvm_memplan {
namespace relax {

/*! \brief `mod` with `plans` (AnalyzeMemoryPlans of `mod`) applied as `choices`
 *         (ChoosePlanners of them) say, their storages at `sizes` (PoolSizes of them); `mod`
 *         itself is not modified. */
ir::IRModule ApplyMemoryPlans(const ir::IRModule& mod,
                              const std::vector<FunctionMemoryPlanPtr>& plans,
                              const std::vector<PlannerChoice>& choices,
                              const std::vector<std::vector<PooledSize>>& sizes);

}  // namespace relax
}  // namespace tvm_memplan

#endif  // TVM_MEMPLAN_RELAX_STATIC_PLAN_MEMORY_H_
