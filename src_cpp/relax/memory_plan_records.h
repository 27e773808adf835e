/*!
 * \file relax/memory_plan_records.h
 * \brief What a memory plan says, as reflected records that the pass, Python, the report and the
 *        benchmarks all read: the planner's options, every tensor, every storage and a function's
 *        plan with the stock planner's next to it. The figures computed from records alone (the
 *        bound, a plan at shape values) are relax/memory_plan_figures.h.
 *
 * \code
 *   (plan,) = tvm_memplan.analysis.memory_plan(mod)            # FunctionMemoryPlan records
 *   plan.planned_bytes, plan.peak_live_bytes, plan.planned_size  # 256, 256, n * 4 + 256
 *   memory_plan_at(plan, {"n": 10}).planned_bytes                # 296
 * \endcode
 */
#ifndef TVM_MEMPLAN_RELAX_MEMORY_PLAN_RECORDS_H_
#define TVM_MEMPLAN_RELAX_MEMORY_PLAN_RECORDS_H_

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ir/relax.h"
#include "relax/planners.h"

namespace tvm_memplan {
namespace relax {

/*! \brief Codes of PlannedTensor.unplanned: why a tensor has no place in a storage of ours. */
namespace unplanned {
inline constexpr const char* kReturned = "returned";
inline constexpr const char* kEscapes = "escapes";
inline constexpr const char* kUnboundedSize = "unbounded_size";
inline constexpr const char* kUnknownType = "unknown_type";
}  // namespace unplanned

/*! \brief Codes of FunctionMemoryPlan.decision: why its planner plans a function. */
namespace decision {
/*! \brief Ours: it allocates no more than the stock planner's. */
inline constexpr const char* kNoLarger = "no_larger";
/*! \brief Ours, with `fall_back_to_stock` off. */
inline constexpr const char* kFallBackOff = "fall_back_off";
/*! \brief Ours, though TVM's allocates less: its plan is not well formed (apache/tvm#20191). */
inline constexpr const char* kStockIllFormed = "stock_ill_formed";
/*! \brief The stock planner's: it allocates less. */
inline constexpr const char* kStockSmaller = "stock_smaller";
/*! \brief The stock planner's: a device or storage scope takes no tensors at offsets. */
inline constexpr const char* kNoOffsets = "no_offsets";
}  // namespace decision

/*! \brief Codes of ConcatPlacement.decision (relax/concat_placement.h gives the rules). */
namespace concat {
inline constexpr const char* kCopyFree = "copy_free";
inline constexpr const char* kNotContiguous = "not_contiguous";
inline constexpr const char* kUnaligned = "unaligned";
inline constexpr const char* kNotPlaced = "not_placed";
inline constexpr const char* kSameTensor = "same_tensor";
inline constexpr const char* kDevice = "device_or_scope";
inline constexpr const char* kUsedBefore = "output_used_before";
inline constexpr const char* kWrittenAfter = "input_written_after";
inline constexpr const char* kConflict = "placement_conflict";
inline constexpr const char* kOverwritten = "overwritten_while_read";
inline constexpr const char* kStockPlanned = "stock_planner";
inline constexpr const char* kDisabled = "disabled";
}  // namespace concat

/*! \brief Codes of RevertedInplaceWrite.code: why an in-place write is given a copy. */
namespace inplace_write {
/*! \brief It writes into a constant, which the next call would read changed. */
inline constexpr const char* kConstant = "constant";
/*! \brief It writes a parameter through another variable (a view): the caller's tensor. */
inline constexpr const char* kParameter = "parameter";
/*! \brief The value it overwrites is read afterwards. */
inline constexpr const char* kReadAfter = "read_after";
}  // namespace inplace_write

/*! \brief Codes of FunctionMemoryPlan.stock_source. */
namespace stock_source {
inline constexpr const char* kModel = "model";
inline constexpr const char* kStockPass = "stock_pass";
}  // namespace stock_source

/*! \brief Options of the planner, reflected as `tvm_memplan.relax.MemoryPlanOptions`. */
class MemoryPlanOptionsObj : public ffi::Object {
 public:
  // Reflected fields: each documented once, in RegisterReflection (memory_plan_records.cc).
  int64_t alignment = kPlanAlignment;
  bool fall_back_to_stock = true;
  bool copy_free_concat = true;
  int64_t exact_search_ms = 1000;

  static void RegisterReflection();
  TVM_FFI_DECLARE_OBJECT_INFO_FINAL("tvm_memplan.relax.MemoryPlanOptions", MemoryPlanOptionsObj,
                                    ffi::Object);
};

class MemoryPlanOptions : public ObjectRef {
 public:
  MemoryPlanOptions() : ObjectRef(ffi::make_object<MemoryPlanOptionsObj>()) {}
  TVM_FFI_DEFINE_OBJECT_REF_METHODS_NOTNULLABLE(MemoryPlanOptions, ObjectRef, MemoryPlanOptionsObj);
};

/*! \brief One tensor (`R.builtin.alloc_tensor`) of a function and where each planner puts it. */
class PlannedTensorObj : public ffi::Object {
 public:
  // Reflected fields: each documented once, in RegisterReflection (memory_plan_records.cc).
  String binding;
  String op;
  Array<Any> shape;
  String dtype;
  int64_t bytes = 0;
  Optional<ObjectRef> size;
  int64_t device = 0;
  String scope;
  int64_t first = 0;
  int64_t last = 0;
  int64_t storage = -1;
  int64_t offset = 0;
  int64_t group = -1;
  int64_t group_offset = 0;
  String unplanned;
  String reason;
  int64_t stock_storage = -1;

  static void RegisterReflection();
  TVM_FFI_DECLARE_OBJECT_INFO_FINAL("tvm_memplan.relax.PlannedTensor", PlannedTensorObj,
                                    ffi::Object);
};

/*! \brief One concatenation (a call of a PrimFunc proven to be one) and whether it is
 *         copy-free. */
class ConcatenationObj : public ffi::Object {
 public:
  // Reflected fields: each documented once, in RegisterReflection (memory_plan_records.cc).
  String output;
  Array<String> inputs, computed_from;
  String callee;
  int64_t axis = 0;
  bool kernel_runs = false;
  bool copy_free = false;
  String decision;
  String reason;

  static void RegisterReflection();
  TVM_FFI_DECLARE_OBJECT_INFO_FINAL("tvm_memplan.relax.Concatenation", ConcatenationObj,
                                    ffi::Object);
};

/*! \brief An in-place write (a PrimFunc storing into an argument that holds a value, as
 *         CallTIRRewrite lowers `call_tir_inplace`) that the planner reverted to its out-of-place
 *         form, whichever pass made it (relax/inplace_guard.h). */
class RevertedInplaceWriteObj : public ffi::Object {
 public:
  // Reflected fields: each documented once, in RegisterReflection (memory_plan_records.cc).
  String callee;
  String argument;
  String result;
  String code;
  String reason;

  // C++ only: what the guard's rewrite (relax/inplace_guard.h) needs.
  /*! \brief The relax.Binding of the call, and the position of the argument it writes. */
  ObjectRef binding;
  size_t arg = 0;
  /*! \brief The binding of the call's result right after it, or undefined. */
  ObjectRef result_binding;
  /*! \brief `R.builtin.alloc_tensor` arguments for the copy: device index and scope. */
  ObjectRef device, scope;

  static void RegisterReflection();
  TVM_FFI_DECLARE_OBJECT_INFO_FINAL("tvm_memplan.relax.RevertedInplaceWrite",
                                    RevertedInplaceWriteObj, ffi::Object);
};

using RevertedInplaceWrite = ffi::ObjectPtr<RevertedInplaceWriteObj>;

/*! \brief A shape variable a plan sizes tensors at the bound of, to check on entry. */
struct BoundCheck {
  /*! \brief The TIR variable (defined by the function's parameters). */
  ObjectRef var;
  std::optional<int64_t> lower;
  int64_t upper = 0;
};

/*! \brief One `R.memory.alloc_storage` of a plan. */
class StorageAllocationObj : public ffi::Object {
 public:
  // Reflected fields: each documented once, in RegisterReflection (memory_plan_records.cc).
  int64_t bytes = 0;
  ObjectRef size;
  bool bounded = false;
  int64_t device = 0;
  String scope;
  int64_t bound_bytes = -1;
  String optimality;
  int64_t optimality_gap_bytes = 0;
  String algorithm;

  static void RegisterReflection();
  TVM_FFI_DECLARE_OBJECT_INFO_FINAL("tvm_memplan.relax.StorageAllocation", StorageAllocationObj,
                                    ffi::Object);
};

/*! \brief The memory plan of one Relax function, by tvm-memplan's planner and by the stock one. */
class FunctionMemoryPlanObj : public ffi::Object {
 public:
  // Reflected fields: each documented once, in RegisterReflection (memory_plan_records.cc).
  String function;
  String planner;
  String decision;
  String reason;
  int64_t num_points = 0;
  Array<ObjectRef> tensors;
  Array<ObjectRef> concats;
  Array<ObjectRef> reverted_writes;
  Array<ObjectRef> storages;
  Array<ObjectRef> stock_storages;
  int64_t peak_live_bytes = 0;
  int64_t planned_bytes = 0;
  String optimality;
  int64_t optimality_gap_bytes = 0;
  int64_t stock_bytes = -1;
  String stock_source;
  int64_t stock_model_bytes = -1;
  int64_t memplan_model_bytes = -1;
  int64_t symbolic_allocations = 0;
  int64_t stock_symbolic_allocations = -1;
  ObjectRef planned_size;
  Optional<ObjectRef> stock_size;
  Map<String, int64_t> upper_bounds;
  Map<String, int64_t> lower_bounds;
  Array<String> checked_bounds;
  Map<String, int64_t> shape_values;

  // C++ only: what the choice of planner and the rewrite need of the function.
  /*! \brief The function's GlobalVar. */
  ObjectRef global_var;
  /*! \brief Per tensor record, the relax.Binding of its allocation. */
  std::vector<ObjectRef> bindings;
  /*! \brief The shape variables whose bounds size planned tensors, sorted by name: the
   *         function checks them on entry (`checked_bounds` names them). */
  std::vector<BoundCheck> bound_checks;
  /*! \brief The calls of copy-free concatenations (relax.Bindings): their outputs already hold
   *         their inputs, the rewrite drops them. */
  std::vector<ObjectRef> dropped_bindings;
  /*! \brief Why only the stock planner can plan the function ("" when ours can). */
  std::string device_refusal;

  static void RegisterReflection();
  TVM_FFI_DECLARE_OBJECT_INFO_FINAL("tvm_memplan.relax.FunctionMemoryPlan", FunctionMemoryPlanObj,
                                    ffi::Object);
};

/*! \brief A plan as the steps of the pass build it up: each step fills its part. */
using FunctionMemoryPlanPtr = ffi::ObjectPtr<FunctionMemoryPlanObj>;

class FunctionMemoryPlan : public ObjectRef {
 public:
  explicit FunctionMemoryPlan(ffi::ObjectPtr<FunctionMemoryPlanObj> record)
      : ObjectRef(std::move(record)) {}
  TVM_FFI_DEFINE_OBJECT_REF_METHODS_NOTNULLABLE(FunctionMemoryPlan, ObjectRef,
                                                FunctionMemoryPlanObj);
};

/*! \brief The one check of the options (ValueError naming the bad field), at every FFI entry
 *         that takes them: the pass constructors and the analyses. */
void CheckMemoryPlanOptions(const MemoryPlanOptionsObj& options);

}  // namespace relax
}  // namespace tvm_memplan

#endif  // TVM_MEMPLAN_RELAX_MEMORY_PLAN_RECORDS_H_
