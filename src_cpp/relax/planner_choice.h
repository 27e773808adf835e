/*!
 * \file relax/planner_choice.h
 * \brief The planner's choice, per function: ours or TVM's StaticPlanBlockMemory. Everything the
 *        stock planner decides lives here: whether TVM's pass must run (its model cannot size a
 *        tensor, or predicts that TVM's plan allocates less than ours), its real figures in the
 *        record, and which plan wins
 *        (FunctionMemoryPlan.planner, .decision, .reason).
 *
 * \code
 *   std::vector<FunctionMemoryPlanPtr> plans = AnalyzeMemoryPlans(guarded, options, false);
 *   std::vector<PlannerChoice> choices = ChoosePlanners(guarded.mod, plans, options, false);
 *   // choices[i]: planner "memplan", decision "no_larger", reason "512 B, the stock planner
 *   // 768 B (TVM's planner as modelled)", no stock plan, no stock function
 *   RecordPlannerChoices(choices, &plans);   // plans[i]->planner == "memplan", ...
 * \endcode
 *
 * Ours, unless it cannot be used (FunctionMemoryPlanObj::device_refusal) or, with
 * `fall_back_to_stock`, TVM's pass ran, allocates less and its plan is well formed
 * (apache/tvm#20191). When TVM's planner is chosen, the choice carries the function as TVM's pass
 * made it, and the record says its concatenations keep their copies (decision
 * "stock_planner") and drops nothing.
 *
 * The choice reads the records and writes none of them: the pass and the analysis export both
 * record it with RecordPlannerChoices, so the records show the decisions the pass takes.
 */
#ifndef TVM_MEMPLAN_RELAX_PLANNER_CHOICE_H_
#define TVM_MEMPLAN_RELAX_PLANNER_CHOICE_H_

#include <optional>
#include <string>
#include <vector>

#include "ir/relax.h"
#include "relax/memory_plan_records.h"
#include "relax/stock_planner.h"

namespace tvm_memplan {
namespace relax {

/*! \brief The choice for one function: which planner plans it, why, and TVM's plan of it. */
struct PlannerChoice {
  /*! \brief kMemplanPlanner or kStockPlanner (relax/planners.h). */
  const char* planner = nullptr;
  /*! \brief A decision code (relax/memory_plan_records.h), and its reason in words. */
  const char* decision = nullptr;
  std::string reason;
  /*! \brief TVM's plan read off its pass's output, where the pass ran. */
  std::optional<StockFunctionPlan> stock_plan;
  /*! \brief When TVM's planner plans the function: the function as TVM's pass made it. */
  std::optional<ir::relax::Function> stock_function;
  /*! \brief The bytes TVM's planner allocates: its pass's where it ran, else as modelled (-1:
   *         unknown). */
  int64_t stock_bytes = -1;
};

/*!
 * \brief The planner of each of `plans` (AnalyzeMemoryPlans of `mod`), with TVM's planner's real
 *        figures where its pass ran. Reads the records; writes nothing.
 * \param run_stock Run TVM's pass on every function (the analysis, which reports both plans);
 *        otherwise it runs only where the choice needs it.
 */
std::vector<PlannerChoice> ChoosePlanners(const ir::IRModule& mod,
                                          const std::vector<FunctionMemoryPlanPtr>& plans,
                                          const MemoryPlanOptionsObj& options, bool run_stock);

/*!
 * \brief Each choice in its function's record: planner, decision and reason, TVM's plan's figures
 *        where its pass ran, and, where TVM's planner plans it, concatenations that keep their
 *        copies and no dropped bindings.
 */
void RecordPlannerChoices(const std::vector<PlannerChoice>& choices,
                          std::vector<FunctionMemoryPlanPtr>* plans);

}  // namespace relax
}  // namespace tvm_memplan

#endif  // TVM_MEMPLAN_RELAX_PLANNER_CHOICE_H_
