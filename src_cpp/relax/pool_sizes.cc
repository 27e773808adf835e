/*!
 * \file relax/pool_sizes.cc
 * \brief Pool sizing of the planned storages (pool_sizes.h).
 */
#include "relax/pool_sizes.h"

#include <tvm/ffi/extra/structural_visit.h>

#include <algorithm>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <unordered_set>
#include <utility>

#include "relax/ir_names.h"
#include "relax/offset_packing.h"
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
    if (Is<Function>(base_func) && Function(base_func).plans_dynamic_output()) return true;
  }
  return false;
}

/*! \brief Who takes part in pool sizing, and the most a function may allocate. */
struct PoolScope {
  /*! \brief Plans planned by ours, calling no Relax function, called by none. */
  std::vector<size_t> pooled;
  /*! \brief Per plan, its constant storages per pool key, largest first. */
  std::vector<std::map<PoolKey, std::vector<size_t>>> ranked;
  /*! \brief Per plan, what MLC-LLM counts of it; only for MLC-LLM's engine. */
  std::vector<int64_t> totals;
  /*! \brief The largest function's constant bytes for MLC-LLM's engine (pool sizing must not
   *         raise it); unlimited elsewhere. */
  int64_t limit = std::numeric_limits<int64_t>::max();
};

PoolScope ScopeOf(const IRModule& mod, const std::vector<FunctionMemoryPlanPtr>& plans,
                  const std::vector<PlannerChoice>& choices,
                  const std::vector<std::vector<PooledSize>>& sizes) {
  PoolScope scope;
  std::unordered_set<const Object*> calls = CallingOrCalled(mod);
  scope.ranked.resize(plans.size());
  for (size_t p = 0; p < plans.size(); ++p) {
    if (choices[p].stock_function || calls.count(plans[p]->global_var.get())) continue;
    scope.pooled.push_back(p);
    scope.ranked[p] = RankedStorages(*plans[p]);
  }
  scope.totals.assign(plans.size(), 0);
  if (ReservesTheEstimate(mod)) {
    scope.limit = 0;
    for (size_t p = 0; p < plans.size(); ++p) {
      // A function TVM's planner plans allocates what its plan says.
      scope.totals[p] = choices[p].stock_function ? std::max<int64_t>(choices[p].stock_bytes, 0)
                                                  : ConstantBytes(*plans[p], sizes[p]);
      scope.limit = std::max(scope.limit, scope.totals[p]);
    }
  }
  return scope;
}

/*! \brief Each storage at its own size. */
std::vector<std::vector<PooledSize>> OwnSizes(const std::vector<FunctionMemoryPlanPtr>& plans) {
  std::vector<std::vector<PooledSize>> sizes(plans.size());
  for (size_t p = 0; p < plans.size(); ++p) {
    for (const ObjectRef& storage : plans[p]->storages) {
      sizes[p].push_back(PooledSize{storage.as<StorageAllocationObj>()->bytes, ""});
    }
  }
  return sizes;
}

/*! \brief One storage of a plan cut in two: the tensors that stay, and those that move to a
 *         new storage, each placed by the offset packer. */
struct Split {
  size_t plan = 0, storage = 0;
  int64_t kept_bytes = 0, moved_bytes = 0;
  std::vector<size_t> kept, moved;  // indices of plan.tensors
  Packing kept_packing, moved_packing;
};

/*!
 * \brief Whether the tensors of storage `index` of `plan` (`bytes` in all) can be placed in two
 *        storages of `kept` and `bytes - kept` bytes. Which tensors move: at each program point
 *        where more than `kept` bytes are live, the largest tensors live there that still fit
 *        the moved storage at every point of their lifetimes, until what stays fits; then both
 *        sets are placed by the offset packer within their sizes. Tensors of a concatenation
 *        group stay.
 */
std::optional<Split> TrySplit(const FunctionMemoryPlanObj& plan, size_t p, size_t index,
                              int64_t bytes, int64_t kept, const MemoryPlanOptionsObj& options) {
  int64_t room = bytes - kept;
  std::vector<size_t> members;
  int64_t points = 0;
  for (size_t k = 0; k < plan.tensors.size(); ++k) {
    const auto* t = plan.tensors[k].as<PlannedTensorObj>();
    if (t->storage != static_cast<int64_t>(index)) continue;
    members.push_back(k);
    points = std::max(points, t->last + 1);
  }
  auto tensor = [&](size_t k) { return plan.tensors[k].as<PlannedTensorObj>(); };
  auto item = [&](size_t k) {
    const PlannedTensorObj* t = tensor(k);
    return PackItem{t->bytes, t->first, t->last, t->group, t->group_offset};
  };
  std::vector<PackItem> all;
  for (size_t k : members) all.push_back(item(k));
  std::vector<int64_t> live = LiveBytesAt(all, points);
  std::vector<int64_t> moved_live(points, 0);
  std::vector<bool> moves(members.size(), false);
  for (int64_t at = 0; at < points; ++at) {
    while (live[at] - moved_live[at] > kept) {
      std::optional<size_t> best;
      for (size_t m = 0; m < members.size(); ++m) {
        const PlannedTensorObj* t = tensor(members[m]);
        if (moves[m] || t->group >= 0 || t->first > at || t->last < at || t->bytes > room) {
          continue;
        }
        int64_t busiest =
            *std::max_element(moved_live.begin() + t->first, moved_live.begin() + t->last + 1);
        if (busiest + t->bytes > room) continue;
        const PlannedTensorObj* b = best ? tensor(members[*best]) : nullptr;
        if (!b || t->bytes > b->bytes || (t->bytes == b->bytes && t->last > b->last)) best = m;
      }
      if (!best) return std::nullopt;
      moves[*best] = true;
      const PlannedTensorObj* t = tensor(members[*best]);
      for (int64_t q = t->first; q <= t->last; ++q) moved_live[q] += t->bytes;
    }
  }
  Split split{p, index, kept, room};
  std::vector<PackItem> kept_items, moved_items;
  for (size_t m = 0; m < members.size(); ++m) {
    (moves[m] ? split.moved : split.kept).push_back(members[m]);
    (moves[m] ? moved_items : kept_items).push_back(item(members[m]));
  }
  SearchBudget budget = SearchBudget::ForMs(options.exact_search_ms);
  auto pack = [&](const std::vector<PackItem>& items, int64_t capacity) {
    PackOptions pack_options;
    pack_options.alignment = options.alignment;
    pack_options.capacity = capacity;
    pack_options.budget = options.exact_search_ms > 0 ? &budget : nullptr;
    return PackOffsets(items, pack_options);
  };
  split.kept_packing = pack(kept_items, kept);
  if (split.kept_packing.bytes > kept) return std::nullopt;
  split.moved_packing = pack(moved_items, room);
  if (split.moved_packing.bytes > room) return std::nullopt;
  TVM_FFI_ICHECK(IsValidPacking(kept_items, split.kept_packing, options.alignment) &&
                 IsValidPacking(moved_items, split.moved_packing, options.alignment))
      << "internal error: a split storage's packing overlaps";
  return split;
}

/*! \brief A storage record like `from`, of `bytes`, holding what `packing` placed. */
ObjectRef SplitStorage(const StorageAllocationObj& from, int64_t bytes, const Packing& packing,
                       const std::string& split_for) {
  ffi::ObjectPtr<StorageAllocationObj> storage = ffi::make_object<StorageAllocationObj>(from);
  storage->bytes = bytes;
  storage->size = IntConst(kInt64, bytes);
  storage->bound_bytes = packing.bound;
  storage->optimality = bytes == packing.bound   ? optimality::kAtBound
                        : bytes == packing.bytes ? packing.optimality
                                                 : optimality::kBestFound;
  storage->optimality_gap_bytes = bytes - packing.bound;
  storage->algorithm = packing.algorithm;
  storage->pooled_bytes = bytes;
  storage->split_for = split_for;
  return ObjectRef(storage);
}

/*! \brief `split` written into its plan: the storage at its kept size, a new one after the
 *         plan's others for the tensors that moved. */
void ApplySplit(const Split& split, const std::string& split_for, FunctionMemoryPlanObj* plan) {
  const auto& from = *plan->storages[split.storage].as<StorageAllocationObj>();
  Array<ObjectRef> storages = plan->storages;
  storages.Set(split.storage, SplitStorage(from, split.kept_bytes, split.kept_packing, split_for));
  int64_t moved_index = static_cast<int64_t>(storages.size());
  storages.push_back(SplitStorage(from, split.moved_bytes, split.moved_packing, split_for));
  plan->storages = storages;
  Array<ObjectRef> tensors = plan->tensors;
  auto place = [&](const std::vector<size_t>& members, const Packing& packing, int64_t index) {
    for (size_t m = 0; m < members.size(); ++m) {
      ffi::ObjectPtr<PlannedTensorObj> tensor =
          ffi::make_object<PlannedTensorObj>(*tensors[members[m]].as<PlannedTensorObj>());
      tensor->storage = index;
      tensor->offset = packing.offsets[m];
      tensors.Set(members[m], ObjectRef(tensor));
    }
  };
  place(split.kept, split.kept_packing, static_cast<int64_t>(split.storage));
  place(split.moved, split.moved_packing, moved_index);
  plan->tensors = tensors;
}

}  // namespace

void SplitLargestStorages(const IRModule& mod, const std::vector<FunctionMemoryPlanPtr>& plans,
                          const std::vector<PlannerChoice>& choices,
                          const MemoryPlanOptionsObj& options) {
  if (!options.pool_sizes || plans.size() < 2 || !ReservesTheEstimate(mod)) return;
  PoolScope scope = ScopeOf(mod, plans, choices, OwnSizes(plans));
  auto largest_of = [&](size_t p, const PoolKey& key) -> int64_t {
    auto found = scope.ranked[p].find(key);
    if (found == scope.ranked[p].end()) return 0;
    return plans[p]->storages[found->second[0]].as<StorageAllocationObj>()->bytes;
  };
  std::set<PoolKey> keys;
  for (size_t p : scope.pooled) {
    for (const auto& [key, indices] : scope.ranked[p]) keys.insert(key);
  }
  for (const PoolKey& key : keys) {
    // 1. The module's largest storage, and the functions that cannot take its size: their
    //    other constant bytes (results) would take them past the limit.
    int64_t top = 0;
    for (size_t p : scope.pooled) top = std::max(top, largest_of(p, key));
    int64_t kept = std::numeric_limits<int64_t>::max();
    std::string split_for;
    for (size_t p : scope.pooled) {
      int64_t own = largest_of(p, key);
      int64_t others = scope.totals[p] - own;
      if (own == 0 || own >= top || others + top <= scope.limit) continue;
      if (scope.limit - others < kept) {
        kept = scope.limit - others;
        split_for = std::string(plans[p]->function);
      }
    }
    if (split_for.empty() || kept <= 0) continue;
    // 2. Every function whose largest storage is above that size, split there (all of them or
    //    none: one left whole would still hold the largest block).
    std::vector<Split> splits;
    for (size_t p : scope.pooled) {
      int64_t own = largest_of(p, key);
      if (own <= kept) continue;
      std::optional<Split> split =
          TrySplit(*plans[p], p, scope.ranked[p].at(key)[0], own, kept, options);
      if (!split) {
        splits.clear();
        break;
      }
      splits.push_back(std::move(*split));
    }
    for (const Split& split : splits) ApplySplit(split, split_for, plans[split.plan].get());
  }
}

std::vector<std::vector<PooledSize>> PoolSizes(const IRModule& mod,
                                               const std::vector<FunctionMemoryPlanPtr>& plans,
                                               const std::vector<PlannerChoice>& choices,
                                               const MemoryPlanOptionsObj& options) {
  // 1. Every storage at its own size.
  std::vector<std::vector<PooledSize>> sizes = OwnSizes(plans);
  // One function has no other's size to take (and the walk for calls below costs a visit of
  // the whole module).
  if (!options.pool_sizes || plans.size() < 2) return sizes;
  // 2. The functions that take part: planned by ours, calling no Relax function, called by
  //    none; for MLC-LLM's engine, the most a function may allocate.
  PoolScope scope = ScopeOf(mod, plans, choices, sizes);
  // 3. The module's largest storage of each rank, per device and scope.
  std::map<std::pair<PoolKey, size_t>, PooledSize> largest;
  for (size_t p : scope.pooled) {
    for (const auto& [key, indices] : scope.ranked[p]) {
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
  std::vector<int64_t>& totals = scope.totals;
  for (size_t p : scope.pooled) {
    for (const auto& [key, indices] : scope.ranked[p]) {
      for (size_t k = 0; k < indices.size(); ++k) {
        PooledSize& size = sizes[p][indices[k]];
        const PooledSize& top = largest.at({key, k});
        int64_t grows = top.bytes - size.bytes;
        if (grows <= 0 || totals[p] + grows > scope.limit) continue;
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
