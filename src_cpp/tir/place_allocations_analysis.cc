/*!
 * \file tir/place_allocations_analysis.cc
 * \brief The placement analysis: collect allocations with their device context, decide each one,
 *        then apply the per-function stack budget.
 */
#include "tir/place_allocations_analysis.h"

#include <tvm/ffi/reflection/registry.h>

#include <algorithm>
#include <numeric>
#include <sstream>
#include <utility>

#include "ir/pass.h"
#include "ir/visitor.h"

namespace tvm_memplan {
namespace tir {

using namespace ir;
using target::StackLimits;

namespace {

/*! \brief An allocation and the device context it is made in. */
struct AllocationSite {
  Buffer buffer;
  ObjectRef node;
  Map<String, Any> annotations;
  /*! \brief The innermost `device_type` in effect; nullopt when unknown. */
  std::optional<int64_t> device_type;
  bool has_device_id;
};

/*!
 * \brief Collects AllocBuffers (and SBlock alloc_buffers) with the `device_type` / `device_id`
 *        attributes in effect. Only statements can hold allocations: a walk over statements.
 */
class AllocationCollector {
 public:
  explicit AllocationCollector(std::optional<int64_t> device_type) : device_type_(device_type) {}

  std::vector<AllocationSite> Collect(const ObjectRef& body) {
    Visit(body);
    return std::move(sites_);
  }

 private:
  void Visit(const ObjectRef& stmt) {
    if (Is<AllocBuffer>(stmt)) {
      AllocBuffer alloc(stmt);
      Record(alloc.buffer(), stmt, alloc.annotations());
      return;
    }
    if (Is<AttrStmt>(stmt)) return VisitAttr(AttrStmt(stmt));
    if (Is<SBlock>(stmt)) {
      for (const ObjectRef& buffer : SBlock(stmt).alloc_buffers()) {
        Record(Buffer(buffer, "SBlock.alloc_buffers"), stmt, {});
      }
    }
    VisitChildren(stmt);
  }

  void VisitChildren(const ObjectRef& stmt) {
    ForEachChildStmt(stmt, [this](const ObjectRef& child) { Visit(child); });
  }

  void VisitAttr(const AttrStmt& attr) {
    std::string key = attr.attr_key();
    if (key == schema::attr::DeviceType) {
      std::optional<int64_t> outer = device_type_;
      device_type_ = AsConstInt(attr.value());
      VisitChildren(attr);
      device_type_ = outer;
    } else if (key == schema::attr::DeviceId) {
      bool outer = has_device_id_;
      has_device_id_ = true;
      VisitChildren(attr);
      has_device_id_ = outer;
    } else {
      VisitChildren(attr);
    }
  }

  void Record(const Buffer& buffer, const ObjectRef& node, Map<String, Any> annotations) {
    sites_.push_back({buffer, node, std::move(annotations), device_type_, has_device_id_});
  }

  std::optional<int64_t> device_type_;
  bool has_device_id_ = false;
  std::vector<AllocationSite> sites_;
};

bool IsScalableVector(DLDataType dtype) { return static_cast<int16_t>(dtype.lanes) < 0; }

bool WantsUnlowered(const AllocationSite& site, const std::string& scope) {
  if (scope == scope::kMemplanUnlowered) return true;
  auto it = site.annotations.find(String(schema::attr::DisableLowerTVMBuiltin));
  if (it == site.annotations.end()) return false;
  if (auto flag = (*it).second.try_cast<int64_t>()) return *flag != 0;
  if (auto imm = (*it).second.try_cast<ObjectRef>()) {
    if (std::optional<int64_t> value = AsConstInt(*imm)) return *value != 0;
  }
  return true;
}

/*! \brief Decides one allocation (rules 1-4 of the header); the budget comes after. */
class Decider {
 public:
  Decider(const std::string& function, const StackLimits& limits)
      : function_(function),
        limits_(limits),
        max_stack_alloca_(limits.max_stack_alloca.Describe()) {}

  AllocationDecision Decide(const AllocationSite& site) const {
    const Buffer& buffer = site.buffer;
    AllocationDecision d = ffi::make_object<AllocationDecisionObj>();
    d->buffer_node = buffer.ref();
    if (!function_.empty()) d->function = String(function_);
    d->name = buffer.name();
    d->kind = AllocationKindName(Is<AllocBuffer>(site.node)
                                     ? ir::AllocationSite::Kind::kAllocBuffer
                                     : ir::AllocationSite::Kind::kBlockAllocBuffer);
    const std::string scope = buffer.scope().empty() ? scope::kGlobal : buffer.scope();
    d->scope = scope;
    d->dtype = DTypeToString(buffer.dtype());
    d->shape = IntsWhereConstant(buffer.shape());
    if (std::optional<int64_t> bytes = buffer.ConstSizeBytes()) d->nbytes = *bytes;
    if (std::optional<ObjectRef> size =
            AllocatedBytesExpr(buffer.shape(), buffer.strides(), buffer.dtype())) {
      d->size = *size;
    }
    d->node = site.node;
    d->has_device_id = site.has_device_id;
    d->stock_placement = StockPlacement(site, *d);
    if (!site.device_type) {
      return With(d, placement::kStock, "device unknown (no target, no device_type attribute)");
    }
    if (*site.device_type != kDLCPU) {
      return With(d, placement::kStock,
                  "device type " + std::to_string(*site.device_type) + " is not the CPU");
    }
    if (IsScalableVector(buffer.dtype())) {
      return With(d, placement::kStock, "scalable vector dtype");
    }
    if (WantsUnlowered(site, scope)) {
      return With(d, placement::kUnlowered, "annotated disable_lower_builtin");
    }
    if (scope == scope::kGlobalWorkspace) {
      return With(d, placement::kWorkspace, "scope \"global.workspace\"");
    }
    if (scope == scope::kGlobalStack) return ForcedStack(d);
    if (!d->nbytes) {
      return With(d, placement::kWorkspace, "size is not a compile-time constant");
    }
    if (scope != scope::kGlobal && scope != scope::kLocal) {
      return With(d, placement::kWorkspace, "scope \"" + scope + "\" has no stack rule");
    }
    int64_t max_bytes = limits_.max_stack_alloca.bytes.value_or(0);
    if (*d->nbytes == 0) return With(d, placement::kWorkspace, "zero-size allocation");
    std::string size = std::to_string(*d->nbytes) + " bytes";
    if (*d->nbytes <= max_bytes) {
      return With(d, placement::kStack, size + " <= " + max_stack_alloca_);
    }
    return With(d, placement::kWorkspace, size + " > " + max_stack_alloca_);
  }

 private:
  /*! \brief TVM's own rule, for comparison: only small constant "global" CPU buffers stack. */
  static const char* StockPlacement(const AllocationSite& site, const AllocationDecisionObj& d) {
    if (!site.device_type || *site.device_type != kDLCPU || IsScalableVector(d.buffer().dtype())) {
      return placement::kStock;
    }
    if (WantsUnlowered(site, d.scope)) return placement::kUnlowered;
    return StockKeepsOnStack(d.nbytes, d.scope) ? placement::kStack : placement::kWorkspace;
  }

  static AllocationDecision With(AllocationDecision d, const char* placement, std::string reason) {
    d->placement = placement;
    d->reason = std::move(reason);
    return d;
  }

  AllocationDecision ForcedStack(AllocationDecision d) const {
    d->forced_stack = true;
    std::string what = function_ + ": buffer " + Quoted(d->name) +
                       " has scope \"global.stack\", which always lives on the stack";
    if (!d->nbytes) {
      TVM_FFI_THROW(ValueError) << what << ", but its size is not a compile-time constant (shape "
                                << ToString(d->buffer().shape()) << ")";
    }
    const target::ResolvedLimit& limit = limits_.max_stack_alloca;
    if (limit.bytes.value_or(0) == 0) {
      TVM_FFI_THROW(ValueError) << what << " (" << *d->nbytes << " bytes), but the target forbids "
                                << "stack allocations: " << limit.Describe();
    }
    return With(d, placement::kStack, "scope \"global.stack\" (always on the stack)");
  }

  const std::string& function_;
  const StackLimits& limits_;
  /*! \brief limits_.max_stack_alloca.Describe(), which most reasons quote. */
  const std::string max_stack_alloca_;
};

/*! \brief Rule 5: move the largest stack allocations to the workspace until the rest fit. */
void ApplyStackBudget(const std::string& function, const StackLimits& limits, PlacementPlan* plan) {
  const target::ResolvedLimit& budget = limits.max_stack_bytes;
  if (!budget.bytes) return;
  int64_t forced = 0;
  std::string forced_list;
  std::vector<size_t> movable;
  for (size_t i = 0; i < plan->decisions.size(); ++i) {
    const AllocationDecisionObj& d = *plan->decisions[i];
    if (d.placement != placement::kStack) continue;
    if (d.forced_stack) {
      forced += *d.nbytes;
      forced_list +=
          (forced_list.empty() ? "" : ", ") + Quoted(d.name) + " " + std::to_string(*d.nbytes);
    } else {
      movable.push_back(i);
    }
  }
  if (forced > *budget.bytes) {
    TVM_FFI_THROW(ValueError) << function << ": the \"global.stack\" allocations alone take "
                              << forced << " bytes of stack (" << forced_list << "), more than "
                              << budget.Describe() << "; they are never moved to the workspace";
  }
  int64_t total = plan->StackBytes();
  // Largest first; among equal sizes the later definition first.
  std::stable_sort(movable.begin(), movable.end(), [&](size_t a, size_t b) {
    int64_t size_a = *plan->decisions[a]->nbytes, size_b = *plan->decisions[b]->nbytes;
    return size_a != size_b ? size_a > size_b : a > b;
  });
  for (size_t i : movable) {
    if (total <= *budget.bytes) break;
    AllocationDecisionObj& d = *plan->decisions[i];
    d.reason = "moved off the stack: the stack allocations of " + function + " take " +
               std::to_string(total) + " bytes > " + budget.Describe();
    d.placement = placement::kWorkspace;
    total -= *d.nbytes;
  }
}

/*!
 * \brief `tvm_memplan.analysis.allocation_plan`: the decisions for a PrimFunc or every PrimFunc of
 *        a module (in name order), for `target` or, when it is None, each function's own target.
 */
Array<ObjectRef> AllocationPlanFFI(Any func_or_mod, Optional<ObjectRef> target) {
  std::vector<std::pair<std::string, PrimFunc>> funcs;
  auto obj = func_or_mod.try_cast<ObjectRef>();
  if (obj && Is<PrimFunc>(*obj)) {
    PrimFunc func(*obj);
    funcs.emplace_back(func.global_symbol(), func);
  } else if (obj && Is<IRModule>(*obj)) {
    for (const auto& [global_var, func] : IRModule(*obj).functions()) {
      if (Is<PrimFunc>(func)) funcs.emplace_back(GlobalVarName(global_var), PrimFunc(func));
    }
    std::sort(funcs.begin(), funcs.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
  } else {
    TVM_FFI_THROW(TypeError) << "allocation_plan expects a tvm.tirx.PrimFunc or a tvm.IRModule, "
                             << "got `" << func_or_mod.GetTypeKey() << "`";
  }
  ObjectRef pass_context = schema::func::GetCurrentPassContext().cast<ObjectRef>();
  Array<ObjectRef> out;
  for (const auto& [name, func] : funcs) {
    ObjectRef func_target = target ? *target : ObjectRef();
    if (!func_target.defined()) {
      std::optional<Any> own = FuncAttr(func, schema::attr::Target);
      if (!own) {
        TVM_FFI_THROW(ValueError) << "allocation_plan: function `" << name << "` has no "
                                  << "target attribute; pass the target to plan for";
      }
      func_target = own->cast<ObjectRef>();
    }
    StackLimits limits = target::ResolveStackLimits(func_target, pass_context);
    for (AllocationDecision& d : PlanAllocationPlacement(func, name, limits).decisions) {
      out.push_back(ObjectRef(std::move(d)));
    }
  }
  return out;
}

}  // namespace

int64_t PlacementPlan::StackBytes() const {
  int64_t total = 0;
  for (const AllocationDecision& d : decisions) {
    if (d->placement == placement::kStack) total += *d->nbytes;
  }
  return total;
}

std::optional<StackLimits> HostFunctionLimits(const PrimFunc& func, const ObjectRef& pass_context) {
  std::optional<Any> target = FuncAttr(func, schema::attr::Target);
  bool is_host = FuncFlag(func.ref(), schema::attr::IsHostFunc);
  if (!is_host && target) is_host = target::TargetHasKey(target->cast<ObjectRef>(), "cpu");
  if (!is_host) return std::nullopt;
  return target::ResolveStackLimits(target ? target->cast<ObjectRef>() : ObjectRef(), pass_context);
}

PlacementPlan PlanAllocationPlacement(const PrimFunc& func, const std::string& function_name,
                                      const StackLimits& limits) {
  PlacementPlan plan;
  Decider decider(function_name, limits);
  for (const AllocationSite& site : AllocationCollector(limits.device_type).Collect(func.body())) {
    plan.decisions.push_back(decider.Decide(site));
  }
  ApplyStackBudget(function_name, limits, &plan);
  return plan;
}

TVM_FFI_STATIC_INIT_BLOCK() {
  tvm::ffi::reflection::GlobalDef().def("tvm_memplan.analysis.allocation_plan", AllocationPlanFFI);
}

}  // namespace tir
}  // namespace tvm_memplan
