/*!
 * \file tir/compact_buffers_records.h
 * \brief What the region analysis of CompactBufferAllocation keeps per allocation while it
 *        walks a function: the collector (compact_buffers_analysis.cc) fills these records,
 *        the relaxation (region_relaxation.h) turns each access into bounds, and the
 *        finalization (compact_buffers_finalize.h) turns a record into a CompactedRegion.
 *
 * \code
 *   B = T.alloc_buffer((64, 32))           TrackedAllocation of B:
 *   for ii, j in T.grid(4, 32):              dims[0].ranges = {[io * 4, io * 4 + 3]}
 *       B[io * 4 + ii, j] = ...              dims[1].ranges = {[0, 31]}
 * \endcode
 */
#ifndef TVM_MEMPLAN_TIR_COMPACT_BUFFERS_RECORDS_H_
#define TVM_MEMPLAN_TIR_COMPACT_BUFFERS_RECORDS_H_

#include <array>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ir/visitor.h"
#include "tir/affine_bounds.h"
#include "tir/compact_buffers_analysis.h"

namespace tvm_memplan {
namespace tir {

/*! \brief A bound: an affine form when we have one, otherwise an expression. */
struct Bound {
  std::optional<Affine> affine;
  ObjectRef expr;
};

/*! \brief `expr` as a Bound: affine when it parses as one. */
inline Bound MakeBound(const ObjectRef& expr) {
  Bound bound;
  bound.affine = AffineParser(nullptr).Parse(expr);
  if (!bound.affine) bound.expr = expr;
  return bound;
}

inline ObjectRef BoundExpr(const Bound& b, DLDataType dtype) {
  return b.affine ? ToExpr(*b.affine, dtype) : b.expr;
}

/*! \brief An inclusive range [lo, hi] of one dimension. */
struct DimRange {
  Bound lo, hi;
};

/*! \brief The accesses of one dimension, merged as they arrive. */
struct DimState {
  std::vector<DimRange> ranges;
  /*! \brief Why the dimension keeps its original extent (data-dependent or unbounded index). */
  std::string unknown;
  DLDataType index_dtype{kDLInt, 32, 1};
  bool has_dtype = false;
};

/*! \brief Everything collected about one allocation. */
struct TrackedAllocation {
  explicit TrackedAllocation(ir::AllocationSite site) : site(std::move(site)) {}

  ir::AllocationSite site;
  /*! \brief Views with the same element layout. */
  std::vector<ir::Buffer> views;
  /*! \brief One-dimensional views of the whole buffer; they address whole rows (`row_size`). */
  std::vector<ir::Buffer> flat_views;
  int64_t row_size = 0;
  /*! \brief Why the buffer must stay as it is; empty while it may compact. */
  std::string give_up;
  std::vector<DimState> dims;
  bool accessed = false;
  /*! \brief For each loop enclosing the allocation: relax it (a thread sharing the buffer)? */
  std::vector<bool> outer_relaxed;
  /*!
   * \brief Loops with a smaller index may not appear in the offset: an access sits in a
   *        non-opaque block entered inside them, which may not use outer loop variables.
   */
  size_t first_visible_loop = 0;
  std::string opaque_block;
  /*! \brief (dim, factor, offset) from buffer_dim_align. */
  std::vector<std::array<int64_t, 3>> dim_aligns;
  /*!
   * \brief Buffers loaded by its indices (`A[B[i] + k]`): their values must not change while
   *        the allocation lives, checked against the writes of its scope when it ends.
   */
  std::vector<ObjectRef> index_loads;
  /*! \brief Where the scope starts in the collector's log of written buffers. */
  size_t writes_begin = 0;
  /*! \brief Set once the allocation's scope ends. */
  std::optional<CompactedRegion> result;
};

}  // namespace tir
}  // namespace tvm_memplan

#endif  // TVM_MEMPLAN_TIR_COMPACT_BUFFERS_RECORDS_H_
