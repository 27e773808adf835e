/*!
 * \file relax/inplace_analysis.cc
 * \brief The in-place analysis: the per-binding decision (see the header for the rules), on
 *        the program points, memory effects and storage flow shared with the memory planner,
 *        and the memory guard on the planner models.
 */
#include "relax/inplace_analysis.h"

#include <tvm/ffi/reflection/registry.h>

#include <algorithm>
#include <unordered_set>

#include "relax/inplace_prim_func.h"
#include "relax/ir_names.h"
#include "relax/memory_plan_model.h"
#include "relax/planners.h"
#include "relax/storage_flow.h"
#include "target/gpu_pipeline.h"

namespace tvm_memplan {
namespace relax {

namespace {

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

// ---- the analysis -------------------------------------------------------------------------

class Analysis {
 public:
  Analysis(const Function& func, const ObjectRef& mod, const InplaceOptionsObj& options,
           InplaceContext* context)
      : func_(func),
        options_(options),
        gpu_(options.gpu.value_or(target::CompilingForGPU())),
        cuda_graphs_(options.cuda_graphs.value_or(target::CapturingCudaGraphs())),
        context_(context),
        effects_(
            mod, &context->legalizer(), &context->facts(),
            MemoryEffectPolicy{/*packed_functions_keep_arguments=*/true,
                               /*concatenations_may_be_views=*/options.planner == kMemplanPlanner}),
        steps_(FlattenFunction(func)),
        flow_(steps_) {}

  std::vector<InplaceCandidate> Run() {
    for (const ObjectRef& param : func_.params()) {
      flow_.Define(param,
                   Value{{flow_.NewRoot(RootKind::kParam, Quoted(NameOf(param)), -1)}, nullptr});
    }
    effects_of_steps_.resize(steps_.size());
    for (size_t i = 0; i < steps_.size(); ++i) Visit(static_cast<int64_t>(i));
    if (options_.memory_aware) KeepRewritesThatDoNotRaiseMemory();
    if (cuda_graphs_) KeepResultStorageOutOfInplaceWrites();
    return decisions_;
  }

 private:
  static std::string NameOf(const ObjectRef& var) { return Var(var).name(); }

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

  void Visit(int64_t index) {
    const Step& step = steps_[index];
    if (step.kind == Step::Kind::kIfResult) {
      flow_.Define(step.var, flow_.StepValue(index, nullptr));
      return;
    }
    // Conditions and results only read: the flow records their uses.
    if (step.kind != Step::Kind::kBinding) return;
    Var var = step.binding->var();
    std::optional<Call> call = As<Call>(step.expr);
    if (!call) {
      flow_.Define(var.ref(), flow_.StepValue(index, nullptr));
      return;
    }
    const MemoryEffect& effect = *(effects_of_steps_[index] = effects_.Classify(*call));
    InplaceCandidate decision = Decide(index, *call, effect);
    if (decision->inplace) {
      // The result now is the reused argument's storage.
      Value reused = flow_.Eval(decision->reused, index, Where::BindingOf(index));
      flow_.Define(var.ref(), Value{std::move(reused.roots), nullptr});
      candidates_.push_back(Candidate{decisions_.size(), index});
    } else {
      flow_.Define(var.ref(), flow_.StepValue(index, &effect));
    }
    decisions_.push_back(std::move(decision));
  }

 public:
  /*!
   * \brief The modelled bytes StaticPlanBlockMemory plans when exactly the in-place decisions
   *        of the bindings named in `in_place` are applied (after Run, for tests).
   */
  std::optional<int64_t> ModelledBytes(const std::unordered_set<std::string>& in_place) const {
    return PlannedBytes(MemoryPlanModel(ModelSteps()), Chosen(in_place));
  }

  /*! \brief MemoryPlanModel::MemplanLowerBound of the same choice (after Run, for tests). */
  std::optional<int64_t> ModelledLowerBound(const std::unordered_set<std::string>& in_place) const {
    return MemoryPlanModel(ModelSteps()).MemplanLowerBound(Chosen(in_place));
  }

 private:
  std::vector<bool> Chosen(const std::unordered_set<std::string>& in_place) const {
    std::vector<bool> chosen(candidates_.size());
    for (size_t c = 0; c < candidates_.size(); ++c) {
      chosen[c] = in_place.count(std::string(decisions_[candidates_[c].decision]->binding)) > 0;
    }
    return chosen;
  }

  /*!
   * \brief The function as the memory planner sees it, each in-place decision a candidate:
   *        operator-level Relax reaches the planner through ToNonDataflow, one block per SeqExpr.
   */
  std::vector<PlanStep> ModelSteps() const {
    std::vector<PlanStep> steps = PlanSteps(steps_, effects_of_steps_, PlanBlocks::kPerSeqExpr);
    for (size_t c = 0; c < candidates_.size(); ++c) {
      PlanStep& step = steps[candidates_[c].step];
      step.candidate = static_cast<int>(c);
      step.inplace_source = decisions_[candidates_[c].decision]->reused.get();
    }
    return steps;
  }

 private:
  /*! \brief The bytes the planner that will run (options.planner) allocates. */
  std::optional<int64_t> PlannedBytes(const MemoryPlanModel& model,
                                      const std::vector<bool>& chosen) const {
    if (options_.planner == kMemplanPlanner) return model.MemplanBytes(chosen, kPlanAlignment);
    return model.TotalBytes(chosen);
  }

  std::string PlannerName() const {
    return options_.planner == kMemplanPlanner ? "tvm-memplan's StaticPlanBlockMemory"
                                               : "StaticPlanBlockMemory";
  }

  // ---- the decision ----------------------------------------------------------------------

  /*! \brief Why storage `roots` of argument `arg` may not be overwritten at `index`. */
  std::optional<std::string> StorageRefusal(const std::string& arg, const RootSet& roots,
                                            int64_t index) const {
    for (RootId id : roots) {
      const Root& root = flow_.root(id);
      switch (root.kind) {
        case RootKind::kAllocated:
          break;
        case RootKind::kParam: {
          std::string param = flow_.Origin(id);
          return param == arg ? arg + " is a function parameter (the caller owns it)"
                              : arg + " may refer to parameter " + param + " (the caller owns it)";
        }
        case RootKind::kConstant:
          return arg + " may refer to constant storage (" + flow_.Origin(id) + ")";
        case RootKind::kForeign:
          return arg + " may refer to storage returned by " + flow_.Origin(id);
      }
      if (!root.escape.empty()) return arg + " may refer to storage " + root.escape;
    }
    for (RootId id : roots) {
      for (int64_t use : flow_.root(id).uses) {
        if (use > index && CanFollow(steps_[index], steps_[use])) {
          return "the storage of " + arg + " is still read afterwards, at " + Describe(use);
        }
      }
    }
    return std::nullopt;
  }

  /*! \brief A call as the PrimFunc call it is, or becomes after LegalizeOps. */
  struct PrimFuncCall {
    /*! \brief `R.call_tir(gv, (args...), out_ty)` over the binding's variables. */
    ObjectRef call_tir;
    std::optional<PrimFunc> prim_func;
    std::string prim_func_name;
    /*! \brief The arguments the result may overwrite: the operator's arguments, or the
     *         call_tir's argument tuple (then `arg_index` is a position in that tuple). */
    Array<ObjectRef> args;
    /*! \brief What the callee is, for the reason of an in-place decision (for an operator,
     *         from its legalization's op_pattern, computed when needed). */
    std::string what;
    const LegalizedCall* legal = nullptr;
  };

  InplaceCandidate Decide(int64_t index, const Call& call, const MemoryEffect& effect) {
    const Step& step = steps_[index];
    InplaceCandidate decision = ffi::make_object<InplaceCandidateObj>();
    decision->binding_node = step.binding->ref();
    decision->binding = step.binding->var().name();
    if (std::string op = call.op_name(); !op.empty()) decision->op = String(op);
    decision->dataflow = step.dataflow;
    auto refuse = [&](std::string reason) {
      decision->Refuse(std::move(reason));
      return decision;
    };
    if (!decision->op) return refuse("calls a function, not an operator");
    if (call.IsOp(schema::op::CallTIRInplace)) return refuse("it already runs in place");
    if (!step.dataflow && !options_.outside_dataflow) {
      return refuse("outside a dataflow block (outside_dataflow=False)");
    }
    Any purity = OpAttr(call.op(), schema::attr::FPurity);
    if (purity != nullptr && !purity.cast<bool>()) return refuse("the operator is impure");
    std::optional<TensorType> result = As<TensorType>(TypeOf(call.ref()));
    if (!result || !result->dtype() || !result->shape()) {
      return refuse("the result is not a tensor of known shape and dtype");
    }
    PrimFuncCall target;
    if (std::optional<std::string> refusal = call.IsOp(schema::op::CallTIR)
                                                 ? AsPrimFuncCall(call, &target)
                                                 : LegalizeOperator(call, effect, &target)) {
      return refuse(*refusal);
    }
    Array<ObjectRef> tuple = Tuple(Call(target.call_tir).args()[1], "call_tir args").fields();
    if (target.prim_func->params().size() != tuple.size() + 1) {
      return refuse("the PrimFunc does not take exactly one output after its inputs");
    }

    const Array<ObjectRef>& args = target.args;
    std::vector<std::string> refusals;
    for (size_t i = 0; i < args.size(); ++i) {
      const ObjectRef& arg = args[i];
      if (!IsVar(arg) || std::any_of(args.begin(), args.begin() + i,
                                     [&](const ObjectRef& a) { return a.same_as(arg); })) {
        continue;  // a var passed twice is judged once
      }
      std::optional<TensorType> arg_type = As<TensorType>(TypeOf(arg));
      if (!arg_type || !SameShapeAndDType(*arg_type, *result)) continue;
      std::optional<std::string> refusal =
          CheckArgument(index, args, i, tuple, *target.prim_func, decision.get());
      if (refusal) {
        refusals.push_back(*refusal);
        continue;
      }
      decision->inplace = true;
      decision->arg_index = static_cast<int64_t>(i);
      decision->arg = String(NameOf(arg));
      decision->reused = arg;
      decision->call_tir = target.call_tir;
      decision->prim_func = target.prim_func;
      decision->prim_func_name = target.prim_func_name;
      std::string what = target.legal != nullptr
                             ? PatternName(context_->legalizer().OpPattern(*target.legal))
                             : target.what;
      decision->reason = what + "; " + Quoted(NameOf(arg)) + " is not read afterwards";
      return decision;
    }
    if (refusals.empty()) return refuse("no tensor argument has the result's shape and dtype");
    std::string reason = refusals[0];
    for (size_t i = 1; i < refusals.size(); ++i) reason += "; " + refusals[i];
    return refuse(reason);
  }

  /*! \brief An operator call through its legalization; nullopt or why it cannot run in place. */
  std::optional<std::string> LegalizeOperator(const Call& call, const MemoryEffect& effect,
                                              PrimFuncCall* out) {
    std::string op = call.op_name();
    if (gpu_) {
      return "the target is a GPU: its pipeline schedules the legalized PrimFunc (dlight), which "
             "an in-place PrimFunc defeats; the fused, scheduled kernel may run in place instead";
    }
    if (OpAttr(call.op(), schema::attr::FLegalize) == nullptr) {
      return Quoted(op) + " has no legalization (FLegalize)";
    }
    OpLegalizer& legalizer = context_->legalizer();
    const LegalizedCall& legal = legalizer.Legalize(call);
    if (legal.kind != LegalizedCall::Kind::kCallTIR) return legal.detail;
    if (effect.planned == MemoryEffect::Planned::kCopy) {
      return "it legalizes to a copy, which RewriteDataflowReshape turns into a view";
    }
    if (legal.prologue_bindings > 0) {
      return "its legalization emits " + std::to_string(legal.prologue_bindings) +
             " binding(s) before the call_tir";
    }
    if (legal.has_tir_vars) {
      return "the legalized call passes symbolic shape variables, which call_tir_inplace cannot";
    }
    out->call_tir = legalizer.Instantiate(legal, call);
    out->prim_func = legal.prim_func;
    out->prim_func_name = legal.prim_func_name;
    out->args = call.args();
    out->legal = &legal;
    return std::nullopt;
  }

  /*! \brief A call_tir of a PrimFunc of the module; nullopt or why it cannot run in place. */
  std::optional<std::string> AsPrimFuncCall(const Call& call, PrimFuncCall* out) {
    Array<ObjectRef> args = call.args();
    if (args.size() > 2) {
      return "the call passes symbolic shape variables, which call_tir_inplace cannot";
    }
    std::optional<PrimFunc> callee = args.size() < 2 ? std::nullopt : effects_.PrimFuncOf(args[0]);
    if (!callee) return "the callee is not a PrimFunc of the module";
    std::optional<Tuple> tuple = As<Tuple>(args[1]);
    if (!tuple) return "the arguments are not a tuple expression";
    const PrimFunc& prim_func = *callee;
    std::string name = GlobalVarName(args[0]);
    if (context_->facts().MovesDataOnly(prim_func)) {
      return "the PrimFunc " + Quoted(name) +
             " only moves data: RewriteDataflowReshape may turn the call into a view";
    }
    if (gpu_ && !context_->IsScheduled(prim_func)) {
      return "the target is a GPU and the PrimFunc " + Quoted(name) +
             " is not scheduled yet (no thread bindings): the schedule rules (dlight) that "
             "may still run cannot schedule an in-place PrimFunc";
    }
    out->call_tir = call.ref();
    out->prim_func = prim_func;
    out->prim_func_name = name;
    out->args = tuple->fields();
    out->what = "the PrimFunc " + Quoted(name) + " writes each element after its last read";
    return std::nullopt;
  }

  /*! \brief Why argument `i` of `args` may not hold the result, or nullopt when it may. */
  std::optional<std::string> CheckArgument(int64_t index, const Array<ObjectRef>& args, size_t i,
                                           const Array<ObjectRef>& tuple, const PrimFunc& prim_func,
                                           InplaceCandidateObj* decision) {
    const ObjectRef& arg = args[i];
    std::string name = Quoted(NameOf(arg));
    // Every PrimFunc parameter the variable is passed to becomes the one in-place buffer.
    std::vector<int64_t> positions;
    for (size_t k = 0; k < tuple.size(); ++k) {
      if (tuple[k].same_as(arg)) positions.push_back(static_cast<int64_t>(k));
    }
    if (positions.empty()) return name + " is not passed to the PrimFunc as a buffer";
    RootSet roots = flow_.Eval(arg, index, "").roots;
    if (std::optional<std::string> refusal = StorageRefusal(name, roots, index)) return refusal;
    for (size_t j = 0; j < args.size(); ++j) {
      if (args[j].same_as(arg)) continue;
      if (Intersects(roots, flow_.Eval(args[j], index, "").roots)) {
        return name + " may share storage with argument " + std::to_string(j) +
               (IsVar(args[j]) ? " (" + Quoted(NameOf(args[j])) + ")" : std::string()) +
               ", and the PrimFunc's buffers are declared noalias";
      }
    }
    const std::optional<std::string>& access = context_->CheckPrimFunc(prim_func, positions);
    if (access) return name + ": " + *access;
    decision->tuple_indices = positions;
    return std::nullopt;
  }

  // ---- the memory guard ----------------------------------------------------------------

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
   *        Refusing a rewrite only removes aliasing, so the kept ones stay safe. With
   *        tvm-memplan's planner, whose packing nearly always reaches its lower bound, every
   *        candidate is kept at once when the model plans that bound with all of them: no choice
   *        plans fewer bytes, and both searches would end there (each query packs the whole
   *        function, and the searches make a few per candidate).
   */
  void KeepRewritesThatDoNotRaiseMemory() {
    if (candidates_.empty()) return;
    MemoryPlanModel model(ModelSteps());
    if (!model.HasStaticSizes()) return;  // the model cannot tell: keep every safe rewrite
    size_t n = candidates_.size();
    // Configurations are evaluated again (the searches meet, the reasons probe): once each.
    std::map<std::vector<bool>, int64_t> evaluated;
    auto total = [&](const std::vector<bool>& chosen) {
      auto found = evaluated.find(chosen);
      if (found != evaluated.end()) return found->second;
      return evaluated[chosen] = *PlannedBytes(model, chosen);
    };
    if (options_.planner == kMemplanPlanner) {
      // Every candidate in place at the lower bound of every choice: none plans fewer bytes, and
      // both searches below would end there (the shrinking one starts there and only takes
      // strict gains), so nothing is refused.
      // No bound where a candidate reuses an `if` result (MemplanLowerBound).
      std::vector<bool> all(n, true);
      std::optional<int64_t> bound = model.MemplanLowerBound(all);
      if (bound && total(all) == *bound) return;
    }
    int64_t none = total(std::vector<bool>(n, false));
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
    int64_t grown_bytes = none;
    improve(&grown, &grown_bytes, true, no_worse);

    std::vector<bool> shrunk(n, true);
    int64_t shrunk_bytes = total(shrunk);
    improve(&shrunk, &shrunk_bytes, false, better);
    improve(&shrunk, &shrunk_bytes, true, no_worse);

    auto count = [](const std::vector<bool>& chosen) {
      return std::count(chosen.begin(), chosen.end(), true);
    };
    bool take_shrunk =
        shrunk_bytes <= none && (shrunk_bytes < grown_bytes ||
                                 (shrunk_bytes == grown_bytes && count(shrunk) > count(grown)));
    const std::vector<bool>& chosen = take_shrunk ? shrunk : grown;
    int64_t chosen_bytes = take_shrunk ? shrunk_bytes : grown_bytes;
    std::vector<bool> probe = chosen;
    for (size_t c = 0; c < n; ++c) {
      if (chosen[c]) continue;
      probe[c] = true;
      int64_t with = total(probe);
      probe[c] = false;
      decisions_[candidates_[c].decision]->Refuse(
          "in place would raise the memory " + PlannerName() + " plans from " +
          std::to_string(chosen_bytes) + " to " + std::to_string(with) + " bytes");
    }
  }

  /*!
   * \brief With CUDA graphs: refuse the in-place calls that alone make the storage they write
   *        the function's result (MemoryPlanModel::WritesIntoResult), where that storage could be
   *        captured. A returned tensor is allocated on its own, and RewriteCUDAGraph captures no
   *        kernel that touches a tensor it cannot allocate once; written in place into an
   *        intermediate, the result would take that intermediate out of the captured graph from
   *        its first kernel on. Refused, the call writes a fresh result, as stock's pipeline
   *        does, and only it stays outside. An intermediate whose shape depends on a size the
   *        graph may not depend on (CapturableShapeVars) is captured in no case: its in-place
   *        writes stay, and so do the bytes they save (prefill's, in MLC-LLM).
   */
  void KeepResultStorageOutOfInplaceWrites() {
    if (candidates_.empty()) return;
    std::vector<bool> chosen(candidates_.size());
    for (size_t c = 0; c < candidates_.size(); ++c) {
      chosen[c] = decisions_[candidates_[c].decision]->inplace;
    }
    std::unordered_set<std::string> capturable = CapturableShapeVars();
    auto refusable = [&](int c) {
      const ObjectRef& reused = decisions_[candidates_[c].decision]->reused;
      for (const Object* var : VarsOf(TypeOf(reused))) {
        if (!capturable.count(ir::Var(ffi::GetRef<ObjectRef>(var)).name())) return false;
      }
      return true;
    };
    for (int c : MemoryPlanModel(ModelSteps()).WritesIntoResult(chosen, refusable)) {
      InplaceCandidateObj& decision = *decisions_[candidates_[c].decision];
      decision.Refuse("in place would make the storage of " + Quoted(std::string(*decision.arg)) +
                      " the function's result: with CUDA graphs (relax.backend.use_cuda_graph), "
                      "every kernel touching it would run outside the captured graphs");
    }
  }

  /*! \brief Names of the shape variables a CUDA graph of this function may depend on (one graph
   *         per value), as RewriteCUDAGraph decides: those `capture_symbolic_vars` names, and
   *         those of the parameters after the first `num_input` (weights). */
  std::unordered_set<std::string> CapturableShapeVars() const {
    std::unordered_set<std::string> names;
    if (std::optional<Any> hints = FuncAttr(func_.ref(), schema::attr::CaptureSymbolicVars)) {
      if (auto list = hints->try_cast<Array<String>>()) {
        for (const String& name : *list) names.insert(name);
      }
    }
    Array<ObjectRef> params = func_.params();
    int64_t inputs = static_cast<int64_t>(params.size());
    if (std::optional<Any> num_input = FuncAttr(func_.ref(), schema::attr::NumInput)) {
      inputs = num_input->try_cast<int64_t>().value_or(inputs);
    }
    for (int64_t i = std::max<int64_t>(inputs, 0); i < static_cast<int64_t>(params.size()); ++i) {
      for (const Object* var : VarsOf(TypeOf(params[i]))) {
        names.insert(ir::Var(ffi::GetRef<ObjectRef>(var)).name());
      }
    }
    return names;
  }

  Function func_;
  const InplaceOptionsObj& options_;
  /*! \brief options_.gpu, resolved. */
  bool gpu_;
  /*! \brief options_.cuda_graphs, resolved. */
  bool cuda_graphs_;
  InplaceContext* context_;
  MemoryEffects effects_;
  std::vector<Step> steps_;
  StorageFlow flow_;
  std::vector<InplaceCandidate> decisions_;
  /*! \brief Per step, what its call does to memory (steps binding no call: none). */
  std::vector<std::optional<MemoryEffect>> effects_of_steps_;
  /*! \brief An in-place decision, a candidate of the memory guard. */
  struct Candidate {
    /*! \brief Its index in decisions_, and its step. */
    size_t decision;
    int64_t step;
  };
  std::vector<Candidate> candidates_;
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

bool InplaceContext::IsScheduled(const PrimFunc& prim_func) {
  auto it = scheduled_.find(prim_func.get());
  if (it != scheduled_.end()) return it->second;
  keep_alive_.push_back(prim_func.ref());
  return scheduled_.emplace(prim_func.get(), HasThreadBindings(prim_func)).first->second;
}

std::vector<InplaceCandidate> AnalyzeInplace(const Function& func, const ObjectRef& mod,
                                             const InplaceOptionsObj& options,
                                             InplaceContext* context) {
  return Analysis(func, mod, options, context).Run();
}

TVM_FFI_STATIC_INIT_BLOCK() {
  tvm::ffi::reflection::GlobalDef().def(
      "tvm_memplan.analysis.inplace_candidates",
      [](ObjectRef func, Optional<ObjectRef> mod, InplaceOptions options) {
        CheckInplaceOptions(*options.get());
        InplaceContext context;
        Array<ObjectRef> out;
        for (InplaceCandidate& d :
             AnalyzeInplace(Function(func, "inplace_candidates"), mod.value_or(ObjectRef()),
                            *options.get(), &context)) {
          out.push_back(ObjectRef(std::move(d)));
        }
        return out;
      });
  tvm::ffi::reflection::GlobalDef().def(
      "tvm_memplan.analysis.prim_func_inplace_refusal",
      [](ObjectRef prim_func, Array<int64_t> inputs) -> Optional<String> {
        std::optional<std::string> refusal =
            CheckInplacePrimFunc(PrimFunc(prim_func, "prim_func_inplace_refusal"),
                                 std::vector<int64_t>(inputs.begin(), inputs.end()));
        return refusal ? Optional<String>(String(*refusal)) : Optional<String>();
      });
  // The model of the memory planner `planner`, for tests: bytes planned when exactly the bindings
  // named in `in_place` (among the safe candidates) run in place; the lower bound of
  // tvm-memplan's planner for the same choice.
  auto modelled = [](const char* what, ObjectRef func, Optional<ObjectRef> mod,
                     Array<String> in_place, String planner, bool lower_bound) -> Any {
    InplaceContext context;
    ffi::ObjectPtr<InplaceOptionsObj> options = ffi::make_object<InplaceOptionsObj>();
    options->memory_aware = false;
    options->planner = planner;
    CheckInplaceOptions(*options);
    Analysis analysis(Function(func, what), mod.value_or(ObjectRef()), *options, &context);
    analysis.Run();
    std::unordered_set<std::string> names(in_place.begin(), in_place.end());
    std::optional<int64_t> bytes =
        lower_bound ? analysis.ModelledLowerBound(names) : analysis.ModelledBytes(names);
    return bytes ? Any(*bytes) : Any();
  };
  tvm::ffi::reflection::GlobalDef()
      .def("tvm_memplan.testing.inplace_modelled_bytes",
           [modelled](ObjectRef func, Optional<ObjectRef> mod, Array<String> in_place,
                      String planner) {
             return modelled("inplace_modelled_bytes", func, mod, in_place, planner, false);
           })
      .def("tvm_memplan.testing.inplace_modelled_lower_bound",
           [modelled](ObjectRef func, Optional<ObjectRef> mod, Array<String> in_place) {
             return modelled("inplace_modelled_lower_bound", func, mod, in_place, kMemplanPlanner,
                             true);
           });
}

}  // namespace relax
}  // namespace tvm_memplan
