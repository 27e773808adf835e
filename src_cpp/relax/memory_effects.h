/*!
 * \file relax/memory_effects.h
 * \brief What a call does to memory, decided once per binding: it allocates, is a view of an
 *        argument, writes an argument in place, only uses its arguments, or is opaque. The
 *        in-place analysis (on operator-level Relax) and the memory planner (on Relax after
 *        CallTIRRewrite) read the same classification.
 *
 * \code
 *   a = R.exp(x)                                  kAllocate  (legalizes to a call_tir)
 *   b = R.call_tir_inplace(f, (a, y), ..., [0])   kInplace   inplace_indices {0}
 *   t = R.builtin.alloc_tensor(shape, dtype, 0, "global")   kAllocate (alloc_tensor)
 *   _ = cls.add(a, y, t)                          kUse       (a PrimFunc, destination-passing)
 *   v = R.reshape(t, shape)                       kView      source 0 (after lowering)
 *   c = R.astype(a, "float32")                    kMaybeView (a copy that may become a view)
 *   d = cls.relax_helper(a)                       kOpaque    (a Relax function: may return a)
 *   R.print(a)                                    kOpaque    escapes (impure: may keep a)
 * \endcode
 */
#ifndef TVM_MEMPLAN_RELAX_MEMORY_EFFECTS_H_
#define TVM_MEMPLAN_RELAX_MEMORY_EFFECTS_H_

#include <string>
#include <unordered_map>
#include <vector>

#include "relax/op_legalization.h"

namespace tvm_memplan {
namespace relax {

/*! \brief What evaluating one call does to the storage of its arguments and result. */
struct MemoryEffect {
  enum class Kind {
    /*! \brief The result is fresh storage, one per tensor of its type. */
    kAllocate,
    /*! \brief The result is the storage of argument `source`. */
    kView,
    /*! \brief The result is fresh storage or the storage of its arguments (a copy that
     *         RewriteDataflowReshape may turn into a view). */
    kMaybeView,
    /*! \brief Output i is the storage of entry `inplace_indices[i]` of the argument tuple
     *         (-1: fresh storage). */
    kInplace,
    /*! \brief The call reads and writes its arguments and keeps none of them; its result holds
     *         no storage (a PrimFunc called in destination-passing style, call_tir_dyn). */
    kUse,
    /*! \brief The result may be any argument or storage of unknown origin. */
    kOpaque,
  };
  Kind kind = Kind::kOpaque;
  /*! \brief The callee may keep its arguments beyond the call (impure, or unknown): their
   *         storage escapes. */
  bool escapes = false;
  /*! \brief kAllocate by a memory operator: its storage is new even when every argument is a
   *         constant. kAllocTensor is what the VM memory planner plans. */
  enum class Allocator { kNone, kAllocTensor, kAllocStorage };
  Allocator allocator = Allocator::kNone;
  /*! \brief kView: the argument whose storage the result is. */
  int64_t source = -1;
  /*! \brief kInplace: per output, the argument-tuple entry it overwrites (-1: fresh). */
  std::vector<int64_t> inplace_indices;
  /*! \brief What the call is, for messages ("a PrimFunc call", "the impure operator ..."). */
  std::string what;
};

/*! \brief How calls whose effect cannot be read off the IR are judged. */
struct MemoryEffectPolicy {
  /*!
   * \brief Whether a packed function (`ExternFunc` callee) may keep its arguments. TVM's
   *        StaticPlanBlockMemory assumes it does not (destination-passing packed kernels); the
   *        in-place pass assumes it may, unless the call is pure.
   */
  bool packed_functions_keep_arguments = true;
  /*!
   * \brief Whether a concatenation may end up a view of its inputs: tvm-memplan's planner makes
   *        concatenations copy-free (relax/concat_placement.h), placing the inputs inside the
   *        output, so the in-place pass must not write one while the others are read.
   */
  bool concatenations_may_be_views = false;
};

/*! \brief Classifies calls of one module's functions. */
class MemoryEffects {
 public:
  /*!
   * \param mod The module (to tell PrimFuncs from Relax functions); may be null.
   * \param legalizer For operator-level Relax: operators with FLegalize are classified by what
   *        LegalizeOps makes of them. Null for Relax after CallTIRRewrite.
   */
  MemoryEffects(const ObjectRef& mod, OpLegalizer* legalizer, MemoryEffectPolicy policy = {});

  MemoryEffect Classify(const ir::Call& call);

  /*! \brief Whether a call_tir in the input may become a view (its PrimFunc moves data). */
  bool MayBeReshape(const ir::Call& call);
  /*! \brief Whether `callee` is a Relax function of the module that is pure. */
  bool IsPureFunction(const ObjectRef& callee) const;
  /*! \brief Whether `callee` is the GlobalVar of a PrimFunc of the module. */
  bool IsPrimFunc(const ObjectRef& callee) const;

 private:
  /*! \brief Whether `prim_func` is a concatenation whose inputs are contiguous slices of its
   *         output (relax/concat_prim_func.h); memoized. */
  bool IsContiguousConcatenation(const ir::PrimFunc& prim_func);
  std::unordered_map<const Object*, bool> concatenations_;
  std::vector<ObjectRef> keep_alive_;  // the PrimFuncs keyed by address
  Map<ObjectRef, ObjectRef> functions_;
  OpLegalizer* legalizer_;
  MemoryEffectPolicy policy_;
};

}  // namespace relax
}  // namespace tvm_memplan

#endif  // TVM_MEMPLAN_RELAX_MEMORY_EFFECTS_H_
