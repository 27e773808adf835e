/*!
 * \file relax/memory_effects.cc
 * \brief The classification of calls by what they do to memory.
 */
#include "relax/memory_effects.h"

#include <utility>

#include "relax/concat_prim_func.h"

namespace tvm_memplan {
namespace relax {

using namespace ir;
using ir::relax::Function;
using ir::relax::InplaceIndices;
using ir::relax::OpAttr;

namespace {

MemoryEffect Effect(MemoryEffect::Kind kind, std::string what) {
  MemoryEffect effect;
  effect.kind = kind;
  effect.what = std::move(what);
  return effect;
}

MemoryEffect View(int64_t source, std::string what) {
  MemoryEffect effect = Effect(MemoryEffect::Kind::kView, std::move(what));
  effect.source = source;
  return effect;
}

MemoryEffect Opaque(bool escapes, std::string what) {
  MemoryEffect effect = Effect(MemoryEffect::Kind::kOpaque, std::move(what));
  effect.escapes = escapes;
  return effect;
}

}  // namespace

MemoryEffects::MemoryEffects(const ObjectRef& mod, OpLegalizer* legalizer,
                             MemoryEffectPolicy policy)
    : legalizer_(legalizer), policy_(policy) {
  if (mod.defined()) functions_ = IRModule(mod, "module").functions();
}

bool MemoryEffects::IsPrimFunc(const ObjectRef& callee) const {
  auto found = functions_.find(callee);
  return found != functions_.end() && Is<PrimFunc>((*found).second);
}

bool MemoryEffects::IsPureFunction(const ObjectRef& callee) const {
  auto found = functions_.find(callee);
  if (found == functions_.end()) return false;
  std::optional<Function> function = As<Function>((*found).second);
  return function && function->is_pure();
}

bool MemoryEffects::MayBeReshape(const Call& call) {
  Array<ObjectRef> args = call.args();
  if (args.empty() || legalizer_ == nullptr) return true;
  auto found = functions_.find(args[0]);
  if (found == functions_.end() || !Is<PrimFunc>((*found).second)) return true;
  return legalizer_->HasReshapePattern(PrimFunc((*found).second));
}

bool MemoryEffects::IsContiguousConcatenation(const PrimFunc& prim_func) {
  auto found = concatenations_.find(prim_func.get());
  if (found != concatenations_.end()) return found->second;
  auto result = AnalyzeConcatenation(prim_func);
  const auto* layout = std::get_if<ConcatLayout>(&result);
  keep_alive_.push_back(prim_func.ref());
  return concatenations_[prim_func.get()] = layout != nullptr && layout->contiguous;
}

MemoryEffect MemoryEffects::Classify(const Call& call) {
  using Kind = MemoryEffect::Kind;
  std::string op = call.op_name();
  if (op.empty()) {
    const ObjectRef& callee = call.op();
    if (IsGlobalVar(callee)) {
      std::string name = Quoted(GlobalVarName(callee));
      if (IsPrimFunc(callee)) return Effect(Kind::kUse, "the PrimFunc call " + name);
      bool pure = IsPureFunction(callee);
      return Opaque(!pure, std::string(pure ? "the pure" : "the") + " function call " + name);
    }
    if (std::optional<std::string> extern_symbol = ir::relax::ExternFuncSymbol(callee)) {
      const std::string& symbol = *extern_symbol;
      if (symbol == schema::func::VMBuiltinReshape.name())
        return View(0, "the view " + Quoted(symbol));
      return Opaque(policy_.packed_functions_keep_arguments,
                    "the packed function " + Quoted(symbol));
    }
    return Opaque(true, "a closure call");
  }

  // Memory operators: what they allocate or view is all they do.
  if (op == schema::op::BuiltinAllocTensor) {
    MemoryEffect effect = Effect(Kind::kAllocate, Quoted(op));
    effect.allocator = MemoryEffect::Allocator::kAllocTensor;
    return effect;
  }
  if (op == schema::op::MemoryAllocStorage || op == schema::op::VMAllocStorage) {
    MemoryEffect effect = Effect(Kind::kAllocate, Quoted(op));
    effect.allocator = MemoryEffect::Allocator::kAllocStorage;
    return effect;
  }
  if (op == schema::op::MemoryAllocTensor || op == schema::op::VMAllocTensor ||
      op == schema::op::MemoryView || op == schema::op::EnsureZeroOffset) {
    return View(0, Quoted(op));
  }

  Any purity = OpAttr(call.op(), schema::attr::FPurity);
  bool escapes = purity != nullptr && !purity.cast<bool>();
  auto with_escape = [&](MemoryEffect effect) {
    effect.escapes = escapes;
    return effect;
  };
  if (op == schema::op::CallTIR || op == schema::op::CallTIRWithGrad ||
      op == schema::op::CallDPSPacked) {
    // Destination-passing style: the VM allocates the outputs, unless the PrimFunc only
    // moves data and RewriteDataflowReshape turns the call into a view.
    bool reshape = op == schema::op::CallTIR && MayBeReshape(call);
    if (!reshape && op == schema::op::CallTIR && policy_.concatenations_may_be_views) {
      Array<ObjectRef> args = call.args();
      auto found = args.empty() ? functions_.end() : functions_.find(args[0]);
      reshape = found != functions_.end() && Is<PrimFunc>((*found).second) &&
                IsContiguousConcatenation(PrimFunc((*found).second));
    }
    return with_escape(Effect(reshape ? Kind::kMaybeView : Kind::kAllocate, Quoted(op)));
  }
  if (op == schema::op::CallTIRInplace) {
    MemoryEffect effect = Effect(Kind::kInplace, Quoted(op));
    effect.inplace_indices = InplaceIndices(call);
    if (effect.inplace_indices.empty()) return Opaque(true, Quoted(op) + " without indices");
    return with_escape(std::move(effect));
  }
  if (op == schema::op::VMCallTIRDyn) return with_escape(Effect(Kind::kUse, Quoted(op)));
  if (legalizer_ != nullptr && OpAttr(call.op(), schema::attr::FLegalize) != nullptr) {
    const LegalizedCall& legal = legalizer_->Legalize(call);
    if (legal.kind != LegalizedCall::Kind::kCallTIR) {
      return Opaque(escapes, "the operator " + Quoted(op) + " (" + legal.detail + ")");
    }
    // A copy becomes a view of its input after RewriteDataflowReshape; a concatenation may
    // become one of its inputs in our planner.
    bool view = legal.reshape_pattern || (policy_.concatenations_may_be_views &&
                                          IsContiguousConcatenation(*legal.prim_func));
    return with_escape(Effect(view ? Kind::kMaybeView : Kind::kAllocate, Quoted(op)));
  }
  if (legalizer_ == nullptr && op == schema::op::Reshape) {
    return View(0, Quoted(op));  // after LegalizeOps, a reshape is a view (vm.builtin.reshape)
  }
  return Opaque(escapes,
                std::string(escapes ? "the impure operator " : "the operator ") + Quoted(op));
}

}  // namespace relax
}  // namespace tvm_memplan
