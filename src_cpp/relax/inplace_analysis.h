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
#include <utility>
#include <vector>

#include "relax/memory_plan_model.h"
#include "relax/op_legalization.h"

namespace tvm_memplan {
namespace relax {

/*!
 * \brief Options of the in-place analysis and rewrite, reflected as
 *        `tvm_memplan.relax.InplaceOptions` (Python reads names, docs and defaults from here).
 */
class InplaceOptionsObj : public ffi::Object {
 public:
  /*! \brief Also rewrite bindings outside dataflow blocks. */
  bool outside_dataflow = true;
  /*! \brief Keep only rewrites that do not raise the bytes the memory planner plans. */
  bool memory_aware = true;
  /*! \brief The planner that will run: "stock" or "memplan". */
  String planner = kStockPlanner;
  /*!
   * \brief Whether the module is compiled for a GPU, whose pipeline schedules the PrimFuncs it
   *        legalizes and fuses (dlight): then operator calls stay as they are and only calls of
   *        PrimFuncs already bound to threads run in place. None: the current target decides.
   */
  Optional<bool> gpu;

  static void RegisterReflection();
  TVM_FFI_DECLARE_OBJECT_INFO_FINAL("tvm_memplan.relax.InplaceOptions", InplaceOptionsObj,
                                    ffi::Object);
};

class InplaceOptions : public ObjectRef {
 public:
  InplaceOptions() : ObjectRef(ffi::make_object<InplaceOptionsObj>()) {}
  TVM_FFI_DEFINE_OBJECT_REF_METHODS_NOTNULLABLE(InplaceOptions, ObjectRef, InplaceOptionsObj);
};

/*! \brief The one check of the options (ValueError naming the bad field), at every FFI entry
 *         that takes them: the pass constructors and the analyses. */
void CheckInplaceOptions(const InplaceOptionsObj& options);

/*! \brief The decision for one binding whose value is a call. */
struct InplaceDecision {
  /*! \brief The relax.Binding (the rewrite replaces its value). */
  ObjectRef binding;
  std::string var;
  /*! \brief The operator name, or "" when the callee is not an operator. */
  std::string op;
  bool dataflow = false;
  bool inplace = false;
  /*!
   * \brief Position of the reused argument (-1 when refused): among an operator's arguments,
   *        or in the argument tuple of a call_tir.
   */
  int64_t arg_index = -1;
  std::string arg;
  /*! \brief The reused argument (a variable). */
  ObjectRef reused;
  /*! \brief Why the binding runs in place, or why it does not. */
  std::string reason;

  // For an in-place decision, what the rewrite needs:
  /*! \brief `R.call_tir(prim_func, (args...), out_ty)` over this binding's arguments. */
  ObjectRef call_tir;
  std::optional<ir::PrimFunc> prim_func;
  std::string prim_func_name;
  /*!
   * \brief Positions of the reused argument in the call_tir argument tuple (several when the
   *        variable is passed more than once: their PrimFunc parameters become one buffer).
   */
  std::vector<int64_t> tuple_indices;
};

/*! \brief What Python and the report read of an InplaceDecision, reflected as
 *         `tvm_memplan.relax.InplaceCandidate`. */
class InplaceCandidateObj : public ffi::Object {
 public:
  String binding;
  /*! \brief The operator, or None when the callee is not an operator. */
  Optional<String> op;
  bool dataflow = false;
  bool inplace = false;
  Optional<int64_t> arg_index;
  Optional<String> arg;
  String reason;

  static void RegisterReflection();
  TVM_FFI_DECLARE_OBJECT_INFO_FINAL("tvm_memplan.relax.InplaceCandidate", InplaceCandidateObj,
                                    ffi::Object);
};

/*! \brief The record of `decision`. */
ObjectRef ToRecord(const InplaceDecision& decision);

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

 private:
  OpLegalizer legalizer_;
  PrimFuncFacts facts_;
  std::map<std::pair<const Object*, std::vector<int64_t>>, std::optional<std::string>>
      prim_func_checks_;
  std::vector<ObjectRef> keep_alive_;  // PrimFuncs keyed by address in prim_func_checks_
};

/*!
 * \brief The decisions for every call binding of `func`, in program order. Decisions build on
 *        each other: a binding made in place aliases its reused argument for later decisions.
 * \param mod The module holding `func`, to look up called PrimFuncs and functions; may be null.
 */
std::vector<InplaceDecision> AnalyzeInplace(const ir::relax::Function& func, const ObjectRef& mod,
                                            const InplaceOptionsObj& options,
                                            InplaceContext* context);

}  // namespace relax
}  // namespace tvm_memplan

#endif  // TVM_MEMPLAN_RELAX_INPLACE_ANALYSIS_H_
