/*!
 * \file relax/memory_plan_analysis.h
 * \brief Where every tensor of a Relax function lives once planned: lifetimes over the whole
 *        function, offsets in one storage per (device, storage scope), the peak-live bound, and
 *        the comparison with TVM's StaticPlanBlockMemory on the same IR.
 *
 * \code
 *   # Relax after CallTIRRewrite                          tensor  bytes  live   offset
 *   a = R.builtin.alloc_tensor((64,), "f32", 0, "global")    a      256   [0,4]      0
 *   cls.exp(x, a)
 *   if c:
 *       b = R.builtin.alloc_tensor(...)                      b      256   [3,6]    256
 *       cls.exp(a, b)                                        (b outlives the branch: stock
 *       r = b                                                 cannot plan it)
 *   else: ...
 *   d = R.builtin.alloc_tensor(...)                          d      256   [7,9]      0
 *   cls.add(r, r, d)
 *   return d                                                 d is returned: not planned
 *   // one storage of 512 bytes; peak live 512 bytes
 * \endcode
 *
 * Rules (the rewrite in relax/static_plan_memory.h only applies the records):
 *  1. A tensor is an `R.builtin.alloc_tensor`. It is live from its binding to the last program
 *     point that reads it through any alias (relax/storage_flow.h: views, match_cast, tuples,
 *     `if` results, results of calls that may return an argument), across binding blocks and
 *     into and out of `if` branches.
 *  2. A tensor is not planned when it reaches the function result, escapes (an impure call or a
 *     closure may keep it), or has a symbolic size that neither `tir_var_upper_bound` bounds nor
 *     function parameters alone define. A bound that is not an integer, or an upper bound below
 *     its lower bound, is an error (ValueError naming the function and the variable).
 *  3. The others of one (virtual device, storage scope) are packed at offsets, multiples of
 *     `alignment`, of one storage allocated at the function's start (relax/offset_packing.h);
 *     bounded symbolic sizes take their upper bound. Tensors of a provably equal symbolic size
 *     share storages whose lifetimes do not overlap. A tensor at a nonzero offset reaches its
 *     callees through `R.memory.ensure_zero_offset`, so only devices where that view is free
 *     (target/planning_devices.h) get offsets; a function allocating elsewhere, or in a scope
 *     other than "global", is planned by the stock planner.
 *  4. A plan that sizes a tensor at a bound holds only calls within the bound: the function
 *     checks on entry each shape variable whose bound sized a planned tensor (`upper_bounds`,
 *     `lower_bounds`), and a call past a bound raises an error naming the function, the
 *     variable, its value and the bound, before anything is allocated (tensors packed together
 *     would overlap past it; stock's one storage per tensor fails the VM's size check instead).
 *  5. With `fall_back_to_stock`, a function whose plan would take more bytes than the stock
 *     planner's (modelled by relax/memory_plan_model.h, and run when the model cannot tell) is
 *     planned by the stock planner, unless the stock plan is not well formed (apache/tvm#20191).
 */
#ifndef TVM_MEMPLAN_RELAX_MEMORY_PLAN_ANALYSIS_H_
#define TVM_MEMPLAN_RELAX_MEMORY_PLAN_ANALYSIS_H_

#include <optional>
#include <string>
#include <vector>

#include "ir/relax.h"
#include "relax/memory_plan_model.h"
#include "target/planning_devices.h"

namespace tvm_memplan {
namespace relax {

/*! \brief Options of the planner, reflected as `tvm_memplan.relax.MemoryPlanOptions`. */
class MemoryPlanOptionsObj : public ffi::Object {
 public:
  /*! \brief Every offset is a multiple of this (a multiple of the runtime's 64-byte alignment). */
  int64_t alignment = kPlanAlignment;
  /*! \brief Plan a function as the stock planner does when that takes fewer bytes. */
  bool fall_back_to_stock = true;

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
  /*! \brief Index in the plan's `storages`, or -1 when not planned (see `reason`). */
  int64_t storage = -1;
  int64_t offset = 0;
  /*! \brief Why the tensor is not planned ("" when it is). */
  String reason;
  /*! \brief Where the stock planner puts it: index in `stock_storages`, or -1. */
  int64_t stock_storage = -1;

  static void RegisterReflection();
  TVM_FFI_DECLARE_OBJECT_INFO_FINAL("tvm_memplan.relax.PlannedTensor", PlannedTensorObj,
                                    ffi::Object);
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
  /*! \brief Why. */
  String reason;
  /*! \brief Program points of the function. */
  int64_t num_points = 0;
  Array<ObjectRef> tensors;
  /*! \brief tvm-memplan's storages. */
  Array<ObjectRef> storages;
  /*! \brief The stock planner's storages (filled when the stock planner was run). */
  Array<ObjectRef> stock_storages;
  /*! \brief The peak-live bound: the most bytes of plannable tensors live at one program point,
   *         plus the static bytes of the tensors no planner may share (function results, escaping
   *         tensors). No plan of this IR under these rules allocates less. */
  int64_t peak_live_bytes = 0;
  /*! \brief Bytes tvm-memplan's planner allocates: its storages plus the static-size tensors it
   *         does not plan. */
  int64_t planned_bytes = 0;
  /*! \brief The same for the stock planner; -1 when unknown (symbolic). */
  int64_t stock_bytes = -1;
  /*! \brief How stock_bytes was obtained: "model", "stock pass" or "". */
  String stock_source;
  /*! \brief The stock planner's bytes as its model (relax/memory_plan_model.h) predicts them;
   *         -1 when the model cannot tell (symbolic sizes). */
  int64_t stock_model_bytes = -1;
  /*! \brief Allocations of symbolic size: tvm-memplan's, the stock planner's (-1 unknown). */
  int64_t symbolic_allocations = 0;
  int64_t stock_symbolic_allocations = -1;
  /*! \brief What each plan allocates, as an int64 expression of the shape variables: sizes
   *         taken at a bound are constants, unbounded ones expressions (IntImm when static).
   *         `stock_size` is None when the stock planner was not run. */
  ObjectRef planned_size;
  Optional<ObjectRef> stock_size;
  /*! \brief Shape variable -> bound, for the bounds this plan relies on (every call is checked
   *         against them on entry). */
  Map<String, int64_t> upper_bounds;
  Map<String, int64_t> lower_bounds;

  static void RegisterReflection();
  TVM_FFI_DECLARE_OBJECT_INFO_FINAL("tvm_memplan.relax.FunctionMemoryPlan", FunctionMemoryPlanObj,
                                    ffi::Object);
};

/*! \brief The stock planner's result for a module, computed once on first request. */
class StockPlanner {
 public:
  explicit StockPlanner(const ir::IRModule& mod) : mod_(mod) {}
  /*! \brief The module after TVM's StaticPlanBlockMemory. */
  const ir::IRModule& Planned();

 private:
  ir::IRModule mod_;
  std::optional<ir::IRModule> planned_;
};

/*! \brief A shape variable the plan sizes at its bound, to check on entry. */
struct BoundCheck {
  /*! \brief The TIR variable (defined by the function's parameters). */
  ObjectRef var;
  std::optional<int64_t> lower;
  int64_t upper = 0;
};

/*! \brief A function's plan, with what the rewrite needs beside the records. */
struct MemoryPlan {
  ffi::ObjectPtr<FunctionMemoryPlanObj> record;
  /*! \brief Sorted by variable name. */
  std::vector<BoundCheck> bound_checks;
  /*! \brief Per tensor record, the relax.Binding of its allocation. */
  std::vector<ObjectRef> bindings;
  bool use_stock() const { return record->planner == "stock"; }
};

/*!
 * \brief Plan `func` (the function bound to `gv` in `mod`, Relax after CallTIRRewrite).
 * \param compare_with_stock Also run the stock planner and record its plan (for the analysis);
 *        otherwise it runs only when the fallback decision needs it.
 */
MemoryPlan AnalyzeMemoryPlan(const ObjectRef& gv, const ir::relax::Function& func,
                             const ir::IRModule& mod, const MemoryPlanOptionsObj& options,
                             const target::PlanningDevices& devices, StockPlanner* stock,
                             bool compare_with_stock);

/*! \brief Check options, naming the bad field (ValueError). */
void CheckMemoryPlanOptions(const MemoryPlanOptionsObj& options);

}  // namespace relax
}  // namespace tvm_memplan

#endif  // TVM_MEMPLAN_RELAX_MEMORY_PLAN_ANALYSIS_H_
