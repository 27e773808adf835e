/*!
 * \file relax/inplace_guard.cc
 * \brief Giving each in-place write the analysis finds (relax/inplace_guard_analysis.h) a copy
 *        of its argument to write, and the pass.
 */
#include "relax/inplace_guard.h"

#include <tvm/ffi/reflection/registry.h>

#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ir/pass.h"
#include "relax/inplace_guard_analysis.h"
#include "relax/ir_names.h"

namespace tvm_memplan {
namespace relax {

namespace {

/*! \brief Gives each unsafe write of one function a copy to write. */
class WriteReverter {
 public:
  WriteReverter(const std::string& function, const std::vector<RevertedInplaceWrite>& writes)
      : function_(function), alloc_tensor_(ir::relax::GetOp(schema::op::BuiltinAllocTensor)) {
    for (const RevertedInplaceWrite& write : writes) {
      by_binding_[write->binding.get()].push_back(write.get());
    }
  }

  Function operator()(const Function& func) {
    return ir::relax::RebindEach(
        func, [this](const Binding& binding, Array<ObjectRef>* out) { Rebind(binding, out); });
  }

 private:
  void Rebind(const Binding& binding, Array<ObjectRef>* out) {
    auto result = results_.find(binding.get());
    if (result != results_.end()) {
      out->push_back(binding.WithValue(Substituted(binding.value(), result->second)).ref());
      return;
    }
    auto found = by_binding_.find(binding.get());
    if (found == by_binding_.end()) {
      out->push_back(binding.ref());
      return;
    }
    Call call(binding.value());
    Array<ObjectRef> args = call.args();
    for (const RevertedInplaceWriteObj* write : found->second) {
      ObjectRef arg = args[write->arg];
      Var copy = Copy(arg, *write, out);
      args.Set(write->arg, copy.ref());
      if (write->result_binding.defined()) {
        results_[write->result_binding.get()].emplace_back(arg, copy.ref());
      }
    }
    out->push_back(binding.WithValue(call.WithArgs(args).ref()).ref());
  }

  /*! \brief `copy = alloc_tensor(...)` and the copy of `arg` into it, appended to `out`. */
  Var Copy(const ObjectRef& arg, const RevertedInplaceWriteObj& write,
           Array<ObjectRef>* out) const {
    ObjectRef type = TypeOf(arg);
    TensorType tensor(type);
    std::optional<Array<ObjectRef>> shape = tensor.shape();
    std::optional<DLDataType> dtype = tensor.dtype();
    if (!shape || !dtype) {
      TVM_FFI_THROW(ValueError) << "function " << Quoted(function_) << ": the call of "
                                << Quoted(write.callee) << " writes " << write.reason
                                << "; it needs a copy of " << Quoted(write.argument)
                                << ", whose shape and dtype must be known";
    }
    std::string name = IsVar(arg) ? Var(arg).name() : std::string("constant");
    Var copy = ir::relax::MakeVar(name + "_copy", type);
    Array<ObjectRef> alloc_args{ir::relax::MakeShapeExpr(*shape),
                                ir::relax::MakeDataTypeConst(*dtype), write.device, write.scope};
    out->push_back(ir::relax::MakeVarBinding(
                       copy, ir::relax::MakeTypedCall(type, alloc_tensor_, alloc_args).ref())
                       .ref());
    Call copy_call =
        ir::relax::MakePackedCall(schema::func::TensorCopyFromTo.name(), {arg, copy.ref()});
    Var unit = ir::relax::MakeVar("_", TypeOf(copy_call.ref()));
    out->push_back(ir::relax::MakeVarBinding(unit, copy_call.ref()).ref());
    return copy;
  }

  /*! \brief `value` (a variable, a constant or a tuple) with the replaced arguments swapped. */
  static ObjectRef Substituted(const ObjectRef& value,
                               const std::vector<std::pair<ObjectRef, ObjectRef>>& swaps) {
    auto swap = [&](const ObjectRef& expr) {
      for (const auto& [from, to] : swaps) {
        if (expr.same_as(from)) return to;
      }
      return expr;
    };
    std::optional<Tuple> tuple = As<Tuple>(value);
    if (!tuple) return swap(value);
    Array<ObjectRef> fields;
    for (const ObjectRef& field : tuple->fields()) fields.push_back(swap(field));
    return tuple->WithFields(fields).ref();
  }

  std::string function_;
  ObjectRef alloc_tensor_;
  std::unordered_map<const Object*, std::vector<const RevertedInplaceWriteObj*>> by_binding_;
  /*! \brief Result bindings -> (argument, its copy) to swap in them. */
  std::unordered_map<const Object*, std::vector<std::pair<ObjectRef, ObjectRef>>> results_;
};

}  // namespace

GuardedModule GuardInplaceWrites(const IRModule& mod) {
  GuardedModule guarded{mod, {}};
  PrimFuncFacts& facts = *guarded.prim_funcs;
  Map<ObjectRef, ObjectRef> updated = mod.functions();
  bool changed = false;
  for (const auto& [gv, base_func] : mod.functions()) {
    if (!Is<Function>(base_func)) continue;
    Function func(base_func);
    auto steps = std::make_shared<const std::vector<Step>>(FlattenFunction(func));
    std::shared_ptr<const FunctionFlow> flow;
    std::vector<RevertedInplaceWrite> writes = FindUnsafeWrites(func, steps, mod, &facts, &flow);
    if (writes.empty()) {
      guarded.left[func.get()] = GuardedFunction{std::move(steps), std::move(flow)};
      continue;
    }
    std::string name = GlobalVarName(gv);
    updated.Set(gv, WriteReverter(name, writes)(func).ref());
    Array<ObjectRef>& records = guarded.reverted[name];
    for (const RevertedInplaceWrite& write : writes) records.push_back(ObjectRef(write));
    changed = true;
  }
  if (changed) guarded.mod = mod.WithFunctions(updated);
  return guarded;
}

TVM_FFI_STATIC_INIT_BLOCK() {
  tvm::ffi::reflection::GlobalDef().def("tvm_memplan.transform.GuardInplaceWrites", []() {
    return MakeModulePass("tvm_memplan.GuardInplaceWrites", 0,
                          [](IRModule mod, ObjectRef) { return GuardInplaceWrites(mod).mod; });
  });
}

}  // namespace relax
}  // namespace tvm_memplan
