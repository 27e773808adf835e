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

#include "ir/codes.h"
#include "ir/relax.h"
#include "relax/planners.h"
#include "relax/search_budget.h"

namespace tvm_memplan {
namespace relax {

// The code families of the records below, each one table (ir/codes.h): value, sentence, and
// what would lift it (or why nothing can; "" where the code is no refusal).

/*! \brief Codes of PlannedTensor.unplanned: why a tensor has no place in a storage of ours. */
namespace unplanned {
inline constexpr const char* kReturned = "returned";
inline constexpr const char* kEscapes = "escapes";
inline constexpr const char* kUnboundedSize = "unbounded_size";
inline constexpr const char* kUnknownType = "unknown_type";
inline constexpr ir::Code kCodes[] = {
    {kReturned, "it reaches the function result, which the caller owns", ""},
    {kEscapes, "an impure call or a closure may keep it", ""},
    {kUnboundedSize,
     "its size is symbolic, with no tir_var_upper_bound, and depends on variables defined inside "
     "the function",
     "a tir_var_upper_bound of each shape variable in its size"},
    {kUnknownType, "its shape or dtype is unknown", ""},
};
}  // namespace unplanned

/*! \brief Codes of FunctionMemoryPlan.decision: why its planner plans a function. */
namespace decision {
inline constexpr const char* kNoLarger = "no_larger";
inline constexpr const char* kFallBackOff = "fall_back_off";
inline constexpr const char* kStockIllFormed = "stock_ill_formed";
inline constexpr const char* kStockSmaller = "stock_smaller";
inline constexpr const char* kNoOffsets = "no_offsets";
inline constexpr ir::Code kCodes[] = {
    {kNoLarger, "ours: it allocates no more than the stock planner's", ""},
    {kFallBackOff, "ours, with fall_back_to_stock=False", ""},
    {kStockIllFormed,
     "ours, though the stock planner allocates less: its plan is not well formed "
     "(apache/tvm#20191)",
     ""},
    {kStockSmaller, "the stock planner's: it allocates less", ""},
    {kNoOffsets, "the stock planner's: a device or storage scope takes no tensors at offsets",
     "tensors in \"global\" storage on a device where ensure_zero_offset is free (CPU, CUDA)"},
};
}  // namespace decision

/*! \brief Codes of Concatenation.decision (relax/concat_placement.h gives the rules). */
namespace concat {
inline constexpr const char* kCopyFree = "copy_free";
inline constexpr const char* kNotContiguous = "not_contiguous";
inline constexpr const char* kUnaligned = "unaligned";
inline constexpr const char* kNotPlaced = "not_placed";
inline constexpr const char* kSameTensor = "same_tensor";
inline constexpr const char* kDeviceOrScope = "device_or_scope";
inline constexpr const char* kOutputUsedBefore = "output_used_before";
inline constexpr const char* kInputWrittenAfter = "input_written_after";
inline constexpr const char* kPlacementConflict = "placement_conflict";
inline constexpr const char* kOverwrittenWhileRead = "overwritten_while_read";
inline constexpr const char* kStockPlanner = "stock_planner";
inline constexpr const char* kDisabled = "disabled";
inline constexpr ir::Code kCodes[] = {
    {kCopyFree, "the inputs sit at their slices of the output: the concatenation copies nothing",
     ""},
    {kNotContiguous, "a dimension before the axis is not 1 (batch 2: each input is two ranges)",
     "every dimension before the axis being 1 (batch 1 with channels first, or the axis "
     "outermost), so that each input is one contiguous slice of the output"},
    {kUnaligned,
     "a slice does not start at a multiple of the alignment (ensure_zero_offset would copy)",
     "slices starting at multiples of the plan's alignment (MemoryPlanOptions.alignment): "
     "inputs whose bytes are multiples of it"},
    {kNotPlaced,
     "an input or the output is a parameter, a constant, a view, returned, escaping or of "
     "symbolic size",
     "inputs and an output the function allocates itself, of static size, neither returned nor "
     "escaping (not parameters, constants or views)"},
    {kSameTensor, "one tensor passed twice",
     "nothing: a tensor concatenated with itself needs the copy"},
    {kDeviceOrScope, "the tensors are not on one device and storage scope",
     "the inputs and the output on one device and storage scope"},
    {kOutputUsedBefore, "the output is used before the concatenation",
     "nothing the planner can change: the output is used before the concatenation writes it"},
    {kInputWrittenAfter, "an input is written after it (the output would change)",
     "no write to the input after the concatenation (computing the op that writes it in place "
     "out of place instead)"},
    {kPlacementConflict,
     "a tensor would need two places (concat(a, b) and concat(b, a)), or two tensors that "
     "kernels write would share bytes",
     "nothing the planner can change: a tensor cannot sit in two outputs at once, or two "
     "written tensors would share bytes"},
    {kOverwrittenWhileRead,
     "a call writes into shared bytes (an in-place call on the output) while another tensor over "
     "them, defined before, is still read",
     "no in-place write into the shared bytes while an earlier tensor over them is still read "
     "(computing that op out of place instead)"},
    {kStockPlanner, "the function is planned by the stock planner",
     "tvm-memplan's planner planning the function (TVM's takes fewer bytes here, so the pass "
     "uses it)"},
    {kDisabled, "copy_free_concat=False", "copy_free_concat=True, the default"},
};
}  // namespace concat

/*! \brief Codes of RevertedInplaceWrite.code: why an in-place write is given a copy. */
namespace inplace_write {
inline constexpr const char* kConstant = "constant";
inline constexpr const char* kParameter = "parameter";
inline constexpr const char* kReadAfter = "read_after";
inline constexpr ir::Code kCodes[] = {
    {kConstant, "it writes into a constant, which the next call would read changed", ""},
    {kParameter, "it writes a parameter through another variable (a view): the caller's tensor",
     ""},
    {kReadAfter, "the value it overwrites is read afterwards", ""},
};
}  // namespace inplace_write

/*! \brief Codes of FunctionMemoryPlan.stock_source: how the stock planner's figures were had. */
namespace stock_source {
inline constexpr const char* kModel = "model";
inline constexpr const char* kStockPass = "stock_pass";
inline constexpr ir::Code kCodes[] = {
    {kModel, "tvm-memplan's model of TVM's planner predicted them", ""},
    {kStockPass, "TVM's pass was run and its plan read", ""},
};
}  // namespace stock_source

/*! \brief Options of the planner, reflected as `tvm_memplan.relax.MemoryPlanOptions`. */
class MemoryPlanOptionsObj : public ffi::Object {
 public:
  // Reflected fields: each documented once, in RegisterReflection (memory_plan_records.cc).
  int64_t alignment = kPlanAlignment;
  bool fall_back_to_stock = true;
  bool copy_free_concat = true;
  int64_t exact_search_ms = kPlannerSearchMs;
  bool pool_sizes = true;

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
  bool holds_result = false;
  int64_t pooled_bytes = -1;
  String pooled_with;
  String split_for;

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
  int64_t stock_model_symbolic_allocations = -1;
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
