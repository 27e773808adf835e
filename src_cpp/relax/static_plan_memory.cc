/*!
 * \file relax/static_plan_memory.cc
 * \brief Applying memory plans to Relax functions, and the module pass.
 */
#include "relax/static_plan_memory.h"

#include <tvm/ffi/reflection/registry.h>

#include <algorithm>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "ir/dump.h"
#include "ir/pass.h"
#include "relax/inplace_guard.h"
#include "relax/ir_names.h"
#include "relax/memory_plan_analysis.h"
#include "relax/search_budget.h"

namespace tvm_memplan {
namespace relax {

namespace {

/*!
 * \brief The entry checks of `bounds`, one per shape variable: `max(n, upper) == upper` (and
 *        `min(n, lower) == lower`), through the VM's shape match (ir::relax::MakeShapeCheck), so
 *        that a call past a bound raises an error naming the function, the variable, its value
 *        and the bound. These run in every runtime (no Python) and on every call: RewriteCUDAGraph
 *        never captures them into a graph, where they would run only when the graph is captured.
 */
Array<ObjectRef> BoundCheckBindings(const std::string& function,
                                    const std::vector<BoundCheck>& bounds) {
  Array<ObjectRef> bindings;
  if (bounds.empty()) return bindings;
  Var none = ir::relax::MakeVar("none", ir::relax::AnyType());
  bindings.push_back(ir::relax::MakeVarBinding(none, ir::relax::MakeNullValue()).ref());
  for (const BoundCheck& bound : bounds) {
    std::string name = ir::Var(bound.var).name();
    Array<ObjectRef> values{Max(bound.var, IntConst(bound.var, bound.upper))};
    std::vector<int64_t> expected{bound.upper};
    std::string message = function + ": shape variable " + name;
    if (bound.lower) {
      values.push_back(Min(bound.var, IntConst(bound.var, *bound.lower)));
      expected.push_back(*bound.lower);
      message += " is outside [" + std::to_string(*bound.lower) + ", " +
                 std::to_string(bound.upper) + "], its tir_var_lower_bound and tir_var_upper_bound";
    } else {
      message += " exceeds its tir_var_upper_bound " + std::to_string(bound.upper);
    }
    message +=
        " (its value, then the bound, in parentheses above): the function's memory is planned for "
        "sizes within the bounds;";
    ObjectRef check = ir::relax::MakeShapeCheck(values, expected, none.ref(), message);
    Var var = ir::relax::MakeVar(name + "_in_bound", ir::relax::TypeOf(check));
    bindings.push_back(ir::relax::MakeVarBinding(var, check).ref());
  }
  return bindings;
}

/*! \brief `bindings` first in the body of `func`: in its first block, or in a block of their
 *         own before a dataflow block (whose bindings must be pure and local). */
Function PrependBindings(const Function& func, const Array<ObjectRef>& bindings) {
  if (bindings.empty()) return func;
  SeqExpr body(func.body(), "Function.body");
  Array<ObjectRef> blocks = body.blocks();
  Array<ObjectRef> updated;
  if (!blocks.empty() && !BindingBlock(blocks[0]).is_dataflow()) {
    BindingBlock first(blocks[0]);
    Array<ObjectRef> all = bindings;
    for (const ObjectRef& binding : first.bindings()) all.push_back(binding);
    updated.push_back(first.WithBindings(all).ref());
    for (size_t i = 1; i < blocks.size(); ++i) updated.push_back(blocks[i]);
  } else {
    updated.push_back(ir::relax::MakeBindingBlock(bindings).ref());
    for (const ObjectRef& block : blocks) updated.push_back(block);
  }
  return func.WithBody(body.WithBlocks(updated).ref());
}

/*! \brief Rewrites the allocations of one function as its plan says. */
class PlanApplier {
 public:
  PlanApplier(const FunctionMemoryPlanObj& plan, const std::vector<PooledSize>& sizes)
      : alloc_storage_(ir::relax::GetOp(schema::op::MemoryAllocStorage)),
        alloc_tensor_(ir::relax::GetOp(schema::op::MemoryAllocTensor)),
        ensure_zero_offset_(ir::relax::GetOp(schema::op::EnsureZeroOffset)) {
    for (size_t i = 0; i < plan.storages.size(); ++i) {
      const auto* storage = plan.storages[i].as<StorageAllocationObj>();
      ObjectRef size = sizes[i].bytes > storage->bytes && storage->bytes >= 0
                           ? IntConst(kInt64, sizes[i].bytes)
                           : storage->size;
      Array<ObjectRef> args{ir::relax::MakeShapeExpr({size}), IntConst(kInt64, storage->device),
                            StringConst(storage->scope), ir::relax::MakeDataTypeConst(kUInt8)};
      Var var = ir::relax::MakeVar("storage", ir::relax::AnyType());
      storage_bindings_.push_back(
          ir::relax::MakeVarBinding(
              var, ir::relax::MakeTypedCall(ir::relax::AnyType(), alloc_storage_, args))
              .ref());
      storage_vars_.push_back(var.ref());
    }
    for (size_t i = 0; i < plan.tensors.size(); ++i) {
      const auto* tensor = plan.tensors[i].as<PlannedTensorObj>();
      if (tensor->storage >= 0) placed_[plan.bindings[i].get()] = tensor;
    }
    for (const ObjectRef& binding : plan.dropped_bindings) dropped_.insert(binding.get());
  }

  /*! \brief `func` with its tensors placed, and the storages allocated at its start (so a
   *         tensor made in an `if` branch and read after it has storage in scope). */
  Function operator()(const Function& func) const {
    Function placed = ir::relax::RebindEach(
        func, [this](const Binding& binding, Array<ObjectRef>* out) { Rebind(binding, out); });
    return PrependBindings(placed, storage_bindings_);
  }

 private:
  void Rebind(const Binding& binding, Array<ObjectRef>* out) const {
    // A copy-free concatenation: its output already holds its inputs.
    if (dropped_.count(binding.get())) return;
    auto found = placed_.find(binding.get());
    if (found != placed_.end()) {
      const PlannedTensorObj& tensor = *found->second;
      Call alloc(binding.value());
      Array<ObjectRef> args = alloc.args();  // shape, dtype, runtime_device_index, scope
      Var var = binding.var();
      ObjectRef type = var.type();
      Call placed =
          ir::relax::MakeTypedCall(type, alloc_tensor_,
                                   {storage_vars_[tensor.storage], IntConst(kInt64, tensor.offset),
                                    args[0], args[1], args[2]});
      if (tensor.offset == 0) {
        out->push_back(binding.WithValue(placed.ref()).ref());
        return;
      }
      // At an offset: the variable is bound to a view with no byte offset (PrimFuncs reject one).
      Var at = ir::relax::MakeVar(var.name() + "_at", type);
      out->push_back(ir::relax::MakeVarBinding(at, placed.ref()).ref());
      out->push_back(
          binding.WithValue(ir::relax::MakeTypedCall(type, ensure_zero_offset_, {at.ref()}).ref())
              .ref());
      return;
    }
    out->push_back(binding.ref());
  }

  ObjectRef alloc_storage_, alloc_tensor_, ensure_zero_offset_;
  Array<ObjectRef> storage_bindings_;
  std::vector<ObjectRef> storage_vars_;
  std::unordered_map<const Object*, const PlannedTensorObj*> placed_;
  std::unordered_set<const Object*> dropped_;
};

}  // namespace

IRModule ApplyMemoryPlans(const IRModule& mod, const std::vector<FunctionMemoryPlanPtr>& plans,
                          const std::vector<PlannerChoice>& choices,
                          const std::vector<std::vector<PooledSize>>& sizes) {
  Map<ObjectRef, ObjectRef> updated = mod.functions();
  bool changed = false;
  for (size_t i = 0; i < plans.size(); ++i) {
    const FunctionMemoryPlanObj& plan = *plans[i];
    if (plan.tensors.empty()) continue;
    Function func(mod.functions().at(plan.global_var));
    const std::optional<Function>& stock = choices[i].stock_function;
    Function planned = stock ? *stock : PlanApplier(plan, sizes[i])(func);
    // TVM's planner consumes this attribute; ours has planned what it asks for.
    if (!stock && FuncAttr(planned.ref(), schema::attr::MemoryPlanDynamicFuncOutput)) {
      planned = Function(WithoutFuncAttr(planned.ref(), schema::attr::MemoryPlanDynamicFuncOutput));
    }
    // Checked first, whichever planner: past a bound, tensors sized at it would not fit.
    planned = PrependBindings(planned, BoundCheckBindings(plan.function, plan.bound_checks));
    if (!planned.same_as(func.ref())) {
      updated.Set(plan.global_var, planned.ref());
      changed = true;
    }
  }
  return changed ? mod.WithFunctions(updated) : mod;
}

namespace {

/*! \brief Every plan's record, for a dump or for Python. */
Array<ObjectRef> Records(const std::vector<FunctionMemoryPlanPtr>& plans) {
  Array<ObjectRef> records;
  for (const FunctionMemoryPlanPtr& plan : plans) records.push_back(ObjectRef(plan));
  return records;
}

/*! \brief `options` with the exact-search budget the PassContext sets for the build, if any
 *         (relax/search_budget.h). */
MemoryPlanOptions WithBuildBudget(const MemoryPlanOptions& options, const ObjectRef& pass_context) {
  int64_t ms = PlannerSearchMs(pass_context, options->exact_search_ms);
  if (ms == options->exact_search_ms) return options;
  auto resolved = ffi::make_object<MemoryPlanOptionsObj>(*options.get());
  resolved->exact_search_ms = ms;
  return ffi::Any(ObjectRef(resolved)).cast<MemoryPlanOptions>();
}

}  // namespace

TVM_FFI_STATIC_INIT_BLOCK() {
  tvm::ffi::reflection::GlobalDef()
      .def("tvm_memplan.transform.StaticPlanBlockMemory",
           [](MemoryPlanOptions options) {
             CheckMemoryPlanOptions(*options.get());
             return MakeModulePass(
                 "tvm_memplan.StaticPlanBlockMemory", 0,
                 [given = options](IRModule mod, ObjectRef pass_context) {
                   MemoryPlanOptions options = WithBuildBudget(given, pass_context);
                   PassDump dump("StaticPlanBlockMemory");
                   dump.Write("input", mod.ref());
                   // 1. Unsafe in-place writes get copies, whichever pass made them.
                   GuardedModule guarded = GuardInplaceWrites(mod);
                   // 2. Our plan of every function, with TVM's planner's figures as modelled.
                   std::vector<FunctionMemoryPlanPtr> plans =
                       AnalyzeMemoryPlans(guarded, *options.get(), /*model_ours=*/false);
                   // 3. Ours or TVM's, per function (TVM's pass runs where the choice needs it).
                   std::vector<PlannerChoice> choices =
                       ChoosePlanners(guarded.mod, plans, *options.get(), /*run_stock=*/false);
                   RecordPlannerChoices(choices, &plans);
                   // 4. The sizes the storages are allocated with, one per rank across the
                   //    module, so that TVM's pooled allocator reuses its blocks (for
                   //    MLC-LLM's engine, the largest storages split where a function's results
                   //    keep it from taking their size).
                   SplitLargestStorages(guarded.mod, plans, choices, *options.get());
                   std::vector<std::vector<PooledSize>> sizes =
                       PoolSizes(guarded.mod, plans, choices, *options.get());
                   // 5. The chosen plans applied, each function checking its bounds on entry.
                   IRModule out = ApplyMemoryPlans(guarded.mod, plans, choices, sizes);
                   if (dump.enabled()) {
                     RecordPoolSizes(plans, sizes);
                     dump.Write("plans", Records(plans));
                   }
                   dump.Write("output", out.ref());
                   return out;
                 });
           })
      // The same steps, for the records: both planners' figures, and ours as modelled too.
      .def("tvm_memplan.analysis.memory_plan", [](ObjectRef mod, MemoryPlanOptions given) {
        CheckMemoryPlanOptions(*given.get());
        MemoryPlanOptions options =
            WithBuildBudget(given, schema::func::GetCurrentPassContext().cast<ObjectRef>());
        GuardedModule guarded = GuardInplaceWrites(IRModule(mod, "memory_plan"));
        std::vector<FunctionMemoryPlanPtr> plans =
            AnalyzeMemoryPlans(guarded, *options.get(), /*model_ours=*/true);
        std::vector<PlannerChoice> choices =
            ChoosePlanners(guarded.mod, plans, *options.get(), /*run_stock=*/true);
        RecordPlannerChoices(choices, &plans);
        SplitLargestStorages(guarded.mod, plans, choices, *options.get());
        RecordPoolSizes(plans, PoolSizes(guarded.mod, plans, choices, *options.get()));
        return Records(plans);
      });
}

}  // namespace relax
}  // namespace tvm_memplan
