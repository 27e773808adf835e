/*!
 * \file tir/compact_buffers_analysis.h
 * \brief The region analysis of CompactBufferAllocation: for each buffer a PrimFunc allocates,
 *        the smallest box that holds every access, as a compacted shape and a per-dimension
 *        offset, or the reason the buffer must stay as it is.
 *
 * \code
 *   for io in range(16):
 *       B = T.alloc_buffer((64, 32))            -> B: shape (64, 32) -> (4, 32),
 *       for ii, j in T.grid(4, 32):                  offset (io * 4, 0)
 *           B[io * 4 + ii, j] = A[io * 4 + ii, j]
 *       ...
 *   C = T.alloc_buffer((16,))                   -> C: unchanged, "its data pointer is passed
 *   T.call_extern("f", C.data)                       to `tirx.call_extern`"
 * \endcode
 *
 * Rules, in the order the analysis applies them:
 *  - The region of a buffer is relaxed over the loops entered after its allocation, over the
 *    enclosing vectorized loops (their lanes run together: one element each, in any scope), and
 *    over the enclosing threads that share its storage scope (global: all threads, shared:
 *    threadIdx and vthread, warp: threadIdx.x, local and fragments: none). Views declared
 *    later (`T.decl_buffer(data=B.data)`) count as accesses of B made at B's definition depth.
 *  - Accesses under a provably false condition do not count. Conditions that bound a loop
 *    variable by a constant tighten its range; other conditions go to affine iter-map
 *    analysis with the accesses under them (sym.EstimateRegionUpperBound).
 *  - An offset may use only variables visible at the allocation; an extent must not depend
 *    on loops or data. A loop-dependent extent takes the tightest constant bound we can
 *    prove (min/max terms are bounded pairwise), a data-dependent one the original extent.
 *    Where TVM's region estimate raises (`i // 4 - i // 4` reaches "Divide by zero"), the
 *    dimensions of that access keep their extent.
 *  - Strict mode clamps each dimension to the original extent.
 *  - The buffer stays as it is when its memory escapes: its pointer is used opaquely
 *    (`B.data`, `address_of`, `tvm_access_ptr`), a view reinterprets it (another dtype,
 *    strides, or a shape other than its own or its flattened one), or it is defined more than
 *    once. A flattened view keeps the inner dimensions whole.
 *
 * The rewrite (compact_buffers.h) consumes these records (declared, with the options, in
 * compact_buffers_records.h); `tvm_memplan.analysis.compacted_regions` returns them to Python.
 */
#ifndef TVM_MEMPLAN_TIR_COMPACT_BUFFERS_ANALYSIS_H_
#define TVM_MEMPLAN_TIR_COMPACT_BUFFERS_ANALYSIS_H_

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ir/tir.h"
#include "tir/compact_buffers_records.h"

namespace tvm_memplan {
namespace tir {

/*! \brief One record per allocated buffer, in definition order. */
std::vector<CompactedRegion> AnalyzeCompaction(const ir::PrimFunc& func,
                                               const CompactionOptions& options);

}  // namespace tir
}  // namespace tvm_memplan

#endif  // TVM_MEMPLAN_TIR_COMPACT_BUFFERS_ANALYSIS_H_
