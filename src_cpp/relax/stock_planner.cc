/*!
 * \file relax/stock_planner.cc
 * \brief Running and reading TVM's StaticPlanBlockMemory.
 */
#include "relax/stock_planner.h"

#include <string>

#include "ir/pass.h"
#include "relax/ir_names.h"
#include "relax/memory_plan_records.h"

namespace tvm_memplan {
namespace relax {

Function StockPlanner::Planned(const ObjectRef& gv) {
  if (!planned_) {
    ObjectRef pass = schema::func::StaticPlanBlockMemory().cast<ObjectRef>();
    planned_ = ApplyPass(pass, mod_);
  }
  return Function(planned_->functions().at(gv));
}

StockFunctionPlan ReadStockPlan(const Function& planned) {
  StockFunctionPlan plan;
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
      storage_index[step.var.get()] = static_cast<int64_t>(plan.storages.size());
      plan.storages.push_back(ObjectRef(storage));
    } else if (op == schema::op::MemoryAllocTensor && IsVar(args[0])) {
      auto found = storage_index.find(args[0].get());
      if (found != storage_index.end()) {
        plan.tensor_storage[step.var.get()] = found->second;
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

bool IsWellFormed(const Function& planned) {
  return schema::func::CheckWellFormed(planned.ref(), true).cast<bool>();
}

}  // namespace relax
}  // namespace tvm_memplan
