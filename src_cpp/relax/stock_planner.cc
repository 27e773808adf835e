/*!
 * \file relax/stock_planner.cc
 * \brief Running and reading TVM's StaticPlanBlockMemory, and the steps of its model.
 */
#include "relax/stock_planner.h"

#include <string>

#include "ir/pass.h"
#include "relax/memory_plan_records.h"

namespace tvm_memplan {
namespace relax {

using namespace ir;
using ir::relax::Function;
using ir::relax::IsExternFunc;
using ir::relax::TensorType;
using ir::relax::TypeOf;

namespace {

const DLDataType kInt64{kDLInt, 64, 1};

/*! \brief The model step of call binding `step` (relax/memory_plan_model.h). */
PlanStep ModelCall(const Step& step, const Call& call, const MemoryEffect& effect,
                   const MemoryEffects& classifier) {
  PlanStep model;
  model.block = step.binding_block;
  model.var = step.binding->var().get();
  model.reads = step.uses;
  std::string op = call.op_name();
  if (effect.allocator == MemoryEffect::Allocator::kAllocTensor) {
    model.kind = PlanStep::Kind::kAllocate;
    model.type = TypeOf(call.ref());
    model.reads.clear();
    model.counts_own_output = false;
    model.scope = StringValue(call.args()[3], "alloc_tensor scope");
    return model;
  }
  bool stock_view = op == schema::op::Reshape || op == schema::op::MemoryView ||
                    op == schema::op::EnsureZeroOffset ||
                    (effect.kind == MemoryEffect::Kind::kView && IsExternFunc(call.op()));
  if (stock_view && IsVar(call.args()[0])) {
    model.kind = PlanStep::Kind::kView;
    model.value = call.args()[0];
    model.reads.clear();
    return model;
  }
  // PrimFunc and packed calls count as uses of their arguments; their results get no token.
  if (classifier.IsPrimFunc(call.op()) || IsExternFunc(call.op()) ||
      op == schema::op::VMCallTIRDyn) {
    model.kind = PlanStep::Kind::kAllocate;
    model.counts_own_output = false;
    return model;
  }
  model.kind = PlanStep::Kind::kOpaque;
  model.escapes = effect.escapes;
  return model;
}

}  // namespace

Function StockPlanner::Planned(const ObjectRef& gv) {
  if (!planned_) {
    ObjectRef pass = schema::func::StaticPlanBlockMemory().cast<ObjectRef>();
    planned_ = ApplyPass(pass, mod_);
  }
  return Function(planned_->functions().at(gv));
}

StockFunctionPlan ReadStockPlan(const Function& planned) {
  StockFunctionPlan plan;
  plan.well_formed = schema::func::CheckWellFormed(planned.ref(), true).cast<bool>();
  plan.size = IntConst(kInt64, 0);
  std::unordered_map<const Object*, int64_t> storage_index;
  for (const Step& step : FlattenFunction(planned)) {
    if (step.kind != Step::Kind::kBinding) continue;
    std::optional<Call> call = As<Call>(step.expr);
    if (!call) continue;
    std::string op = call->op_name();
    Array<ObjectRef> args = call->args();
    if (op == schema::op::MemoryAllocStorage) {
      ffi::ObjectPtr<StorageAllocationObj> storage = ffi::make_object<StorageAllocationObj>();
      Array<ObjectRef> size = ir::relax::ShapeExpr(args[0], "alloc_storage size").values();
      TVM_FFI_ICHECK_EQ(size.size(), 1)
          << "internal error: alloc_storage of a rank-" << size.size() << " shape";
      int64_t bytes = AsConstInt(size[0]).value_or(-1);
      storage->bytes = bytes;
      storage->size = size[0];
      plan.size = Add(plan.size, size[0]);
      storage->device = AsConstInt(args[1]).value_or(0);
      storage->scope = StringValue(args[2], "alloc_storage scope");
      if (bytes >= 0) {
        plan.bytes += bytes;
      } else {
        ++plan.symbolic;
      }
      storage_index[step.binding->var().get()] = static_cast<int64_t>(plan.storages.size());
      plan.storages.push_back(ObjectRef(storage));
    } else if (op == schema::op::MemoryAllocTensor && IsVar(args[0])) {
      auto found = storage_index.find(args[0].get());
      if (found != storage_index.end()) {
        plan.tensor_storage[step.binding->var().get()] = found->second;
      }
    } else if (op == schema::op::BuiltinAllocTensor) {
      std::optional<TensorType> type = As<TensorType>(TypeOf(call->ref()));
      if (std::optional<int64_t> bytes = type ? type->static_bytes() : std::nullopt) {
        plan.bytes += *bytes;
      } else {
        ++plan.symbolic;
      }
      std::optional<ObjectRef> size = type ? type->bytes_expr() : std::nullopt;
      if (size) plan.size = Add(plan.size, *size);
    }
  }
  return plan;
}

std::vector<PlanStep> StockModelSteps(const std::vector<Step>& steps,
                                      const std::vector<std::optional<MemoryEffect>>& effects,
                                      const MemoryEffects& classifier) {
  std::vector<PlanStep> model;
  model.reserve(steps.size());
  for (size_t i = 0; i < steps.size(); ++i) {
    const Step& step = steps[i];
    if (step.kind == Step::Kind::kBinding) {
      std::optional<Call> call = As<Call>(step.expr);
      model.push_back(call ? ModelCall(step, *call, *effects[i], classifier)
                           : ModelNonCallBinding(step, step.binding_block));
      continue;
    }
    PlanStep plan;
    plan.block = step.binding_block;
    if (step.kind == Step::Kind::kIfResult) {
      plan.kind = PlanStep::Kind::kOpaque;  // the stock planner gives an `if` no storage
      plan.var = step.binding->var().get();
    } else {
      // Conditions, branch results and the function result: what they read is not planned.
      plan.kind = PlanStep::Kind::kEscape;
      plan.reads = step.uses;
      plan.returns = step.kind == Step::Kind::kReturn;
    }
    model.push_back(std::move(plan));
  }
  return model;
}

}  // namespace relax
}  // namespace tvm_memplan
