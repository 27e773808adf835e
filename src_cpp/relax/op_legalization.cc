/*!
 * \file relax/op_legalization.cc
 * \brief Legalization of single operator calls through the operator's FLegalize, memoized per
 *        call signature.
 */
#include "relax/op_legalization.h"

#include <algorithm>
#include <unordered_set>
#include <utility>

#include "ir/pass.h"
#include "ir/rewriter.h"
#include "relax/ir_names.h"

namespace tvm_memplan {
namespace relax {

namespace {

/*! \brief Whether `arg` is a constant a legalization passes to its PrimFunc (not a scalar,
 *         whose value TVM's legalizations inline). */
bool IsTensorConstant(const ObjectRef& arg) {
  if (!ir::relax::IsConstant(arg)) return false;
  std::optional<TensorType> type = As<TensorType>(TypeOf(arg));
  std::optional<Array<ObjectRef>> shape = type ? type->shape() : std::nullopt;
  return shape && !shape->empty();
}

/*! \brief Whether `arg` stands for its type in signatures: a variable, or (as a call argument)
 *         a tensor constant. */
bool IsPlaceholder(const ObjectRef& arg, bool call_argument) {
  return IsVar(arg) || (call_argument && IsTensorConstant(arg));
}

/*!
 * \brief The structural signature of an argument: variables (and tensor constants passed as
 *        arguments) are replaced by their type and the position of their first occurrence, so
 *        `add(a, a)` and `add(a, b)` differ while two calls over different variables of the same
 *        types share a signature. `vars` collects them in that order.
 */
Any ArgSignature(const ObjectRef& arg, std::vector<ObjectRef>* vars, bool call_argument) {
  if (IsPlaceholder(arg, call_argument)) {
    int64_t position = static_cast<int64_t>(vars->size());
    for (size_t i = 0; i < vars->size(); ++i) {
      if ((*vars)[i].same_as(arg)) position = static_cast<int64_t>(i);
    }
    if (position == static_cast<int64_t>(vars->size())) vars->push_back(arg);
    return Array<Any>{String("var"), TypeOf(arg), position};
  }
  if (std::optional<Tuple> tuple = As<Tuple>(arg)) {
    Array<Any> fields{String("tuple")};
    for (const ObjectRef& field : tuple->fields()) {
      fields.push_back(ArgSignature(field, vars, false));
    }
    return fields;
  }
  return arg;  // scalar constants, shapes, prim values: compared structurally
}

/*! \brief The placeholders of `call`'s signature, in order. */
std::vector<ObjectRef> Placeholders(const Call& call) {
  std::vector<ObjectRef> vars;
  for (const ObjectRef& arg : call.args()) ArgSignature(arg, &vars, true);
  return vars;
}

ffi::StructuralKey CallSignature(const Call& call) {
  std::vector<ObjectRef> vars;
  Array<Any> key{call.op(), call.attrs(), call.ty_args(), TypeOf(call.ref())};
  for (const ObjectRef& arg : call.args()) key.push_back(ArgSignature(arg, &vars, true));
  return ffi::StructuralKey(key);
}

/*! \brief `call` with each tensor constant argument replaced by a variable of its type, which
 *         Instantiate replaces by the constants of the calls sharing the signature. */
Call WithConstantsAsVariables(const Call& call) {
  Array<ObjectRef> args = call.args();
  std::vector<std::pair<ObjectRef, ObjectRef>> replaced;  // constant -> its variable
  Array<ObjectRef> out;
  for (const ObjectRef& arg : args) {
    if (!IsTensorConstant(arg)) {
      out.push_back(arg);
      continue;
    }
    auto found = std::find_if(replaced.begin(), replaced.end(),
                              [&](const auto& entry) { return entry.first.same_as(arg); });
    if (found == replaced.end()) {
      std::string name = "const" + std::to_string(replaced.size());
      replaced.emplace_back(arg, ir::relax::MakeVar(name, TypeOf(arg)).ref());
      found = replaced.end() - 1;
    }
    out.push_back(found->second);
  }
  return replaced.empty() ? call : call.WithArgs(out);
}

}  // namespace

const LegalizedCall& OpLegalizer::Legalize(const Call& call) {
  ffi::StructuralKey key = CallSignature(call);
  auto it = cache_.find(key);
  if (it != cache_.end()) return *it->second;

  auto legal = std::make_unique<LegalizedCall>();
  Call template_call = WithConstantsAsVariables(call);
  legal->template_call = template_call.ref();
  Any flegalize = OpAttr(call.op(), schema::attr::FLegalize);
  if (flegalize == nullptr) {
    legal->kind = LegalizedCall::Kind::kNoLegalization;
    return *cache_.emplace(key, std::move(legal)).first->second;
  }
  legal->kind = LegalizedCall::Kind::kOther;
  // A scratch builder over an empty module: the PrimFunc gets the operator's own name, and
  // whatever the legalization emits stays out of the user's module.
  BlockBuilder builder;
  builder.BeginBlock(/*dataflow=*/true);
  bool block_open = true;
  try {
    ObjectRef result =
        flegalize.cast<ffi::Function>()(builder.ref(), template_call.ref()).cast<ObjectRef>();
    result = builder.Normalize(result);
    BindingBlock emitted = builder.EndBlock();
    block_open = false;
    std::optional<Call> call_tir = As<Call>(result);
    legal->prologue_bindings = static_cast<int64_t>(emitted.bindings().size());
    if (ir::relax::IsConstant(result)) {
      legal->kind = LegalizedCall::Kind::kConstant;
      legal->detail = "legalizes to a constant";
    } else if (!call_tir || !call_tir->IsOp(schema::op::CallTIR)) {
      legal->detail = "legalizes to `" + TypeKeyOf(result) + "`" +
                      (call_tir ? " calling " + ToString(call_tir->op()) : std::string());
    } else {
      Array<ObjectRef> args = call_tir->args();
      Map<ObjectRef, ObjectRef> functions = builder.ContextModule().functions();
      auto found = functions.find(args[0]);
      if (found == functions.end() || !Is<PrimFunc>((*found).second)) {
        legal->detail = "legalized call_tir does not call a PrimFunc";
      } else {
        legal->kind = LegalizedCall::Kind::kCallTIR;
        legal->call_tir = call_tir->ref();
        legal->prim_func = PrimFunc((*found).second);
        legal->prim_func_name = GlobalVarName(args[0]);
        legal->has_tir_vars = args.size() > 2;
      }
    }
  } catch (const ffi::Error& error) {
    legal->detail = std::string("legalization failed: ") + error.message();
    if (block_open) builder.EndBlock();
  }
  return *cache_.emplace(key, std::move(legal)).first->second;
}

const LegalizedCall* OpLegalizer::Find(const Call& call) const {
  auto it = cache_.find(CallSignature(call));
  return it == cache_.end() ? nullptr : it->second.get();
}

std::vector<ObjectRef> OpLegalizer::Operators() const {
  std::vector<ObjectRef> ops;
  std::unordered_set<const Object*> seen;
  for (const auto& [key, legal] : cache_) {
    ObjectRef op = Call(legal->template_call).op();
    if (seen.insert(op.get()).second) ops.push_back(op);
  }
  return ops;
}

LoweredOperator OpLegalizer::Lower(const Call& call) {
  const LegalizedCall& legal = Legalize(call);
  if (legal.kind != LegalizedCall::Kind::kCallTIR) {
    return {std::nullopt, legal.detail, legal.kind == LegalizedCall::Kind::kConstant};
  }
  return {legal.prim_func, ""};
}

ObjectRef OpLegalizer::Instantiate(const LegalizedCall& legal, const Call& call) const {
  std::vector<ObjectRef> template_vars = Placeholders(Call(legal.template_call));
  std::vector<ObjectRef> vars = Placeholders(call);
  if (template_vars.size() != vars.size()) {
    TVM_FFI_THROW(InternalError) << "internal error: calls of one signature have "
                                 << template_vars.size() << " and " << vars.size() << " variables";
  }
  Map<ObjectRef, ObjectRef> substitution;
  for (size_t i = 0; i < vars.size(); ++i) {
    if (!template_vars[i].same_as(vars[i])) substitution.Set(template_vars[i], vars[i]);
  }
  return Substitute(legal.call_tir, substitution);
}

int64_t OpLegalizer::OpPattern(const LegalizedCall& legal) {
  if (legal.kind != LegalizedCall::Kind::kCallTIR) return -1;
  if (legal.op_pattern) return *legal.op_pattern;
  // AnnotateTIROpPattern is a module pass: run it on a module holding just this PrimFunc.
  static const ObjectRef annotate = schema::func::AnnotateTIROpPattern().cast<ObjectRef>();
  ObjectRef gv = Call(legal.call_tir).args()[0];
  Map<ObjectRef, ObjectRef> functions;
  functions.Set(gv, legal.prim_func->ref());
  IRModule single = BlockBuilder().ContextModule().WithFunctions(functions);
  IRModule annotated = ApplyPass(annotate, single);
  int64_t pattern = -1;
  auto found = annotated.functions().find(gv);
  if (found != annotated.functions().end()) {
    if (std::optional<Any> value = FuncAttr((*found).second, schema::attr::OpPattern)) {
      pattern = value->cast<int64_t>();
    }
  }
  legal.op_pattern = pattern;
  return pattern;
}

}  // namespace relax
}  // namespace tvm_memplan
