/*!
 * \file tir/vectorize_inplace_loops.h
 * \brief `tvm_memplan.transform.VectorizeInplaceLoops`: the innermost loop of an in-place
 *        elementwise kernel for LLVM's CPU targets becomes a vectorized loop, which TVM's
 *        VectorizeLoop (the next pass of the memplan TIR pipeline) turns into vector code.
 *
 * \code
 *   # before (flattened, target llvm, tirx.noalias)      # after
 *   for c, h, w in T.grid(256, 8, 8):                    for c, h in T.grid(256, 8):
 *       a[c * 64 + h * 8 + w] =                              for w in T.vectorized(8):
 *           a[c * 64 + h * 8 + w] / b[c]                         a[c * 64 + h * 8 + w] =
 *                                                                    a[c * 64 + h * 8 + w] / b[c]
 * \endcode
 *
 * Why: the in-place kernels DataflowUseInplaceCalls makes read and write one buffer. At -O3
 * LLVM compiles such a loop nest far more slowly than the out-of-place kernel it replaces: it
 * unrolls the inner loops, cannot pack their loads and stores into vectors (they may alias,
 * for all it knows), and vectorizes the outer loop with gathers instead. On DenseNet-121
 * (torchvision, 64x64) the 65 in-place divisions took 4.2 s of LLVM time against 3.0 s for the
 * out-of-place ones, and one 256x8x8 division 0.24 s against 0.02 s. Handed the vector loop,
 * LLVM has nothing left to discover: the same kernel compiles in 0.016 s.
 *
 * Rule: a loop is vectorized only when every iteration reads and writes its own elements, so
 * that running the iterations as lanes computes what running them in order does (and, since
 * IEEE arithmetic is lane-wise, bit for bit the same numbers):
 *  - the loop is serial, innermost, unannotated, not inside a vectorized loop, of constant
 *    extent 2-64, step 1, and its body is a single store to a buffer W (without strides) of
 *    scalars of whole bytes;
 *  - the store's value reads W, and reads it only at the indices it writes (the in-place
 *    pattern; an out-of-place loop is left as stock compiles it);
 *  - each index the store writes moves by a constant as the loop variable moves by one, and
 *    one of them by a non-zero constant, so distinct iterations write distinct elements;
 *  - no other buffer it reads can be W (the function declares its parameters `tirx.noalias`,
 *    and each buffer it reads is a parameter, an allocation or a view of one);
 *  - every call in the value is pure (TCallEffectKind at most kPure) and takes no buffer's
 *    address, and no part of the value is a vector.
 * Any other loop, and every function not compiled for an LLVM CPU target without fast-math, is
 * left unchanged. VectorizeLoop may still scalarize a loop it cannot vectorize, which restores
 * the serial loop.
 */
#ifndef TVM_MEMPLAN_TIR_VECTORIZE_INPLACE_LOOPS_H_
#define TVM_MEMPLAN_TIR_VECTORIZE_INPLACE_LOOPS_H_

#include <string>
#include <vector>

#include "ir/tir.h"

namespace tvm_memplan {
namespace tir {

/*! \brief The most lanes a loop is vectorized into. */
inline constexpr int64_t kMaxVectorizedLanes = 64;

/*! \brief One innermost loop whose body is a store, and whether it was vectorized. */
struct LoopDecision {
  std::string loop_var;
  /*! \brief Empty when vectorized, else why not. */
  std::string refusal;
};

/*! \brief `func` with each loop the rule admits vectorized; `decisions` (if given) receives one
 *         entry per innermost loop whose body is a store. */
ir::PrimFunc VectorizeInplaceLoops(const ir::PrimFunc& func,
                                   std::vector<LoopDecision>* decisions = nullptr);

/*! \brief The pass (a tirx.PrimFuncPass named "tvm_memplan.VectorizeInplaceLoops"); it touches
 *         only functions whose target is an LLVM CPU target, and it is idempotent. */
ffi::ObjectRef VectorizeInplaceLoopsPass();

}  // namespace tir
}  // namespace tvm_memplan

#endif  // TVM_MEMPLAN_TIR_VECTORIZE_INPLACE_LOOPS_H_
