/*!
 * \file relax/inplace_rewrite.h
 * \brief DataflowUseInplaceCalls v2: every operator call that the in-place analysis proves
 *        safe becomes a `call_tir_inplace` of an in-place copy of its legalized PrimFunc.
 *
 * \code
 *   # before                                # after
 *   b = R.exp(a)                            b = R.call_tir_inplace(cls.exp_inplace, (a,),
 *                                               out_ty=R.Tensor((4,), "float32"),
 *                                               inplace_indices=[0])
 *                                           @T.prim_func(private=True)
 *                                           def exp_inplace(a: T.Buffer((4,), "float32")):
 *                                               ... a[v0] = T.exp(a[v0])
 * \endcode
 *
 * The in-place PrimFunc is the operator's legalization with the output parameter removed and
 * every use of it redirected to the reused input, named `<legalized name>_inplace` (equal
 * functions are shared). The pass must run before LegalizeOps; bindings that the analysis
 * refuses are left exactly as they were (relax/inplace_analysis.h states the rules).
 */
#ifndef TVM_MEMPLAN_RELAX_INPLACE_REWRITE_H_
#define TVM_MEMPLAN_RELAX_INPLACE_REWRITE_H_

#include "relax/inplace_analysis.h"

namespace tvm_memplan {
namespace relax {

struct InplaceRewriteResult {
  ir::IRModule mod;
  ffi::ObjectPtr<InplaceStatsObj> stats;
};

/*!
 * \brief Rewrite every Relax function of `mod`; `mod` itself is not modified. `context` keeps
 *        the legalizations and PrimFunc facts (a context of its own when null).
 */
InplaceRewriteResult UseInplaceCalls(const ir::IRModule& mod, const InplaceOptionsObj& options,
                                     InplaceContext* context = nullptr);

/*!
 * \brief `tvm_memplan.LegalizeOps`: DataflowUseInplaceCalls, then TVM's LegalizeOps (with
 *        `cmap`, `skip_ops` and `enable_warning`, its own arguments) taking the legalizations the
 *        in-place run made instead of legalizing those calls again. The run legalized each call
 *        signature once with the operator's own FLegalize (relax/op_legalization.h); through
 *        LegalizeOps' custom legalization map, a call of such a signature becomes the same
 *        `call_tir` of the same PrimFunc, added to the module as FLegalize adds it. Legalizations
 *        that emitted bindings, calls the run did not legalize, and the operators of `cmap` go
 *        through LegalizeOps as usual.
 */
ObjectRef LegalizeOpsAfterInplaceCalls(const InplaceOptions& options,
                                       const Optional<Map<String, ffi::Function>>& cmap,
                                       const Optional<Array<String>>& skip_ops,
                                       bool enable_warning);

}  // namespace relax
}  // namespace tvm_memplan

#endif  // TVM_MEMPLAN_RELAX_INPLACE_REWRITE_H_
