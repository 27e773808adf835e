/*!
 * \file relax/memory_plan_analysis.h
 * \brief Step 2 of the planner (relax/static_plan_memory.h): where every tensor of a Relax
 *        function lives in our plan: lifetimes over the whole function, offsets in one storage
 *        per (device, storage scope), the peak-live bound, and TVM's StaticPlanBlockMemory's
 *        figures on the same IR as its model predicts them.
 *
 * \code
 *   # Relax after CallTIRRewrite                          tensor  bytes  live   offset
 *   a = R.builtin.alloc_tensor((64,), "f32", 0, "global")    a      256   [0,4]      0
 *   cls.exp(x, a)
 *   if c:
 *       b = R.builtin.alloc_tensor(...)                      b      256   [3,6]    256
 *       cls.exp(a, b)                                        (b outlives the branch: stock
 *       r = b                                                 cannot plan it)
 *   else: ...
 *   d = R.builtin.alloc_tensor(...)                          d      256   [7,9]      -
 *   cls.add(r, r, d)
 *   return d                                                 (d is returned: not planned,
 *   // one storage of 512 bytes for a and b; bound 512 bytes  allocated on its own)
 * \endcode
 *
 * The records are declared in relax/memory_plan_records.h; the rewrite in
 * relax/static_plan_memory.h only applies them. Rules:
 *  1. A tensor is an `R.builtin.alloc_tensor`. It is live from its binding to the last program
 *     point that reads it through any alias (relax/storage_flow.h: views, match_cast, tuples,
 *     `if` results, results of calls that may return an argument), across binding blocks and
 *     into and out of `if` branches.
 *  2. A tensor is not planned when it reaches the function result, escapes (an impure call or a
 *     closure may keep it), or has a symbolic size that neither `tir_var_upper_bound` bounds nor
 *     function parameters alone define. A bound that is not an integer (TypeError, as TVM's
 *     planner raises), or an upper bound below its lower bound (ValueError), is an error naming
 *     the function and the variable.
 *  3. The others of one (virtual device, storage scope) are packed at offsets, multiples of
 *     `alignment`, of one storage allocated at the function's start (relax/offset_packing.h);
 *     bounded symbolic sizes take their upper bound. Tensors of a provably equal symbolic size
 *     share storages whose lifetimes do not overlap. A tensor at a nonzero offset reaches its
 *     callees through `R.memory.ensure_zero_offset`, so only devices where that view is free
 *     (target/planning_devices.h) get offsets; a function allocating elsewhere, or in a scope
 *     other than "global", is planned by the stock planner.
 *  4. A plan that sizes a tensor at a bound holds only calls within the bound: the function
 *     checks on entry each shape variable whose bound sized a planned tensor (`checked_bounds`),
 *     and a call past a bound raises an error naming the function, the
 *     variable, its value and the bound, before anything is allocated (tensors packed together
 *     would overlap past it; stock's one storage per tensor fails the VM's size check instead).
 *  5. With `fall_back_to_stock`, a function whose plan would take more bytes than the stock
 *     planner's (modelled by relax/memory_plan_model.h, symbolic sizes included, and run when
 *     the model cannot size a tensor or predicts the stock plan smaller:
 *     relax/stock_planner.h) is planned by the stock planner, unless the stock plan is not well
 *     formed (apache/tvm#20191): relax/planner_choice.h, the step after this analysis.
 *  6. A concatenation whose inputs can sit at their slices of its output is copy-free
 *     (relax/concat_placement.h gives the conditions): the inputs and the output are packed
 *     as one group at fixed offsets from each other, and the call is dropped. With groups the
 *     peak-live bound counts the bytes a group's live tensors cover together.
 */
#ifndef TVM_MEMPLAN_RELAX_MEMORY_PLAN_ANALYSIS_H_
#define TVM_MEMPLAN_RELAX_MEMORY_PLAN_ANALYSIS_H_

#include <optional>
#include <string>
#include <vector>

#include "ir/relax.h"
#include "relax/inplace_guard.h"
#include "relax/memory_plan_records.h"

namespace tvm_memplan {
namespace relax {

/*!
 * \brief Our plan of every Relax function of `guarded.mod` (Relax after CallTIRRewrite, its
 *        unsafe in-place writes reverted: relax/inplace_guard.h), in name order: each record has
 *        our tensors, storages and bound, TVM's planner's figures as its model predicts them
 *        (relax/memory_plan_model.h), and the writes reverted in the function. Which planner plans
 *        a function is the next step's (relax/planner_choice.h).
 * \param model_ours Also record our bytes as that model predicts them (memplan_model_bytes, for
 *        the analysis: one more packing per function, which the pass does not need).
 */
std::vector<FunctionMemoryPlanPtr> AnalyzeMemoryPlans(const GuardedModule& guarded,
                                                      const MemoryPlanOptionsObj& options,
                                                      bool model_ours);

}  // namespace relax
}  // namespace tvm_memplan

#endif  // TVM_MEMPLAN_RELAX_MEMORY_PLAN_ANALYSIS_H_
