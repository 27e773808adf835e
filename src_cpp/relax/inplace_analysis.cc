/*!
 * \file relax/inplace_analysis.cc
 * \brief The in-place analysis: a flattened program, last uses, a points-to analysis over
 *        storage roots, and the per-binding decision (see the header for the rules).
 */
#include "relax/inplace_analysis.h"

#include <tvm/ffi/extra/structural_equal.h>
#include <tvm/ffi/extra/structural_visit.h>
#include <tvm/ffi/reflection/registry.h>

#include <algorithm>
#include <memory>
#include <unordered_map>
#include <unordered_set>

#include "ir/analyzer.h"
#include "relax/inplace_prim_func.h"
#include "relax/memory_plan_model.h"

namespace tvm_memplan {
namespace relax {

using namespace ir;
using ir::relax::Binding;
using ir::relax::BindingBlock;
using ir::relax::Function;
using ir::relax::If;
using ir::relax::InplaceIndices;
using ir::relax::IsConstant;
using ir::relax::IsExternFunc;
using ir::relax::IsGlobalVar;
using ir::relax::IsVar;
using ir::relax::OpAttr;
using ir::relax::SameShapeAndDType;
using ir::relax::SeqExpr;
using ir::relax::TensorType;
using ir::relax::Tuple;
using ir::relax::TupleGetItem;
using ir::relax::TupleType;
using ir::relax::TypeOf;

namespace {

std::string Quoted(const std::string& name) { return "`" + name + "`"; }

/*! \brief TVM's name of an op_pattern (OpPatternKind in relax/op_attr_types.h), for messages. */
std::string PatternName(int64_t pattern) {
  const char* name = "opaque";
  switch (pattern) {
    case 0:
      name = "elementwise";
      break;
    case 1:
      name = "broadcast";
      break;
    case 2:
      name = "injective";
      break;
    case 3:
      name = "reduction";
      break;
    case 4:
      name = "out-elementwise-fusable";
      break;
  }
  return std::string(name) + " (op_pattern=" + std::to_string(pattern) + ")";
}

// ---- the program as a sequence of steps ---------------------------------------------------

/*!
 * \brief One point of the flattened function. Bindings are steps; an `if` contributes its
 *        condition, each branch's own steps and result, and the merge that binds its var.
 */
struct Step {
  enum class Kind { kBinding, kIfCondition, kBranchResult, kIfResult, kReturn };
  Kind kind;
  /*! \brief The binding (kBinding, kIfResult) or the `if` binding (kIfCondition, kBranchResult). */
  std::optional<Binding> binding;
  /*! \brief The bound value, the condition, or the branch / function result. */
  ObjectRef expr;
  /*! \brief kIfResult: the two branch results. */
  ObjectRef true_result, false_result;
  bool dataflow = false;
  /*! \brief Variables the step reads (not descending into types). */
  std::vector<const Object*> uses;
  /*! \brief The `if` branches enclosing the step: (id of the `if`, 0 then / 1 else). */
  std::vector<std::pair<int, int>> branches;
  /*!
   * \brief The block the memory planner sees the step in (-1: the function result). After
   *        ToNonDataflow the blocks of one SeqExpr merge into one, so this numbers SeqExprs:
   *        the function body and each `if` branch.
   */
  int block = -1;
};

/*!
 * \brief Whether step `later` can run after step `earlier` (`earlier < later`): not when
 *        `earlier` is in the then branch and `later` in the else branch of the same `if`.
 */
bool CanFollow(const Step& earlier, const Step& later) {
  for (const auto& [id, side] : earlier.branches) {
    if (side == 0 &&
        std::count(later.branches.begin(), later.branches.end(), std::make_pair(id, 1))) {
      return false;
    }
  }
  return true;
}

/*! \brief Variables occurring in `expr`, in first-occurrence order. */
std::vector<const Object*> UsedVars(const ObjectRef& expr) {
  std::vector<const Object*> vars;
  std::unordered_set<const Object*> seen;
  if (!expr.defined()) return vars;
  ffi::StructuralVisit(expr,
                       [&](const ObjectRef& node,
                           ffi::StructuralVisitorObj* engine) -> Optional<ffi::VisitInterrupt> {
                         if (!node.defined()) return std::nullopt;
                         int32_t t = node->type_index();
                         if (schema::type::Var.IsInstance(t)) {
                           if (seen.insert(node.get()).second) vars.push_back(node.get());
                           return std::nullopt;  // a var's type holds no uses
                         }
                         if (schema::type::Type.IsInstance(t) || schema::type::Op.IsInstance(t) ||
                             schema::type::GlobalVar.IsInstance(t)) {
                           return std::nullopt;
                         }
                         engine->DefaultVisitExpected(node).value();
                         return std::nullopt;
                       });
  return vars;
}

/*! \brief The result of a branch: the body of its SeqExpr, or the branch itself. */
ObjectRef BranchResult(const ObjectRef& branch) {
  if (std::optional<SeqExpr> seq = As<SeqExpr>(branch)) return seq->body();
  return branch;
}

class Flattener {
 public:
  std::vector<Step> steps;

  void Flatten(const Function& func) {
    std::optional<SeqExpr> body = As<SeqExpr>(func.body());
    if (!body) {
      TVM_FFI_THROW(ValueError) << "the function body is a `" << TypeKeyOf(func.body())
                                << "`, not a SeqExpr: normalize the module first "
                                << "(tvm.relax.transform.Normalize())";
    }
    Blocks(*body);
    Push(Step::Kind::kReturn, std::nullopt, body->body(), false);
  }

 private:
  void Blocks(const SeqExpr& seq) {
    int block_id = next_block_++;
    for (const ObjectRef& item : seq.blocks()) {
      BindingBlock block(item, "SeqExpr.blocks");
      for (const ObjectRef& b : block.bindings()) {
        block_ = block_id;
        Binding binding(b, "BindingBlock.bindings");
        std::optional<If> branch = As<If>(binding.value());
        if (!branch) {
          Push(Step::Kind::kBinding, binding, binding.value(), block.is_dataflow());
          continue;
        }
        Push(Step::Kind::kIfCondition, binding, branch->cond(), false);
        int id = next_if_++;
        for (int side : {0, 1}) {
          ObjectRef body = side == 0 ? branch->true_branch() : branch->false_branch();
          branches_.emplace_back(id, side);
          if (std::optional<SeqExpr> inner = As<SeqExpr>(body)) Blocks(*inner);
          Push(Step::Kind::kBranchResult, binding, BranchResult(body), false);
          branches_.pop_back();
        }
        // The merge binds the `if` var to either result. It reads nothing itself: each branch
        // already read its result in its kBranchResult step, on its own path, and the `if`
        // var's later reads count for whatever either result may refer to.
        Step merge;
        merge.kind = Step::Kind::kIfResult;
        merge.binding = binding;
        merge.true_result = BranchResult(branch->true_branch());
        merge.false_result = BranchResult(branch->false_branch());
        merge.branches = branches_;
        merge.block = block_id;
        steps.push_back(std::move(merge));
      }
    }
  }

  void Push(Step::Kind kind, std::optional<Binding> binding, const ObjectRef& expr, bool dataflow) {
    Step step;
    step.kind = kind;
    step.binding = std::move(binding);
    step.expr = expr;
    step.dataflow = dataflow;
    step.uses = UsedVars(expr);
    step.branches = branches_;
    step.block = kind == Step::Kind::kReturn ? -1 : block_;
    steps.push_back(std::move(step));
  }

  std::vector<std::pair<int, int>> branches_;
  int next_if_ = 0;
  int next_block_ = 0;
  int block_ = -1;
};

// ---- storage roots and abstract values ----------------------------------------------------

using RootId = int32_t;
/*! \brief A sorted set of roots. */
using RootSet = std::vector<RootId>;

RootSet Union(const RootSet& a, const RootSet& b) {
  RootSet out;
  std::set_union(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(out));
  return out;
}

bool Intersects(const RootSet& a, const RootSet& b) {
  auto i = a.begin();
  auto j = b.begin();
  while (i != a.end() && j != b.end()) {
    if (*i == *j) return true;
    if (*i < *j) {
      ++i;
    } else {
      ++j;
    }
  }
  return false;
}

/*!
 * \brief What a value may refer to: `roots` holds every storage reachable from it (through
 *        tuple fields too); `fields` is the tuple structure when it is known.
 */
struct Value {
  RootSet roots;
  std::shared_ptr<const std::vector<Value>> fields = nullptr;
};

Value TupleOf(std::vector<Value> fields) {
  Value tuple;
  for (const Value& field : fields) tuple.roots = Union(tuple.roots, field.roots);
  tuple.fields = std::make_shared<const std::vector<Value>>(std::move(fields));
  return tuple;
}

/*! \brief A value that may be either `a` or `b`. */
Value Join(const Value& a, const Value& b) {
  if (a.fields && b.fields && a.fields->size() == b.fields->size()) {
    std::vector<Value> fields;
    for (size_t i = 0; i < a.fields->size(); ++i) {
      fields.push_back(Join((*a.fields)[i], (*b.fields)[i]));
    }
    return TupleOf(std::move(fields));
  }
  return Value{Union(a.roots, b.roots), nullptr};
}

/*! \brief Who owns a storage root. Only kAllocated storage may be overwritten. */
enum class RootKind {
  /*! \brief Allocated by an operator call of this function. */
  kAllocated,
  /*! \brief A function parameter: the caller owns it. */
  kParam,
  /*! \brief A constant, or computed from constants only (FoldConstant may make it one). */
  kConstant,
  /*! \brief Returned by a call of a function or an opaque operator: may be anything. */
  kForeign,
};

struct Root {
  RootKind kind;
  /*! \brief Where the storage comes from, for messages. */
  std::string origin;
  /*! \brief Non-empty once the storage escaped (impure call, closure): why. */
  std::string escape;
  /*! \brief Steps reading a variable that may refer to this storage. */
  std::vector<int64_t> uses;
};

// ---- the analysis -------------------------------------------------------------------------

class Analysis {
 public:
  Analysis(const Function& func, const ObjectRef& mod, const InplaceOptionsObj& options,
           InplaceContext* context)
      : func_(func), options_(options), context_(context) {
    if (mod.defined()) module_functions_ = IRModule(mod, "module").functions();
  }

  std::vector<InplaceDecision> Run() {
    Flattener flattener;
    flattener.Flatten(func_);
    steps_ = std::move(flattener.steps);
    for (size_t i = 0; i < steps_.size(); ++i) {
      for (const Object* var : steps_[i].uses) uses_[var].push_back(static_cast<int64_t>(i));
    }
    for (const ObjectRef& param : func_.params()) {
      Define(param, Value{{NewRoot(RootKind::kParam, Quoted(NameOf(param)))}, nullptr});
    }
    for (size_t i = 0; i < steps_.size(); ++i) Visit(static_cast<int64_t>(i));
    if (options_.memory_aware) KeepRewritesThatDoNotRaiseMemory();
    return decisions_;
  }

 private:
  static std::string NameOf(const ObjectRef& var) { return Var(var).name(); }

  RootId NewRoot(RootKind kind, std::string origin) {
    roots_.push_back(Root{kind, std::move(origin), "", {}});
    return static_cast<RootId>(roots_.size() - 1);
  }

  /*! \brief Bind `var` to `value`: its roots are read wherever the var is. */
  void Define(const ObjectRef& var, Value value) {
    auto it = uses_.find(var.get());
    if (it != uses_.end()) {
      for (RootId root : value.roots) {
        std::vector<int64_t>& uses = roots_[root].uses;
        uses.insert(uses.end(), it->second.begin(), it->second.end());
      }
    }
    env_[var.get()] = std::move(value);
  }

  void Escape(const RootSet& roots, const std::string& why) {
    for (RootId root : roots) {
      if (roots_[root].escape.empty()) roots_[root].escape = why;
    }
  }

  std::string Describe(int64_t step) const {
    if (step < 0 || step >= static_cast<int64_t>(steps_.size())) return "the end of the function";
    const Step& s = steps_[step];
    std::string var = s.binding ? Quoted(s.binding->var().name()) : std::string();
    switch (s.kind) {
      case Step::Kind::kBinding:
      case Step::Kind::kIfResult:
        return var;
      case Step::Kind::kIfCondition:
        return "the condition of " + var;
      case Step::Kind::kBranchResult:
        return "a branch result of " + var;
      case Step::Kind::kReturn:
        return "the function's return value";
    }
    return var;
  }

  /*! \brief Fresh storage for a result of type `type` (one root per tensor of a tuple). */
  Value Fresh(const ObjectRef& type, RootKind kind, const std::string& origin) {
    if (std::optional<TupleType> tuple = As<TupleType>(type)) {
      std::vector<Value> fields;
      for (const ObjectRef& field : tuple->fields()) fields.push_back(Fresh(field, kind, origin));
      return TupleOf(std::move(fields));
    }
    return Value{{NewRoot(kind, origin)}, nullptr};
  }

  /*! \brief A result that may be any of `args` or storage of unknown origin. */
  Value Opaque(const RootSet& args, const std::string& origin) {
    return Value{Union(args, {NewRoot(RootKind::kForeign, origin)}), nullptr};
  }

  bool OnlyConstants(const RootSet& roots) const {
    return std::all_of(roots.begin(), roots.end(),
                       [&](RootId r) { return roots_[r].kind == RootKind::kConstant; });
  }

  Value Eval(const ObjectRef& expr, const std::string& where) {
    if (!expr.defined()) return {};
    if (IsVar(expr)) {
      auto it = env_.find(expr.get());
      if (it != env_.end()) return it->second;
      return Opaque({}, "unbound variable " + Quoted(NameOf(expr)));
    }
    if (IsConstant(expr)) return Value{{NewRoot(RootKind::kConstant, "a constant")}, nullptr};
    if (std::optional<Tuple> tuple = As<Tuple>(expr)) {
      std::vector<Value> fields;
      for (const ObjectRef& field : tuple->fields()) fields.push_back(Eval(field, where));
      return TupleOf(std::move(fields));
    }
    if (std::optional<TupleGetItem> get = As<TupleGetItem>(expr)) {
      Value tuple = Eval(get->tuple(), where);
      int64_t index = get->index();
      if (tuple.fields && index >= 0 && index < static_cast<int64_t>(tuple.fields->size())) {
        return (*tuple.fields)[index];
      }
      return Value{tuple.roots, nullptr};
    }
    if (std::optional<Call> call = As<Call>(expr)) return EvalCall(*call, where);
    if (Is<Function>(expr)) {
      // A closure may run at any later point: what it captures escapes.
      RootSet captured;
      for (const Object* var : UsedVars(expr)) {
        auto it = env_.find(var);
        if (it != env_.end()) captured = Union(captured, it->second.roots);
      }
      Escape(captured, "captured by the closure " + where);
      return Opaque(captured, "the closure " + where);
    }
    if (schema::type::ShapeExpr.IsInstance(expr) || IsGlobalVar(expr) || IsExternFunc(expr))
      return {};
    // Anything else (not normalized): whatever its variables refer to, or unknown storage.
    RootSet used;
    for (const Object* var : UsedVars(expr)) {
      auto it = env_.find(var);
      if (it != env_.end()) used = Union(used, it->second.roots);
    }
    return Opaque(used, "the " + TypeKeyOf(expr) + " at " + where);
  }

  Value EvalCall(const Call& call, const std::string& where) {
    RootSet args;
    for (const ObjectRef& arg : call.args()) args = Union(args, Eval(arg, where).roots);
    ObjectRef type = TypeOf(call.ref());
    std::string op = call.op_name();
    RootKind fresh_kind = OnlyConstants(args) ? RootKind::kConstant : RootKind::kAllocated;
    std::string fresh_origin = fresh_kind == RootKind::kConstant
                                   ? where + ", computed from constants only"
                                   : "the result of " + where;
    if (op.empty()) {
      // A call of a Relax function, an extern function or a closure: it may return any
      // argument, its own constants or anything else. Outside dataflow blocks it may also be
      // impure and keep its arguments.
      args = Union(args, Eval(call.op(), where).roots);
      if (!IsPureFunctionCall(call)) Escape(args, "passed to the impure call at " + where);
      return Opaque(args, "the call at " + where);
    }
    Any purity = OpAttr(call.op(), schema::attr::FPurity);
    if (purity != nullptr && !purity.cast<bool>()) {
      Escape(args, "passed to the impure operator " + Quoted(op) + " at " + where);
    }
    if (op == schema::op::CallTIR || op == schema::op::CallTIRWithGrad ||
        op == schema::op::CallDPSPacked) {
      // Destination-passing style: the VM allocates the outputs, unless the PrimFunc only
      // moves data and RewriteDataflowReshape turns the call into a view.
      if (op == schema::op::CallTIR && MayBeReshape(call)) {
        return Value{Union(args, Fresh(type, fresh_kind, fresh_origin).roots), nullptr};
      }
      return Fresh(type, fresh_kind, fresh_origin);
    }
    if (op == schema::op::CallTIRInplace) return EvalCallTIRInplace(call, args, where);
    if (OpAttr(call.op(), schema::attr::FLegalize) == nullptr) return Opaque(args, where);
    const LegalizedCall& legal = context_->legalizer().Legalize(call);
    if (legal.kind != LegalizedCall::Kind::kCallTIR) return Opaque(args, where);
    if (legal.reshape_pattern) {
      // A copy that becomes a view of its input after RewriteDataflowReshape.
      return Value{Union(args, Fresh(type, fresh_kind, fresh_origin).roots), nullptr};
    }
    return Fresh(type, fresh_kind, fresh_origin);
  }

  Value EvalCallTIRInplace(const Call& call, const RootSet& args, const std::string& where) {
    Array<ObjectRef> call_args = call.args();
    std::vector<int64_t> indices = InplaceIndices(call);
    std::optional<Tuple> tuple = call_args.size() > 1 ? As<Tuple>(call_args[1]) : std::nullopt;
    if (!tuple || indices.empty()) return Opaque(args, where);
    Array<ObjectRef> fields = tuple->fields();
    auto output = [&](int64_t index, const ObjectRef& type) -> Value {
      if (index < 0) return Fresh(type, RootKind::kAllocated, "the result of " + where);
      if (index >= static_cast<int64_t>(fields.size())) return Opaque(args, where);
      return Eval(fields[index], where);
    };
    ObjectRef type = TypeOf(call.ref());
    std::optional<TupleType> outputs = As<TupleType>(type);
    if (!outputs) return output(indices[0], type);
    std::vector<Value> values;
    Array<ObjectRef> output_types = outputs->fields();
    for (size_t i = 0; i < output_types.size(); ++i) {
      values.push_back(i < indices.size() ? output(indices[i], output_types[i])
                                          : Opaque(args, where));
    }
    return TupleOf(std::move(values));
  }

  /*! \brief Whether a call_tir in the input may become a view (its PrimFunc moves data). */
  bool MayBeReshape(const Call& call) {
    Array<ObjectRef> args = call.args();
    if (args.empty()) return true;
    auto found = module_functions_.find(args[0]);
    if (found == module_functions_.end() || !Is<PrimFunc>((*found).second)) return true;
    return context_->legalizer().HasReshapePattern(PrimFunc((*found).second));
  }

  /*! \brief A call of a Relax function of the module that is pure. */
  bool IsPureFunctionCall(const Call& call) {
    auto found = module_functions_.find(call.op());
    if (found == module_functions_.end()) return false;
    std::optional<Function> callee = As<Function>((*found).second);
    return callee && callee->is_pure();
  }

  void Visit(int64_t index) {
    const Step& step = steps_[index];
    switch (step.kind) {
      case Step::Kind::kBinding: {
        Var var = step.binding->var();
        std::string where = Quoted(var.name());
        std::optional<Call> call = As<Call>(step.expr);
        if (!call) {
          Define(var.ref(), Eval(step.expr, where));
          plan_steps_.push_back(PlanNonCall(step));
          return;
        }
        InplaceDecision decision = Decide(index, *call);
        PlanStep plan = PlanCall(step, *call);
        if (decision.inplace) {
          // The result now is the reused argument's storage.
          Define(var.ref(), Value{Eval(call->args()[decision.arg_index], where).roots, nullptr});
          plan.candidate = static_cast<int>(candidates_.size());
          plan.inplace_source = call->args()[decision.arg_index].get();
          candidates_.push_back(decisions_.size());
        } else {
          Define(var.ref(), Eval(step.expr, where));
        }
        decisions_.push_back(std::move(decision));
        plan_steps_.push_back(std::move(plan));
        return;
      }
      case Step::Kind::kIfResult: {
        std::string where = Quoted(step.binding->var().name());
        Define(step.binding->var().ref(),
               Join(Eval(step.true_result, where), Eval(step.false_result, where)));
        plan_steps_.push_back(
            MakePlanStep(PlanStep::Kind::kOpaque, step, step.binding->var().get()));
        return;
      }
      default:
        // Conditions and results only read (their uses are in uses_); the planner leaves
        // what they read unplanned.
        plan_steps_.push_back(MakePlanStep(PlanStep::Kind::kEscape, step, nullptr));
        plan_steps_.back().reads = step.uses;
        return;
    }
  }

 public:
  /*!
   * \brief The modelled bytes StaticPlanBlockMemory plans when exactly the in-place decisions
   *        of the bindings named in `in_place` are applied (after Run, for tests).
   */
  std::optional<int64_t> ModelledBytes(const std::unordered_set<std::string>& in_place) const {
    std::vector<bool> chosen(candidates_.size());
    for (size_t c = 0; c < candidates_.size(); ++c) {
      chosen[c] = in_place.count(decisions_[candidates_[c]].var) > 0;
    }
    return MemoryPlanModel(plan_steps_).TotalBytes(chosen);
  }

 private:
  // ---- the decision ----------------------------------------------------------------------

  /*! \brief Why storage `roots` of argument `arg` may not be overwritten at `index`. */
  std::optional<std::string> StorageRefusal(const std::string& arg, const RootSet& roots,
                                            int64_t index) const {
    for (RootId id : roots) {
      const Root& root = roots_[id];
      switch (root.kind) {
        case RootKind::kAllocated:
          break;
        case RootKind::kParam:
          return root.origin == arg
                     ? arg + " is a function parameter (the caller owns it)"
                     : arg + " may refer to parameter " + root.origin + " (the caller owns it)";
        case RootKind::kConstant:
          return arg + " may refer to constant storage (" + root.origin + ")";
        case RootKind::kForeign:
          return arg + " may refer to storage returned by " + root.origin;
      }
      if (!root.escape.empty()) return arg + " may refer to storage " + root.escape;
    }
    for (RootId id : roots) {
      for (int64_t use : roots_[id].uses) {
        if (use > index && CanFollow(steps_[index], steps_[use])) {
          return "the storage of " + arg + " is still read afterwards, at " + Describe(use);
        }
      }
    }
    return std::nullopt;
  }

  InplaceDecision Decide(int64_t index, const Call& call) {
    const Step& step = steps_[index];
    InplaceDecision decision;
    decision.binding = step.binding->ref();
    decision.var = step.binding->var().name();
    decision.op = call.op_name();
    decision.dataflow = step.dataflow;
    auto refuse = [&](std::string reason) {
      decision.reason = std::move(reason);
      return decision;
    };
    if (decision.op.empty()) return refuse("calls a function, not an operator");
    if (!step.dataflow && !options_.outside_dataflow) {
      return refuse("outside a dataflow block (outside_dataflow=False)");
    }
    Any purity = OpAttr(call.op(), schema::attr::FPurity);
    if (purity != nullptr && !purity.cast<bool>()) return refuse("the operator is impure");
    std::optional<TensorType> result = As<TensorType>(TypeOf(call.ref()));
    if (!result || !result->dtype() || !result->shape()) {
      return refuse("the result is not a tensor of known shape and dtype");
    }
    if (OpAttr(call.op(), schema::attr::FLegalize) == nullptr) {
      return refuse(Quoted(decision.op) + " has no legalization (FLegalize)");
    }
    OpLegalizer& legalizer = context_->legalizer();
    const LegalizedCall& legal = legalizer.Legalize(call);
    if (legal.kind != LegalizedCall::Kind::kCallTIR) return refuse(legal.detail);
    if (legal.reshape_pattern) {
      return refuse("it legalizes to a copy, which RewriteDataflowReshape turns into a view");
    }
    if (legal.prologue_bindings > 0) {
      return refuse("its legalization emits " + std::to_string(legal.prologue_bindings) +
                    " binding(s) before the call_tir");
    }
    if (legal.has_tir_vars) {
      return refuse(
          "the legalized call passes symbolic shape variables, which "
          "call_tir_inplace cannot");
    }
    ObjectRef call_tir = legalizer.Instantiate(legal, call);
    Array<ObjectRef> tuple = Tuple(Call(call_tir).args()[1], "call_tir args").fields();
    if (legal.prim_func->params().size() != tuple.size() + 1) {
      return refuse("the legalized PrimFunc does not have exactly one output");
    }

    Array<ObjectRef> args = call.args();
    std::vector<std::string> refusals;
    for (size_t i = 0; i < args.size(); ++i) {
      const ObjectRef& arg = args[i];
      if (!IsVar(arg) || std::any_of(args.begin(), args.begin() + i,
                                     [&](const ObjectRef& a) { return a.same_as(arg); })) {
        continue;  // a var passed twice is judged once
      }
      std::optional<TensorType> arg_type = As<TensorType>(TypeOf(arg));
      if (!arg_type || !SameShapeAndDType(*arg_type, *result)) continue;
      std::optional<std::string> refusal = CheckArgument(index, call, i, tuple, legal, &decision);
      if (refusal) {
        refusals.push_back(*refusal);
        continue;
      }
      decision.inplace = true;
      decision.arg_index = static_cast<int64_t>(i);
      decision.arg = NameOf(arg);
      decision.call_tir = call_tir;
      decision.prim_func = legal.prim_func;
      decision.prim_func_name = legal.prim_func_name;
      decision.reason = PatternName(legalizer.OpPattern(legal)) + "; " + Quoted(NameOf(arg)) +
                        " is not read afterwards";
      return decision;
    }
    if (refusals.empty()) return refuse("no tensor argument has the result's shape and dtype");
    std::string reason = refusals[0];
    for (size_t i = 1; i < refusals.size(); ++i) reason += "; " + refusals[i];
    return refuse(reason);
  }

  /*! \brief Why argument `i` of `call` may not hold the result, or nullopt when it may. */
  std::optional<std::string> CheckArgument(int64_t index, const Call& call, size_t i,
                                           const Array<ObjectRef>& tuple,
                                           const LegalizedCall& legal, InplaceDecision* decision) {
    Array<ObjectRef> args = call.args();
    const ObjectRef& arg = args[i];
    std::string name = Quoted(NameOf(arg));
    // Every PrimFunc parameter the variable is passed to becomes the one in-place buffer.
    std::vector<int64_t> positions;
    for (size_t k = 0; k < tuple.size(); ++k) {
      if (tuple[k].same_as(arg)) positions.push_back(static_cast<int64_t>(k));
    }
    if (positions.empty()) return name + " is not passed to the legalized PrimFunc as a buffer";
    RootSet roots = Eval(arg, "").roots;
    if (std::optional<std::string> refusal = StorageRefusal(name, roots, index)) return refusal;
    for (size_t j = 0; j < args.size(); ++j) {
      if (args[j].same_as(arg)) continue;
      if (Intersects(roots, Eval(args[j], "").roots)) {
        return name + " may share storage with argument " + std::to_string(j) +
               (IsVar(args[j]) ? " (" + Quoted(NameOf(args[j])) + ")" : std::string()) +
               ", and the PrimFunc's buffers are declared noalias";
      }
    }
    const std::optional<std::string>& access = context_->CheckPrimFunc(*legal.prim_func, positions);
    if (access) return name + ": " + *access;
    decision->tuple_indices = positions;
    return std::nullopt;
  }

  // ---- the memory-planning model ----------------------------------------------------------

  static PlanStep MakePlanStep(PlanStep::Kind kind, const Step& step, const Object* var) {
    PlanStep plan;
    plan.kind = kind;
    plan.block = step.block;
    plan.var = var;
    return plan;
  }

  /*! \brief A binding whose value is not a call, as StaticPlanBlockMemory sees it. */
  PlanStep PlanNonCall(const Step& step) const {
    PlanStep plan = MakePlanStep(PlanStep::Kind::kAlias, step, step.binding->var().get());
    if (IsVar(step.expr) || IsConstant(step.expr) || Is<Tuple>(step.expr) ||
        Is<TupleGetItem>(step.expr)) {
      plan.value = step.expr;
    } else {
      plan.kind = PlanStep::Kind::kOpaque;
      plan.reads = step.uses;
    }
    return plan;
  }

  /*!
   * \brief A call binding as StaticPlanBlockMemory sees it: after LegalizeOps a PrimFunc call
   *        that allocates its output, or a view made by RewriteDataflowReshape, or an opaque call.
   */
  PlanStep PlanCall(const Step& step, const Call& call) {
    PlanStep plan = MakePlanStep(PlanStep::Kind::kOpaque, step, step.binding->var().get());
    plan.reads = step.uses;
    std::string op = call.op_name();
    bool prim_func_call = false;
    bool reshape = false;
    if (op == schema::op::CallTIR || op == schema::op::CallTIRWithGrad ||
        op == schema::op::CallDPSPacked) {
      prim_func_call = true;
      reshape = op == schema::op::CallTIR && MayBeReshape(call);
    } else if (op == schema::op::CallTIRInplace) {
      std::vector<int64_t> indices = InplaceIndices(call);
      Array<ObjectRef> args = call.args();
      std::optional<Tuple> tuple = args.size() > 1 ? As<Tuple>(args[1]) : std::nullopt;
      if (tuple && indices.size() == 1 && indices[0] >= 0 &&
          indices[0] < static_cast<int64_t>(tuple->fields().size()) &&
          IsVar(tuple->fields()[indices[0]])) {
        plan.kind = PlanStep::Kind::kAllocate;
        plan.inplace_source = tuple->fields()[indices[0]].get();
      }
      return plan;
    } else if (!op.empty() && OpAttr(call.op(), schema::attr::FLegalize) != nullptr) {
      const LegalizedCall& legal = context_->legalizer().Legalize(call);
      prim_func_call = legal.kind == LegalizedCall::Kind::kCallTIR;
      reshape = prim_func_call && legal.reshape_pattern;
    }
    if (!prim_func_call) return plan;
    if (reshape) {
      if (std::optional<ObjectRef> source = ReshapeSource(step, call)) {
        plan.kind = PlanStep::Kind::kView;
        plan.value = *source;
        plan.reads.clear();
        return plan;
      }
    }
    plan.kind = PlanStep::Kind::kAllocate;
    plan.type = TypeOf(call.ref());
    return plan;
  }

  /*!
   * \brief The tensor a copy is a view of after RewriteDataflowReshape, which rewrites only
   *        DataflowVar bindings of dataflow blocks whose one tensor argument has the result's
   *        dtype and provably as many elements.
   */
  std::optional<ObjectRef> ReshapeSource(const Step& step, const Call& call) const {
    if (!step.dataflow || !ir::relax::IsDataflowVar(step.binding->var().ref())) return std::nullopt;
    std::optional<ObjectRef> source;
    for (const Object* var : step.uses) {
      if (!env_.count(var)) continue;
      ObjectRef ref = ffi::GetRef<ObjectRef>(var);
      if (!Is<TensorType>(TypeOf(ref))) continue;
      if (source) return std::nullopt;  // more than one tensor argument
      source = ref;
    }
    if (!source) return std::nullopt;
    std::optional<TensorType> from = As<TensorType>(TypeOf(*source));
    std::optional<TensorType> to = As<TensorType>(TypeOf(call.ref()));
    if (!from || !to || !from->dtype() || from->dtype() != to->dtype()) return std::nullopt;
    std::optional<Array<ObjectRef>> from_shape = from->shape(), to_shape = to->shape();
    if (!from_shape || !to_shape) return std::nullopt;
    auto elements = [](const Array<ObjectRef>& shape) {
      ObjectRef product = IntConst(DLDataType{kDLInt, 64, 1}, 1);
      for (const ObjectRef& extent : shape) product = Mul(product, extent);
      return product;
    };
    if (!Analyzer().CanProveEqual(elements(*from_shape), elements(*to_shape))) return std::nullopt;
    return source;
  }

  /*!
   * \brief Keep the rewrites that do not make StaticPlanBlockMemory plan more bytes. Its
   *        reuse is greedy, so a token kept alive longer by a rewrite can cost a worse fit
   *        later, and rewrites interact (one can raise the total that the next one lowers
   *        again). Two local searches on the model, and the better result (fewest bytes, then
   *        most rewrites) wins:
   *         - growing: accept candidates in program order while the total does not grow,
   *           then retry the refused ones until nothing changes;
   *         - shrinking: start from every candidate, drop those whose removal lowers the
   *           total, then re-add dropped ones that do not raise it.
   *        Refusing a rewrite only removes aliasing, so the kept ones stay safe.
   */
  void KeepRewritesThatDoNotRaiseMemory() {
    if (candidates_.empty()) return;
    MemoryPlanModel model(plan_steps_);
    size_t n = candidates_.size();
    std::optional<int64_t> none = model.TotalBytes(std::vector<bool>(n, false));
    if (!none) return;  // symbolic sizes: the model cannot tell, keep every safe rewrite
    auto total = [&](const std::vector<bool>& chosen) { return *model.TotalBytes(chosen); };
    // Flip candidates that `accept(current, flipped)` allows, round after round.
    auto improve = [&](std::vector<bool>* chosen, int64_t* current, bool value, auto accept) {
      constexpr int kMaxRounds = 4;
      for (int round = 0; round < kMaxRounds; ++round) {
        bool changed = false;
        for (size_t c = 0; c < n; ++c) {
          if ((*chosen)[c] == value) continue;
          (*chosen)[c] = value;
          int64_t bytes = total(*chosen);
          if (accept(*current, bytes)) {
            *current = bytes;
            changed = true;
          } else {
            (*chosen)[c] = !value;
          }
        }
        if (!changed) return;
      }
    };
    auto no_worse = [](int64_t current, int64_t bytes) { return bytes <= current; };
    auto better = [](int64_t current, int64_t bytes) { return bytes < current; };

    std::vector<bool> grown(n, false);
    int64_t grown_bytes = *none;
    improve(&grown, &grown_bytes, true, no_worse);

    std::vector<bool> shrunk(n, true);
    int64_t shrunk_bytes = total(shrunk);
    improve(&shrunk, &shrunk_bytes, false, better);
    improve(&shrunk, &shrunk_bytes, true, no_worse);

    auto count = [](const std::vector<bool>& chosen) {
      return std::count(chosen.begin(), chosen.end(), true);
    };
    bool take_shrunk =
        shrunk_bytes <= *none && (shrunk_bytes < grown_bytes ||
                                  (shrunk_bytes == grown_bytes && count(shrunk) > count(grown)));
    const std::vector<bool>& chosen = take_shrunk ? shrunk : grown;
    int64_t chosen_bytes = take_shrunk ? shrunk_bytes : grown_bytes;
    std::vector<bool> probe = chosen;
    for (size_t c = 0; c < n; ++c) {
      if (chosen[c]) continue;
      probe[c] = true;
      int64_t with = total(probe);
      probe[c] = false;
      InplaceDecision& decision = decisions_[candidates_[c]];
      decision.inplace = false;
      decision.reason = "in place would raise the memory StaticPlanBlockMemory plans from " +
                        std::to_string(chosen_bytes) + " to " + std::to_string(with) + " bytes";
      decision.arg_index = -1;
      decision.arg.clear();
    }
  }

  Function func_;
  const InplaceOptionsObj& options_;
  InplaceContext* context_;
  Map<ObjectRef, ObjectRef> module_functions_;
  std::vector<Step> steps_;
  /*! \brief Variable -> the steps reading it. */
  std::unordered_map<const Object*, std::vector<int64_t>> uses_;
  std::unordered_map<const Object*, Value> env_;
  std::vector<Root> roots_;
  std::vector<InplaceDecision> decisions_;
  /*! \brief The function as the memory planner sees it, one entry per step. */
  std::vector<PlanStep> plan_steps_;
  /*! \brief Index in decisions_ of each in-place decision (the model's candidates). */
  std::vector<size_t> candidates_;
};

}  // namespace

const std::optional<std::string>& InplaceContext::CheckPrimFunc(
    const PrimFunc& prim_func, const std::vector<int64_t>& inputs) {
  auto key = std::make_pair(prim_func.get(), inputs);
  auto it = prim_func_checks_.find(key);
  if (it != prim_func_checks_.end()) return it->second;
  keep_alive_.push_back(prim_func.ref());
  return prim_func_checks_.emplace(key, CheckInplacePrimFunc(prim_func, inputs)).first->second;
}

std::vector<InplaceDecision> AnalyzeInplace(const Function& func, const ObjectRef& mod,
                                            const InplaceOptionsObj& options,
                                            InplaceContext* context) {
  return Analysis(func, mod, options, context).Run();
}

void InplaceOptionsObj::RegisterReflection() {
  namespace refl = tvm::ffi::reflection;
  refl::ObjectDef<InplaceOptionsObj>()
      .def_ro(
          "outside_dataflow", &InplaceOptionsObj::outside_dataflow,
          "Also rewrite bindings outside dataflow blocks (the stock pass only rewrites inside).",
          refl::DefaultValue(true))
      .def_ro("memory_aware", &InplaceOptionsObj::memory_aware,
              "Keep only rewrites that do not raise the bytes StaticPlanBlockMemory plans "
              "(judged by a model of its greedy reuse); False keeps every safe rewrite.",
              refl::DefaultValue(true));
}

namespace {

Map<String, Any> DecisionToFFI(const InplaceDecision& d) {
  Map<String, Any> out;
  out.Set("binding", String(d.var));
  out.Set("op", String(d.op));
  out.Set("dataflow", d.dataflow);
  out.Set("inplace", d.inplace);
  out.Set("arg_index", d.inplace ? Any(d.arg_index) : Any());
  out.Set("arg", d.inplace ? Any(String(d.arg)) : Any());
  out.Set("reason", String(d.reason));
  return out;
}

}  // namespace

TVM_FFI_STATIC_INIT_BLOCK() {
  InplaceOptionsObj::RegisterReflection();
  tvm::ffi::reflection::GlobalDef().def(
      "tvm_memplan.analysis.inplace_candidates",
      [](ObjectRef func, Optional<ObjectRef> mod, InplaceOptions options) {
        InplaceContext context;
        Array<Map<String, Any>> out;
        for (const InplaceDecision& d :
             AnalyzeInplace(Function(func, "inplace_candidates"), mod.value_or(ObjectRef()),
                            *options.get(), &context)) {
          out.push_back(DecisionToFFI(d));
        }
        return out;
      });
  // The model of StaticPlanBlockMemory, for tests: bytes planned when exactly the bindings named
  // in `in_place` (among the safe candidates) run in place.
  tvm::ffi::reflection::GlobalDef().def(
      "tvm_memplan.testing.inplace_modelled_bytes",
      [](ObjectRef func, Optional<ObjectRef> mod, Array<String> in_place) -> Any {
        InplaceContext context;
        ffi::ObjectPtr<InplaceOptionsObj> options = ffi::make_object<InplaceOptionsObj>();
        options->memory_aware = false;
        Analysis analysis(Function(func, "inplace_modelled_bytes"), mod.value_or(ObjectRef()),
                          *options, &context);
        analysis.Run();
        std::unordered_set<std::string> names(in_place.begin(), in_place.end());
        std::optional<int64_t> bytes = analysis.ModelledBytes(names);
        return bytes ? Any(*bytes) : Any();
      });
}

}  // namespace relax
}  // namespace tvm_memplan
