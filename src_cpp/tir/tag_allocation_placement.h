/*!
 * \file tir/tag_allocation_placement.h
 * \brief `tvm_memplan.transform.TagAllocationPlacement`: records placement decisions in storage
 *        scopes, so that they survive StorageRewrite (which merges and hoists allocations and
 *        drops their annotations, but never mixes scopes) until LowerTVMBuiltin realizes them.
 *
 * \code
 *   # before (CPU, max_stack_alloca 1024)               # after
 *   A = T.alloc_buffer((256,), "float32")                A = T.alloc_buffer((256,), "float32")
 *   B = T.alloc_buffer((512,), "float32")                B = T.alloc_buffer((512,), "float32",
 *                                                                           scope="global.workspace")
 *   L = T.alloc_buffer((1024,), "float32", "local")      L = T.alloc_buffer((1024,), "float32",
 *                                                                           scope="global.workspace")
 *   K = T.alloc_buffer((4,), "float32",                  K = T.alloc_buffer((4,), "float32",
 *         annotations={"disable_lower_builtin": 1})              scope="global.memplan_unlowered")
 * \endcode
 *
 * An annotated buffer of dynamic size cannot be carried (StorageRewrite refuses dynamic sizes in
 * such scopes): it loses its annotation in StorageRewrite, as in TVM's pipeline, and goes to the
 * workspace, as it does there.
 *
 * Stack decisions keep their scope, so StorageRewrite treats them as before (the "global" ones it
 * may reuse for each other, never growing one past the largest). Errors of the placement rules
 * ("global.stack" that cannot be on the stack, forced stack over the budget) are raised here,
 * naming the buffers as written, before StorageRewrite merges and renames them. The memplan TIR
 * pipeline (python/tvm_memplan/pipeline.py) runs this pass right before StorageRewrite; it only
 * touches host functions whose target runs on the CPU, and it is idempotent.
 */
#ifndef TVM_MEMPLAN_TIR_TAG_ALLOCATION_PLACEMENT_H_
#define TVM_MEMPLAN_TIR_TAG_ALLOCATION_PLACEMENT_H_

#include "ir/reflection.h"

namespace tvm_memplan {
namespace tir {

/*! \brief The pass (a transform.ModulePass named "tvm_memplan.TagAllocationPlacement"). */
ffi::ObjectRef TagAllocationPlacement();

}  // namespace tir
}  // namespace tvm_memplan

#endif  // TVM_MEMPLAN_TIR_TAG_ALLOCATION_PLACEMENT_H_
