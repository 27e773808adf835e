/*!
 * \file tir/helper_error_codes.cc
 * \brief ReturnErrorCodesFromHelpers: find the helpers that can fail (to a fixed point over the
 *        call graph), then rewrite them and their call sites.
 */
#include "tir/helper_error_codes.h"

#include <tvm/ffi/extra/structural_visit.h>

#include <unordered_set>

#include "ir/rewriter.h"

namespace tvm_memplan {
namespace tir {

using namespace ir;

namespace {

constexpr DLDataType kInt32{kDLInt, 32, 1};

/*! \brief The GlobalVar a call calls, or nullptr. */
const Object* Callee(const Call& call) {
  ObjectRef op = call.op();
  return IsGlobalVar(op) ? op.get() : nullptr;
}

/*! \brief Whether `body` throws, or calls one of `failing`. */
bool CanFail(const ObjectRef& body, const std::unordered_set<const Object*>& failing) {
  Optional<ffi::VisitInterrupt> found = ffi::StructuralVisit(
      body,
      [&](const ObjectRef& node,
          ffi::StructuralVisitorObj* engine) -> Optional<ffi::VisitInterrupt> {
        if (!node.defined() || IsVar(node) || IsTypeNode(node)) {
          return std::nullopt;
        }
        if (std::optional<Call> call = As<Call>(node)) {
          if (call->IsOp(schema::op::ThrowLastError) || failing.count(Callee(*call))) {
            return ffi::VisitInterrupt();
          }
        }
        return engine->DefaultVisitExpected(node).value();
      });
  return found.has_value();
}

}  // namespace

IRModule ReturnErrorCodesFromHelpers(const IRModule& mod) {
  Map<ObjectRef, ObjectRef> functions = mod.functions();
  std::unordered_set<const Object*> failing;  // GlobalVars of the helpers to change
  for (bool grew = true; grew;) {
    grew = false;
    for (const auto& [global_var, base_func] : functions) {
      std::optional<PrimFunc> func = As<PrimFunc>(base_func);
      // Only private helpers: every call to them is in this module, so none can miss the code.
      if (!func || failing.count(global_var.get()) || !func->ReturnsNothing() ||
          !func->global_symbol().empty()) {
        continue;
      }
      if (CanFail(func->body(), failing)) grew = failing.insert(global_var.get()).second;
    }
  }
  if (failing.empty()) return mod;
  Rewriter check_calls;
  check_calls.PostOrder<Evaluate>([&](const Evaluate& eval) -> ObjectRef {
    std::optional<Call> call = As<Call>(eval.value());
    if (!call || !failing.count(Callee(*call))) return eval;
    ObjectRef code = call->WithType(PrimTypeOf(kInt32));
    return MakeIfThenElse(NE(code, IntConst(kInt32, 0)),
                          MakeEvaluate(CallOp(kInt32, schema::op::ThrowLastError, {})));
  });
  Map<ObjectRef, ObjectRef> rewritten;
  for (const auto& [global_var, base_func] : functions) {
    std::optional<PrimFunc> func = As<PrimFunc>(base_func);
    if (!func) {
      rewritten.Set(global_var, base_func);
      continue;
    }
    PrimFunc out = func->WithBody(check_calls(func->body()));
    if (failing.count(global_var.get())) {
      out = PrimFunc(out.WithBody(MakeSeq({out.body(), MakeReturn(IntConst(kInt32, 0))})))
                .WithRetType(PrimTypeOf(kInt32));
    }
    rewritten.Set(global_var, out.ref());
  }
  return mod.WithFunctions(rewritten);
}

}  // namespace tir
}  // namespace tvm_memplan
