/*!
 * \file ir/rewriter.cc
 * \brief Rewriter on ffi::StructuralMutate: the callback owns descent, so vars and types can be
 *        treated as leaves and hooks run after the engine's default (native) descent.
 */
#include "ir/rewriter.h"

#include <tvm/ffi/extra/structural_mutate.h>

#include "ir/node_kind.h"
#include "ir/tir.h"

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

uint64_t Rewriter::HooksFor(int32_t type_index) const {
  if (hooks_.empty()) return 0;
  constexpr uint64_t kKnown = uint64_t{1} << kMaxHooks;
  if (static_cast<size_t>(type_index) >= hook_masks_.size()) {
    hook_masks_.resize(type_index + 1, 0);
  }
  uint64_t& mask = hook_masks_[type_index];
  if (!(mask & kKnown)) {
    mask = kKnown;
    for (size_t i = 0; i < hooks_.size(); ++i) {
      if (hooks_[i].type->IsInstance(type_index)) mask |= uint64_t{1} << i;
    }
  }
  return mask & ~kKnown;
}

void Rewriter::AddHook(const TypeKey* type, bool (*matches)(const ObjectRef&), Hook rewrite) {
  if (hooks_.size() == kMaxHooks) {
    TVM_FFI_THROW(InternalError) << "Rewriter: more than " << kMaxHooks << " post-order hooks";
  }
  hooks_.push_back(PostOrderHook{type, matches, std::move(rewrite)});
  hook_masks_.clear();
}

ObjectRef Rewriter::ApplyHooks(ObjectRef node) const {
  for (size_t i = 0; i < hooks_.size() && node.defined(); ++i) {
    if (((HooksFor(node->type_index()) >> i) & 1) && hooks_[i].matches(node)) {
      node = hooks_[i].rewrite(node);
    }
  }
  return node;
}

ObjectRef Rewriter::RewriteStatement(const ObjectRef& stmt) const {
  ObjectRef out =
      MapChildStmts(stmt, [this](const ObjectRef& child) { return RewriteStatement(child); });
  return HooksFor(out->type_index()) == 0 ? out : ApplyHooks(out);
}

ObjectRef Rewriter::operator()(const ObjectRef& root) const {
  if (var_map_.empty() && hooks_.empty()) return root;
  if (skip_expressions_ && root.defined() && NodeKindOf(root->type_index()) == NodeKind::kStmt) {
    return RewriteStatement(root);
  }
  // The callback sees every node of the tree, so it avoids what costs per node: owning
  // references (the AnyView is borrowed) and type-table questions (NodeKindOf).
  Any result = ffi::StructuralMutate(
      Any(root), [this](AnyView value, ffi::StructuralMutatorObj* mutator) -> Any {
        NodeKind kind = NodeKindOf(value.type_index());
        if (kind == NodeKind::kOpaque) return ffi::Unchanged();
        if (kind == NodeKind::kVar) {
          auto it = var_map_.find(value.as<Object>());
          return it == var_map_.end() ? Any(ffi::Unchanged()) : Any(it->second);
        }
        bool is_expr = kind == NodeKind::kConstant || kind == NodeKind::kExpr;
        if (skip_expressions_ && is_expr) return ffi::Unchanged();
        // A constant holds nothing a remap or a hook could change: no descent.
        Any descended = kind == NodeKind::kConstant
                            ? Any(ffi::Unchanged())
                            : Any(mutator->DefaultMutateExpected(value).value());
        if (HooksFor(value.type_index()) == 0) return descended;
        bool unchanged = descended.type_index() == ffi::TypeIndex::kTVMFFIUnchanged;
        auto current = unchanged ? value.try_cast<ObjectRef>() : descended.try_cast<ObjectRef>();
        if (!current || !current->defined()) return descended;
        ObjectRef out = ApplyHooks(*std::move(current));
        if (unchanged && out.get() == value.as<Object>()) return ffi::Unchanged();
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
