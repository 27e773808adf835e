/*!
 * \file tir/tag_allocation_placement.cc
 * \brief TagAllocationPlacement: decide, then move workspace and unlowered allocations to the
 *        scopes LowerTVMBuiltin reads back.
 */
#include "tir/tag_allocation_placement.h"

#include <tvm/ffi/reflection/registry.h>

#include <vector>

#include "ir/dump.h"
#include "ir/pass.h"
#include "tir/buffer_scope.h"
#include "tir/place_allocations_analysis.h"

namespace tvm_memplan {
namespace tir {

using namespace ir;

namespace {

/*! \brief The scope that carries `d` through StorageRewrite, or "" when its own scope does. */
std::string CarrierScope(const AllocationDecisionObj& d) {
  if (!Is<AllocBuffer>(d.node)) return "";
  if (d.placement == placement::kWorkspace) {
    // Dynamic sizes always go to the workspace; StorageRewrite also refuses them in tagged
    // scopes. Other scopes ("shared", ...) keep TVM's meaning.
    if (!d.nbytes || (d.scope != scope::kGlobal && d.scope != scope::kLocal)) return "";
    return scope::kGlobalWorkspace;
  }
  if (d.placement == placement::kUnlowered) {
    // StorageRewrite refuses dynamic sizes in tagged scopes: such a buffer loses its
    // annotation there, as in TVM's pipeline, and goes to the workspace as TVM's does.
    if (!d.nbytes) return "";
    return scope::kMemplanUnlowered;
  }
  return "";  // stack and stock: the scope as written
}

IRModule Run(const IRModule& mod, const ObjectRef& pass_context) {
  PassDump dump("TagAllocationPlacement");
  dump.Write("input", mod.ref());
  Array<ObjectRef> records;
  Map<ObjectRef, ObjectRef> functions;
  for (const auto& [global_var, base_func] : mod.functions()) {
    std::optional<PrimFunc> func = As<PrimFunc>(base_func);
    std::optional<target::StackLimits> limits =
        func ? HostFunctionLimits(*func, pass_context) : std::nullopt;
    if (!limits || limits->device_type != kDLCPU) {
      functions.Set(global_var, base_func);
      continue;
    }
    std::string name = GlobalVarName(global_var);
    std::vector<ScopeChange> changes;
    for (const AllocationDecision& d : PlanAllocationPlacement(*func, name, *limits).decisions) {
      if (dump.enabled()) records.push_back(ObjectRef(d));
      std::string scope = CarrierScope(*d);
      if (!scope.empty() && scope != d->buffer().scope()) changes.emplace_back(d->buffer(), scope);
    }
    functions.Set(global_var, func->WithBody(ChangeBufferScopes(func->body(), changes)).ref());
  }
  dump.Write("plan", records);
  IRModule out = mod.WithFunctions(functions);
  dump.Write("output", out.ref());
  return out;
}

}  // namespace

ObjectRef TagAllocationPlacement() {
  return MakeModulePass("tvm_memplan.TagAllocationPlacement", 0, Run);
}

TVM_FFI_STATIC_INIT_BLOCK() {
  tvm::ffi::reflection::GlobalDef().def("tvm_memplan.transform.TagAllocationPlacement",
                                        TagAllocationPlacement);
}

}  // namespace tir
}  // namespace tvm_memplan
