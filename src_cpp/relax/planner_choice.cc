/*!
 * \file relax/planner_choice.cc
 * \brief Whether TVM's planner runs, its figures, and which plan wins.
 */
#include "relax/planner_choice.h"

#include <string>

#include "ir/analyzer.h"
#include "relax/ir_names.h"
#include "relax/planners.h"

namespace tvm_memplan {
namespace relax {

namespace {

std::string Bytes(int64_t bytes) { return std::to_string(bytes) + " B"; }

/*! \brief Whether TVM's plan, of `bytes` in allocations of constant size and `symbolic` of
 *         symbolic size, allocates less than ours: fewer constant bytes, or as many and fewer
 *         allocations of symbolic size. */
bool StockAllocatesLess(int64_t bytes, int64_t symbolic, const FunctionMemoryPlanObj& record) {
  return bytes < record.planned_bytes ||
         (bytes == record.planned_bytes && symbolic < record.symbolic_allocations);
}

/*! \brief Whether the choice needs TVM's pass run: it must plan the function (ours cannot), or
 *         its model cannot size a tensor, or predicts that TVM's plan allocates less (the choice
 *         then rests on the real plan). */
bool NeedsStockPass(const FunctionMemoryPlanObj& record, const MemoryPlanOptionsObj& options) {
  if (!record.device_refusal.empty()) return true;
  if (!options.fall_back_to_stock) return false;
  return record.stock_source != stock_source::kModel ||
         StockAllocatesLess(record.stock_bytes, record.stock_symbolic_allocations, record);
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

/*! \brief Which planner plans the function, and why, given TVM's plan where its pass ran. */
PlannerChoice Choose(const FunctionMemoryPlanObj& record, const MemoryPlanOptionsObj& options,
                     std::optional<StockFunctionPlan> stock_plan,
                     const std::optional<Function>& stock_function) {
  PlannerChoice choice;
  bool ran = stock_plan.has_value();
  choice.stock_bytes = ran ? stock_plan->bytes : record.stock_bytes;
  int64_t stock_symbolic = ran ? stock_plan->symbolic : record.stock_symbolic_allocations;
  choice.stock_plan = std::move(stock_plan);
  auto decide = [&](const char* planner, const char* decision, std::string reason) {
    choice.planner = planner;
    choice.decision = decision;
    choice.reason = std::move(reason);
    return choice;
  };
  if (!record.device_refusal.empty()) {
    return decide(kStockPlanner, decision::kNoOffsets, record.device_refusal);
  }
  std::string ours = Bytes(record.planned_bytes);
  std::string theirs = choice.stock_bytes < 0 ? std::string("unknown") : Bytes(choice.stock_bytes);
  if (!options.fall_back_to_stock) {
    return decide(kMemplanPlanner, decision::kFallBackOff,
                  "fall_back_to_stock=False: " + ours + ", the stock planner " + theirs);
  }
  bool stock_smaller = ran && StockAllocatesLess(choice.stock_bytes, stock_symbolic, record);
  if (stock_smaller && IsWellFormed(*stock_function)) {
    return decide(kStockPlanner, decision::kStockSmaller,
                  "the stock planner allocates less: " + theirs + " against " + ours);
  }
  std::string source = ran ? "TVM's planner run" : "TVM's planner as modelled";
  std::string reason = ours + ", the stock planner " + theirs + " (" + source + ")";
  if (stock_smaller) {
    return decide(kMemplanPlanner, decision::kStockIllFormed,
                  reason + "; the stock plan is not well formed (apache/tvm#20191)");
  }
  return decide(kMemplanPlanner, decision::kNoLarger, reason);
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
    const FunctionMemoryPlanObj& record = *plan;
    std::optional<StockFunctionPlan> stock_plan;
    std::optional<Function> stock_function;
    if (run_stock || NeedsStockPass(record, options)) {
      stock_function = stock.Planned(record.global_var);
      stock_plan = ReadStockPlan(*stock_function);
    }
    PlannerChoice choice = Choose(record, options, std::move(stock_plan), stock_function);
    if (choice.planner == kStockPlanner) choice.stock_function = stock_function;
    choices.push_back(std::move(choice));
  }
  return choices;
}

void RecordPlannerChoices(const std::vector<PlannerChoice>& choices,
                          std::vector<FunctionMemoryPlanPtr>* plans) {
  for (size_t i = 0; i < choices.size(); ++i) {
    const PlannerChoice& choice = choices[i];
    FunctionMemoryPlanObj* record = (*plans)[i].get();
    if (choice.stock_plan) RecordStockPlan(*choice.stock_plan, record);
    record->planner = choice.planner;
    record->decision = choice.decision;
    record->reason = choice.reason;
    if (choice.planner == kStockPlanner) FollowStockPlanner(record);
  }
}

}  // namespace relax
}  // namespace tvm_memplan
