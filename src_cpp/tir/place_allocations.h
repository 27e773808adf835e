/*!
 * \file tir/place_allocations.h
 * \brief `tvm_memplan.transform.LowerTVMBuiltin`: TVM's LowerTVMBuiltin, with the stack or
 *        workspace placement of allocations decided by the placement analysis (scopes,
 *        max_stack_alloca, max_stack_bytes) instead of a fixed 1024-byte rule on "global" only.
 *
 * \code
 *   # before: a host function, CPU target, max_stack_alloca 65536
 *   L = T.alloc_buffer((512,), "float32", scope="local")
 *   W = T.alloc_buffer((4,), "float32", scope="global.workspace")
 *   ...
 *   # after
 *   L = T.alloc_buffer((512,), "float32")      # on the stack, in the scope C can allocate
 *   W = T.decl_buffer((4,), data=T.TVMBackendAllocWorkspace(1, dev_id, T.uint64(16), 2, 32),
 *                     scope="global.workspace")
 *   if T.isnullptr(W.data):
 *       T.tvm_throw_last_error()
 *   ...
 *   if T.TVMBackendFreeWorkspace(1, dev_id, W.data) != 0:
 *       T.tvm_throw_last_error()
 * \endcode
 *
 * Everything but placement is TVM's own lowering: for each host function the pass
 *  1. decides placements (place_allocations_analysis.h);
 *  2. prepares them: stack allocations get `disable_lower_builtin`, which TVM's pass honours, and
 *     the scope "global" (the only one the C backend allocates); a workspace allocation that TVM's
 *     rule would keep on the stack is defined as a stand-in in "global.workspace" (its uses keep
 *     the buffer: TVM's pass only looks at the definition); a function with workspace
 *     allocations but no `device_id` attribute (a private helper) gets device_id 0, which the CPU
 *     workspace ignores;
 *  3. runs TVM's LowerTVMBuiltin;
 *  4. removes the annotations it added (keeping `disable_lower_builtin` where the user asked for
 *     it), puts the buffers back where TVM's lowering of a stand-in names it (its DeclBuffer,
 *     null check and free), and checks that every allocation ended where it was decided (an
 *     internal error if not); a walk over statements only, unless buffers changed scope;
 *  5. makes helpers that return nothing but may now fail return an error code
 *     (helper_error_codes.h).
 */
#ifndef TVM_MEMPLAN_TIR_PLACE_ALLOCATIONS_H_
#define TVM_MEMPLAN_TIR_PLACE_ALLOCATIONS_H_

#include "ir/reflection.h"

namespace tvm_memplan {
namespace tir {

/*! \brief The pass (a transform.ModulePass named "tvm_memplan.LowerTVMBuiltin"). */
ffi::ObjectRef LowerTVMBuiltin();

}  // namespace tir
}  // namespace tvm_memplan

#endif  // TVM_MEMPLAN_TIR_PLACE_ALLOCATIONS_H_
