/*!
 * \file relax/stock_planner.h
 * \brief TVM's StaticPlanBlockMemory as tvm-memplan's planner meets it: running it (once per
 *        module) and reading the plan it made of a function. Its model, which predicts its bytes
 *        without running it, is relax/memory_plan_model.h.
 *
 * \code
 *   StockPlanner stock(mod);                                  // TVM's pass runs on first use
 *   StockFunctionPlan plan = ReadStockPlan(stock.Planned(gv));  // bytes, storages, tensors
 *   MemoryPlanModel(PlanSteps(steps, effects, PlanBlocks::kPerBindingBlock), sizer)
 *       .StockPlan({}, plan_dynamic_output)->bytes == plan.bytes   // predicted without it
 * \endcode
 */
#ifndef TVM_MEMPLAN_RELAX_STOCK_PLANNER_H_
#define TVM_MEMPLAN_RELAX_STOCK_PLANNER_H_

#include <optional>
#include <unordered_map>
#include <vector>

#include "ir/relax.h"
#include "relax/program_points.h"

namespace tvm_memplan {
namespace relax {

/*! \brief TVM's planner on a module, run once on first request. */
class StockPlanner {
 public:
  explicit StockPlanner(const ir::IRModule& mod) : mod_(mod) {}
  /*! \brief The function bound to `gv` after TVM's StaticPlanBlockMemory. */
  ir::relax::Function Planned(const ObjectRef& gv);

 private:
  ir::IRModule mod_;
  std::optional<ir::IRModule> planned_;
};

/*! \brief The stock planner's plan of one function, read off its output. */
struct StockFunctionPlan {
  /*! \brief Bytes of its static-size allocations (storages and unplanned tensors). */
  int64_t bytes = 0;
  /*! \brief Allocations of symbolic size. */
  int64_t symbolic = 0;
  /*! \brief Every allocation's bytes, summed as an expression of the shape variables. */
  ObjectRef size;
  /*! \brief StorageAllocation records. */
  Array<ObjectRef> storages;
  /*! \brief Allocation variable -> index in `storages`. */
  std::unordered_map<const Object*, int64_t> tensor_storage;
};

/*! \brief What TVM's planner made of a function (`planned`, its output). */
StockFunctionPlan ReadStockPlan(const ir::relax::Function& planned);

/*! \brief Whether `relax.analysis.check_well_formed` accepts TVM's plan of a function
 *         (apache/tvm#20191: a storage allocated in one branch of an `if` can be used after
 *         it). */
bool IsWellFormed(const ir::relax::Function& planned);

}  // namespace relax
}  // namespace tvm_memplan

#endif  // TVM_MEMPLAN_RELAX_STOCK_PLANNER_H_
