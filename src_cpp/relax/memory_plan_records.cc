/*!
 * \file relax/memory_plan_records.cc
 * \brief The planner's records: options checked and documented, and each record's reflection.
 */
#include "relax/memory_plan_records.h"

#include <tvm/ffi/reflection/registry.h>

#include <string>
#include <vector>

#include "ir/options.h"
#include "relax/ir_names.h"
#include "relax/offset_packing.h"

namespace tvm_memplan {
namespace relax {

void CheckMemoryPlanOptions(const MemoryPlanOptionsObj& options) {
  if (options.exact_search_ms < 0) {
    TVM_FFI_THROW(ValueError) << "MemoryPlanOptions.exact_search_ms must be >= 0, got "
                              << options.exact_search_ms;
  }
  if (options.alignment <= 0 || options.alignment % kRuntimeAlignment != 0) {
    TVM_FFI_THROW(ValueError) << "MemoryPlanOptions.alignment must be a positive multiple of "
                              << kRuntimeAlignment
                              << " (the runtime's allocation alignment, below which "
                                 "ensure_zero_offset copies), got "
                              << options.alignment;
  }
}

namespace {

/*! \brief The help of `alignment`, with the runtime's alignment (kept for the process:
 *         reflection keeps the pointer). */
const char* AlignmentHelp() {
  static const std::string help = "Every offset is a multiple of this many bytes (a multiple of " +
                                  std::to_string(kRuntimeAlignment) +
                                  ", the TVM runtime's allocation alignment).";
  return help.c_str();
}

/*! \brief The help of `exact_search_ms`, naming the PassContext option that takes its place. */
const char* SearchHelp() {
  static const std::string help =
      std::string(
          "Milliseconds per function that the exact offset search may take when the greedy "
          "orders leave a storage above its peak-live bound: it looks for a placement at the "
          "bound or proves the least size (FunctionMemoryPlan.optimality says which). It also "
          "stops after a fixed number of steps per millisecond, so that plans do not depend on "
          "the machine's load. 0: greedy orders only. The PassContext option ") +
      kSearchPassConfig + ", when set, takes its place for a whole build.";
  return help.c_str();
}

}  // namespace

void MemoryPlanOptionsObj::RegisterReflection() {
  OptionsDef<MemoryPlanOptionsObj>()
      .Option("alignment", &MemoryPlanOptionsObj::alignment, AlignmentHelp())
      .Option("fall_back_to_stock", &MemoryPlanOptionsObj::fall_back_to_stock,
              "Plan a function as TVM's StaticPlanBlockMemory does when that takes fewer bytes.")
      .Option("copy_free_concat", &MemoryPlanOptionsObj::copy_free_concat,
              "Place the inputs of a concatenation at their slices of its output, where that is "
              "safe, so that the concatenation copies nothing (also inside fused kernels, which "
              "then write those inputs back where they lie).")
      .Option("exact_search_ms", &MemoryPlanOptionsObj::exact_search_ms, SearchHelp())
      .Option("pool_sizes", &MemoryPlanOptionsObj::pool_sizes,
              "Allocate each function's k-th largest constant storage at the module's k-th "
              "largest (per device and scope; storages holding results keep their size), so that "
              "TVM's pooled allocator, which reuses a "
              "block only for a request of the same rounded size and never frees one, holds one "
              "block per rank for all functions instead of one per distinct size. For MLC-LLM "
              "(functions marked relax.memory_plan_dynamic_func_output), a storage keeps its "
              "size where the larger one would take its function's constant storages past the "
              "largest function's: its temporary-buffer estimate never grows; there, the largest "
              "storages are split in two (their bytes unchanged) where a function's results keep "
              "its storage from their size. Functions that call "
              "or are called by another Relax function keep their sizes.");
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
      .def_ro("group", &PlannedTensorObj::group,
              "The group of tensors a copy-free concatenation places together (they may share "
              "bytes); -1 when none.")
      .def_ro("group_offset", &PlannedTensorObj::group_offset,
              "Byte offset from the start of its group.")
      .def_ro("unplanned", &PlannedTensorObj::unplanned,
              ir::CodeFieldDoc("Why the tensor is not planned (\"\" if it is)", unplanned::kCodes))
      .def_ro("reason", &PlannedTensorObj::reason,
              "Why the tensor is not planned, as a sentence (\"\" if it is).")
      .def_ro("stock_storage", &PlannedTensorObj::stock_storage,
              "Index in the stock plan's storages; -1 when the stock planner does not plan it "
              "or was not run.");
}

void RevertedInplaceWriteObj::RegisterReflection() {
  namespace refl = tvm::ffi::reflection;
  refl::ObjectDef<RevertedInplaceWriteObj>()
      .def_ro("callee", &RevertedInplaceWriteObj::callee, "The PrimFunc called.")
      .def_ro("argument", &RevertedInplaceWriteObj::argument,
              "The argument it wrote in place: a variable, or \"a constant\".")
      .def_ro("result", &RevertedInplaceWriteObj::result,
              "The variable the call's result is bound to (\"\" when none).")
      .def_ro("code", &RevertedInplaceWriteObj::code,
              ir::CodeFieldDoc("Why it now writes a copy", inplace_write::kCodes))
      .def_ro("reason", &RevertedInplaceWriteObj::reason, "The same as a sentence.");
}

void ConcatenationObj::RegisterReflection() {
  namespace refl = tvm::ffi::reflection;
  refl::ObjectDef<ConcatenationObj>()
      .def_ro("output", &ConcatenationObj::output, "The output tensor's variable.")
      .def_ro("inputs", &ConcatenationObj::inputs,
              "The variables of the inputs written unchanged into slices of the output.")
      .def_ro("computed_from", &ConcatenationObj::computed_from,
              "The variables of the other inputs, which a fused kernel computes the rest of the "
              "output from (an upsample's input, say).")
      .def_ro("callee", &ConcatenationObj::callee, "The PrimFunc called.")
      .def_ro("axis", &ConcatenationObj::axis, "The axis concatenated along.")
      .def_ro("kernel_runs", &ConcatenationObj::kernel_runs,
              "Whether the call runs even when copy-free: its kernel computes part of the "
              "output, and writes each sliced input back where it lies.")
      .def_ro("copy_free", &ConcatenationObj::copy_free,
              "Whether the inputs sit at their slices of the output (and the call is dropped "
              "unless kernel_runs).")
      .def_ro("decision", &ConcatenationObj::decision,
              ir::CodeFieldDoc("Whether it is copy-free, or why not", concat::kCodes))
      .def_ro("reason", &ConcatenationObj::reason, "Why not copy-free, as a sentence.");
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
      .def_ro("scope", &StorageAllocationObj::scope, "The storage scope.")
      .def_ro("bound_bytes", &StorageAllocationObj::bound_bytes,
              "The peak-live bound of its tensors (the most bytes of them live at one program "
              "point): no placement of them is smaller; -1 when symbolic.")
      .def_ro("optimality", &StorageAllocationObj::optimality,
              ir::CodeFieldDoc("How the size compares with the least possible", optimality::kCodes))
      .def_ro("optimality_gap_bytes", &StorageAllocationObj::optimality_gap_bytes,
              "bytes - bound_bytes: 0 at the bound; above it, the bytes a better placement could "
              "save at most (none when proven_minimum).")
      .def_ro("algorithm", &StorageAllocationObj::algorithm,
              "What placed its tensors: a greedy order of the offset packer, \"exact search\", "
              "\"own storage\" (one tensor) or \"one size, lifetimes apart\" (tensors of one "
              "symbolic size).")
      .def_ro("holds_result", &StorageAllocationObj::holds_result,
              "Whether it holds a tensor the function returns (a storage of its own under "
              "relax.memory_plan_dynamic_func_output): it outlives the call.")
      .def_ro("pooled_bytes", &StorageAllocationObj::pooled_bytes,
              "Bytes the storage is allocated with: `bytes`, or the module's storage of the same "
              "rank (`pooled_with`) under the option pool_sizes; -1 when symbolic.")
      .def_ro("pooled_with", &StorageAllocationObj::pooled_with,
              "The function whose storage of the same rank sets `pooled_bytes`; \"\" when its "
              "own bytes do.")
      .def_ro("split_for", &StorageAllocationObj::split_for,
              "For MLC-LLM's engine: the function this storage and its function's largest were "
              "split from one storage for, so that both functions ask the pooled allocator for "
              "the same sizes (that function could not take the larger size: its results would "
              "take it past the largest function's bytes); \"\" when not split.");
}

void FunctionMemoryPlanObj::RegisterReflection() {
  namespace refl = tvm::ffi::reflection;
  refl::ObjectDef<FunctionMemoryPlanObj>()
      .def_ro("function", &FunctionMemoryPlanObj::function, "The Relax function.")
      .def_ro("planner", &FunctionMemoryPlanObj::planner,
              "The planner StaticPlanBlockMemory uses for it: \"memplan\" or \"stock\".")
      .def_ro("decision", &FunctionMemoryPlanObj::decision,
              ir::CodeFieldDoc("Why that planner", decision::kCodes))
      .def_ro("reason", &FunctionMemoryPlanObj::reason, "Why that planner, with the figures.")
      .def_ro("num_points", &FunctionMemoryPlanObj::num_points, "Program points.")
      .def_ro("tensors", &FunctionMemoryPlanObj::tensors, "Every R.builtin.alloc_tensor.")
      .def_ro("concats", &FunctionMemoryPlanObj::concats,
              "Every concatenation, and whether it is copy-free.")
      .def_ro("reverted_writes", &FunctionMemoryPlanObj::reverted_writes,
              "In-place writes the planner gave a copy of their argument first (a constant, or "
              "a value read afterwards), whichever pass made them.")
      .def_ro("storages", &FunctionMemoryPlanObj::storages, "tvm-memplan's storages.")
      .def_ro("stock_storages", &FunctionMemoryPlanObj::stock_storages,
              "The stock planner's storages (when it was run).")
      .def_ro("peak_live_bytes", &FunctionMemoryPlanObj::peak_live_bytes,
              "The peak-live bound: per storage, the most bytes of its tensors live at one "
              "program point (a storage of one tensor, such as a result under "
              "relax.memory_plan_dynamic_func_output, counts whole), plus the static bytes of "
              "the tensors not planned. No plan of this IR under these rules allocates less.")
      .def_ro("planned_bytes", &FunctionMemoryPlanObj::planned_bytes,
              "Bytes tvm-memplan allocates: storages and static tensors not planned.")
      .def_ro("optimality", &FunctionMemoryPlanObj::optimality,
              ir::CodeFieldDoc("The weakest of its storages' optimality", optimality::kCodes))
      .def_ro("optimality_gap_bytes", &FunctionMemoryPlanObj::optimality_gap_bytes,
              "planned_bytes - peak_live_bytes: the sum of its storages' gaps.")
      .def_ro("stock_bytes", &FunctionMemoryPlanObj::stock_bytes,
              "The same for the stock planner; -1 when unknown.")
      .def_ro("stock_source", &FunctionMemoryPlanObj::stock_source,
              ir::CodeFieldDoc("How stock_bytes was obtained", stock_source::kCodes))
      .def_ro("stock_model_bytes", &FunctionMemoryPlanObj::stock_model_bytes,
              "The stock planner's bytes as tvm-memplan's model of it predicts them; -1 when "
              "the model cannot tell.")
      .def_ro("stock_model_symbolic_allocations",
              &FunctionMemoryPlanObj::stock_model_symbolic_allocations,
              "The stock planner's allocations of symbolic size as the same model predicts "
              "them; -1 when the model cannot tell.")
      .def_ro("memplan_model_bytes", &FunctionMemoryPlanObj::memplan_model_bytes,
              "tvm-memplan's bytes as the same model predicts them (what the in-place pass "
              "judges rewrites by); -1 when the model cannot tell, and in the plans the pass "
              "makes (only the analysis models them). Without copy-free concatenations it is "
              "planned_bytes.")
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
              "Shape variable -> tir_var_upper_bound, for the variables the function's "
              "parameters define.")
      .def_ro("lower_bounds", &FunctionMemoryPlanObj::lower_bounds,
              "Shape variable -> tir_var_lower_bound, likewise.")
      .def_ro("checked_bounds", &FunctionMemoryPlanObj::checked_bounds,
              "The shape variables whose bounds size planned tensors, in name order: the "
              "function checks them on entry.")
      .def_ro("shape_values", &FunctionMemoryPlanObj::shape_values,
              "Empty for a plan as planned; for memory_plan_at, the shape variable values "
              "every figure was evaluated at.");
}

TVM_FFI_STATIC_INIT_BLOCK() {
  MemoryPlanOptionsObj::RegisterReflection();
  PlannedTensorObj::RegisterReflection();
  StorageAllocationObj::RegisterReflection();
  ConcatenationObj::RegisterReflection();
  RevertedInplaceWriteObj::RegisterReflection();
  FunctionMemoryPlanObj::RegisterReflection();
  ir::RegisterCodeFamily("unplanned", unplanned::kCodes);
  ir::RegisterCodeFamily("decision", decision::kCodes);
  ir::RegisterCodeFamily("concat", concat::kCodes);
  ir::RegisterCodeFamily("inplace_write", inplace_write::kCodes);
  ir::RegisterCodeFamily("stock_source", stock_source::kCodes);
}

}  // namespace relax
}  // namespace tvm_memplan
