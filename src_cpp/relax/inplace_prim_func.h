/*!
 * \file relax/inplace_prim_func.h
 * \brief Whether a destination-passing PrimFunc may write its output (its last parameter)
 *        into the memory of one of its inputs: legalized operators, FuseTIR's fused kernels,
 *        kernels scheduled for a GPU (dlight) and hand-written PrimFuncs alike.
 *
 * \code
 *   for i, j: T_add[i, j] = x[i, j] + y[j]          -> may write into x (not into y)
 *   for i, j: T_t[i, j] = x[j, i]                   -> no: reads x at another element
 *   for i: out[i] = x[i - 1] + x[i] + x[i + 1]      -> no: a stencil
 *   for i, k: out[i] += x[i, k] ...                 -> no: a reduction into the output
 *   for i, j: a[i, j] = conv(..) + bias[j]          -> may write into r: r is read before the
 *   for i, j: b[i, j] = a[i, j] + r[i, j]              output is written, outside its loops
 *   for i, j: out[i, j] = max(b[i, j], 0)
 *   for bx in blockIdx.x:                           -> may write into x (dlight's schedule of
 *     for tx in threadIdx.x:                           an elementwise chain: each thread reads
 *       out[(bx*1024+tx) // 64, (bx*1024+tx) % 64]     the element it writes)
 *           = exp(x[(bx*1024+tx) // 64, ...])
 * \endcode
 *
 * Rule: no element of the input is read after the output element at the same position was
 * written, in any execution order the PrimFunc allows. Parallel, vectorized and thread-bound
 * loops have no order; only same-position access is safe across their iterations.
 *
 * The proof, per store W to the output and load R of the input:
 *  1. W writes each element once: its indices (block iteration vars replaced by their bindings)
 *     are a bijective affine map (sym.DetectIterMap) of its coordinates, under its predicates.
 *     The coordinates of a statement are its loops, except that loops bound to one hardware
 *     thread tag (blockIdx.x, threadIdx.x, ...) in one kernel are one coordinate, the thread's
 *     index: a statement that no loop binds to a tag of its kernel runs in every such thread
 *     (so it writes its elements once only if that tag's extent is 1).
 *  2. R and W meet only within one instance of the coordinates they share (their common loops,
 *     and every thread index of their kernel when they run in one kernel): the inverse of W's
 *     map (sym.InverseAffineIterMap), applied to the element R reads, gives back R's own value
 *     of each shared coordinate.
 *  3. Within one such instance R runs first: R is part of W's statement (read before the
 *     write), or R's statement comes before W's in program order. In one instance the
 *     statements run in one thread in program order (a parallel loop ends before the next
 *     statement; kernels run one after the other).
 * Nothing else may write the input, read the output, view either, or take their address. The
 * same tensor passed as several parameters is checked as one input.
 */
#ifndef TVM_MEMPLAN_RELAX_INPLACE_PRIM_FUNC_H_
#define TVM_MEMPLAN_RELAX_INPLACE_PRIM_FUNC_H_

#include <optional>
#include <string>
#include <vector>

#include "ir/tir.h"

namespace tvm_memplan {
namespace relax {

/*!
 * \brief Whether `prim_func` may write its output into parameters `inputs` (one tensor passed
 *        as each of them): nullopt when it may, else why not.
 */
std::optional<std::string> CheckInplacePrimFunc(const ir::PrimFunc& prim_func,
                                                const std::vector<int64_t>& inputs);

/*! \brief Whether `prim_func` binds loops to GPU threads (is scheduled for a GPU). */
bool HasThreadBindings(const ir::PrimFunc& prim_func);

}  // namespace relax
}  // namespace tvm_memplan

#endif  // TVM_MEMPLAN_RELAX_INPLACE_PRIM_FUNC_H_
