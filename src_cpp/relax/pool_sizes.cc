/*!
 * \file relax/pool_sizes.cc
 * \brief Pool sizing of the planned storages (pool_sizes.h).
 */
#include "relax/pool_sizes.h"

#include <tvm/ffi/extra/structural_visit.h>

#include <algorithm>
#include <limits>
#include <map>
#include <unordered_set>
#include <utility>

#include "relax/ir_names.h"
#include "relax/planners.h"

namespace tvm_memplan {
namespace relax {

namespace {

/*! \brief The Relax functions of `mod` that call another one, or are called by one. */
std::unordered_set<const Object*> CallingOrCalled(const IRModule& mod) {
  Map<ObjectRef, ObjectRef> functions = mod.functions();
  std::unordered_set<const Object*> out;
  for (const auto& [global_var, base_func] : functions) {
    if (!Is<Function>(base_func)) continue;
    ffi::StructuralVisit(
        base_func,
        [&](const ObjectRef& node,
            ffi::StructuralVisitorObj* engine) -> Optional<ffi::VisitInterrupt> {
          if (!node.defined() || IsTypeNode(node)) return std::nullopt;
          if (std::optional<Call> call = As<Call>(node)) {
            ObjectRef callee = call->op();
            auto found = functions.find(callee);
            if (IsGlobalVar(callee) && found != functions.end() && Is<Function>((*found).second)) {
              out.insert(global_var.get());
              out.insert(callee.get());
            }
          }
          return engine->DefaultVisitExpected(node).value();
        });
  }
  return out;
}

/*! \brief Where a storage can take another function's size: device, scope. */
using PoolKey = std::pair<int64_t, std::string>;

/*! \brief Indices of `plan`'s constant storages per pool key, largest first. */
std::map<PoolKey, std::vector<size_t>> RankedStorages(const FunctionMemoryPlanObj& plan) {
  std::map<PoolKey, std::vector<size_t>> ranked;
  for (size_t i = 0; i < plan.storages.size(); ++i) {
    const auto* storage = plan.storages[i].as<StorageAllocationObj>();
    // A result's storage outlives the call: at a larger size, the caller would hold it.
    if (storage->bytes < 0 || storage->holds_result) continue;
    ranked[{storage->device, std::string(storage->scope)}].push_back(i);
  }
  for (auto& [key, indices] : ranked) {
    std::stable_sort(indices.begin(), indices.end(), [&](size_t a, size_t b) {
      return plan.storages[a].as<StorageAllocationObj>()->bytes >
             plan.storages[b].as<StorageAllocationObj>()->bytes;
    });
  }
  return ranked;
}

/*!
 * \brief What MLC-LLM's AttachMetadataWithMemoryUsage counts of a function: its storages of
 *        constant size, at `sizes`, and its unplanned tensors of constant shape.
 */
int64_t ConstantBytes(const FunctionMemoryPlanObj& plan, const std::vector<PooledSize>& sizes) {
  int64_t total = 0;
  for (const PooledSize& size : sizes) total += std::max<int64_t>(size.bytes, 0);
  for (const ObjectRef& tensor : plan.tensors) {
    const auto* t = tensor.as<PlannedTensorObj>();
    if (t->storage >= 0 || !t->size) continue;
    total += std::max<int64_t>(AsConstInt(*t->size).value_or(0), 0);
  }
  return total;
}

/*!
 * \brief Whether `mod` is built for MLC-LLM's engine, which sizes its KV cache after reserving
 *        twice the largest function's constant bytes: its functions carry
 *        `relax.memory_plan_dynamic_func_output` (MLC-LLM's AttachMemoryPlanAttr sets it).
 */
bool ReservesTheEstimate(const IRModule& mod) {
  for (const auto& [global_var, base_func] : mod.functions()) {
    if (!Is<Function>(base_func)) continue;
    std::optional<Any> marked = FuncAttr(base_func, schema::attr::MemoryPlanDynamicFuncOutput);
    if (marked && marked->cast<bool>()) return true;
  }
  return false;
}

}  // namespace

std::vector<std::vector<PooledSize>> PoolSizes(const IRModule& mod,
                                               const std::vector<FunctionMemoryPlanPtr>& plans,
                                               const std::vector<PlannerChoice>& choices,
                                               const MemoryPlanOptionsObj& options) {
  // 1. Every storage at its own size.
  std::vector<std::vector<PooledSize>> sizes(plans.size());
  for (size_t p = 0; p < plans.size(); ++p) {
    for (const ObjectRef& storage : plans[p]->storages) {
      sizes[p].push_back(PooledSize{storage.as<StorageAllocationObj>()->bytes, ""});
    }
  }
  // One function has no other's size to take (and the walk for calls below costs a visit of
  // the whole module).
  if (!options.pool_sizes || plans.size() < 2) return sizes;
  // 2. The functions that take part: planned by ours, calling no Relax function, called by none.
  std::unordered_set<const Object*> calls = CallingOrCalled(mod);
  std::vector<size_t> pooled;
  for (size_t p = 0; p < plans.size(); ++p) {
    if (!choices[p].stock_function && !calls.count(plans[p]->global_var.get())) {
      pooled.push_back(p);
    }
  }
  // 3. The module's largest storage of each rank, per device and scope.
  std::vector<std::map<PoolKey, std::vector<size_t>>> ranked(plans.size());
  std::map<std::pair<PoolKey, size_t>, PooledSize> largest;
  for (size_t p : pooled) {
    ranked[p] = RankedStorages(*plans[p]);
    for (const auto& [key, indices] : ranked[p]) {
      for (size_t k = 0; k < indices.size(); ++k) {
        PooledSize& top = largest[{key, k}];
        int64_t bytes = sizes[p][indices[k]].bytes;
        if (bytes > top.bytes) top = PooledSize{bytes, std::string(plans[p]->function)};
      }
    }
  }
  // 4. Each storage at its rank's size; for MLC-LLM's engine, unless that takes its function's
  //    constant storages together past the largest function's: the engine reserves twice that
  //    sum (its "temporary buffer" estimate) ahead of the KV cache, so it must not grow.
  std::vector<int64_t> totals(plans.size(), 0);
  int64_t largest_total = std::numeric_limits<int64_t>::max();
  if (ReservesTheEstimate(mod)) {
    largest_total = 0;
    for (size_t p = 0; p < plans.size(); ++p) {
      // A function TVM's planner plans allocates what its plan says.
      totals[p] = choices[p].stock_function ? std::max<int64_t>(choices[p].stock_bytes, 0)
                                            : ConstantBytes(*plans[p], sizes[p]);
      largest_total = std::max(largest_total, totals[p]);
    }
  }
  for (size_t p : pooled) {
    for (const auto& [key, indices] : ranked[p]) {
      for (size_t k = 0; k < indices.size(); ++k) {
        PooledSize& size = sizes[p][indices[k]];
        const PooledSize& top = largest.at({key, k});
        int64_t grows = top.bytes - size.bytes;
        if (grows <= 0 || totals[p] + grows > largest_total) continue;
        totals[p] += grows;
        size = top;
      }
    }
  }
  return sizes;
}

void RecordPoolSizes(const std::vector<FunctionMemoryPlanPtr>& plans,
                     const std::vector<std::vector<PooledSize>>& sizes) {
  for (size_t p = 0; p < plans.size(); ++p) {
    Array<ObjectRef> storages;
    for (size_t s = 0; s < plans[p]->storages.size(); ++s) {
      ffi::ObjectPtr<StorageAllocationObj> storage =
          ffi::make_object<StorageAllocationObj>(*plans[p]->storages[s].as<StorageAllocationObj>());
      storage->pooled_bytes = sizes[p][s].bytes;
      storage->pooled_with = sizes[p][s].with;
      storages.push_back(ObjectRef(storage));
    }
    plans[p]->storages = storages;
  }
}

}  // namespace relax
}  // namespace tvm_memplan
