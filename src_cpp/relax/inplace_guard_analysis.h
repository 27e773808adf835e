/*!
 * \file relax/inplace_guard_analysis.h
 * \brief Which in-place writes the planner's guard reverts (relax/inplace_guard.h states the
 *        rules and does it), as RevertedInplaceWrite records.
 *
 * \code
 *   cls.sin_inplace(k)          # k is a constant: FoldConstant folded it after the in-place pass
 *   b = k
 *   // FindUnsafeWrites: one record, callee "sin_inplace", argument "k", code "constant",
 *   // result "b"; with the binding, argument position and the copy's device and scope
 * \endcode
 *
 * A function whose every call writes only tensors allocated for it and written once (what
 * CallTIRRewrite emits without an in-place pass) has none, which one walk over its bindings
 * tells before the flow of storage is followed.
 */
#ifndef TVM_MEMPLAN_RELAX_INPLACE_GUARD_ANALYSIS_H_
#define TVM_MEMPLAN_RELAX_INPLACE_GUARD_ANALYSIS_H_

#include <memory>
#include <vector>

#include "ir/relax.h"
#include "relax/memory_effects.h"
#include "relax/memory_plan_records.h"
#include "relax/program_points.h"
#include "relax/storage_flow.h"

namespace tvm_memplan {
namespace relax {

/*! \brief The in-place writes of `func` (a Relax function of `mod`, after CallTIRRewrite) to
 *         revert, in program order; `steps` are its program points (FlattenFunction). Where
 *         `flow` is given, it receives the flow of storage the analysis followed (null where
 *         the one walk over the bindings sufficed). */
std::vector<RevertedInplaceWrite> FindUnsafeWrites(
    const ir::relax::Function& func, std::shared_ptr<const std::vector<Step>> steps,
    const ir::IRModule& mod, PrimFuncFacts* facts,
    std::shared_ptr<const FunctionFlow>* flow = nullptr);

}  // namespace relax
}  // namespace tvm_memplan

#endif  // TVM_MEMPLAN_RELAX_INPLACE_GUARD_ANALYSIS_H_
