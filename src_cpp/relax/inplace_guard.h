/*!
 * \file relax/inplace_guard.h
 * \brief The planner's last check before memory is fixed: an in-place write that would change a
 *        constant, or a value read again afterwards, gets a copy of its argument to write
 *        instead, whichever pass made it and whatever ran after that pass.
 *
 * \code
 *   # Relax after CallTIRRewrite: `b = R.call_tir_inplace(cls.sin_inplace, (a,), ...)` became
 *   cls.sin_inplace(k)          # k is a constant: FoldConstant folded `a` after the in-place
 *   b = k                       # pass had decided (TVM's pass, or one of ours before a fix)
 *   # guarded:
 *   k_copy = R.builtin.alloc_tensor(R.shape([4, 8]), R.dtype("float32"), 0, R.str("global"))
 *   R.call_packed("runtime.TVMTensorCopyFromTo", k, k_copy)
 *   cls.sin_inplace(k_copy)
 *   b = k_copy
 * \endcode
 *
 * A call of a PrimFunc writes argument `a` in place when it stores to `a`'s parameter and
 * `a`'s storage held a value before the call: a constant, a parameter, or an allocation a call
 * wrote before
 * (a destination `R.builtin.alloc_tensor` that this call fills is not in place). Such a write
 * is reverted when `a` may refer to
 *  1. a constant: every later call of the function would read what this one wrote;
 *  2. storage read after the call through a variable bound before it (other than the binding
 *     of the call's result that CallTIRRewrite emits right after it): that read expects the
 *     old value (reads on the other branch of an `if` do not count);
 *  3. a parameter's storage, written through another variable (a view: TVM's pass writes
 *     into the copies RewriteDataflowReshape turns into views of the caller's tensor).
 * A parameter passed itself is written as the program says (MLC-LLM's sampling functions write
 * their callers' tensors in place on purpose), and so is storage of unknown origin (returned by a
 * packed function); neither is a value the function computed. Storage already planned
 * (`R.memory.alloc_storage`, whose tensors at offsets this analysis does not tell apart) is left
 * to the plan that placed it. A write the guard cannot revert (the argument's shape is unknown)
 * is an error naming it, never a wrong program. Finding the writes is
 * relax/inplace_guard_analysis.h; this file gives each its copy.
 */
#ifndef TVM_MEMPLAN_RELAX_INPLACE_GUARD_H_
#define TVM_MEMPLAN_RELAX_INPLACE_GUARD_H_

#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "ir/relax.h"
#include "relax/memory_effects.h"
#include "relax/program_points.h"
#include "relax/storage_flow.h"

namespace tvm_memplan {
namespace relax {

/*! \brief A function the guard left as it was: its program points (FlattenFunction), and the
 *         flow of storage through them where the guard needed it (else null). */
struct GuardedFunction {
  std::shared_ptr<const std::vector<Step>> steps;
  std::shared_ptr<const FunctionFlow> flow;
};

/*! \brief A module with its unsafe in-place writes reverted, and the records saying which. */
struct GuardedModule {
  ir::IRModule mod;
  /*! \brief Function name -> its RevertedInplaceWrite records (relax/memory_plan_records.h),
   *         in program order; functions with none are absent. */
  std::map<std::string, Array<ObjectRef>> reverted;
  /*! \brief What the guard learnt of the module's PrimFuncs (which the guard leaves as they
   *         are), for the analyses that read the same module after it. */
  std::shared_ptr<PrimFuncFacts> prim_funcs = std::make_shared<PrimFuncFacts>();
  /*! \brief What the guard followed of each Relax function it left as it was, by function:
   *         the planner's analysis reads it instead of following it again. */
  std::unordered_map<const Object*, GuardedFunction> left;
};

/*! \brief `mod` (Relax after CallTIRRewrite) with every unsafe in-place write of its Relax
 *         functions reverted to a write into a fresh copy. */
GuardedModule GuardInplaceWrites(const ir::IRModule& mod);

}  // namespace relax
}  // namespace tvm_memplan

#endif  // TVM_MEMPLAN_RELAX_INPLACE_GUARD_H_
