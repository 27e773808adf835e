/*!
 * \file relax/planner_choice.h
 * \brief The planner's last step: which planner plans a function, ours or TVM's
 *        (FunctionMemoryPlan.planner, .decision, .reason), made on its record once both plans'
 *        figures are in it, and the plan made to follow it.
 *
 * \code
 *   MemoryPlan plan = ...;                       // record: ours 512 B, stock 768 B (run)
 *   ApplyPlannerChoice(&plan, ChoosePlanner(plan, options), &stock, gv);
 *   // plan.record->planner == "memplan", decision "no_larger"
 * \endcode
 *
 * Ours, unless it cannot be used (`MemoryPlan::device_refusal`) or, with `fall_back_to_stock`,
 * TVM's pass ran, allocates less and its plan is well formed (apache/tvm#20191). When TVM's
 * planner is chosen the plan carries its function and drops nothing: its concatenations keep
 * their copies (decision "stock_planner").
 */
#ifndef TVM_MEMPLAN_RELAX_PLANNER_CHOICE_H_
#define TVM_MEMPLAN_RELAX_PLANNER_CHOICE_H_

#include <string>

#include "relax/memory_plan_analysis.h"
#include "relax/stock_planner.h"

namespace tvm_memplan {
namespace relax {

/*! \brief Which planner plans a function, and why (FunctionMemoryPlan.decision, .reason). */
struct PlannerChoice {
  const char* planner;
  const char* decision;
  std::string reason;
};

/*! \brief The choice for `plan`, whose record holds both planners' figures. */
PlannerChoice ChoosePlanner(const MemoryPlan& plan, const MemoryPlanOptionsObj& options);

/*! \brief Records `choice` in `plan`; for the stock planner, also its function (from `stock`)
 *         and its concatenations, which keep their copies. */
void ApplyPlannerChoice(MemoryPlan* plan, const PlannerChoice& choice, StockPlanner* stock,
                        const ObjectRef& gv);

}  // namespace relax
}  // namespace tvm_memplan

#endif  // TVM_MEMPLAN_RELAX_PLANNER_CHOICE_H_
