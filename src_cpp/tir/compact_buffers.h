/*!
 * \file tir/compact_buffers.h
 * \brief CompactBufferAllocation v2: shrink every allocated buffer to the box its accesses
 *        cover, on schedulable TIR (SBlock alloc_buffers) and on lowered TIR (AllocBuffer).
 *
 * \code
 *   # before                                    # after
 *   for io in range(16):                        for io in range(16):
 *       B = T.alloc_buffer((64, 32))                B = T.alloc_buffer((4, 32))
 *       for ii, j in T.grid(4, 32):                 for ii, j in T.grid(4, 32):
 *           B[io * 4 + ii, j] = A[io * 4 + ii, j]       B[io * 4 + ii - io * 4, j] = A[...]
 * \endcode
 *
 * The regions come from compact_buffers_analysis.h; this file only rewrites: the allocation
 * (keeping its annotations), views declared over it, every load and store (index minus
 * offset), block read/write regions and match_buffer sources. Indices are left unsimplified,
 * as the stock pass leaves them. `buffer_dim_align` annotations become strides, as in the
 * stock pass.
 */
#ifndef TVM_MEMPLAN_TIR_COMPACT_BUFFERS_H_
#define TVM_MEMPLAN_TIR_COMPACT_BUFFERS_H_

#include "tir/compact_buffers_records.h"

namespace tvm_memplan {
namespace tir {

/*!
 * \brief Compact the buffers `func` allocates; `func` itself when nothing changes. What was done
 *        to each buffer, and why, is what AnalyzeCompaction returns.
 */
ir::PrimFunc CompactBufferAllocation(const ir::PrimFunc& func, const CompactionOptions& options);

}  // namespace tir
}  // namespace tvm_memplan

#endif  // TVM_MEMPLAN_TIR_COMPACT_BUFFERS_H_
