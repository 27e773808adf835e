/*!
 * \file relax/memory_plan_figures.h
 * \brief Figures computed from a plan's records alone: its peak-live bound, the bytes live at
 *        each program point, and the plan evaluated at shape variable values.
 *
 * \code
 *   (plan,) = tvm_memplan.analysis.memory_plan(mod)    # n bounded by 64; a is n * 4 bytes
 *   plan.live_bytes()                                   # [256, 512, 512, 256]  (LiveBytesOf)
 *   memory_plan_at(plan, {"n": 10}).planned_bytes        # EvaluatePlan: tensors at n = 10
 * \endcode
 */
#ifndef TVM_MEMPLAN_RELAX_MEMORY_PLAN_FIGURES_H_
#define TVM_MEMPLAN_RELAX_MEMORY_PLAN_FIGURES_H_

#include <vector>

#include "relax/memory_plan_records.h"

namespace tvm_memplan {
namespace relax {

/*!
 * \brief `plan` with every figure evaluated at shape variable `values` (variables missing there
 *        take their upper bound): tensors at their size for those values, storages as
 *        allocated (those sized at a bound keep it), the totals and the peak-live bound. A
 *        variable with neither a value nor a bound, or a value outside its bounds, is a
 *        ValueError naming it.
 */
FunctionMemoryPlan EvaluatePlan(const FunctionMemoryPlanObj& plan,
                                const Map<String, int64_t>& values);

/*!
 * \brief The peak-live bound of a plan's tensor records: per storage, the most bytes of its
 *        tensors live at one program point (bounded sizes at their bound), plus the static bytes
 *        of the tensors no planner may share (function results, escaping tensors): no plan of
 *        this IR under these rules allocates less. Tensors in different storages never share
 *        bytes, so a tensor in a storage of its own (a result under
 *        `relax.memory_plan_dynamic_func_output`) counts whole. Unplanned tensors of symbolic
 *        size are left out.
 */
int64_t PeakLiveOf(const Array<ObjectRef>& tensors);

/*! \brief FunctionMemoryPlan.live_bytes: per program point, the bytes of the static-size tensors
 *         live there (in a plan at shape values, of every tensor with a size there), each from
 *         its allocation to its last read, a copy-free group's bytes counted once. */
std::vector<int64_t> LiveBytesOf(const FunctionMemoryPlanObj& plan);

}  // namespace relax
}  // namespace tvm_memplan

#endif  // TVM_MEMPLAN_RELAX_MEMORY_PLAN_FIGURES_H_
