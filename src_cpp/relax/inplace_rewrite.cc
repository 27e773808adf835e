/*!
 * \file relax/inplace_rewrite.cc
 * \brief The rewrite: in-place PrimFuncs, call_tir_inplace bindings, the module pass.
 */
#include "relax/inplace_rewrite.h"

#include <tvm/ffi/extra/structural_equal.h>
#include <tvm/ffi/extra/structural_visit.h>
#include <tvm/ffi/reflection/registry.h>

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "ir/dump.h"
#include "ir/pass.h"
#include "ir/rewriter.h"
#include "relax/ir_names.h"

namespace tvm_memplan {
namespace relax {

namespace {

/*! \brief Replaces binding values inside a function, through `if` branches. */
class BindingValueReplacer {
 public:
  explicit BindingValueReplacer(const std::unordered_map<const Object*, ObjectRef>& values)
      : values_(values) {}

  Function operator()(const Function& func) const {
    return func.WithBody(Seq(SeqExpr(func.body(), "Function.body")).ref());
  }

 private:
  SeqExpr Seq(const SeqExpr& seq) const {
    Array<ObjectRef> blocks;
    for (const ObjectRef& item : seq.blocks()) {
      BindingBlock block(item);
      Array<ObjectRef> bindings;
      for (const ObjectRef& b : block.bindings()) bindings.push_back(Rebind(Binding(b)).ref());
      blocks.push_back(block.WithBindings(bindings).ref());
    }
    return seq.WithBlocks(blocks);
  }

  Binding Rebind(const Binding& binding) const {
    auto it = values_.find(binding.get());
    if (it != values_.end()) return binding.WithValue(it->second);
    if (std::optional<If> branch = As<If>(binding.value())) {
      return binding.WithValue(
          branch->WithBranches(Branch(branch->true_branch()), Branch(branch->false_branch())));
    }
    return binding;
  }

  ObjectRef Branch(const ObjectRef& branch) const {
    std::optional<SeqExpr> seq = As<SeqExpr>(branch);
    return seq ? Seq(*seq).ref() : branch;
  }

  const std::unordered_map<const Object*, ObjectRef>& values_;
};

/*!
 * \brief `prim_func` writing its output into its parameter `inputs[0]`: the output (last)
 *        parameter and the other `inputs` (the same tensor passed again) are removed and
 *        every use of them is redirected to `inputs[0]`.
 */
PrimFunc MakeInplacePrimFunc(const PrimFunc& prim_func, const std::vector<int64_t>& inputs) {
  Array<ObjectRef> params = prim_func.params();
  const ObjectRef& target = params[inputs[0]];
  Rewriter redirect;
  redirect.RemapVar(params[params.size() - 1], target);
  for (size_t k = 1; k < inputs.size(); ++k) redirect.RemapVar(params[inputs[k]], target);
  Array<ObjectRef> kept;
  for (size_t p = 0; p + 1 < params.size(); ++p) {
    if (std::find(inputs.begin() + 1, inputs.end(), static_cast<int64_t>(p)) == inputs.end()) {
      kept.push_back(params[p]);
    }
  }
  // A copy must not export the original's symbol: AttachGlobalSymbol names it later.
  PrimFunc inplace = prim_func.WithParamsAndBody(kept, redirect(prim_func.body()));
  if (!inplace.global_symbol().empty()) {
    inplace = PrimFunc(WithoutFuncAttr(inplace.ref(), schema::attr::GlobalSymbol));
  }
  // Variables and buffers of its own: the original may be in the module too.
  return PrimFunc(schema::func::RenewDefs(inplace.ref()).cast<ObjectRef>());
}

/*! \brief The call_tir argument tuple without the repeated positions `inputs[1:]`. */
Tuple DropRepeatedArgs(const Tuple& args, const std::vector<int64_t>& inputs) {
  Array<ObjectRef> fields;
  Array<ObjectRef> all = args.fields();
  for (size_t p = 0; p < all.size(); ++p) {
    if (std::find(inputs.begin() + 1, inputs.end(), static_cast<int64_t>(p)) == inputs.end()) {
      fields.push_back(all[p]);
    }
  }
  return Tuple(ir::relax::MakeTuple(fields));
}

/*! \brief The GlobalVars that `func` refers to (calls, call_tir callees, ...). */
void CollectGlobalVars(const ObjectRef& func, std::unordered_set<const Object*>* out) {
  ffi::StructuralVisit(func,
                       [out](const ObjectRef& node,
                             ffi::StructuralVisitorObj* engine) -> Optional<ffi::VisitInterrupt> {
                         if (!node.defined() || IsTypeNode(node) || IsOpNode(node)) {
                           return std::nullopt;
                         }
                         if (IsGlobalVar(node)) {
                           out->insert(node.get());
                           return std::nullopt;
                         }
                         if (IsVar(node)) return std::nullopt;
                         return engine->DefaultVisitExpected(node).value();
                       });
}

class Rewrite {
 public:
  Rewrite(const IRModule& mod, const InplaceOptionsObj& options, InplaceContext* context)
      : mod_(mod), options_(options), context_(context != nullptr ? *context : own_context_) {}

  InplaceRewriteResult Run() {
    // Name order, so that the names of added PrimFuncs do not depend on map iteration.
    std::vector<std::pair<std::string, ObjectRef>> functions;
    for (const auto& [gv, func] : mod_.functions()) {
      // External codegen (BYOC) and FuseOps kernels are compiled as a whole by later passes.
      bool compiled_whole =
          FuncAttr(func, schema::attr::Codegen) || FuncAttr(func, schema::attr::Primitive);
      if (Is<Function>(func) && !compiled_whole) {
        functions.emplace_back(GlobalVarName(gv), gv);
      }
    }
    std::sort(functions.begin(), functions.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    Map<ObjectRef, ObjectRef> rewritten;
    for (const auto& [name, gv] : functions) {
      Function func(mod_.functions().at(gv));
      ++stats_->functions;
      if (std::optional<Function> updated = RewriteFunction(func, name))
        rewritten.Set(gv, updated->ref());
    }
    stats_->signatures_legalized = static_cast<int64_t>(context_.legalizer().num_legalized());
    if (rewritten.empty()) return {mod_, stats_};
    Map<ObjectRef, ObjectRef> result = mod_.functions();
    for (const auto& [gv, func] : builder_.ContextModule().functions()) result.Set(gv, func);
    for (const auto& [gv, func] : rewritten) result.Set(gv, func);
    RemoveReplacedPrimFuncs(&result);
    return {mod_.WithFunctions(result), stats_};
  }

 private:
  std::optional<Function> RewriteFunction(const Function& func, const std::string& name) {
    std::unordered_map<const Object*, ObjectRef> values;
    std::vector<InplaceCandidate> decisions = AnalyzeInplace(func, mod_.ref(), options_, &context_);
    if (dump_.enabled()) {
      Array<ObjectRef> records;
      for (const InplaceCandidate& decision : decisions) records.push_back(ObjectRef(decision));
      dump_.Write(name + "-decisions", records);
    }
    for (const InplaceCandidate& decision : decisions) {
      ++stats_->call_bindings;
      if (!decision->inplace) continue;
      Call call_tir(decision->call_tir);
      const std::vector<int64_t>& inputs = decision->tuple_indices;
      Tuple args(call_tir.args()[1], "call_tir args");
      if (inputs.size() > 1) args = DropRepeatedArgs(args, inputs);
      ObjectRef call = ir::relax::MakeCallTIRInplace(InplacePrimFunc(*decision), args, {inputs[0]},
                                                     call_tir.ty_args());
      values[decision->binding_node.get()] = builder_.Normalize(call);
      ++stats_->rewritten;
      if (mod_.functions().count(call_tir.args()[0])) replaced_.push_back(call_tir.args()[0]);
    }
    if (values.empty()) return std::nullopt;
    return BindingValueReplacer(values)(func);
  }

  /*!
   * \brief Drop the PrimFuncs of the module whose every call now runs in place (each would be
   *        compiled, one kernel more): private ones that no function refers to any more.
   */
  void RemoveReplacedPrimFuncs(Map<ObjectRef, ObjectRef>* functions) {
    if (replaced_.empty()) return;
    std::unordered_set<const Object*> used;
    for (const auto& [gv, func] : *functions) {
      if (!Is<PrimFunc>(func)) CollectGlobalVars(func, &used);
    }
    for (const ObjectRef& gv : replaced_) {
      auto found = functions->find(gv);
      if (found == functions->end() || used.count(gv.get())) continue;
      if (!PrimFunc((*found).second).global_symbol().empty()) continue;  // callable from outside
      functions->erase(gv);
      ++stats_->prim_funcs_removed;
    }
  }

  /*!
   * \brief The GlobalVar of the in-place variant of a decision's PrimFunc, added once: an equal
   *        PrimFunc of the module or added before is shared, a new one named
   *        `<name>_inplace` (then `<name>_inplace1`, ...: the first name no function has).
   */
  ObjectRef InplacePrimFunc(const InplaceCandidateObj& decision) {
    auto key = std::make_pair(decision.prim_func->get(), decision.tuple_indices);
    auto it = prim_funcs_.find(key);
    if (it != prim_funcs_.end()) return it->second;
    keep_alive_.push_back(decision.prim_func->ref());
    PrimFunc inplace = MakeInplacePrimFunc(*decision.prim_func, decision.tuple_indices);
    if (std::optional<ObjectRef> equal = EqualModulePrimFunc(inplace)) {
      return prim_funcs_.emplace(key, *equal).first->second;
    }
    size_t before = builder_.ContextModule().functions().size();
    ObjectRef gv = builder_.AddFunction(inplace.ref(), FreshName(decision.prim_func_name));
    if (builder_.ContextModule().functions().size() > before) {
      ++stats_->prim_funcs_added;
      names_.insert(GlobalVarName(gv));
    }
    return prim_funcs_.emplace(key, gv).first->second;
  }

  /*!
   * \brief A PrimFunc of the input module structurally equal to `func`, as BlockBuilder's
   *        AddFunction would share it. Its own search hashes every function of its context
   *        module on first use (a model's weights and every kernel); here only the PrimFuncs
   *        with as many parameters are compared, and the first mismatch ends a comparison.
   *        A GlobalVar without a function type is not shared: call_tir_inplace cannot call it.
   */
  std::optional<ObjectRef> EqualModulePrimFunc(const PrimFunc& func) {
    if (!indexed_) {
      indexed_ = true;
      for (const auto& [gv, f] : mod_.functions()) {
        if (Is<PrimFunc>(f) && IsFuncType(TypeOf(gv))) {
          by_arity_.emplace(PrimFunc(f).params().size(), gv);
        }
      }
    }
    auto [first, last] = by_arity_.equal_range(func.params().size());
    for (auto it = first; it != last; ++it) {
      if (ffi::StructuralEqual::Equal(mod_.functions().at(it->second), func.ref())) {
        return it->second;
      }
    }
    return std::nullopt;
  }

  /*! \brief `<name>_inplace`, or with the first number that makes it a name no function of the
   *         module or added before has (dots become underscores, as BlockBuilder names them). */
  std::string FreshName(const std::string& prim_func_name) {
    if (names_.empty()) {
      for (const auto& [gv, f] : mod_.functions()) names_.insert(GlobalVarName(gv));
    }
    std::string base = prim_func_name + "_inplace";
    std::replace(base.begin(), base.end(), '.', '_');
    std::string name = base;
    for (int n = 1; names_.count(name); ++n) name = base + std::to_string(n);
    return name;
  }

  IRModule mod_;
  const InplaceOptionsObj& options_;
  PassDump dump_{"DataflowUseInplaceCalls"};
  /*! \brief Over an empty module: holds the in-place PrimFuncs added (shared when equal). */
  BlockBuilder builder_;
  /*! \brief The input module's PrimFuncs by number of parameters, and every name taken. */
  std::unordered_multimap<size_t, ObjectRef> by_arity_;
  bool indexed_ = false;
  std::unordered_set<std::string> names_;
  InplaceContext own_context_;
  InplaceContext& context_;
  ffi::ObjectPtr<InplaceStatsObj> stats_ = ffi::make_object<InplaceStatsObj>();
  std::map<std::pair<const Object*, std::vector<int64_t>>, ObjectRef> prim_funcs_;
  std::vector<ObjectRef> keep_alive_;  // PrimFuncs keyed by address in prim_funcs_
  /*! \brief Module PrimFuncs that a rewritten call_tir called. */
  std::vector<ObjectRef> replaced_;
};

}  // namespace

InplaceRewriteResult UseInplaceCalls(const IRModule& mod, const InplaceOptionsObj& options,
                                     InplaceContext* context) {
  return Rewrite(mod, options, context).Run();
}

namespace {

/*! \brief The pass DataflowUseInplaceCalls, keeping what it legalizes in `context` (null: in a
 *         context of each run's own). */
ObjectRef InplacePass(const InplaceOptions& options, std::shared_ptr<InplaceContext> context) {
  CheckInplaceOptions(*options.get());
  return MakeModulePass("tvm_memplan.DataflowUseInplaceCalls", 0,
                        [options, context](IRModule mod, ObjectRef) {
                          PassDump dump("DataflowUseInplaceCalls");
                          dump.Write("input", mod.ref());
                          IRModule out = UseInplaceCalls(mod, *options.get(), context.get()).mod;
                          dump.Write("output", out.ref());
                          return out;
                        });
}

/*!
 * \brief What FLegalize would make of `call` in LegalizeOps' builder `builder`: the in-place
 *        run's legalization of its signature when that is one call_tir and emitted nothing
 *        else (its PrimFunc added as call_te adds it), else the operator's FLegalize itself.
 */
ObjectRef ReuseLegalization(InplaceContext* context, const ObjectRef& builder, const Call& call) {
  const LegalizedCall* legal = context->legalizer().Find(call);
  if (legal == nullptr || legal->kind != LegalizedCall::Kind::kCallTIR ||
      legal->prologue_bindings > 0) {
    Any flegalize = ir::relax::OpAttr(call.op(), schema::attr::FLegalize);
    return flegalize.cast<ffi::Function>()(builder, call.ref()).cast<ObjectRef>();
  }
  ObjectRef gv = schema::func::BlockBuilderAddFunction(builder, legal->prim_func->ref(),
                                                       String(legal->prim_func_name))
                     .cast<ObjectRef>();
  Call call_tir(context->legalizer().Instantiate(*legal, call));
  Array<ObjectRef> args = call_tir.args();
  args.Set(0, gv);
  return call_tir.WithArgs(args).ref();
}

}  // namespace

ObjectRef LegalizeOpsAfterInplaceCalls(const InplaceOptions& options,
                                       const Optional<Map<String, ffi::Function>>& cmap,
                                       const Optional<Array<String>>& skip_ops,
                                       bool enable_warning) {
  CheckInplaceOptions(*options.get());
  return MakeModulePass("tvm_memplan.LegalizeOps", 0, [=](IRModule mod, ObjectRef) {
    auto context = std::make_shared<InplaceContext>();
    IRModule rewritten = ApplyPass(InplacePass(options, context), mod);
    Map<String, ffi::Function> legalizations = cmap.value_or(Map<String, ffi::Function>());
    for (const ObjectRef& op : context->legalizer().Operators()) {
      String name(OpName(op));
      if (legalizations.count(name)) continue;  // a custom legalization wins
      legalizations.Set(name,
                        ffi::Function::FromTyped([context](ObjectRef builder, ObjectRef call) {
                          return ReuseLegalization(context.get(), builder, Call(call));
                        }));
    }
    ObjectRef legalize =
        schema::func::LegalizeOps(legalizations, skip_ops, enable_warning).cast<ObjectRef>();
    return ApplyPass(legalize, rewritten);
  });
}

TVM_FFI_STATIC_INIT_BLOCK() {
  tvm::ffi::reflection::GlobalDef()
      .def("tvm_memplan.transform.DataflowUseInplaceCalls",
           [](InplaceOptions options) { return InplacePass(options, nullptr); })
      .def("tvm_memplan.transform.LegalizeOpsAfterInplaceCalls",
           [](InplaceOptions options, Optional<Map<String, ffi::Function>> cmap,
              Optional<Array<String>> skip_ops, bool enable_warning) {
             return LegalizeOpsAfterInplaceCalls(options, cmap, skip_ops, enable_warning);
           })
      .def("tvm_memplan.transform.use_inplace_calls", [](ObjectRef mod, InplaceOptions options) {
        CheckInplaceOptions(*options.get());
        InplaceRewriteResult result =
            UseInplaceCalls(IRModule(mod, "use_inplace_calls"), *options.get());
        return Array<Any>{result.mod.ref(), ObjectRef(result.stats)};
      });
}

}  // namespace relax
}  // namespace tvm_memplan
