/*!
 * \file relax/planner_choice.cc
 * \brief Whether TVM's planner runs, its figures, and which plan wins.
 */
#include "relax/planner_choice.h"

#include <string>

#include "ir/analyzer.h"
#include "relax/ir_names.h"
#include "relax/planners.h"
#include "relax/stock_planner.h"

namespace tvm_memplan {
namespace relax {

namespace {

std::string Bytes(int64_t bytes) { return std::to_string(bytes) + " B"; }

/*! \brief Whether a tensor of the record has a symbolic size. */
bool HasSymbolicSizes(const FunctionMemoryPlanObj& record) {
  for (const ObjectRef& tensor : record.tensors) {
    const auto* t = tensor.as<PlannedTensorObj>();
    if (t->size && !AsConstInt(*t->size)) return true;
  }
  return record.symbolic_allocations > 0;
}

/*! \brief Whether the choice needs TVM's pass run: it must plan the function (ours cannot), or
 *         its model cannot tell (symbolic sizes), or predicts fewer bytes than ours (the choice
 *         then rests on the real plan). */
bool NeedsStockPass(const FunctionMemoryPlanObj& record, const MemoryPlanOptionsObj& options) {
  if (!record.device_refusal.empty()) return true;
  if (!options.fall_back_to_stock) return false;
  return record.stock_model_bytes < 0 || HasSymbolicSizes(record) ||
         record.planned_bytes > record.stock_model_bytes;
}

/*! \brief TVM's plan of the function, read off its pass's output, in the record (in place of
 *         the model's figures). */
void RecordStockPlan(const StockFunctionPlan& stock, FunctionMemoryPlanObj* record) {
  record->stock_bytes = stock.bytes;
  record->stock_size = Analyzer().Simplify(stock.size);
  record->stock_symbolic_allocations = stock.symbolic;
  record->stock_source = stock_source::kStockPass;
  record->stock_storages = stock.storages;
  for (size_t i = 0; i < record->tensors.size(); ++i) {
    auto found = stock.tensor_storage.find(Binding(record->bindings[i]).var().get());
    if (found == stock.tensor_storage.end()) continue;
    auto tensor = ffi::make_object<PlannedTensorObj>(*record->tensors[i].as<PlannedTensorObj>());
    tensor->stock_storage = found->second;
    record->tensors.Set(i, ObjectRef(tensor));
  }
}

/*! \brief Which planner plans the function, and why (its record's planner, decision, reason). */
void Choose(const MemoryPlanOptionsObj& options, bool stock_well_formed,
            FunctionMemoryPlanObj* record) {
  auto decide = [&](const char* planner, const char* decision, std::string reason) {
    record->planner = planner;
    record->decision = decision;
    record->reason = std::move(reason);
  };
  if (!record->device_refusal.empty()) {
    return decide(kStockPlanner, decision::kNoOffsets, record->device_refusal);
  }
  std::string ours = Bytes(record->planned_bytes);
  std::string theirs =
      record->stock_bytes < 0 ? std::string("unknown") : Bytes(record->stock_bytes);
  if (!options.fall_back_to_stock) {
    return decide(kMemplanPlanner, decision::kFallBackOff,
                  "fall_back_to_stock=False: " + ours + ", the stock planner " + theirs);
  }
  bool ran = record->stock_source == stock_source::kStockPass;
  bool stock_smaller = ran && (record->stock_bytes < record->planned_bytes ||
                               (record->stock_bytes == record->planned_bytes &&
                                record->stock_symbolic_allocations < record->symbolic_allocations));
  if (stock_smaller && stock_well_formed) {
    return decide(kStockPlanner, decision::kStockSmaller,
                  "the stock planner allocates less: " + theirs + " against " + ours);
  }
  std::string source = ran ? "TVM's planner run" : "TVM's planner as modelled";
  std::string reason = ours + ", the stock planner " + theirs + " (" + source + ")";
  if (stock_smaller) {
    return decide(kMemplanPlanner, decision::kStockIllFormed,
                  reason + "; the stock plan is not well formed (apache/tvm#20191)");
  }
  decide(kMemplanPlanner, decision::kNoLarger, reason);
}

/*! \brief TVM's planner plans the function: it copies every concatenation, as new records say,
 *         and the rewrite drops nothing. */
void FollowStockPlanner(FunctionMemoryPlanObj* record) {
  record->dropped_bindings.clear();
  Array<ObjectRef> concats;
  for (const ObjectRef& planned : record->concats) {
    const auto* concat = planned.as<ConcatenationObj>();
    if (!concat->copy_free) {
      concats.push_back(planned);
      continue;
    }
    ffi::ObjectPtr<ConcatenationObj> copying = ffi::make_object<ConcatenationObj>(*concat);
    copying->copy_free = false;
    copying->decision = concat::kStockPlanner;
    copying->reason = "the function is planned by the stock planner";
    concats.push_back(ObjectRef(copying));
  }
  record->concats = concats;
}

}  // namespace

std::vector<PlannerChoice> ChoosePlanners(const IRModule& mod,
                                          const std::vector<FunctionMemoryPlanPtr>& plans,
                                          const MemoryPlanOptionsObj& options, bool run_stock) {
  StockPlanner stock(mod);  // TVM's pass runs once, on the first function that needs it
  std::vector<PlannerChoice> choices;
  for (const FunctionMemoryPlanPtr& plan : plans) {
    bool stock_well_formed = true;
    if (run_stock || NeedsStockPass(*plan, options)) {
      StockFunctionPlan stock_plan = ReadStockPlan(stock.Planned(plan->global_var));
      RecordStockPlan(stock_plan, plan.get());
      stock_well_formed = stock_plan.well_formed;
    }
    Choose(options, stock_well_formed, plan.get());
    PlannerChoice choice;
    if (plan->planner == kStockPlanner) {
      FollowStockPlanner(plan.get());
      choice.stock_function = stock.Planned(plan->global_var);
    }
    choices.push_back(std::move(choice));
  }
  return choices;
}

}  // namespace relax
}  // namespace tvm_memplan
