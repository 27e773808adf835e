/*!
 * \file relax/memory_plan_analysis.cc
 * \brief The planner's analysis: allocations and their lifetimes, sizes, copy-free
 *        concatenations, storages (relax/memory_plan_storages.h), the record and the stock
 *        planner's figures as modelled.
 */
#include "relax/memory_plan_analysis.h"

#include <algorithm>
#include <limits>
#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "ir/analyzer.h"
#include "relax/concat_placement.h"
#include "relax/ir_names.h"
#include "relax/memory_plan_figures.h"
#include "relax/memory_plan_model.h"
#include "relax/memory_plan_storages.h"
#include "relax/storage_flow.h"
#include "target/planning_devices.h"

namespace tvm_memplan {
namespace relax {

namespace {

class PlanAnalysis {
 public:
  /*! \brief `guarded`: what the guard followed of the function where it left it as it was
   *         (else null: the program points are flattened and the flow followed here). */
  PlanAnalysis(const ObjectRef& gv, const Function& func, const IRModule& mod,
               const MemoryPlanOptionsObj& options, const target::PlanningDevices& devices,
               PrimFuncFacts* prim_funcs, const GuardedFunction* guarded)
      : gv_(gv),
        func_(func),
        functions_(mod.functions()),
        options_(options),
        devices_(devices),
        prim_funcs_(prim_funcs),
        classifier_(mod.ref(), nullptr, prim_funcs,
                    MemoryEffectPolicy{/*packed_functions_keep_arguments=*/false}),
        followed_(Follow(func, guarded, &classifier_)),
        steps_(*followed_->steps),
        effects_(followed_->effects),
        flow_(followed_->values) {}

  FunctionMemoryPlanPtr Run(bool model_ours) {
    // Step 1: the flow of storage (followed by the guard, or here), then the allocations and
    // writes in program order.
    for (size_t i = 0; i < steps_.size(); ++i) Visit(static_cast<int64_t>(i));
    // Step 2: sizes (bounded ones at their bound); step 3: lifetimes, and what is not planned.
    BindBounds();
    for (TensorAllocation& a : allocations_) {
      DescribeAllocation(&a);
      Lifetime(&a);
    }
    // Step 4: copy-free concatenations (relax/concat_placement.h).
    CopyFreeConcatenations();
    // Step 5: storages per (device, scope) (relax/memory_plan_storages.h).
    std::string device_refusal = PackStorages(func_, &allocations_, devices_, options_, &storages_);
    // Step 6: the record and the bound.
    FunctionMemoryPlanPtr plan = Record();
    plan->device_refusal = device_refusal;
    // Step 7: TVM's planner's figures, as its model predicts them.
    ModelPlanners(plan.get(), model_ours);
    return plan;
  }

 private:
  // ---- step 1 -------------------------------------------------------------------------------

  /*! \brief The guard's flow of the function, or one followed here. */
  static std::shared_ptr<const FunctionFlow> Follow(const Function& func,
                                                    const GuardedFunction* guarded,
                                                    MemoryEffects* classifier) {
    if (guarded && guarded->flow) return guarded->flow;
    auto steps =
        guarded ? guarded->steps : std::make_shared<const std::vector<Step>>(FlattenFunction(func));
    return FollowStorage(func, std::move(steps), classifier);
  }

  void Visit(int64_t index) {
    const Step& step = steps_[index];
    const std::optional<MemoryEffect>& effect = effects_[index];
    if (!effect) return;
    Call call(step.expr);
    RecordWrites(index, call, *effect);
    const Value& value = *flow_.Find(step.var.get());
    if (effect->allocator == MemoryEffect::Allocator::kAllocTensor && value.roots.size() == 1) {
      root_allocation_[value.roots[0]] = allocations_.size();
      allocation_at_[index] = allocations_.size();
      allocations_.emplace_back(*step.binding, call, index, value.roots[0]);
    } else if (effect->kind == MemoryEffect::Kind::kUse ||
               effect->kind == MemoryEffect::Kind::kOpaque) {
      NameWriter(call, step.uses);
    }
  }

  /*!
   * \brief The roots call `step` may write: a PrimFunc's arguments it stores to (and a
   *        concatenation is noted for step 4); memory operators and views none; any other
   *        call every argument.
   */
  void RecordWrites(int64_t step, const Call& call, const MemoryEffect& effect) {
    if (effect.allocator != MemoryEffect::Allocator::kNone ||
        effect.kind == MemoryEffect::Kind::kView) {
      return;
    }
    Array<ObjectRef> args = call.args();
    for (size_t i : WrittenArguments(call, effect, classifier_, prim_funcs_)) {
      const Value* value = IsVar(args[i]) ? flow_.Find(args[i].get()) : nullptr;
      if (value == nullptr) continue;
      for (RootId root : value->roots) root_writes_[root].push_back(step);
    }
    std::optional<PrimFunc> prim_func;
    if (effect.kind == MemoryEffect::Kind::kUse) prim_func = classifier_.PrimFuncOf(call.op());
    const std::optional<ConcatLayout>* concat =
        prim_func ? &prim_funcs_->Concatenation(*prim_func) : nullptr;
    if (concat && *concat && (*concat)->byte_offsets.size() + 1 == args.size()) {
      concat_steps_.push_back(step);
    }
  }

  /*! \brief The callee's name becomes the `op` of the allocations it is first passed (`uses`:
   *         the variables the call reads, its step's). */
  void NameWriter(const Call& call, const std::vector<const Object*>& uses) {
    std::string name = call.op_name();
    if (name.empty() && IsGlobalVar(call.op())) name = GlobalVarName(call.op());
    if (name.empty()) name = ir::relax::ExternFuncSymbol(call.op()).value_or("");
    for (const Object* var : uses) {
      const Value* value = flow_.Find(var);
      if (value == nullptr) continue;
      for (RootId root : value->roots) {
        auto found = root_allocation_.find(root);
        if (found != root_allocation_.end() && allocations_[found->second].op.empty()) {
          allocations_[found->second].op = name;
        }
      }
    }
  }

  // ---- steps 2 and 3 -----------------------------------------------------------------------

  /*! \brief `tir_var_upper_bound` (and `tir_var_lower_bound`) of the function's signature
   *         variables, as TVM's planner reads them. */
  void BindBounds() {
    for (const ObjectRef& param : func_.params()) {
      for (const Object* var : VarsOf(TypeOf(param))) signature_vars_.insert(var);
    }
    for (const Object* var : VarsOf(func_.ret_type())) signature_vars_.insert(var);
    std::string name = GlobalVarName(gv_);
    std::map<std::string, int64_t> upper =
        ir::relax::IntAttrMap(func_, name, schema::attr::TirVarUpperBound);
    std::map<std::string, int64_t> lower =
        ir::relax::IntAttrMap(func_, name, schema::attr::TirVarLowerBound);
    for (const Object* var : signature_vars_) {
      ObjectRef ref = ffi::GetRef<ObjectRef>(var);
      auto found = upper.find(Var(ref).name());
      if (found == upper.end()) continue;
      auto low = lower.find(Var(ref).name());
      BoundCheck bound{ref, std::nullopt, found->second};
      if (low != lower.end()) bound.lower = low->second;
      int64_t min = bound.lower.value_or(0);
      if (bound.upper < min) {
        TVM_FFI_THROW(ValueError) << "function " << Quoted(name) << ": shape variable "
                                  << Quoted(Var(ref).name()) << " has tir_var_upper_bound "
                                  << bound.upper << ", below its lower bound " << min;
      }
      analyzer_.BindRange(ref, IntConst(ref, min), IntConst(ref, bound.upper - min + 1));
      bounds_.emplace(var, bound);
    }
  }

  void DescribeAllocation(TensorAllocation* a) const {
    std::optional<TensorType> type = As<TensorType>(TypeOf(a->call.ref()));
    std::optional<Array<ObjectRef>> shape = type ? type->shape() : std::nullopt;
    std::optional<DLDataType> dtype = type ? type->dtype() : std::nullopt;
    a->device = AsConstInt(a->call.args()[2]).value_or(0);
    a->scope = StringValue(a->call.args()[3], "alloc_tensor scope");
    if (!shape || !dtype) {
      a->Unplanned(unplanned::kUnknownType, "its shape or dtype is unknown");
      return;
    }
    a->shape = *shape;
    a->dtype = *dtype;
    a->known_type = true;
    if (std::optional<int64_t> bytes = AllocatedBytes(*shape, {}, *dtype)) {
      a->bytes = *bytes;
      a->size = IntConst(kInt64, *bytes);
      return;
    }
    a->size = analyzer_.Simplify(*type->bytes_expr());
    int64_t bytes = DTypeBytes(*dtype);
    bool bounded = true;
    for (const ObjectRef& extent : *shape) {
      if (std::optional<int64_t> value = AsConstInt(extent)) {
        bytes *= *value;
        continue;
      }
      a->symbolic = true;
      int64_t max = analyzer_.ConstBound(extent).second;
      if (max == std::numeric_limits<int64_t>::max()) {
        bounded = false;
      } else {
        bytes *= max;
      }
    }
    std::unordered_set<const Object*> vars = VarsOf(a->size);
    if (bounded) {
      a->bytes = bytes;
      for (const Object* var : vars) {
        if (bounds_.count(var)) a->bounded_vars.push_back(var);
      }
      return;
    }
    auto from_parameters = [&](const std::unordered_set<const Object*>& of) {
      return std::all_of(of.begin(), of.end(),
                         [&](const Object* v) { return signature_vars_.count(v) > 0; });
    };
    if (std::optional<ObjectRef> bound = BoundOnEntry(*shape, *dtype)) {
      a->bound_size = *bound;
      for (const Object* var : vars) {
        if (bounds_.count(var)) a->bounded_vars.push_back(var);
      }
    }
    if (a->bound_size.defined() || from_parameters(vars)) {
      a->sized_on_entry = true;
    } else {
      a->Unplanned(unplanned::kUnboundedSize,
                   "its size is symbolic, not bounded by tir_var_upper_bound, and depends on "
                   "variables defined inside the function");
    }
  }

  /*! \brief The variables of `extent` that `tir_var_upper_bound` bounds, over their ranges. */
  std::vector<std::pair<ObjectRef, Interval>> BoundRanges(const ObjectRef& extent) const {
    std::vector<std::pair<ObjectRef, Interval>> ranges;
    for (const Object* var : VarsOf(extent)) {
      auto found = bounds_.find(var);
      if (found == bounds_.end()) continue;
      const BoundCheck& bound = found->second;
      ranges.push_back({bound.var, Interval{IntConst(bound.var, bound.lower.value_or(0)),
                                            IntConst(bound.var, bound.upper)}});
    }
    return ranges;
  }

  /*!
   * \brief The bytes of `shape` at the upper bounds of its bounded variables, where that is an
   *        expression of the parameters' shape variables alone (`seq_len * vocab_size * 4` with
   *        `seq_len <= 256` and `vocab_size` from a parameter's shape: `256 * vocab_size * 4`);
   *        nullopt when no bounded variable occurs or another variable remains.
   */
  std::optional<ObjectRef> BoundOnEntry(const Array<ObjectRef>& shape, DLDataType dtype) const {
    Array<ObjectRef> maxima;
    bool any_bounded = false;
    for (const ObjectRef& extent : shape) {
      std::vector<std::pair<ObjectRef, Interval>> relaxed = BoundRanges(extent);
      any_bounded = any_bounded || !relaxed.empty();
      std::optional<ObjectRef> max =
          relaxed.empty() ? extent : analyzer_.Relax(extent, relaxed).max;
      if (!max) return std::nullopt;
      std::unordered_set<const Object*> left = VarsOf(*max);
      if (!std::all_of(left.begin(), left.end(), [&](const Object* v) {
            return signature_vars_.count(v) > 0 && bounds_.count(v) == 0;
          })) {
        return std::nullopt;
      }
      maxima.push_back(*max);
    }
    if (!any_bounded) return std::nullopt;
    std::optional<ObjectRef> bytes = AllocatedBytesExpr(maxima, {}, dtype);
    if (!bytes) return std::nullopt;
    return analyzer_.Simplify(*bytes);
  }

  void Lifetime(TensorAllocation* a) const {
    const Root& root = flow_.root(a->root);
    a->first = a->last = a->step;
    bool returned = false;
    for (int64_t use : root.uses) {
      a->last = std::max(a->last, use);
      returned = returned || steps_[use].kind == Step::Kind::kReturn;
    }
    if (!a->plannable()) return;
    if (returned) {
      a->Unplanned(unplanned::kReturned, "it reaches the function result");
    } else if (!root.escape.empty()) {
      a->Unplanned(unplanned::kEscapes, "it escapes: " + root.escape);
    }
  }

  // ---- step 4 -------------------------------------------------------------------------------

  /*! \brief Step 4: which concatenations are copy-free (relax/concat_placement.h), and the
   *         groups of tensors they place together. */
  void CopyFreeConcatenations() {
    std::vector<ConcatTensor> tensors;
    for (const TensorAllocation& a : allocations_) {
      ConcatTensor t;
      t.name = a.binding.var().name();
      t.bytes = a.known_type && !a.symbolic ? a.bytes : -1;
      t.placed = a.plannable() && t.bytes >= 0;
      t.device = a.device;
      t.scope = a.scope;
      t.last = a.last;
      t.uses = flow_.root(a.root).uses;
      std::sort(t.uses.begin(), t.uses.end());
      auto writes = root_writes_.find(a.root);
      if (writes != root_writes_.end()) t.writes = writes->second;
      std::sort(t.writes.begin(), t.writes.end());
      tensors.push_back(std::move(t));
    }
    std::vector<ConcatCall> calls;
    for (int64_t step : concat_steps_) {
      Call call(steps_[step].expr);
      ConcatCall c;
      c.step = step;
      c.callee = GlobalVarName(call.op());
      c.layout = *prim_funcs_->Concatenation(PrimFunc(functions_.at(call.op())));
      for (const ObjectRef& arg : call.args()) {
        c.arg_names.push_back(IsVar(arg) ? Var(arg).name() : ToString(arg));
        c.args.push_back(AllocationOf(arg));
      }
      calls.push_back(std::move(c));
    }
    ConcatPlacement placement = PlaceConcatenations(tensors, calls, options_.alignment);
    for (size_t k = 0; k < calls.size(); ++k) {
      ConcatDecision decision = placement.decisions[k];
      if (!options_.copy_free_concat && decision.copy_free) {
        decision = {false, concat::kDisabled, "copy_free_concat=False"};
      }
      const ConcatCall& call = calls[k];
      concat_records_.push_back(ConcatenationRecord(tensors, call, decision));
      if (decision.copy_free && !call.layout.computes) {
        dropped_bindings_.push_back(steps_[call.step].binding->ref());
      }
    }
    if (!options_.copy_free_concat) return;
    for (size_t i = 0; i < allocations_.size(); ++i) {
      allocations_[i].group = placement.group[i];
      allocations_[i].group_offset = placement.delta[i];
    }
  }

  /*! \brief The allocation `arg` is exactly (a variable holding one whole allocation), or -1. */
  int64_t AllocationOf(const ObjectRef& arg) const {
    const Value* value = IsVar(arg) ? flow_.Find(arg.get()) : nullptr;
    if (value == nullptr || value->fields || value->roots.size() != 1) return -1;
    auto found = root_allocation_.find(value->roots[0]);
    return found == root_allocation_.end() ? -1 : static_cast<int64_t>(found->second);
  }

  // ---- step 6 -------------------------------------------------------------------------------

  FunctionMemoryPlanPtr Record() {
    FunctionMemoryPlanPtr plan = ffi::make_object<FunctionMemoryPlanObj>();
    FunctionMemoryPlanObj& r = *plan;
    r.function = GlobalVarName(gv_);
    r.global_var = gv_;
    r.num_points = static_cast<int64_t>(steps_.size());
    ObjectRef planned_size = IntConst(kInt64, 0);
    std::set<const Object*> relied;  // the bounded variables sizing planned tensors
    for (const TensorAllocation& a : allocations_) {
      if (a.storage >= 0) relied.insert(a.bounded_vars.begin(), a.bounded_vars.end());
      ffi::ObjectPtr<PlannedTensorObj> t = ffi::make_object<PlannedTensorObj>();
      t->binding = a.binding.var().name();
      t->op = a.op;
      t->shape = IntsWhereConstant(a.shape);
      t->dtype = a.known_type ? String(DTypeToString(a.dtype)) : String("");
      t->bytes = a.bytes;
      if (a.known_type) t->size = a.size;
      t->device = a.device;
      t->scope = a.scope;
      t->first = a.first;
      t->last = a.last;
      t->storage = a.storage;
      t->offset = a.offset;
      t->group = a.storage >= 0 ? a.group : -1;
      t->group_offset = a.group_offset;
      t->unplanned = a.unplanned;
      t->reason = a.reason;
      r.tensors.push_back(ObjectRef(t));
      r.bindings.push_back(a.binding.ref());
      if (a.storage < 0) {
        if (a.known_type) planned_size = Add(planned_size, a.size);
        if (a.bytes >= 0 && !a.symbolic) {
          r.planned_bytes += a.bytes;
        } else {
          ++r.symbolic_allocations;
        }
      }
    }
    for (const ObjectRef& storage : storages_) {
      const auto* record = storage.as<StorageAllocationObj>();
      planned_size = Add(planned_size, record->size);
      if (record->bytes >= 0) {
        r.planned_bytes += record->bytes;
      } else {
        ++r.symbolic_allocations;
      }
    }
    r.storages = Array<ObjectRef>(storages_.begin(), storages_.end());
    r.planned_size = analyzer_.Simplify(planned_size);
    r.concats = concat_records_;
    r.dropped_bindings = dropped_bindings_;
    r.peak_live_bytes = PeakLiveOf(r.tensors);
    r.optimality = optimality::kAtBound;
    for (const ObjectRef& storage : storages_) {
      r.optimality = optimality::Weakest(r.optimality.c_str(),
                                         storage.as<StorageAllocationObj>()->optimality.c_str());
    }
    r.optimality_gap_bytes = r.planned_bytes - r.peak_live_bytes;
    for (const Object* var : relied) r.bound_checks.push_back(bounds_.at(var));
    std::sort(r.bound_checks.begin(), r.bound_checks.end(),
              [](const BoundCheck& a, const BoundCheck& b) {
                return Var(a.var).name() < Var(b.var).name();
              });
    for (const BoundCheck& bound : r.bound_checks)
      r.checked_bounds.push_back(Var(bound.var).name());
    for (const auto& [var, bound] : bounds_) {
      r.upper_bounds.Set(Var(bound.var).name(), bound.upper);
      if (bound.lower) r.lower_bounds.Set(Var(bound.var).name(), *bound.lower);
    }
    return plan;
  }

  // ---- step 7 -------------------------------------------------------------------------------

  /*!
   * \brief TVM's planner's figures as its model predicts them (the choice of planner runs TVM's
   *        pass where the prediction cannot tell or does not suffice: relax/planner_choice.h);
   *        with `model_ours`, also ours as the same model predicts it.
   */
  void ModelPlanners(FunctionMemoryPlanObj* r, bool model_ours) const {
    std::vector<ObjectRef> size_classes;
    MemoryPlanModel model(PlanSteps(steps_, effects_, PlanBlocks::kPerBindingBlock),
                          [&](int64_t step, const TensorType& type) {
                            return StockTokenSize(step, type, &size_classes);
                          });
    std::optional<StockPlanFigures> modelled = model.StockPlan({}, func_.plans_dynamic_output());
    r->stock_model_bytes = modelled ? modelled->bytes : -1;
    r->stock_model_symbolic_allocations = modelled ? modelled->symbolic : -1;
    if (model_ours)
      r->memplan_model_bytes = model.MemplanBytes({}, options_.alignment).value_or(-1);
    if (!modelled) return;
    r->stock_bytes = modelled->bytes;
    r->stock_size = Analyzer().Simplify(modelled->size);
    r->stock_symbolic_allocations = modelled->symbolic;
    r->stock_source = stock_source::kModel;
  }

  /*!
   * \brief The storage token TVM's planner gives a tensor of `type` allocated at `step`: each
   *        dimension at its constant bound under the bound variables (as step 2 sized the
   *        allocations), else at its bound as an expression, else itself; a symbolic size in
   *        the class of the first provably equal one in `classes`.
   */
  std::optional<TokenSize> StockTokenSize(int64_t step, const TensorType& type,
                                          std::vector<ObjectRef>* classes) const {
    auto allocated = allocation_at_.find(step);
    if (allocated != allocation_at_.end()) {
      const TensorAllocation& a = allocations_[allocated->second];
      if (a.known_type && a.bytes >= 0) {
        TokenSize size;
        size.bytes = a.bytes;
        size.static_bytes = a.symbolic ? -1 : a.bytes;
        if (a.symbolic) size.own_size = a.size;
        return size;
      }
    }
    std::optional<Array<ObjectRef>> shape = type.shape();
    std::optional<DLDataType> dtype = type.dtype();
    if (!shape || !dtype) return std::nullopt;
    TokenSize size;
    if (std::optional<int64_t> bytes = AllocatedBytes(*shape, {}, *dtype)) {
      size.bytes = size.static_bytes = *bytes;
      return size;
    }
    std::optional<ObjectRef> own_size = AllocatedBytesExpr(*shape, {}, *dtype);
    if (!own_size) return std::nullopt;
    size.own_size = *own_size;
    Array<ObjectRef> bounded;
    for (const ObjectRef& extent : *shape) {
      int64_t max = analyzer_.ConstBound(extent).second;
      if (max != std::numeric_limits<int64_t>::max()) {
        bounded.push_back(IntConst(kInt64, max));
        continue;
      }
      std::vector<std::pair<ObjectRef, Interval>> relaxed = BoundRanges(extent);
      std::optional<ObjectRef> at_bound =
          relaxed.empty() ? extent : analyzer_.Relax(extent, relaxed).max;
      bounded.push_back(at_bound.value_or(extent));
    }
    std::optional<ObjectRef> bytes = AllocatedBytesExpr(bounded, {}, *dtype);
    if (!bytes) return std::nullopt;
    size.size = analyzer_.Simplify(*bytes);
    if (std::optional<int64_t> constant = AsConstInt(size.size)) {
      size.bytes = *constant;
      size.size = ObjectRef();
      return size;
    }
    for (size_t c = 0; c < classes->size(); ++c) {
      if (analyzer_.CanProveEqual(size.size, (*classes)[c])) {
        size.size_class = static_cast<int>(c);
        return size;
      }
    }
    size.size_class = static_cast<int>(classes->size());
    classes->push_back(size.size);
    return size;
  }

  ObjectRef gv_;
  Function func_;
  Map<ObjectRef, ObjectRef> functions_;
  const MemoryPlanOptionsObj& options_;
  const target::PlanningDevices& devices_;
  PrimFuncFacts* prim_funcs_;
  MemoryEffects classifier_;
  std::shared_ptr<const FunctionFlow> followed_;
  const std::vector<Step>& steps_;
  /*! \brief Per step, what its call does to memory (steps binding no call: none). */
  const std::vector<std::optional<MemoryEffect>>& effects_;
  const StorageFlow& flow_;
  Analyzer analyzer_;
  std::unordered_set<const Object*> signature_vars_;
  std::vector<TensorAllocation> allocations_;
  std::unordered_map<RootId, size_t> root_allocation_;
  /*! \brief Program point -> the allocation made there. */
  std::unordered_map<int64_t, size_t> allocation_at_;
  std::vector<ObjectRef> storages_;
  /*! \brief Signature variables with a `tir_var_upper_bound`. */
  std::unordered_map<const Object*, BoundCheck> bounds_;
  /*! \brief Per root, the program points of the calls that may write it. */
  std::unordered_map<RootId, std::vector<int64_t>> root_writes_;
  /*! \brief Program points of calls of PrimFuncs proven to be concatenations. */
  std::vector<int64_t> concat_steps_;
  /*! \brief Their records and decisions (step 4), and the call bindings copy-free ones drop. */
  Array<ObjectRef> concat_records_;
  std::vector<ObjectRef> dropped_bindings_;
};

}  // namespace

std::vector<FunctionMemoryPlanPtr> AnalyzeMemoryPlans(const GuardedModule& guarded,
                                                      const MemoryPlanOptionsObj& options,
                                                      bool model_ours) {
  const IRModule& mod = guarded.mod;
  target::PlanningDevices devices = target::ResolvePlanningDevices(mod.ref());
  PrimFuncFacts& prim_funcs = *guarded.prim_funcs;
  // Name order, so that the plans do not depend on map iteration.
  std::vector<std::pair<std::string, ObjectRef>> functions;
  for (const auto& [gv, func] : mod.functions()) {
    if (Is<Function>(func)) functions.emplace_back(GlobalVarName(gv), gv);
  }
  std::sort(functions.begin(), functions.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<FunctionMemoryPlanPtr> plans;
  for (const auto& [name, gv] : functions) {
    Function func(mod.functions().at(gv));
    auto left = guarded.left.find(func.get());
    FunctionMemoryPlanPtr plan = PlanAnalysis(gv, func, mod, options, devices, &prim_funcs,
                                              left != guarded.left.end() ? &left->second : nullptr)
                                     .Run(model_ours);
    auto reverted = guarded.reverted.find(name);
    if (reverted != guarded.reverted.end()) plan->reverted_writes = reverted->second;
    plans.push_back(std::move(plan));
  }
  return plans;
}

}  // namespace relax
}  // namespace tvm_memplan
