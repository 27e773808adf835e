/*!
 * \file relax/stock_planner.h
 * \brief TVM's StaticPlanBlockMemory as tvm-memplan's planner meets it: running it (once per
 *        module), reading the plan it made of a function, and translating a function's program
 *        points into the steps of its model (relax/memory_plan_model.h), which predicts its
 *        bytes without running it.
 *
 * \code
 *   StockPlanner stock(mod);                                  // TVM's pass runs on first use
 *   StockFunctionPlan plan = ReadStockPlan(stock.Planned(gv));  // bytes, storages, tensors
 *   std::vector<PlanStep> model = StockModelSteps(steps, effects);
 *   MemoryPlanModel(model).TotalBytes({}) == plan.bytes          // on static sizes
 * \endcode
 */
#ifndef TVM_MEMPLAN_RELAX_STOCK_PLANNER_H_
#define TVM_MEMPLAN_RELAX_STOCK_PLANNER_H_

#include <optional>
#include <unordered_map>
#include <vector>

#include "ir/relax.h"
#include "relax/memory_effects.h"
#include "relax/memory_plan_model.h"
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
  /*! \brief False when `relax.analysis.check_well_formed` rejects it (apache/tvm#20191). */
  bool well_formed = true;
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

/*!
 * \brief The model steps (relax/memory_plan_model.h) of a function after CallTIRRewrite, one per
 *        program point: alloc_tensor allocates (without counting as a use of its own output),
 *        PrimFunc and packed calls use their arguments, reshape and memory views share their
 *        source's storage, `if` results get none, and conditions, branch results and the
 *        function result take what they read out of planning. `effects[i]` is the
 *        classification of step i when it binds a call.
 */
std::vector<PlanStep> StockModelSteps(const std::vector<Step>& steps,
                                      const std::vector<std::optional<MemoryEffect>>& effects,
                                      const MemoryEffects& classifier);

}  // namespace relax
}  // namespace tvm_memplan

#endif  // TVM_MEMPLAN_RELAX_STOCK_PLANNER_H_
