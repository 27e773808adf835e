/*!
 * \file relax/planner_choice.cc
 * \brief Ours or the stock planner's plan, and the plan made to follow the choice.
 */
#include "relax/planner_choice.h"

#include "relax/memory_plan_model.h"

namespace tvm_memplan {
namespace relax {

using namespace ir;

namespace {

std::string Bytes(int64_t bytes) { return std::to_string(bytes) + " B"; }

}  // namespace

PlannerChoice ChoosePlanner(const MemoryPlan& plan, const MemoryPlanOptionsObj& options) {
  const FunctionMemoryPlanObj& record = *plan.record;
  if (!plan.device_refusal.empty()) {
    return {kStockPlanner, decision::kNoOffsets, plan.device_refusal};
  }
  std::string ours = Bytes(record.planned_bytes);
  std::string theirs = record.stock_bytes < 0 ? std::string("unknown") : Bytes(record.stock_bytes);
  if (!options.fall_back_to_stock) {
    return {kMemplanPlanner, decision::kFallBackOff,
            "fall_back_to_stock=False: " + ours + ", the stock planner " + theirs};
  }
  bool ran = record.stock_source == stock_source::kStockPass;
  bool stock_smaller = ran && (record.stock_bytes < record.planned_bytes ||
                               (record.stock_bytes == record.planned_bytes &&
                                record.stock_symbolic_allocations < record.symbolic_allocations));
  if (stock_smaller && plan.stock_well_formed) {
    return {kStockPlanner, decision::kStockSmaller,
            "the stock planner allocates less: " + theirs + " against " + ours};
  }
  std::string source = ran ? "TVM's planner run" : "TVM's planner as modelled";
  std::string reason = ours + ", the stock planner " + theirs + " (" + source + ")";
  if (stock_smaller) {
    return {kMemplanPlanner, decision::kStockIllFormed,
            reason + "; the stock plan is not well formed (apache/tvm#20191)"};
  }
  return {kMemplanPlanner, decision::kNoLarger, reason};
}

void ApplyPlannerChoice(MemoryPlan* plan, const PlannerChoice& choice, StockPlanner* stock,
                        const ObjectRef& gv) {
  FunctionMemoryPlanObj& record = *plan->record;
  record.planner = choice.planner;
  record.decision = choice.decision;
  record.reason = choice.reason;
  if (record.planner != kStockPlanner) return;
  plan->stock_function = stock->Planned(gv);
  plan->dropped_bindings.clear();
  // TVM's planner copies every concatenation: the records say so, as new records.
  Array<ObjectRef> concats;
  for (const ObjectRef& planned : record.concats) {
    const auto* concat = planned.as<ConcatenationObj>();
    if (!concat->copy_free) {
      concats.push_back(planned);
      continue;
    }
    ffi::ObjectPtr<ConcatenationObj> copying = ffi::make_object<ConcatenationObj>(*concat);
    copying->copy_free = false;
    copying->decision = concat::kStockPlanned;
    copying->reason = "the function is planned by the stock planner";
    concats.push_back(ObjectRef(copying));
  }
  record.concats = concats;
}

}  // namespace relax
}  // namespace tvm_memplan
