/*!
 * \file relax/inplace_analysis.h
 * \brief Which operator calls of a Relax function may write their result into the storage of
 *        one of their arguments, and why the others may not.
 *
 * \code
 *   @R.function
 *   def main(x: R.Tensor((4,), "float32"), y: R.Tensor((4,), "float32")):
 *       a = R.add(x, y)        # refused: `x` and `y` belong to the caller
 *       t = (a, y)
 *       b = R.exp(a)           # refused: the storage of `a` is read later through `t`
 *       c = t[0]
 *       d = R.multiply(b, c)   # in place on `b` (argument 0)
 *       return d
 * \endcode
 *
 * A binding `y = op(..., a, ...)` runs in place on `a` when all of the following hold:
 *  1. the operator legalizes (LegalizeOps) to one `call_tir`, not a plain copy
 *     (RewriteDataflowReshape would make it a view), whose PrimFunc's accesses prove it: the
 *     output is written once per element by one single-store block, which reads `a` only at
 *     the element it writes; other blocks read `a` only before it, outside its loops. Every
 *     elementwise and broadcast operator (op_pattern 0 and 1) qualifies, and so do
 *     normalizations and softmax (reductions over `a`, then an elementwise output);
 *  2. `a` has the result's dtype and a provably equal shape (symbolic shapes included);
 *  3. every storage `a` may refer to was allocated by this function (not a parameter, not a
 *     constant or a value computed from constants only, not returned by a call of another
 *     function), has not escaped into an impure call or a closure, and is not read after this
 *     binding through `a` or through any alias: tuples (nested, indexed, passed to calls,
 *     returned), views (reshape and every op that legalizes to a copy), call results that may
 *     return an argument, and `if` results;
 *  4. no other argument of the call may share storage with `a` (the legalized PrimFunc
 *     declares its buffers `noalias`); `a` itself passed twice becomes one buffer;
 *  5. with `memory_aware`, the rewrite does not make the memory planner that will run (TVM's
 *     StaticPlanBlockMemory, or tvm-memplan's with `planner="memplan"`) plan more bytes
 *     (relax/memory_plan_model.h).
 *
 * Liveness covers the whole function: bindings inside and outside dataflow blocks, values
 * crossing blocks, and `if`s (a read counts when it can run after the binding, so a binding
 * in a then branch is not kept from reusing a value the else branch reads).
 */
#ifndef TVM_MEMPLAN_RELAX_INPLACE_ANALYSIS_H_
#define TVM_MEMPLAN_RELAX_INPLACE_ANALYSIS_H_

#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "relax/inplace_records.h"
#include "relax/memory_plan_model.h"
#include "relax/op_legalization.h"

namespace tvm_memplan {
namespace relax {

/*! \brief Memoized facts shared by the analyses of one module's functions. */
class InplaceContext {
 public:
  OpLegalizer& legalizer() { return legalizer_; }
  PrimFuncFacts& facts() { return facts_; }
  /*!
   * \brief Whether PrimFunc `prim_func` may write its output (the last parameter) into the
   *        memory passed as parameters `inputs` (one tensor passed `inputs.size()` times):
   *        nullopt when it may, else the reason it may not.
   */
  const std::optional<std::string>& CheckPrimFunc(const ir::PrimFunc& prim_func,
                                                  const std::vector<int64_t>& inputs);
  /*! \brief HasThreadBindings(prim_func) (relax/inplace_prim_func.h), once per PrimFunc: a
   *         call binding asks it of its callee, and a model's layers call the same kernels. */
  bool IsScheduled(const ir::PrimFunc& prim_func);

 private:
  OpLegalizer legalizer_;
  PrimFuncFacts facts_;
  std::map<std::pair<const Object*, std::vector<int64_t>>, std::optional<std::string>>
      prim_func_checks_;
  std::unordered_map<const Object*, bool> scheduled_;
  std::vector<ObjectRef> keep_alive_;  // PrimFuncs keyed by address in the maps above
};

/*!
 * \brief The decisions for every call binding of `func`, in program order. Decisions build on
 *        each other: a binding made in place aliases its reused argument for later decisions.
 * \param mod The module holding `func`, to look up called PrimFuncs and functions; may be null.
 */
std::vector<InplaceCandidate> AnalyzeInplace(const ir::relax::Function& func, const ObjectRef& mod,
                                             const InplaceOptionsObj& options,
                                             InplaceContext* context);

}  // namespace relax
}  // namespace tvm_memplan

#endif  // TVM_MEMPLAN_RELAX_INPLACE_ANALYSIS_H_
