/*!
 * \file tir/compact_buffers_finalize.h
 * \brief The last step of the region analysis of CompactBufferAllocation: the ranges collected
 *        for one allocation become its compacted shape, per-dimension offset and strides (or
 *        the reason it stays), with its views rebuilt for the new shape.
 *
 * \code
 *   dims[0].ranges = {[io * 4, io * 4 + 3], [io * 4 + 1, io * 4 + 4]}
 *       -> offset io * 4, extent 5         (affine bounds with the same terms fold)
 *   dims[0].ranges = {[max(io * 4 - 1, 0), min(io * 4 + 4, 15)]}
 *       -> offset max(io * 4 - 1, 0), extent 6   (min/max terms bounded pairwise)
 * \endcode
 */
#ifndef TVM_MEMPLAN_TIR_COMPACT_BUFFERS_FINALIZE_H_
#define TVM_MEMPLAN_TIR_COMPACT_BUFFERS_FINALIZE_H_

#include <unordered_set>

#include "ir/analyzer.h"
#include "tir/compact_buffers_records.h"
#include "tir/region_relaxation.h"

namespace tvm_memplan {
namespace tir {

/*! \brief What finalization reads besides the tracked allocation. */
struct FinalizeScope {
  CompactionOptions options;
  /*! \brief The loops enclosing the allocation, none relaxed. */
  const LoopRanges* enclosing;
  /*! \brief Parameters and the variables of their shapes: an extent may use only these. */
  const std::unordered_set<const Object*>* function_vars;
  ir::Analyzer* analyzer;
};

/*! \brief The compaction of `t`, or the buffer unchanged with the reason (`t.give_up` first). */
CompactedRegion FinalizeRegion(const TrackedAllocation& t, const FinalizeScope& scope);

}  // namespace tir
}  // namespace tvm_memplan

#endif  // TVM_MEMPLAN_TIR_COMPACT_BUFFERS_FINALIZE_H_
