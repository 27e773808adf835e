/*!
 * \file relax/memory_plan_analysis.cc
 * \brief The planner's analysis: allocations and their lifetimes, sizes, packing per device and
 *        scope, the peak-live bound, and the comparison with the stock planner.
 */
#include "relax/memory_plan_analysis.h"

#include <tvm/ffi/extra/structural_key.h>
#include <tvm/ffi/extra/structural_visit.h>
#include <tvm/ffi/reflection/registry.h>

#include <algorithm>
#include <limits>
#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "ir/analyzer.h"
#include "ir/pass.h"
#include "ir/scopes.h"
#include "relax/memory_plan_model.h"
#include "relax/offset_packing.h"
#include "relax/storage_flow.h"

namespace tvm_memplan {
namespace relax {

using namespace ir;
using ir::relax::Binding;
using ir::relax::Function;
using ir::relax::IsExternFunc;
using ir::relax::TensorType;
using ir::relax::TypeOf;

namespace {

std::string Bytes(int64_t bytes) { return std::to_string(bytes) + " B"; }

/*! \brief The TIR variables occurring in `node` (a type or an expression). */
void CollectTirVars(const ObjectRef& node, std::unordered_set<const Object*>* vars) {
  if (!node.defined()) return;
  ffi::StructuralVisit(
      node,
      [&](const ObjectRef& n, ffi::StructuralVisitorObj* engine) -> Optional<ffi::VisitInterrupt> {
        if (!n.defined()) return std::nullopt;
        if (IsVar(n)) {
          vars->insert(n.get());
          return std::nullopt;
        }
        engine->DefaultVisitExpected(n).value();
        return std::nullopt;
      });
}

/*! \brief An integer attribute map such as `tir_var_upper_bound` (name -> value); a value that
 *         is not an integer is a ValueError naming `function`, the attribute and the variable. */
std::map<std::string, int64_t> IntAttrMap(const Function& func, const std::string& function,
                                          const char* key) {
  std::map<std::string, int64_t> out;
  std::optional<Any> attr = FuncAttr(func.ref(), key);
  if (!attr || *attr == nullptr) return out;
  std::optional<Map<String, Any>> entries = attr->try_cast<Map<String, Any>>();
  if (!entries) {
    TVM_FFI_THROW(ValueError) << "function " << Quoted(function) << ": " << key
                              << " must map shape variable names to integers, got "
                              << ToString(*attr);
  }
  for (const auto& [name, value] : *entries) {
    std::optional<int64_t> bound;
    if (value.type_index() == ffi::TypeIndex::kTVMFFIInt) {
      bound = value.cast<int64_t>();
    } else if (value.as<ffi::Object>() != nullptr) {
      bound = AsConstInt(value.cast<ObjectRef>());
    }
    if (!bound) {
      TVM_FFI_THROW(ValueError) << "function " << Quoted(function) << ": " << key << "[\""
                                << std::string(name) << "\"] must be an integer, got "
                                << ToString(value);
    }
    out[std::string(name)] = *bound;
  }
  return out;
}

const DLDataType kInt64{kDLInt, 64, 1};

/*! \brief One `R.builtin.alloc_tensor` and what the planner decides for it. */
struct Allocation {
  Allocation(Binding binding, Call call, int64_t step, RootId root)
      : binding(std::move(binding)), call(std::move(call)), step(step), root(root) {}
  Binding binding;
  Call call;
  int64_t step;
  RootId root;
  Array<ObjectRef> shape;
  DLDataType dtype{kDLFloat, 32, 1};
  int64_t device = 0;
  std::string scope;
  /*! \brief Bytes (upper bound when symbolic and bounded); -1 unbounded. */
  int64_t bytes = -1;
  bool symbolic = false;
  /*! \brief The bytes as an expression of the shape variables (when the type is known). */
  ObjectRef size;
  /*! \brief Unbounded, and only parameters' shape variables occur in `size`: it can size a
   *         storage at the function's start. */
  bool sized_on_entry = false;
  /*! \brief The bounded shape variables in its shape (`bytes` takes their bounds). */
  std::vector<const Object*> bounded_vars;
  std::string op;
  int64_t first = 0, last = 0;
  std::string reason;
  int64_t storage = -1, offset = 0;
  bool known_type = false;
};

/*! \brief The stock planner's plan of one function, read off its output. */
struct StockFunctionPlan {
  bool well_formed = true;
  int64_t bytes = 0;
  int64_t symbolic = 0;
  /*! \brief Every allocation's bytes, summed as an expression. */
  ObjectRef size = IntConst(kInt64, 0);
  Array<ObjectRef> storages;
  /*! \brief Allocation variable -> index in `storages`. */
  std::unordered_map<const Object*, int64_t> tensor_storage;
};

StockFunctionPlan ReadStockPlan(const Function& func) {
  StockFunctionPlan plan;
  plan.well_formed = schema::func::CheckWellFormed(func.ref(), true).cast<bool>();
  std::unordered_map<const Object*, int64_t> storage_index;
  for (const Step& step : FlattenFunction(func)) {
    if (step.kind != Step::Kind::kBinding) continue;
    std::optional<Call> call = As<Call>(step.expr);
    if (!call) continue;
    std::string op = call->op_name();
    Array<ObjectRef> args = call->args();
    if (op == schema::op::MemoryAllocStorage) {
      ffi::ObjectPtr<StorageAllocationObj> storage = ffi::make_object<StorageAllocationObj>();
      Array<ObjectRef> size = ir::relax::ShapeExpr(args[0], "alloc_storage size").values();
      TVM_FFI_ICHECK_EQ(size.size(), 1)
          << "internal error: alloc_storage of a rank-" << size.size() << " shape";
      int64_t bytes = AsConstInt(size[0]).value_or(-1);
      storage->bytes = bytes;
      storage->size = size[0];
      plan.size = Add(plan.size, size[0]);
      storage->device = AsConstInt(args[1]).value_or(0);
      storage->scope = StringValue(args[2], "alloc_storage scope");
      if (bytes >= 0) {
        plan.bytes += bytes;
      } else {
        ++plan.symbolic;
      }
      storage_index[step.binding->var().get()] = static_cast<int64_t>(plan.storages.size());
      plan.storages.push_back(ObjectRef(storage));
    } else if (op == schema::op::MemoryAllocTensor && IsVar(args[0])) {
      auto found = storage_index.find(args[0].get());
      if (found != storage_index.end()) {
        plan.tensor_storage[step.binding->var().get()] = found->second;
      }
    } else if (op == schema::op::BuiltinAllocTensor) {
      std::optional<TensorType> type = As<TensorType>(TypeOf(call->ref()));
      if (std::optional<int64_t> bytes = type ? type->static_bytes() : std::nullopt) {
        plan.bytes += *bytes;
      } else {
        ++plan.symbolic;
      }
      std::optional<ObjectRef> size = type ? type->bytes_expr() : std::nullopt;
      plan.size = size ? Add(plan.size, *size) : plan.size;
    }
  }
  return plan;
}

class PlanAnalysis {
 public:
  PlanAnalysis(const ObjectRef& gv, const Function& func, const IRModule& mod,
               const MemoryPlanOptionsObj& options, const target::PlanningDevices& devices,
               StockPlanner* stock)
      : gv_(gv),
        func_(func),
        mod_(mod),
        options_(options),
        devices_(devices),
        stock_(stock),
        effects_(mod.ref(), nullptr, MemoryEffectPolicy{/*packed_functions_keep_arguments=*/false}),
        steps_(FlattenFunction(func)),
        flow_(steps_) {}

  MemoryPlan Run(bool compare_with_stock) {
    // Step 1: values and allocations, in program order.
    for (const ObjectRef& param : func_.params()) {
      flow_.Define(param, Value{{flow_.NewRoot(RootKind::kParam, "a parameter", -1)}, nullptr});
    }
    for (size_t i = 0; i < steps_.size(); ++i) Visit(static_cast<int64_t>(i));
    // Step 2: sizes; step 3: lifetimes and what is not planned.
    BindUpperBounds();
    for (Allocation& a : allocations_) {
      Size(&a);
      Lifetime(&a);
    }
    // Step 4: storages per (device, scope).
    std::string device_refusal = Pack();
    // Step 5: the record, the bound, the stock comparison.
    MemoryPlan plan = Record();
    Decide(&plan, device_refusal, compare_with_stock);
    return plan;
  }

 private:
  // ---- step 1 -------------------------------------------------------------------------------

  void Visit(int64_t index) {
    const Step& step = steps_[index];
    PlanStep model;
    model.block = step.binding_block;
    switch (step.kind) {
      case Step::Kind::kBinding: {
        model.var = step.binding->var().get();
        std::optional<Call> call = As<Call>(step.expr);
        if (!call) {
          flow_.Define(step.binding->var().ref(), flow_.StepValue(index, nullptr));
          model = ModelNonCallBinding(step, model.block);
          break;
        }
        MemoryEffect effect = effects_.Classify(*call);
        Value value = flow_.StepValue(index, &effect);
        if (effect.allocator == MemoryEffect::Allocator::kAllocTensor && value.roots.size() == 1) {
          root_allocation_[value.roots[0]] = allocations_.size();
          allocations_.emplace_back(*step.binding, *call, index, value.roots[0]);
        } else if (effect.kind == MemoryEffect::Kind::kUse ||
                   effect.kind == MemoryEffect::Kind::kOpaque) {
          NameWriter(*call);
        }
        flow_.Define(step.binding->var().ref(), std::move(value));
        ModelCall(step, *call, effect, &model);
        break;
      }
      case Step::Kind::kIfResult:
        flow_.Define(step.binding->var().ref(), flow_.StepValue(index, nullptr));
        model.kind = PlanStep::Kind::kOpaque;  // the stock planner gives an `if` no storage
        model.var = step.binding->var().get();
        break;
      default:
        // Conditions, branch results and the function result: the stock planner gives up what
        // they read.
        model.kind = PlanStep::Kind::kEscape;
        model.reads = step.uses;
        model.returns = step.kind == Step::Kind::kReturn;
        break;
    }
    model_steps_.push_back(std::move(model));
  }

  /*! \brief The callee's name becomes the `op` of the allocations it is first passed. */
  void NameWriter(const Call& call) {
    std::string name = call.op_name();
    if (name.empty() && IsGlobalVar(call.op())) name = GlobalVarName(call.op());
    if (name.empty()) name = ir::relax::ExternFuncSymbol(call.op()).value_or("");
    for (const Object* var : UsedVars(call.ref())) {
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

  // The function as the stock planner sees it (relax/memory_plan_model.h).
  void ModelCall(const Step& step, const Call& call, const MemoryEffect& effect,
                 PlanStep* model) const {
    model->reads = step.uses;
    std::string op = call.op_name();
    if (effect.allocator == MemoryEffect::Allocator::kAllocTensor) {
      model->kind = PlanStep::Kind::kAllocate;
      model->type = TypeOf(call.ref());
      model->reads.clear();
      model->counts_own_output = false;
      model->scope = StringValue(call.args()[3], "alloc_tensor scope");
      return;
    }
    bool stock_view = op == schema::op::Reshape || op == schema::op::MemoryView ||
                      op == schema::op::EnsureZeroOffset ||
                      (effect.kind == MemoryEffect::Kind::kView && IsExternFunc(call.op()));
    if (stock_view && IsVar(call.args()[0])) {
      model->kind = PlanStep::Kind::kView;
      model->value = call.args()[0];
      model->reads.clear();
      return;
    }
    // PrimFunc and packed calls count as uses of their arguments; their results get no token.
    if (effects_.IsPrimFunc(call.op()) || IsExternFunc(call.op()) ||
        op == schema::op::VMCallTIRDyn) {
      model->kind = PlanStep::Kind::kAllocate;
      model->counts_own_output = false;
      return;
    }
    model->kind = PlanStep::Kind::kOpaque;
    model->escapes = effect.escapes;
  }

  // ---- steps 2 and 3 ------------------------------------------------------------------------

  /*! \brief `tir_var_upper_bound` (and `tir_var_lower_bound`) of the function's signature
   *         variables, as TVM's planner reads them. */
  void BindUpperBounds() {
    for (const ObjectRef& param : func_.params()) CollectTirVars(TypeOf(param), &signature_vars_);
    CollectTirVars(func_.ret_type(), &signature_vars_);
    std::string name = GlobalVarName(gv_);
    std::map<std::string, int64_t> upper = IntAttrMap(func_, name, schema::attr::TirVarUpperBound);
    std::map<std::string, int64_t> lower = IntAttrMap(func_, name, schema::attr::TirVarLowerBound);
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

  void Size(Allocation* a) const {
    std::optional<TensorType> type = As<TensorType>(TypeOf(a->call.ref()));
    std::optional<Array<ObjectRef>> shape = type ? type->shape() : std::nullopt;
    std::optional<DLDataType> dtype = type ? type->dtype() : std::nullopt;
    a->device = AsConstInt(a->call.args()[2]).value_or(0);
    a->scope = StringValue(a->call.args()[3], "alloc_tensor scope");
    if (!shape || !dtype) {
      a->reason = "its shape or dtype is unknown";
      return;
    }
    a->shape = *shape;
    a->dtype = *dtype;
    a->known_type = true;
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
    std::unordered_set<const Object*> vars;
    CollectTirVars(a->size, &vars);
    if (bounded) {
      a->bytes = bytes;
      for (const Object* var : vars) {
        if (bounds_.count(var)) a->bounded_vars.push_back(var);
      }
      return;
    }
    bool from_signature = std::all_of(
        vars.begin(), vars.end(), [&](const Object* v) { return signature_vars_.count(v) > 0; });
    if (from_signature) {
      a->sized_on_entry = true;
    } else {
      a->reason =
          "its size is symbolic, not bounded by tir_var_upper_bound, and depends on "
          "variables defined inside the function";
    }
  }

  void Lifetime(Allocation* a) const {
    const Root& root = flow_.root(a->root);
    a->first = a->last = a->step;
    bool returned = false;
    for (int64_t use : root.uses) {
      a->last = std::max(a->last, use);
      returned = returned || steps_[use].kind == Step::Kind::kReturn;
    }
    if (!a->reason.empty()) return;
    if (returned) {
      a->reason = "it reaches the function result";
    } else if (!root.escape.empty()) {
      a->reason = "it escapes: " + root.escape;
    }
  }

  // ---- step 4 -------------------------------------------------------------------------------

  /*! \brief Storages and offsets; returns why the function must be planned by the stock
   *         planner ("" when it need not). */
  std::string Pack() {
    std::map<std::pair<int64_t, std::string>, std::vector<size_t>> groups;
    for (size_t i = 0; i < allocations_.size(); ++i) {
      if (allocations_[i].reason.empty()) {
        groups[{allocations_[i].device, allocations_[i].scope}].push_back(i);
      }
    }
    for (const auto& [key, members] : groups) {
      const auto& [device, scope] = key;
      if (scope != scope::kGlobal && !scope.empty()) {
        return "storage scope \"" + scope + "\" (" + Quoted(FirstBinding(members)) +
               "): only \"global\" storage takes tensors at offsets";
      }
      if (!devices_.OffsetsAreFree(device)) {
        return devices_.Describe(device) + " (" + Quoted(FirstBinding(members)) +
               "): a tensor at an offset would be copied by ensure_zero_offset";
      }
    }
    for (const auto& [key, members] : groups) {
      PackGroup(key.first, key.second, members);
      ShareSymbolic(key.first, key.second, members);
    }
    // As TVM's planner does with this attribute: unplanned tensors of symbolic shape (the
    // function's outputs) get storage of their own, sized by the upper bound.
    std::optional<Any> plan_outputs =
        FuncAttr(func_.ref(), schema::attr::MemoryPlanDynamicFuncOutput);
    if (plan_outputs && plan_outputs->cast<bool>()) {
      for (Allocation& a : allocations_) {
        if (a.storage < 0 && a.symbolic && a.bytes >= 0) {
          a.storage = AddStorage(IntConst(kInt64, a.bytes), a.device, a.scope, /*bounded=*/true);
          a.reason = "";
        }
      }
    }
    return "";
  }

  std::string FirstBinding(const std::vector<size_t>& members) const {
    return allocations_[members[0]].binding.var().name();
  }

  void PackGroup(int64_t device, const std::string& scope, const std::vector<size_t>& members) {
    std::vector<size_t> sized;
    std::vector<PackItem> items;
    for (size_t i : members) {
      if (allocations_[i].bytes < 0) continue;
      sized.push_back(i);
      items.push_back(PackItem{allocations_[i].bytes, allocations_[i].first, allocations_[i].last});
    }
    if (items.empty()) return;
    Packing packing = PackOffsets(items, options_.alignment);
    TVM_FFI_ICHECK(IsValidPacking(items, packing, options_.alignment))
        << "internal error: the offset packing of " << items.size() << " tensors overlaps";
    bool bounded =
        std::any_of(sized.begin(), sized.end(), [&](size_t i) { return allocations_[i].symbolic; });
    int64_t storage = AddStorage(IntConst(kInt64, packing.bytes), device, scope, bounded);
    for (size_t k = 0; k < sized.size(); ++k) {
      allocations_[sized[k]].storage = storage;
      allocations_[sized[k]].offset = packing.offsets[k];
    }
  }

  /*! \brief Unbounded symbolic sizes: tensors of provably equal size whose lifetimes do not
   *         overlap share a storage (interval colouring, in order of first use). */
  void ShareSymbolic(int64_t device, const std::string& scope, const std::vector<size_t>& members) {
    std::unordered_map<ffi::StructuralKey, std::vector<size_t>> classes;
    std::vector<ffi::StructuralKey> order;
    for (size_t i : members) {
      if (!allocations_[i].sized_on_entry) continue;
      ffi::StructuralKey key(allocations_[i].size);
      auto [it, inserted] = classes.emplace(key, std::vector<size_t>());
      if (inserted) order.push_back(key);
      it->second.push_back(i);
    }
    for (const ffi::StructuralKey& key : order) {
      std::vector<size_t>& tensors = classes[key];
      std::sort(tensors.begin(), tensors.end(),
                [&](size_t a, size_t b) { return allocations_[a].first < allocations_[b].first; });
      std::vector<std::pair<int64_t, int64_t>> busy;  // (storage, last point of its tensor)
      for (size_t i : tensors) {
        Allocation& a = allocations_[i];
        auto free = std::find_if(busy.begin(), busy.end(),
                                 [&](const auto& s) { return s.second < a.first; });
        if (free == busy.end()) {
          busy.emplace_back(AddStorage(a.size, device, scope, /*bounded=*/false), a.last);
          free = busy.end() - 1;
        }
        free->second = a.last;
        a.storage = free->first;
        a.offset = 0;
      }
    }
  }

  int64_t AddStorage(const ObjectRef& size, int64_t device, const std::string& scope,
                     bool bounded) {
    ffi::ObjectPtr<StorageAllocationObj> storage = ffi::make_object<StorageAllocationObj>();
    storage->bytes = AsConstInt(size).value_or(-1);
    storage->size = size;
    storage->bounded = bounded;
    storage->device = device;
    storage->scope = scope;
    storages_.push_back(ObjectRef(storage));
    return static_cast<int64_t>(storages_.size() - 1);
  }

  // ---- step 5 -------------------------------------------------------------------------------

  MemoryPlan Record() {
    MemoryPlan plan;
    plan.record = ffi::make_object<FunctionMemoryPlanObj>();
    FunctionMemoryPlanObj& r = *plan.record;
    r.function = GlobalVarName(gv_);
    r.num_points = static_cast<int64_t>(steps_.size());
    std::vector<PackItem> live;
    int64_t unplanned = 0;
    ObjectRef planned_size = IntConst(kInt64, 0);
    std::set<const Object*> relied;  // the bounded variables sizing planned tensors
    for (const Allocation& a : allocations_) {
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
      t->reason = a.reason;
      r.tensors.push_back(ObjectRef(t));
      tensor_records_.push_back(t);
      plan.bindings.push_back(a.binding.ref());
      if (a.storage < 0) {
        if (a.known_type) planned_size = Add(planned_size, a.size);
        if (a.bytes >= 0 && !a.symbolic) {
          r.planned_bytes += a.bytes;
          unplanned += a.bytes;
        } else {
          ++r.symbolic_allocations;
        }
      } else if (a.bytes >= 0) {
        live.push_back(PackItem{a.bytes, a.first, a.last});
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
    // No plan may share the bytes of a tensor that may not be planned: they add to the peak.
    r.peak_live_bytes = PeakLiveBytes(live) + unplanned;
    for (const Object* var : relied) plan.bound_checks.push_back(bounds_.at(var));
    std::sort(plan.bound_checks.begin(), plan.bound_checks.end(),
              [](const BoundCheck& a, const BoundCheck& b) {
                return Var(a.var).name() < Var(b.var).name();
              });
    for (const BoundCheck& bound : plan.bound_checks) {
      r.upper_bounds.Set(Var(bound.var).name(), bound.upper);
      if (bound.lower) r.lower_bounds.Set(Var(bound.var).name(), *bound.lower);
    }
    return plan;
  }

  /*! \brief Ours or the stock planner's, by bytes. */
  void Decide(MemoryPlan* plan, const std::string& device_refusal, bool compare_with_stock) {
    FunctionMemoryPlanObj& r = *plan->record;
    std::optional<int64_t> modelled = MemoryPlanModel(model_steps_).TotalBytes({});
    r.stock_model_bytes = modelled.value_or(-1);
    bool symbolic =
        r.symbolic_allocations > 0 || std::any_of(allocations_.begin(), allocations_.end(),
                                                  [](const Allocation& a) { return a.symbolic; });
    bool need_stock =
        compare_with_stock || !device_refusal.empty() ||
        (options_.fall_back_to_stock && (!modelled || symbolic || r.planned_bytes > *modelled));
    std::optional<StockFunctionPlan> stock;
    if (need_stock) {
      stock = ReadStockPlan(Function(stock_->Planned().functions().at(gv_)));
      r.stock_bytes = stock->bytes;
      r.stock_size = analyzer_.Simplify(stock->size);
      r.stock_symbolic_allocations = stock->symbolic;
      r.stock_source = "stock pass";
      r.stock_storages = stock->storages;
      for (size_t i = 0; i < allocations_.size(); ++i) {
        auto found = stock->tensor_storage.find(allocations_[i].binding.var().get());
        if (found != stock->tensor_storage.end()) {
          tensor_records_[i]->stock_storage = found->second;
        }
      }
    } else if (modelled) {
      r.stock_bytes = *modelled;
      r.stock_size = IntConst(kInt64, *modelled);
      r.stock_symbolic_allocations = 0;
      r.stock_source = "model";
    }
    std::string ours = Bytes(r.planned_bytes);
    std::string theirs = r.stock_bytes < 0 ? std::string("unknown") : Bytes(r.stock_bytes);
    if (!device_refusal.empty()) {
      r.planner = kStockPlanner;
      r.reason = device_refusal;
      return;
    }
    r.planner = kMemplanPlanner;
    if (!options_.fall_back_to_stock) {
      r.reason = "fall_back_to_stock=False: " + ours + ", the stock planner " + theirs;
      return;
    }
    bool stock_smaller =
        stock && (stock->bytes < r.planned_bytes ||
                  (stock->bytes == r.planned_bytes && stock->symbolic < r.symbolic_allocations));
    if (stock_smaller && stock->well_formed) {
      r.planner = kStockPlanner;
      r.reason = "the stock planner allocates less: " + theirs + " against " + ours;
      return;
    }
    std::string reason = ours + ", the stock planner " + theirs + " (" + r.stock_source + ")";
    if (stock_smaller) reason += "; the stock plan is not well formed (apache/tvm#20191)";
    r.reason = reason;
  }

  ObjectRef gv_;
  Function func_;
  IRModule mod_;
  const MemoryPlanOptionsObj& options_;
  const target::PlanningDevices& devices_;
  StockPlanner* stock_;
  MemoryEffects effects_;
  std::vector<Step> steps_;
  StorageFlow flow_;
  Analyzer analyzer_;
  std::unordered_set<const Object*> signature_vars_;
  std::vector<Allocation> allocations_;
  std::unordered_map<RootId, size_t> root_allocation_;
  std::vector<PlanStep> model_steps_;
  std::vector<ObjectRef> storages_;
  /*! \brief Signature variables with a `tir_var_upper_bound`. */
  std::unordered_map<const Object*, BoundCheck> bounds_;
  std::vector<ffi::ObjectPtr<PlannedTensorObj>> tensor_records_;
};

}  // namespace

const IRModule& StockPlanner::Planned() {
  if (!planned_) {
    ObjectRef pass = schema::func::StaticPlanBlockMemory().cast<ObjectRef>();
    planned_ = ApplyPass(pass, mod_);
  }
  return *planned_;
}

MemoryPlan AnalyzeMemoryPlan(const ObjectRef& gv, const Function& func, const IRModule& mod,
                             const MemoryPlanOptionsObj& options,
                             const target::PlanningDevices& devices, StockPlanner* stock,
                             bool compare_with_stock) {
  return PlanAnalysis(gv, func, mod, options, devices, stock).Run(compare_with_stock);
}

void CheckMemoryPlanOptions(const MemoryPlanOptionsObj& options) {
  if (options.alignment <= 0 || options.alignment % kRuntimeAlignment != 0) {
    TVM_FFI_THROW(ValueError) << "MemoryPlanOptions.alignment must be a positive multiple of "
                              << kRuntimeAlignment
                              << " (the runtime's allocation alignment, below which "
                                 "ensure_zero_offset copies), got "
                              << options.alignment;
  }
}

void MemoryPlanOptionsObj::RegisterReflection() {
  namespace refl = tvm::ffi::reflection;
  refl::ObjectDef<MemoryPlanOptionsObj>()
      .def_ro("alignment", &MemoryPlanOptionsObj::alignment,
              "Every offset is a multiple of this many bytes (a multiple of 64, the TVM runtime's "
              "allocation alignment).",
              refl::DefaultValue(kPlanAlignment))
      .def_ro("fall_back_to_stock", &MemoryPlanOptionsObj::fall_back_to_stock,
              "Plan a function as TVM's StaticPlanBlockMemory does when that takes fewer bytes.",
              refl::DefaultValue(true));
}

void PlannedTensorObj::RegisterReflection() {
  namespace refl = tvm::ffi::reflection;
  refl::ObjectDef<PlannedTensorObj>()
      .def_ro("binding", &PlannedTensorObj::binding, "The variable the allocation binds.")
      .def_ro("op", &PlannedTensorObj::op, "The callee that first uses the tensor, or \"\".")
      .def_ro("shape", &PlannedTensorObj::shape, "Extents (TIR expressions where symbolic).")
      .def_ro("dtype", &PlannedTensorObj::dtype, "The element type.")
      .def_ro("bytes", &PlannedTensorObj::bytes,
              "Bytes (the upper bound of a bounded symbolic size); -1 when unbounded.")
      .def_ro("size", &PlannedTensorObj::size,
              "Bytes as an int64 expression of the shape variables (an IntImm when static); "
              "None when the shape or dtype is unknown.")
      .def_ro("device", &PlannedTensorObj::device, "The virtual device index.")
      .def_ro("scope", &PlannedTensorObj::scope, "The storage scope.")
      .def_ro("first", &PlannedTensorObj::first, "Program point of the allocation.")
      .def_ro("last", &PlannedTensorObj::last, "Program point of the last read.")
      .def_ro("storage", &PlannedTensorObj::storage,
              "Index in the plan's storages; -1 when the tensor is not planned.")
      .def_ro("offset", &PlannedTensorObj::offset, "Byte offset in the storage.")
      .def_ro("reason", &PlannedTensorObj::reason, "Why the tensor is not planned (\"\" if it is).")
      .def_ro("stock_storage", &PlannedTensorObj::stock_storage,
              "Index in the stock plan's storages; -1 when the stock planner does not plan it "
              "or was not run.");
}

void StorageAllocationObj::RegisterReflection() {
  namespace refl = tvm::ffi::reflection;
  refl::ObjectDef<StorageAllocationObj>()
      .def_ro("bytes", &StorageAllocationObj::bytes, "Bytes; -1 when symbolic.")
      .def_ro("size", &StorageAllocationObj::size,
              "Bytes as an int64 expression of the shape variables (an IntImm when static).")
      .def_ro("bounded", &StorageAllocationObj::bounded,
              "Whether a symbolic size was taken at its tir_var_upper_bound.")
      .def_ro("device", &StorageAllocationObj::device, "The virtual device index.")
      .def_ro("scope", &StorageAllocationObj::scope, "The storage scope.");
}

void FunctionMemoryPlanObj::RegisterReflection() {
  namespace refl = tvm::ffi::reflection;
  refl::ObjectDef<FunctionMemoryPlanObj>()
      .def_ro("function", &FunctionMemoryPlanObj::function, "The Relax function.")
      .def_ro("planner", &FunctionMemoryPlanObj::planner,
              "The planner StaticPlanBlockMemory uses for it: \"memplan\" or \"stock\".")
      .def_ro("reason", &FunctionMemoryPlanObj::reason, "Why that planner.")
      .def_ro("num_points", &FunctionMemoryPlanObj::num_points, "Program points.")
      .def_ro("tensors", &FunctionMemoryPlanObj::tensors, "Every R.builtin.alloc_tensor.")
      .def_ro("storages", &FunctionMemoryPlanObj::storages, "tvm-memplan's storages.")
      .def_ro("stock_storages", &FunctionMemoryPlanObj::stock_storages,
              "The stock planner's storages (when it was run).")
      .def_ro("peak_live_bytes", &FunctionMemoryPlanObj::peak_live_bytes,
              "Most bytes of static-size tensors live at one program point: a lower bound.")
      .def_ro("planned_bytes", &FunctionMemoryPlanObj::planned_bytes,
              "Bytes tvm-memplan allocates: storages and static tensors not planned.")
      .def_ro("stock_bytes", &FunctionMemoryPlanObj::stock_bytes,
              "The same for the stock planner; -1 when unknown.")
      .def_ro("stock_source", &FunctionMemoryPlanObj::stock_source,
              "How stock_bytes was obtained: \"model\" or \"stock pass\".")
      .def_ro("stock_model_bytes", &FunctionMemoryPlanObj::stock_model_bytes,
              "The stock planner's bytes as tvm-memplan's model of it predicts them; -1 when "
              "the model cannot tell.")
      .def_ro("symbolic_allocations", &FunctionMemoryPlanObj::symbolic_allocations,
              "Allocations of symbolic size in tvm-memplan's plan.")
      .def_ro("stock_symbolic_allocations", &FunctionMemoryPlanObj::stock_symbolic_allocations,
              "Allocations of symbolic size in the stock plan; -1 when unknown.")
      .def_ro("planned_size", &FunctionMemoryPlanObj::planned_size,
              "What tvm-memplan's plan allocates, as an int64 expression of the shape variables "
              "(sizes taken at a bound are constants).")
      .def_ro("stock_size", &FunctionMemoryPlanObj::stock_size,
              "The same for the stock plan; None when the stock planner was not run.")
      .def_ro("upper_bounds", &FunctionMemoryPlanObj::upper_bounds,
              "Shape variable -> tir_var_upper_bound, for the bounds the plan relies on: the "
              "function checks them on entry.")
      .def_ro("lower_bounds", &FunctionMemoryPlanObj::lower_bounds,
              "Shape variable -> tir_var_lower_bound, for those of them that have one.");
}

TVM_FFI_STATIC_INIT_BLOCK() {
  MemoryPlanOptionsObj::RegisterReflection();
  PlannedTensorObj::RegisterReflection();
  StorageAllocationObj::RegisterReflection();
  FunctionMemoryPlanObj::RegisterReflection();
  // The packing alone, for property tests: items as (bytes, first, last) triples.
  tvm::ffi::reflection::GlobalDef()
      .def("tvm_memplan.testing.pack_offsets",
           [](Array<Array<int64_t>> triples, int64_t alignment) {
             std::vector<PackItem> items;
             for (const Array<int64_t>& t : triples) items.push_back(PackItem{t[0], t[1], t[2]});
             Packing packing = PackOffsets(items, alignment);
             return Array<Any>{Array<int64_t>(packing.offsets.begin(), packing.offsets.end()),
                               packing.bytes, String(packing.algorithm)};
           })
      .def("tvm_memplan.testing.peak_live_bytes", [](Array<Array<int64_t>> triples) {
        std::vector<PackItem> items;
        for (const Array<int64_t>& t : triples) items.push_back(PackItem{t[0], t[1], t[2]});
        return PeakLiveBytes(items);
      });
}

}  // namespace relax
}  // namespace tvm_memplan
