/*!
 * \file ir/rewriter.cc
 * \brief Rewriter on ffi::StructuralMutate: the callback owns descent, so vars and types can be
 *        treated as leaves and hooks run after the engine's default (native) descent.
 */
#include "ir/rewriter.h"

#include <tvm/ffi/extra/structural_mutate.h>

namespace tvm_memplan {
namespace ir {

using namespace schema;

Rewriter& Rewriter::RemapVar(const ObjectRef& var, const ObjectRef& replacement) {
  if (!type::Var.IsInstance(var)) {
    TVM_FFI_THROW(TypeError) << "RemapVar: expected an ir.Var, got `" << TypeKeyOf(var) << "`";
  }
  if (skip_expressions_) {
    TVM_FFI_THROW(InternalError)
        << "Rewriter: RemapVar needs the expressions SkipExpressions skips";
  }
  keep_alive_.push_back(var);
  var_map_[var.get()] = replacement;
  return *this;
}

Rewriter& Rewriter::SkipExpressions() {
  if (!var_map_.empty()) {
    TVM_FFI_THROW(InternalError)
        << "Rewriter: RemapVar needs the expressions SkipExpressions skips";
  }
  skip_expressions_ = true;
  return *this;
}

ObjectRef Rewriter::operator()(const ObjectRef& root) const {
  if (var_map_.empty() && hooks_.empty()) return root;
  Any result = ffi::StructuralMutate(
      Any(root), [this](const ObjectRef& node, ffi::StructuralMutatorObj* mutator) -> Any {
        if (!node.defined()) return ffi::Unchanged();
        int32_t t = node->type_index();
        if (type::Var.IsInstance(t)) {
          auto it = var_map_.find(node.get());
          return it == var_map_.end() ? Any(ffi::Unchanged()) : Any(it->second);
        }
        if (type::Type.IsInstance(t) || type::Op.IsInstance(t)) return ffi::Unchanged();
        if (skip_expressions_ && type::Expr.IsInstance(t)) return ffi::Unchanged();
        Any mutated = mutator->DefaultMutateExpected(node).value().ValueOrUnchanged(AnyView(node));
        if (hooks_.empty()) return mutated;
        auto current = mutated.try_cast<ObjectRef>();
        if (!current || !current->defined()) return mutated;
        ObjectRef out = *current;
        for (const auto& [matches, hook] : hooks_) {
          if (matches(out)) out = hook(out);
        }
        return out;
      });
  return result.cast<ObjectRef>();
}

ObjectRef Substitute(const ObjectRef& expr, const Map<ObjectRef, ObjectRef>& var_map) {
  if (var_map.empty()) return expr;
  Rewriter rewriter;
  for (const auto& [var, value] : var_map) rewriter.RemapVar(var, value);
  return rewriter(expr);
}

}  // namespace ir
}  // namespace tvm_memplan
