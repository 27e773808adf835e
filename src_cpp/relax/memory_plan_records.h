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
  /*! \brief Every offset is a multiple of this (a multiple of the runtime's 64-byte alignment). */
  int64_t alignment = kPlanAlignment;
  /*! \brief Plan a function as the stock planner does when that takes fewer bytes. */
  bool fall_back_to_stock = true;
  /*! \brief Make concatenations copy-free where their inputs can sit in the output. */
  bool copy_free_concat = true;
  /*! \brief Milliseconds per function for the exact offset search (help: RegisterReflection). */
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
  /*! \brief The variable the allocation binds. */
  String binding;
  /*! \brief The callee that first uses it (the PrimFunc writing it), or "". */
  String op;
  /*! \brief Extents: integers, or TIR expressions where symbolic. */
  Array<Any> shape;
  String dtype;
  /*! \brief Bytes (the upper bound where the size is symbolic and bounded); -1: unbounded. */
  int64_t bytes = 0;
  /*! \brief Bytes as an int64 expression of the shape variables (an IntImm when static); None
   *         when the shape or dtype is unknown. */
  Optional<ObjectRef> size;
  int64_t device = 0;
  String scope;
  /*! \brief Program points (relax/program_points.h) of the allocation and of its last read. */
  int64_t first = 0;
  int64_t last = 0;
  /*! \brief Index in the plan's `storages`, or -1 when not planned (see `unplanned`). */
  int64_t storage = -1;
  int64_t offset = 0;
  /*! \brief Placed with others by copy-free concatenations: the group (-1: none), and its
   *         offset from the group's start. Tensors of a group may share bytes. */
  int64_t group = -1;
  int64_t group_offset = 0;
  /*! \brief Why the tensor is not planned: a code of namespace `unplanned` ("" when it is). */
  String unplanned;
  /*! \brief The same as a sentence naming what keeps it out. */
  String reason;
  /*! \brief Where the stock planner puts it: index in `stock_storages`, or -1. */
  int64_t stock_storage = -1;

  static void RegisterReflection();
  TVM_FFI_DECLARE_OBJECT_INFO_FINAL("tvm_memplan.relax.PlannedTensor", PlannedTensorObj,
                                    ffi::Object);
};

/*! \brief One concatenation (a call of a PrimFunc proven to be one) and whether it is
 *         copy-free. */
class ConcatenationObj : public ffi::Object {
 public:
  /*! \brief The output and the inputs: their PlannedTensor.binding, or the argument as written
   *         when it is not one tensor of the function. */
  String output;
  /*! \brief The inputs written unchanged into slices of the output (all of them, unless the
   *         kernel computes part of the output), and those it computes the rest from. */
  Array<String> inputs, computed_from;
  /*! \brief The PrimFunc called. */
  String callee;
  int64_t axis = 0;
  /*! \brief Whether the call runs when copy-free: a fused (or GPU-scheduled) kernel. */
  bool kernel_runs = false;
  bool copy_free = false;
  /*! \brief A code of namespace `concat`, and the same as a sentence ("" when copy-free). */
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
  /*! \brief The PrimFunc called. */
  String callee;
  /*! \brief The argument it wrote: a variable's name, or "a constant". */
  String argument;
  /*! \brief The variable its result was bound to ("" when none). */
  String result;
  /*! \brief A code of namespace `inplace_write`, and the same as a sentence. */
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
  /*! \brief Bytes, or -1 when symbolic (then `size` says how many). */
  int64_t bytes = 0;
  /*! \brief Bytes as an int64 expression of the shape variables (an IntImm when static). */
  ObjectRef size;
  /*! \brief Whether a symbolic size was taken at its `tir_var_upper_bound`. */
  bool bounded = false;
  int64_t device = 0;
  String scope;
  /*! \brief How far its size is from the least possible (docs: RegisterReflection). */
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
  String function;
  /*! \brief The planner the pass uses for the function: "memplan" or "stock". */
  String planner;
  /*! \brief Why: a code of namespace `decision`. */
  String decision;
  /*! \brief The same as a sentence, with the figures. */
  String reason;
  /*! \brief Program points of the function. */
  int64_t num_points = 0;
  Array<ObjectRef> tensors;
  /*! \brief Every concatenation, copy-free or not (Concatenation records). */
  Array<ObjectRef> concats;
  /*! \brief In-place writes given a copy before planning (RevertedInplaceWrite records). */
  Array<ObjectRef> reverted_writes;
  /*! \brief tvm-memplan's storages. */
  Array<ObjectRef> storages;
  /*! \brief The stock planner's storages (filled when the stock planner was run). */
  Array<ObjectRef> stock_storages;
  /*! \brief The peak-live bound: per storage, the most bytes of its tensors live at one program
   *         point (a storage of one tensor: its bytes), plus the static bytes of the tensors no
   *         planner may share (function results, escaping tensors). No plan of this IR under
   *         these rules allocates less. */
  int64_t peak_live_bytes = 0;
  /*! \brief Bytes tvm-memplan's planner allocates: its storages plus the static-size tensors it
   *         does not plan. */
  int64_t planned_bytes = 0;
  /*! \brief The weakest of its storages' optimality, and planned_bytes - peak_live_bytes (docs:
   *         RegisterReflection). */
  String optimality;
  int64_t optimality_gap_bytes = 0;
  /*! \brief The same for the stock planner; -1 when unknown (symbolic). */
  int64_t stock_bytes = -1;
  /*! \brief How stock_bytes was obtained: a code of namespace `stock_source`, or "". */
  String stock_source;
  /*! \brief The stock planner's bytes as its model (relax/memory_plan_model.h) predicts them;
   *         -1 when the model cannot tell (symbolic sizes). */
  int64_t stock_model_bytes = -1;
  /*! \brief tvm-memplan's bytes as the same model predicts them (what the in-place pass judges
   *         rewrites by, without planning); -1 when it cannot tell, or in the records the pass
   *         itself makes. Without copy-free concatenations it is planned_bytes. */
  int64_t memplan_model_bytes = -1;
  /*! \brief Allocations of symbolic size: tvm-memplan's, the stock planner's (-1 unknown). */
  int64_t symbolic_allocations = 0;
  int64_t stock_symbolic_allocations = -1;
  /*! \brief What each plan allocates, as an int64 expression of the shape variables: sizes
   *         taken at a bound are constants, unbounded ones expressions (IntImm when static).
   *         `stock_size` is None when the stock planner was not run. */
  ObjectRef planned_size;
  Optional<ObjectRef> stock_size;
  /*! \brief The function's shape variable bounds (`tir_var_upper_bound`,
   *         `tir_var_lower_bound` of the variables its parameters define). */
  Map<String, int64_t> upper_bounds;
  Map<String, int64_t> lower_bounds;
  /*! \brief The variables whose bounds size planned tensors, in name order: the function checks
   *         them on entry. */
  Array<String> checked_bounds;
  /*! \brief Empty for a plan as planned; the shape variable values every figure was evaluated
   *         at, for a plan from `EvaluatePlan`. */
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
