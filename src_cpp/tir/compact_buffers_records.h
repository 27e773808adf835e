/*!
 * \file tir/compact_buffers_records.h
 * \brief The records of CompactBufferAllocation: its options, its decision per allocation
 *        (CompactedRegion), and what the region analysis keeps per allocation while it walks a
 *        function (TrackedAllocation): the collector (compact_buffers_analysis.cc) fills the
 *        tracked allocations, the relaxation (region_relaxation.h) turns each access into
 *        bounds, and the finalization (compact_buffers_finalize.h) turns a tracked allocation
 *        into its CompactedRegion, which the rewrite (compact_buffers.h) and Python read.
 *
 * Like every record of tvm-memplan, a CompactedRegion is one reflected object: the fields
 * reflection registers are what every reader sees; the members after them hold the IR the
 * rewrite needs and are C++'s only.
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

namespace tvm_memplan {
namespace tir {

/*!
 * \brief Options of CompactBufferAllocation (mirroring the stock pass's), reflected as
 *        `tvm_memplan.tir.CompactionOptions`: Python reads names, docs and defaults from here.
 */
class CompactionOptionsObj : public ffi::Object {
 public:
  // Reflected fields: each documented once, in RegisterReflection (compact_buffers_records.cc).
  bool is_strict = true;

  static void RegisterReflection();
  TVM_FFI_DECLARE_OBJECT_INFO_FINAL("tvm_memplan.tir.CompactionOptions", CompactionOptionsObj,
                                    ffi::Object);
};

class CompactionOptions : public ffi::ObjectRef {
 public:
  CompactionOptions() : ObjectRef(ffi::make_object<CompactionOptionsObj>()) {}
  TVM_FFI_DEFINE_OBJECT_REF_METHODS_NOTNULLABLE(CompactionOptions, ObjectRef, CompactionOptionsObj);
};

/*! \brief A buffer the rewrite replaces, and what it subtracts from each of its indices. */
struct BufferReplacement {
  ir::Buffer original, compacted;
  ffi::Array<ffi::ObjectRef> offset;
};

/*! \brief The decision for one allocated buffer, reflected as `tvm_memplan.tir.CompactedRegion`.
 *         Shapes, offsets and strides are integers where constant, expressions where not. */
class CompactedRegionObj : public ffi::Object {
 public:
  // Reflected fields: each documented once, in RegisterReflection (compact_buffers_records.cc).
  ffi::String name;
  ffi::String kind;
  ffi::String dtype;
  ffi::Array<ffi::Any> original_shape;
  ffi::Array<ffi::Any> shape;
  ffi::Array<ffi::Any> offset;
  ffi::Array<ffi::Any> original_strides;
  ffi::Array<ffi::Any> strides;
  ffi::Array<ffi::String> views;
  ffi::Optional<ffi::String> reason;
  ffi::Array<ffi::String> notes;
  ffi::Array<ffi::String> relaxed_over;
  ffi::Optional<int64_t> original_bytes;
  ffi::Optional<int64_t> compacted_bytes;
  ffi::Optional<ffi::ObjectRef> original_size;
  ffi::Optional<ffi::ObjectRef> compacted_size;

  // C++ only: what the rewrite needs.
  /*! \brief The buffer, then each of its views, as rewritten; empty when the buffer stays. */
  std::vector<BufferReplacement> replacements;

  static void RegisterReflection();
  TVM_FFI_DECLARE_OBJECT_INFO_FINAL("tvm_memplan.tir.CompactedRegion", CompactedRegionObj,
                                    ffi::Object);
};

using CompactedRegion = ffi::ObjectPtr<CompactedRegionObj>;

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
  /*!
   * \brief For each loop enclosing the allocation: relax it (vector lanes or threads sharing the
   *        buffer)? The relaxed ones, described, in `relaxed_over`.
   */
  std::vector<bool> outer_relaxed;
  std::vector<std::string> relaxed_over;
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
  CompactedRegion result;
};

}  // namespace tir
}  // namespace tvm_memplan

#endif  // TVM_MEMPLAN_TIR_COMPACT_BUFFERS_RECORDS_H_
