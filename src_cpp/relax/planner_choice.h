/*!
 * \file relax/planner_choice.h
 * \brief The planner's choice, per function: ours or TVM's StaticPlanBlockMemory. Everything the
 *        stock planner decides lives here: whether TVM's pass must run (its model cannot tell,
 *        or predicts fewer bytes than ours), its real figures in the record, and which plan wins
 *        (FunctionMemoryPlan.planner, .decision, .reason).
 *
 * \code
 *   std::vector<FunctionMemoryPlanPtr> plans = AnalyzeMemoryPlans(guarded, options, false);
 *   std::vector<PlannerChoice> choices = ChoosePlanners(guarded.mod, plans, options, false);
 *   // plans[i]->planner == "memplan", decision "no_larger": ours 512 B, the stock planner
 *   // 768 B (TVM's planner as modelled); choices[i].stock_function is empty
 * \endcode
 *
 * Ours, unless it cannot be used (FunctionMemoryPlanObj::device_refusal) or, with
 * `fall_back_to_stock`, TVM's pass ran, allocates less and its plan is well formed
 * (apache/tvm#20191). When TVM's planner is chosen, the choice carries the function as TVM's pass
 * made it, and the record says its concatenations keep their copies (decision
 * "stock_planner") and drops nothing.
 */
#ifndef TVM_MEMPLAN_RELAX_PLANNER_CHOICE_H_
#define TVM_MEMPLAN_RELAX_PLANNER_CHOICE_H_

#include <optional>
#include <vector>

#include "ir/relax.h"
#include "relax/memory_plan_records.h"

namespace tvm_memplan {
namespace relax {

/*! \brief The choice for one function: its record holds the planner and why; this, the IR. */
struct PlannerChoice {
  /*! \brief When TVM's planner plans the function: the function as TVM's pass made it. */
  std::optional<ir::relax::Function> stock_function;
};

/*!
 * \brief The planner of each of `plans` (AnalyzeMemoryPlans of `mod`), recorded in its record
 *        with TVM's planner's real figures where its pass ran.
 * \param run_stock Run TVM's pass on every function (the analysis, which reports both plans);
 *        otherwise it runs only where the choice needs it.
 */
std::vector<PlannerChoice> ChoosePlanners(const ir::IRModule& mod,
                                          const std::vector<FunctionMemoryPlanPtr>& plans,
                                          const MemoryPlanOptionsObj& options, bool run_stock);

}  // namespace relax
}  // namespace tvm_memplan

#endif  // TVM_MEMPLAN_RELAX_PLANNER_CHOICE_H_
