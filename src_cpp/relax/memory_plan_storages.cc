/*!
 * \file relax/memory_plan_storages.cc
 * \brief Storages and offsets for the planned tensors of one function.
 */
#include "relax/memory_plan_storages.h"

#include <tvm/ffi/extra/structural_key.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <optional>
#include <unordered_map>

#include "ir/scopes.h"
#include "relax/ir_names.h"
#include "relax/memory_plan_records.h"
#include "relax/offset_packing.h"
#include "relax/offset_search.h"

namespace tvm_memplan {
namespace relax {

namespace {

/*! \brief StorageAllocation.algorithm of the storages no packing places. */
constexpr const char* kOwnStorage = "own storage";
constexpr const char* kOneSymbolicSize = "one size, lifetimes apart";

class StoragePacker {
 public:
  StoragePacker(const ir::relax::Function& func, std::vector<TensorAllocation>* tensors,
                const target::PlanningDevices& devices, const MemoryPlanOptionsObj& options,
                std::vector<ObjectRef>* storages)
      : func_(func),
        tensors_(*tensors),
        devices_(devices),
        alignment_(options.alignment),
        search_budget_(SearchBudget::ForMs(options.exact_search_ms)),
        search_(options.exact_search_ms > 0),
        storages_(*storages) {}

  std::string Pack() {
    std::map<std::pair<int64_t, std::string>, std::vector<size_t>> groups;
    for (size_t i = 0; i < tensors_.size(); ++i) {
      if (tensors_[i].plannable()) {
        groups[{tensors_[i].device, tensors_[i].scope}].push_back(i);
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
    std::vector<StorageProblem> problems = PackConstantSizes(groups);
    size_t k = 0;
    for (const auto& [key, members] : groups) {
      AddPacked(key.first, key.second, problems[k++]);
      ShareSymbolic(key.first, key.second, members);
    }
    // As TVM's planner does with this attribute: unplanned tensors of symbolic shape (the
    // function's outputs) get storage of their own, sized by the upper bound: a constant, or an
    // expression of parameters' shape variables (logits `(seq_len, vocab_size)` at
    // `256 * vocab_size * 4`, `(1, 1, vocab_size)` at `vocab_size * 4`), never a new size per
    // call of one model.
    if (func_.plans_dynamic_output()) {
      for (TensorAllocation& a : tensors_) {
        if (a.storage >= 0 || !a.symbolic || (a.bytes < 0 && !a.sized_on_entry)) continue;
        ObjectRef size = a.bytes >= 0 ? IntConst(kInt64, a.bytes) : StorageSize(a);
        bool at_bound = a.bytes >= 0 || a.bound_size.defined();
        a.storage = AddStorage(size, a.device, a.scope, at_bound,
                               {a.bytes, optimality::kAtBound, kOwnStorage},
                               /*holds_result=*/true);
        a.MarkPlanned();
      }
    }
    return "";
  }

  std::string FirstBinding(const std::vector<size_t>& members) const {
    return tensors_[members[0]].binding.var().name();
  }

  /*! \brief The tensors of constant size of one (device, scope) and their placement. */
  struct StorageProblem {
    std::vector<size_t> tensors;
    std::vector<PackItem> items;
    Packing packing;
  };

  /*! \brief Per (device, scope): its tensors of constant size, placed on the function's one
   *         budget (PackAll: the greedy orders for all, then the exact search, the largest gap
   *         first). */
  std::vector<StorageProblem> PackConstantSizes(
      const std::map<std::pair<int64_t, std::string>, std::vector<size_t>>& groups) {
    std::vector<StorageProblem> problems;
    std::vector<std::vector<PackItem>> items;
    for (const auto& [key, members] : groups) {
      StorageProblem& problem = problems.emplace_back();
      for (size_t i : members) {
        const TensorAllocation& a = tensors_[i];
        if (a.bytes < 0) continue;
        problem.tensors.push_back(i);
        problem.items.push_back(PackItem{a.bytes, a.first, a.last, a.group, a.group_offset});
      }
      items.push_back(problem.items);
    }
    PackOptions options;
    options.alignment = alignment_;
    options.budget = search_ ? &search_budget_ : nullptr;
    std::vector<Packing> packings = PackAll(items, options);
    for (size_t k = 0; k < problems.size(); ++k) problems[k].packing = std::move(packings[k]);
    return problems;
  }

  /*! \brief The storage of a placement, its offsets given to its tensors. */
  void AddPacked(int64_t device, const std::string& scope, const StorageProblem& problem) {
    if (problem.items.empty()) return;
    const Packing& packing = problem.packing;
    TVM_FFI_ICHECK(IsValidPacking(problem.items, packing, alignment_))
        << "internal error: the offset packing of " << problem.items.size() << " tensors overlaps";
    bool bounded = std::any_of(problem.tensors.begin(), problem.tensors.end(),
                               [&](size_t i) { return tensors_[i].symbolic; });
    int64_t storage = AddStorage(IntConst(kInt64, packing.bytes), device, scope, bounded,
                                 {packing.bound, packing.optimality, packing.algorithm});
    for (size_t k = 0; k < problem.tensors.size(); ++k) {
      tensors_[problem.tensors[k]].storage = storage;
      tensors_[problem.tensors[k]].offset = packing.offsets[k];
    }
  }

  /*!
   * \brief A symbolic size a storage is allocated at: the bound where the size has bounded
   *        variables (one block size whatever the call's sizes, as TVM's planner plans it and
   *        as a pooled allocator reuses it), the size itself otherwise.
   */
  static const ObjectRef& StorageSize(const TensorAllocation& a) {
    return a.bound_size.defined() ? a.bound_size : a.size;
  }

  /*! \brief Symbolic sizes not planned at a constant: tensors of provably equal storage size
   *         whose lifetimes do not overlap share a storage (interval colouring, in order of
   *         first use). */
  void ShareSymbolic(int64_t device, const std::string& scope, const std::vector<size_t>& members) {
    std::unordered_map<ffi::StructuralKey, std::vector<size_t>> classes;
    std::vector<ffi::StructuralKey> order;
    for (size_t i : members) {
      if (!tensors_[i].sized_on_entry) continue;
      ffi::StructuralKey key(StorageSize(tensors_[i]));
      auto [it, inserted] = classes.emplace(key, std::vector<size_t>());
      if (inserted) order.push_back(key);
      it->second.push_back(i);
    }
    for (const ffi::StructuralKey& key : order) {
      std::vector<size_t>& tensors = classes[key];
      std::sort(tensors.begin(), tensors.end(),
                [&](size_t a, size_t b) { return tensors_[a].first < tensors_[b].first; });
      std::vector<std::pair<int64_t, int64_t>> busy;  // (storage, last point of its tensor)
      for (size_t i : tensors) {
        TensorAllocation& a = tensors_[i];
        auto free = std::find_if(busy.begin(), busy.end(),
                                 [&](const auto& s) { return s.second < a.first; });
        if (free == busy.end()) {
          busy.emplace_back(AddStorage(StorageSize(a), device, scope, a.bound_size.defined(),
                                       {-1, optimality::kAtBound, kOneSymbolicSize}),
                            a.last);
          free = busy.end() - 1;
        }
        free->second = a.last;
        a.storage = free->first;
        a.offset = 0;
      }
    }
  }

  /*! \brief How close a storage is to its bound (-1: symbolic), and what placed it. */
  struct Closeness {
    int64_t bound;
    const char* optimality;
    std::string algorithm;
  };

  int64_t AddStorage(const ObjectRef& size, int64_t device, const std::string& scope, bool bounded,
                     const Closeness& closeness, bool holds_result = false) {
    ffi::ObjectPtr<StorageAllocationObj> storage = ffi::make_object<StorageAllocationObj>();
    storage->bytes = AsConstInt(size).value_or(-1);
    storage->size = size;
    storage->bounded = bounded;
    storage->device = device;
    storage->scope = scope;
    storage->bound_bytes = closeness.bound;
    storage->optimality = closeness.optimality;
    storage->optimality_gap_bytes = closeness.bound >= 0 ? storage->bytes - closeness.bound : 0;
    storage->algorithm = closeness.algorithm;
    storage->pooled_bytes = storage->bytes;
    storage->holds_result = holds_result;
    storages_.push_back(ObjectRef(storage));
    return static_cast<int64_t>(storages_.size() - 1);
  }

 private:
  const ir::relax::Function& func_;
  std::vector<TensorAllocation>& tensors_;
  const target::PlanningDevices& devices_;
  int64_t alignment_;
  /*! \brief One exact-search budget for all storages of the function. */
  SearchBudget search_budget_;
  bool search_;
  std::vector<ObjectRef>& storages_;
};

}  // namespace

std::string PackStorages(const ir::relax::Function& func, std::vector<TensorAllocation>* tensors,
                         const target::PlanningDevices& devices,
                         const MemoryPlanOptionsObj& options, std::vector<ObjectRef>* storages) {
  return StoragePacker(func, tensors, devices, options, storages).Pack();
}

}  // namespace relax
}  // namespace tvm_memplan
