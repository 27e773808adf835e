/*!
 * \file relax/memory_effects.cc
 * \brief The classification of calls by what they do to memory, and by what TVM's planner sees
 *        of them.
 */
#include "relax/memory_effects.h"

#include <utility>

#include "ir/analyzer.h"
#include "relax/ir_names.h"

namespace tvm_memplan {
namespace relax {

using Kind = MemoryEffect::Kind;
using Planned = MemoryEffect::Planned;

namespace {

MemoryEffect Effect(Kind kind, Planned planned, std::string what) {
  MemoryEffect effect;
  effect.kind = kind;
  effect.planned = planned;
  effect.what = std::move(what);
  return effect;
}

/*! \brief A view of argument `source`; the planner sees one when the argument is a variable. */
MemoryEffect View(const Call& call, int64_t source, Planned otherwise, std::string what) {
  Array<ObjectRef> args = call.args();
  bool var = source < static_cast<int64_t>(args.size()) && IsVar(args[source]);
  MemoryEffect effect = Effect(Kind::kView, var ? Planned::kView : otherwise, std::move(what));
  effect.source = source;
  if (var) effect.planned_source = source;
  return effect;
}

MemoryEffect Opaque(bool escapes, Planned planned, std::string what) {
  MemoryEffect effect = Effect(Kind::kOpaque, planned, std::move(what));
  effect.escapes = escapes;
  return effect;
}

/*! \brief The number of elements of `shape`, as an int64 expression. */
ObjectRef Elements(const Array<ObjectRef>& shape) {
  ObjectRef product = IntConst(kInt64, 1);
  for (const ObjectRef& extent : shape) product = Mul(product, extent);
  return product;
}

}  // namespace

bool PrimFuncFacts::MovesDataOnly(const PrimFunc& prim_func) {
  Facts& facts = Of(prim_func);
  if (!facts.moves_data_only) {
    // TVM's analysis only reads block TIR (it aborts on lowered TIR).
    facts.moves_data_only = !Is<SBlockRealize>(prim_func.body()) ||
                            schema::func::HasReshapePattern(prim_func.ref()).cast<bool>();
  }
  return *facts.moves_data_only;
}

const std::optional<ConcatLayout>& PrimFuncFacts::Concatenation(const PrimFunc& prim_func) {
  Facts& facts = Of(prim_func);
  if (!facts.concatenation && !MayBeConcatenation(prim_func, Writes(prim_func))) {
    facts.concatenation.emplace();
  }
  if (!facts.concatenation) {
    auto result = AnalyzeConcatenation(prim_func);
    const auto* layout = std::get_if<ConcatLayout>(&result);
    facts.concatenation = layout ? std::optional<ConcatLayout>(*layout) : std::nullopt;
  }
  return *facts.concatenation;
}

const std::vector<bool>& PrimFuncFacts::WrittenParams(const PrimFunc& prim_func) {
  return Writes(prim_func).written;
}

const ParamWrites& PrimFuncFacts::Writes(const PrimFunc& prim_func) {
  Facts& facts = Of(prim_func);
  if (!facts.writes) facts.writes = WalkParamWrites(prim_func);
  return *facts.writes;
}

PrimFuncFacts::Facts& PrimFuncFacts::Of(const PrimFunc& prim_func) {
  auto [it, inserted] = facts_.try_emplace(prim_func.get());
  if (inserted) keep_alive_.push_back(prim_func.ref());
  return it->second;
}

Array<ObjectRef> CallOperands(const Call& call) {
  Array<ObjectRef> args = call.args();
  if (call.IsOp(schema::op::CallTIR) || call.IsOp(schema::op::CallTIRInplace)) {
    std::optional<Tuple> tuple = args.size() > 1 ? As<Tuple>(args[1]) : std::nullopt;
    return tuple ? tuple->fields() : Array<ObjectRef>();
  }
  return args;
}

std::vector<size_t> WrittenArguments(const Call& call, const MemoryEffect& effect,
                                     const MemoryEffects& classifier, PrimFuncFacts* facts) {
  std::vector<size_t> positions;
  if (effect.allocator != MemoryEffect::Allocator::kNone || effect.kind == Kind::kView) {
    return positions;
  }
  std::optional<PrimFunc> prim_func;
  if (effect.kind == Kind::kUse) prim_func = classifier.PrimFuncOf(call.op());
  const std::vector<bool>* written = prim_func ? &facts->WrittenParams(*prim_func) : nullptr;
  size_t num_args = call.args().size();
  for (size_t i = 0; i < num_args; ++i) {
    if (!written || (i < written->size() && (*written)[i])) positions.push_back(i);
  }
  return positions;
}

int64_t CopySource(const ObjectRef& result, const Array<ObjectRef>& operands) {
  int64_t source = -1;
  for (size_t i = 0; i < operands.size(); ++i) {
    if (!Is<TensorType>(TypeOf(operands[i]))) continue;
    if (source >= 0) return -1;  // more than one tensor operand
    source = static_cast<int64_t>(i);
  }
  if (source < 0) return -1;
  std::optional<TensorType> from = As<TensorType>(TypeOf(operands[source]));
  std::optional<TensorType> to = As<TensorType>(result);
  if (!from || !to || !from->dtype() || from->dtype() != to->dtype()) return -1;
  std::optional<Array<ObjectRef>> from_shape = from->shape(), to_shape = to->shape();
  if (!from_shape || !to_shape) return -1;
  if (!Analyzer().CanProveEqual(Elements(*from_shape), Elements(*to_shape))) return -1;
  return source;
}

MemoryEffects::MemoryEffects(const ObjectRef& mod, OperatorLowering* lowering, PrimFuncFacts* facts,
                             MemoryEffectPolicy policy)
    : lowering_(lowering), facts_(facts ? facts : &own_facts_), policy_(policy) {
  if (mod.defined()) functions_ = IRModule(mod, "module").functions();
}

std::optional<PrimFunc> MemoryEffects::PrimFuncOf(const ObjectRef& callee) const {
  auto found = functions_.find(callee);
  if (found == functions_.end() || !Is<PrimFunc>((*found).second)) return std::nullopt;
  return PrimFunc((*found).second);
}

bool MemoryEffects::IsPureFunction(const ObjectRef& callee) const {
  auto found = functions_.find(callee);
  if (found == functions_.end()) return false;
  std::optional<Function> function = As<Function>((*found).second);
  return function && function->is_pure();
}

MemoryEffect MemoryEffects::PrimFuncCallEffect(const std::optional<PrimFunc>& prim_func,
                                               const Call& call, bool may_be_copy,
                                               std::string what) {
  // A copy becomes a view of its input after RewriteDataflowReshape (a PrimFunc we cannot see
  // may be one); a concatenation may hold its inputs in our planner.
  bool copy = may_be_copy && (!prim_func || facts_->MovesDataOnly(*prim_func));
  bool concat = !copy && prim_func && policy_.concatenations_may_be_views &&
                facts_->Concatenation(*prim_func) && facts_->Concatenation(*prim_func)->contiguous;
  MemoryEffect effect = Effect(copy || concat ? Kind::kMaybeView : Kind::kAllocate,
                               copy ? Planned::kCopy : Planned::kAllocates, std::move(what));
  if (copy) effect.planned_source = CopySource(TypeOf(call.ref()), CallOperands(call));
  return effect;
}

MemoryEffect MemoryEffects::Classify(const Call& call) {
  std::string op = call.op_name();
  if (op.empty()) {
    const ObjectRef& callee = call.op();
    if (IsGlobalVar(callee)) {
      std::string name = Quoted(GlobalVarName(callee));
      if (PrimFuncOf(callee))
        return Effect(Kind::kUse, Planned::kUses, "the PrimFunc call " + name);
      bool pure = IsPureFunction(callee);
      return Opaque(!pure, Planned::kOpaque,
                    std::string(pure ? "the pure" : "the") + " function call " + name);
    }
    if (std::optional<std::string> extern_symbol = ir::relax::ExternFuncSymbol(callee)) {
      // TVM's planner takes packed functions for destination-passing kernels.
      const std::string& symbol = *extern_symbol;
      if (symbol == schema::func::VMBuiltinReshape.name()) {
        return View(call, 0, Planned::kUses, "the view " + Quoted(symbol));
      }
      return Opaque(policy_.packed_functions_keep_arguments, Planned::kUses,
                    "the packed function " + Quoted(symbol));
    }
    return Opaque(true, Planned::kOpaque, "a closure call");
  }

  // Memory operators: what they allocate or view is all they do.
  if (op == schema::op::BuiltinAllocTensor) {
    MemoryEffect effect = Effect(Kind::kAllocate, Planned::kAllocTensor, Quoted(op));
    effect.allocator = MemoryEffect::Allocator::kAllocTensor;
    return effect;
  }
  if (op == schema::op::MemoryAllocStorage || op == schema::op::VMAllocStorage) {
    MemoryEffect effect = Effect(Kind::kAllocate, Planned::kOpaque, Quoted(op));
    effect.allocator = MemoryEffect::Allocator::kAllocStorage;
    return effect;
  }
  if (op == schema::op::MemoryAllocTensor || op == schema::op::VMAllocTensor) {
    // A tensor in planned storage: already planned, nothing the planner manages.
    MemoryEffect effect = Effect(Kind::kView, Planned::kOpaque, Quoted(op));
    effect.source = 0;
    return effect;
  }
  if (op == schema::op::MemoryView || op == schema::op::EnsureZeroOffset) {
    return View(call, 0, Planned::kOpaque, Quoted(op));
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
    Array<ObjectRef> args = call.args();
    std::optional<PrimFunc> prim_func =
        op == schema::op::CallTIR && !args.empty() ? PrimFuncOf(args[0]) : std::nullopt;
    return with_escape(PrimFuncCallEffect(prim_func, call, op == schema::op::CallTIR, Quoted(op)));
  }
  if (op == schema::op::CallTIRInplace) {
    MemoryEffect effect = Effect(Kind::kInplace, Planned::kOpaque, Quoted(op));
    effect.inplace_indices = InplaceIndices(call);
    if (effect.inplace_indices.empty()) {
      return Opaque(true, Planned::kOpaque, Quoted(op) + " without indices");
    }
    // The planner sees the output as the storage of the one tensor it overwrites.
    const std::vector<int64_t>& indices = effect.inplace_indices;
    Array<ObjectRef> operands = CallOperands(call);
    if (indices.size() == 1 && indices[0] >= 0 &&
        indices[0] < static_cast<int64_t>(operands.size()) && IsVar(operands[indices[0]])) {
      effect.planned = Planned::kInplace;
      effect.planned_source = indices[0];
    }
    return with_escape(std::move(effect));
  }
  if (op == schema::op::VMCallTIRDyn)
    return with_escape(Effect(Kind::kUse, Planned::kUses, Quoted(op)));
  if (lowering_ != nullptr && OpAttr(call.op(), schema::attr::FLegalize) != nullptr) {
    LoweredOperator lowered = lowering_->Lower(call);
    if (lowered.constant) {
      // FoldConstant would make it one anyway; writing it in place would write a constant.
      MemoryEffect effect =
          Effect(Kind::kAllocate, Planned::kOpaque, "the operator " + Quoted(op) + " (a constant)");
      effect.folds_to_constant = true;
      return with_escape(std::move(effect));
    }
    if (!lowered.prim_func) {
      return Opaque(escapes, Planned::kOpaque,
                    "the operator " + Quoted(op) + " (" + lowered.detail + ")");
    }
    return with_escape(PrimFuncCallEffect(lowered.prim_func, call, true, Quoted(op)));
  }
  if (lowering_ == nullptr && op == schema::op::Reshape) {
    // After LegalizeOps, a reshape is a view (vm.builtin.reshape).
    return View(call, 0, Planned::kOpaque, Quoted(op));
  }
  return Opaque(escapes, Planned::kOpaque,
                std::string(escapes ? "the impure operator " : "the operator ") + Quoted(op));
}

}  // namespace relax
}  // namespace tvm_memplan
