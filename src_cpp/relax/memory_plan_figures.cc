/*!
 * \file relax/memory_plan_figures.cc
 * \brief The bound, the live bytes and plans at shape values, from records alone.
 */
#include "relax/memory_plan_figures.h"

#include <tvm/ffi/reflection/registry.h>

#include <map>
#include <set>
#include <string>
#include <unordered_set>

#include "ir/analyzer.h"
#include "ir/rewriter.h"
#include "relax/ir_names.h"
#include "relax/offset_packing.h"

namespace tvm_memplan {
namespace relax {

int64_t PeakLiveOf(const Array<ObjectRef>& tensors) {
  std::map<int64_t, std::vector<PackItem>> by_storage;
  int64_t bound = 0;
  for (const ObjectRef& item : tensors) {
    const auto* t = item.as<PlannedTensorObj>();
    if (t->storage >= 0 && t->bytes >= 0) {
      by_storage[t->storage].push_back(
          PackItem{t->bytes, t->first, t->last, t->group, t->group_offset});
    } else if (t->storage < 0 && t->size && AsConstInt(*t->size)) {
      bound += t->bytes;
    }
  }
  for (const auto& [storage, items] : by_storage) bound += PeakLiveBytes(items);
  return bound;
}

std::vector<int64_t> LiveBytesOf(const FunctionMemoryPlanObj& plan) {
  std::vector<PackItem> items;
  for (const ObjectRef& item : plan.tensors) {
    const auto* t = item.as<PlannedTensorObj>();
    bool symbolic = !t->size || !AsConstInt(*t->size);
    if (t->bytes < 0 || (symbolic && plan.shape_values.empty())) continue;
    bool grouped = t->group >= 0 && t->storage >= 0;
    items.push_back(PackItem{t->bytes, t->first, t->last, grouped ? t->group : -1,
                             grouped ? t->group_offset : 0});
  }
  return LiveBytesAt(items, plan.num_points);
}

namespace {

/*! \brief Evaluates size expressions at shape variable values, by variable name. */
class SizeEvaluator {
 public:
  SizeEvaluator(const FunctionMemoryPlanObj& plan, const Map<String, int64_t>& values)
      : plan_(plan), values_(values) {
    for (const auto& [name, value] : values) {
      std::optional<int64_t> upper = Find(plan.upper_bounds, name);
      std::optional<int64_t> lower = Find(plan.lower_bounds, name);
      if ((upper && value > *upper) || (lower && value < *lower) || value < 0) {
        TVM_FFI_THROW(ValueError) << "function " << Quoted(plan.function) << ": shape variable "
                                  << Quoted(name) << " = " << value << " is outside its bounds ["
                                  << lower.value_or(0) << ", "
                                  << (upper ? std::to_string(*upper) : std::string("inf")) << "]";
      }
    }
  }

  /*! \brief The value of `size`; collects the variables it lacks values for. */
  std::optional<int64_t> operator()(const ObjectRef& size) {
    std::unordered_set<const Object*> vars = VarsOf(size);
    Map<ObjectRef, ObjectRef> bindings;
    for (const Object* var : vars) {
      ObjectRef ref = ffi::GetRef<ObjectRef>(var);
      std::string name = Var(ref).name();
      std::optional<int64_t> value = Find(values_, name);
      if (!value) value = Find(plan_.upper_bounds, name);
      if (!value) {
        missing_.insert(name);
        continue;
      }
      bindings.Set(ref, IntConst(ref, *value));
      used_.Set(name, *value);
    }
    if (bindings.size() != vars.size()) return std::nullopt;
    return AsConstInt(analyzer_.Simplify(Substitute(size, bindings)));
  }

  /*! \brief A ValueError naming the variables that lacked a value, if any did. */
  void CheckComplete() const {
    if (missing_.empty()) return;
    std::string names;
    for (const std::string& name : missing_) names += (names.empty() ? "" : ", ") + Quoted(name);
    TVM_FFI_THROW(ValueError) << "function " << Quoted(plan_.function)
                              << ": no value and no tir_var_upper_bound for shape variable"
                              << (missing_.size() > 1 ? "s " : " ") << names;
  }

  const Map<String, int64_t>& used() const { return used_; }

 private:
  static std::optional<int64_t> Find(const Map<String, int64_t>& map, const std::string& key) {
    auto found = map.find(String(key));
    if (found == map.end()) return std::nullopt;
    return (*found).second;
  }

  const FunctionMemoryPlanObj& plan_;
  Map<String, int64_t> values_;
  Map<String, int64_t> used_;
  std::set<std::string> missing_;
  Analyzer analyzer_;
};

}  // namespace

FunctionMemoryPlan EvaluatePlan(const FunctionMemoryPlanObj& plan,
                                const Map<String, int64_t>& values) {
  SizeEvaluator evaluate(plan, values);
  ffi::ObjectPtr<FunctionMemoryPlanObj> out = ffi::make_object<FunctionMemoryPlanObj>(plan);
  auto constant = [](int64_t bytes) { return IntConst(kInt64, bytes); };
  out->tensors = Array<ObjectRef>();
  for (const ObjectRef& item : plan.tensors) {
    ffi::ObjectPtr<PlannedTensorObj> t =
        ffi::make_object<PlannedTensorObj>(*item.as<PlannedTensorObj>());
    if (t->size) {
      t->bytes = evaluate(*t->size).value_or(-1);
      if (t->bytes >= 0) t->size = constant(t->bytes);
    }
    out->tensors.push_back(ObjectRef(t));
  }
  auto storages = [&](const Array<ObjectRef>& records) {
    Array<ObjectRef> evaluated;
    for (const ObjectRef& item : records) {
      ffi::ObjectPtr<StorageAllocationObj> storage =
          ffi::make_object<StorageAllocationObj>(*item.as<StorageAllocationObj>());
      storage->bytes = evaluate(storage->size).value_or(-1);
      if (storage->bytes >= 0) storage->size = constant(storage->bytes);
      evaluated.push_back(ObjectRef(storage));
    }
    return evaluated;
  };
  out->storages = storages(plan.storages);
  out->stock_storages = storages(plan.stock_storages);
  out->planned_bytes = evaluate(plan.planned_size).value_or(-1);
  out->planned_size = constant(out->planned_bytes);
  out->symbolic_allocations = 0;
  if (plan.stock_size) {
    out->stock_bytes = evaluate(*plan.stock_size).value_or(-1);
    out->stock_size = constant(out->stock_bytes);
    out->stock_symbolic_allocations = 0;
  }
  evaluate.CheckComplete();
  out->peak_live_bytes = PeakLiveOf(out->tensors);
  out->shape_values = evaluate.used();
  return FunctionMemoryPlan(out);
}

TVM_FFI_STATIC_INIT_BLOCK() {
  tvm::ffi::reflection::GlobalDef()
      .def("tvm_memplan.analysis.memory_plan_at",
           [](FunctionMemoryPlan plan, Map<String, int64_t> values) {
             return EvaluatePlan(*plan.get(), values);
           })
      .def("tvm_memplan.analysis.live_bytes", [](FunctionMemoryPlan plan) {
        std::vector<int64_t> live = LiveBytesOf(*plan.get());
        return Array<int64_t>(live.begin(), live.end());
      });
}

}  // namespace relax
}  // namespace tvm_memplan
