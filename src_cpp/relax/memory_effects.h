/*!
 * \file relax/memory_effects.h
 * \brief What a call does to memory, decided once per binding: it allocates, is a view of an
 *        argument, writes an argument in place, only uses its arguments, or is opaque; and what
 *        TVM's memory planner sees of it once the module is lowered. The in-place analysis (on
 *        operator-level Relax and on calls of PrimFuncs) and the memory planner (on Relax after
 *        CallTIRRewrite) read the same classification.
 *
 * \code
 *   call                                         kind        planned (what the planner sees)
 *   a = R.exp(x)                                 kAllocate   kAllocates   (a PrimFunc call)
 *   b = R.call_tir_inplace(f, (a, y), ..., [0])  kInplace    kInplace     source 0
 *   t = R.builtin.alloc_tensor(shape, ...)       kAllocate   kAllocTensor
 *   _ = cls.add(a, y, t)                         kUse        kUses        (destination-passing)
 *   v = R.reshape(t, shape)                      kView       kView        source 0 (lowered)
 *   c = R.astype(a, "float32")                   kMaybeView  kCopy        source 0 (a view if
 *                                                            RewriteDataflowReshape rewrites it)
 *   d = cls.relax_helper(a)                      kOpaque     kOpaque      (may return a)
 *   R.print(a)                                   kOpaque     kOpaque      escapes (impure)
 * \endcode
 */
#ifndef TVM_MEMPLAN_RELAX_MEMORY_EFFECTS_H_
#define TVM_MEMPLAN_RELAX_MEMORY_EFFECTS_H_

#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "ir/relax.h"
#include "ir/tir.h"
#include "relax/concat_prim_func.h"

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
     *         RewriteDataflowReshape may turn into a view, a concatenation our planner may
     *         place its inputs in). */
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
  /*!
   * \brief What TVM's StaticPlanBlockMemory sees of the call once the module reaches it
   *        (LegalizeOps, RewriteDataflowReshape, CallTIRRewrite): the steps of its model
   *        (relax/memory_plan_model.h).
   */
  enum class Planned {
    /*! \brief A PrimFunc call allocating its outputs, which count as its own arguments. */
    kAllocates,
    /*! \brief `R.builtin.alloc_tensor`: allocates its result (scope: argument 3), which a later
     *         call writes. */
    kAllocTensor,
    /*! \brief A PrimFunc that only moves data: kAllocates, or a view of operand
     *         `planned_source` (CallOperands) when there is one (CopySource) and
     *         RewriteDataflowReshape rewrites the binding (a DataflowVar of a dataflow block). */
    kCopy,
    /*! \brief Shares the storage of argument `planned_source`, a variable. */
    kView,
    /*! \brief Writes its output into entry `planned_source` of the argument tuple, a variable. */
    kInplace,
    /*! \brief A PrimFunc or packed function in destination-passing style: uses its arguments,
     *         its result holds no storage. */
    kUses,
    /*! \brief What it reads leaves planning; its result gets no storage. */
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
  /*! \brief kAllocate of an operator that LegalizeOps folds into a constant (an `arange` of
   *         constants): its result is a constant, whatever its arguments. */
  bool folds_to_constant = false;
  /*! \brief kView: the argument whose storage the result is. */
  int64_t source = -1;
  /*! \brief kInplace: per output, the argument-tuple entry it overwrites (-1: fresh). */
  std::vector<int64_t> inplace_indices;
  Planned planned = Planned::kOpaque;
  /*! \brief kView: the argument; kInplace: the argument-tuple entry; kCopy: the operand. */
  int64_t planned_source = -1;
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

/*! \brief An operator call as LegalizeOps lowers it, as far as memory goes. */
struct LoweredOperator {
  /*! \brief The PrimFunc of the one `call_tir` the call becomes; nullopt when it becomes
   *         anything else (then `detail` says what). */
  std::optional<ir::PrimFunc> prim_func;
  std::string detail;
  /*! \brief It becomes a constant (LegalizeOps folded it). */
  bool constant = false;
};

/*! \brief Lowers operator calls: relax/op_legalization.h does it with each operator's
 *         FLegalize, as LegalizeOps does. */
class OperatorLowering {
 public:
  virtual ~OperatorLowering() = default;
  virtual LoweredOperator Lower(const ir::Call& call) = 0;
};

/*! \brief What memory effects read off a module's PrimFuncs, each computed once per PrimFunc. */
class PrimFuncFacts {
 public:
  /*! \brief Whether the PrimFunc only moves data (TVM's `has_reshape_pattern`, which reads block
   *         TIR only: a lowered PrimFunc may move data anywhere, so it counts as one). */
  bool MovesDataOnly(const ir::PrimFunc& prim_func);
  /*! \brief Its layout when it is a concatenation (relax/concat_prim_func.h). */
  const std::optional<ConcatLayout>& Concatenation(const ir::PrimFunc& prim_func);
  /*! \brief Per parameter, whether it may write it (relax/concat_prim_func.h). */
  const std::vector<bool>& WrittenParams(const ir::PrimFunc& prim_func);

 private:
  struct Facts {
    std::optional<bool> moves_data_only;
    std::optional<std::optional<ConcatLayout>> concatenation;
    std::optional<ParamWrites> writes;
  };
  const ParamWrites& Writes(const ir::PrimFunc& prim_func);
  Facts& Of(const ir::PrimFunc& prim_func);
  std::unordered_map<const Object*, Facts> facts_;
  std::vector<ObjectRef> keep_alive_;  // the PrimFuncs keyed by address
};

/*! \brief Classifies calls of one module's functions. */
class MemoryEffects {
 public:
  /*!
   * \param mod The module (to tell PrimFuncs from Relax functions); may be null.
   * \param lowering For operator-level Relax: operators with FLegalize are classified by what
   *        LegalizeOps makes of them. Null for Relax after CallTIRRewrite.
   * \param facts The PrimFunc facts to share (one per module); null: facts of its own.
   */
  MemoryEffects(const ObjectRef& mod, OperatorLowering* lowering, PrimFuncFacts* facts,
                MemoryEffectPolicy policy = {});

  MemoryEffect Classify(const ir::Call& call);

  /*! \brief Whether `callee` is a Relax function of the module that is pure. */
  bool IsPureFunction(const ObjectRef& callee) const;
  /*! \brief The PrimFunc of the module `callee` (a GlobalVar) names, or nullopt. */
  std::optional<ir::PrimFunc> PrimFuncOf(const ObjectRef& callee) const;

 private:
  /*! \brief A call of `prim_func` (nullopt: unknown) that allocates its result after
   *         LegalizeOps: what RewriteDataflowReshape and our planner may make of it. */
  MemoryEffect PrimFuncCallEffect(const std::optional<ir::PrimFunc>& prim_func,
                                  const ir::Call& call, bool may_be_copy, std::string what);
  Map<ObjectRef, ObjectRef> functions_;
  OperatorLowering* lowering_;
  PrimFuncFacts* facts_;
  PrimFuncFacts own_facts_;
  MemoryEffectPolicy policy_;
};

/*!
 * \brief Positions of the arguments call `call` (of effect `effect`) may write: a PrimFunc's
 *        arguments it stores to, every argument of any other call; none for memory operators and
 *        views (Relax after CallTIRRewrite, where writing is what calls do to arguments).
 */
std::vector<size_t> WrittenArguments(const ir::Call& call, const MemoryEffect& effect,
                                     const MemoryEffects& classifier, PrimFuncFacts* facts);

/*! \brief The tensors a call passes to its PrimFunc: a call_tir's argument tuple (when it is a
 *         tuple expression), an operator's arguments. */
Array<ObjectRef> CallOperands(const ir::Call& call);

/*!
 * \brief The operand a copy into a result of type `result` becomes a view of when
 *        RewriteDataflowReshape rewrites it: the one tensor among `operands` (constants count),
 *        when it has the result's dtype and provably as many elements; -1 otherwise.
 */
int64_t CopySource(const ObjectRef& result, const Array<ObjectRef>& operands);

}  // namespace relax
}  // namespace tvm_memplan

#endif  // TVM_MEMPLAN_RELAX_MEMORY_EFFECTS_H_
