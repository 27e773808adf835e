/*!
 * \file relax/op_legalization.h
 * \brief What a Relax operator call becomes in TVM's build: the `call_tir` that LegalizeOps
 *        emits for it, and TVM's op_pattern of the legalized PrimFunc.
 *
 * \code
 *   OpLegalizer legalizer;
 *   const LegalizedCall& legal = legalizer.Legalize(call);   // call: R.exp(a)
 *   legal.kind == LegalizedCall::Kind::kCallTIR;             // R.call_tir(exp, (a,), out_ty=...)
 *   legalizer.OpPattern(legal) == 0;                         // elementwise
 *   ObjectRef here = legalizer.Instantiate(legal, other);    // same call_tir over other's args
 * \endcode
 *
 * Legalization runs the operator's own FLegalize through a scratch BlockBuilder, exactly as
 * LegalizeOps does, and is memoized per call signature (operator, attributes, argument and
 * result types, which arguments are the same variable): models repeat a handful of
 * signatures many times. Tensor constants (not scalars) count by their type, as variables do:
 * TVM's legalizations pass them to the PrimFunc as arguments and read the values of scalar
 * constants only (`_try_convert_to_scalar_const`), so the weights of two layers of one shape
 * share a legalization (and no signature hashes a weight).
 */
#ifndef TVM_MEMPLAN_RELAX_OP_LEGALIZATION_H_
#define TVM_MEMPLAN_RELAX_OP_LEGALIZATION_H_

#include <tvm/ffi/extra/structural_key.h>

#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "ir/relax.h"
#include "ir/tir.h"
#include "relax/memory_effects.h"

namespace tvm_memplan {
namespace relax {

/*! \brief One operator call after legalization. */
struct LegalizedCall {
  enum class Kind {
    /*! \brief The operator has no FLegalize (packed calls, memory ops, closures, ...). */
    kNoLegalization,
    /*! \brief An `R.call_tir` to a PrimFunc (maybe after `prologue_bindings`). */
    kCallTIR,
    /*! \brief A constant: the legalization computed the result (an `arange` of constants). */
    kConstant,
    /*! \brief Anything else: a packed call, an expression, an error. */
    kOther,
  };
  Kind kind = Kind::kNoLegalization;
  /*! \brief For kOther: what legalization produced, for messages. */
  std::string detail;
  /*! \brief The call that was legalized (its variables are the template's; its tensor
   *         constants are variables too). */
  ObjectRef template_call;
  /*! \brief For kCallTIR: `R.call_tir(gv, (args...), out_ty)` over the template's variables. */
  ObjectRef call_tir;
  /*! \brief For kCallTIR: the legalized PrimFunc and its name hint. */
  std::optional<ir::PrimFunc> prim_func;
  std::string prim_func_name;
  /*! \brief Bindings the legalization emits before its result (e.g. tuple items). */
  int64_t prologue_bindings = 0;
  /*! \brief For kCallTIR: whether the call passes symbolic shape vars (a third argument). */
  bool has_tir_vars = false;
  /*! \brief op_pattern of the PrimFunc (AnnotateTIROpPattern), computed on first request. */
  mutable std::optional<int64_t> op_pattern;
};

/*! \brief Legalizes operator calls, once per call signature. */
class OpLegalizer : public OperatorLowering {
 public:
  /*!
   * \brief The legalization of `call` (an ir.Call of an ir.Op). The reference stays valid for
   *        the legalizer's lifetime.
   */
  const LegalizedCall& Legalize(const ir::Call& call);

  /*! \brief `legal.call_tir` with the template call's variables replaced by those of `call`. */
  ObjectRef Instantiate(const LegalizedCall& legal, const ir::Call& call) const;

  /*! \brief TVM's op_pattern of a kCallTIR legalization (0 elementwise, 1 broadcast, ...). */
  int64_t OpPattern(const LegalizedCall& legal);

  /*! \brief The PrimFunc of a kCallTIR legalization, for MemoryEffects. */
  LoweredOperator Lower(const ir::Call& call) override;

  /*! \brief The legalization of `call`'s signature when it was legalized already, else null. */
  const LegalizedCall* Find(const ir::Call& call) const;

  /*! \brief The operators of the signatures legalized so far, in no particular order. */
  std::vector<ObjectRef> Operators() const;

  /*! \brief Number of distinct signatures legalized so far. */
  size_t num_legalized() const { return cache_.size(); }

 private:
  std::unordered_map<ffi::StructuralKey, std::unique_ptr<LegalizedCall>> cache_;
};

}  // namespace relax
}  // namespace tvm_memplan

#endif  // TVM_MEMPLAN_RELAX_OP_LEGALIZATION_H_
