/*!
 * \file tir/place_allocations_analysis.h
 * \brief Where each allocation of a PrimFunc lives once lowered: on the stack, or in memory from
 *        TVMBackendAllocWorkspace. Decided per buffer from its scope, its size, the device it is
 *        allocated on and the target's StackLimits; the rewrites (LowerTVMBuiltin,
 *        TagAllocationPlacement) only consume the decisions.
 *
 * \code
 *   # CPU, max_stack_alloca 1024
 *   A = T.alloc_buffer((256,), "float32")                          -> stack      1024 <= 1024
 *   B = T.alloc_buffer((257,), "float32")                          -> workspace  1028 > 1024
 *   L = T.alloc_buffer((4,), "float32", scope="local")             -> stack      (same rule)
 *   S = T.alloc_buffer((8192,), "float32", scope="global.stack")   -> stack      (always)
 *   W = T.alloc_buffer((4,), "float32", scope="global.workspace")  -> workspace  (always)
 *   D = T.alloc_buffer((n,), "float32")                            -> workspace  (dynamic size)
 * \endcode
 *
 * Rules, in order (docs/passes/lower_tvm_builtin.md has the full table):
 *  1. not on the CPU (device_type attribute or target kind), or a scalable vector: `stock`,
 *     lowered exactly as TVM's own LowerTVMBuiltin does;
 *  2. annotation `disable_lower_builtin` (or the scope TagAllocationPlacement uses to carry it
 *     through StorageRewrite): `unlowered`, left as a plain allocation;
 *  3. "global.workspace": workspace. "global.stack": stack whatever its size; an error when the
 *     size is not constant or max_stack_alloca is 0;
 *  4. dynamic size: workspace. "global"/"local" of constant size: stack when
 *     0 < size <= max_stack_alloca, else workspace. Other scopes: workspace, as stock;
 *  5. max_stack_bytes: while the function's stack allocations exceed it, the largest non-forced
 *     one (the later one among equals) moves to the workspace; forced ones alone over the budget
 *     are an error.
 */
#ifndef TVM_MEMPLAN_TIR_PLACE_ALLOCATIONS_ANALYSIS_H_
#define TVM_MEMPLAN_TIR_PLACE_ALLOCATIONS_ANALYSIS_H_

#include <optional>
#include <string>
#include <vector>

#include "ir/scopes.h"
#include "ir/tir.h"
#include "target/stack_limits.h"
#include "tir/place_allocations_records.h"

namespace tvm_memplan {
namespace tir {

/*! \brief The one model of TVM's rule: whether its LowerTVMBuiltin keeps a host CPU allocation
 *         of `bytes` (None: not a compile-time constant) in `storage_scope` on the stack. */
inline bool StockKeepsOnStack(ffi::Optional<int64_t> bytes, const std::string& storage_scope) {
  return storage_scope == ir::scope::kGlobal && bytes && *bytes > 0 &&
         *bytes < target::kStockMaxStackAlloca;
}

struct PlacementPlan {
  std::vector<AllocationDecision> decisions;
  /*! \brief Bytes of the function's stack placements (the budget counts these). */
  int64_t StackBytes() const;
};

/*!
 * \brief The stack limits of `func` when it is host code, by TVM's test (attribute
 *        `tirx.is_host_func`, or a target with the key "cpu"); nullopt otherwise. Host functions
 *        are the ones TVM's LowerTVMBuiltin lowers.
 */
std::optional<target::StackLimits> HostFunctionLimits(const ir::PrimFunc& func,
                                                      const ffi::ObjectRef& pass_context);

/*!
 * \brief Decide the placement of every allocation of `func`.
 * \param function_name Names the function in reasons and errors.
 * \param limits The target's stack facts; `limits.device_type` is the device of code outside any
 *        `device_type` attribute (nullopt: unknown, so such allocations are `stock`).
 * \throws ValueError naming the buffer for a "global.stack" allocation that cannot be on the stack
 *         and for forced stack allocations over max_stack_bytes.
 */
PlacementPlan PlanAllocationPlacement(const ir::PrimFunc& func, const std::string& function_name,
                                      const target::StackLimits& limits);

}  // namespace tir
}  // namespace tvm_memplan

#endif  // TVM_MEMPLAN_TIR_PLACE_ALLOCATIONS_ANALYSIS_H_
