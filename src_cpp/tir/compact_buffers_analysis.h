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
 *  - The region of a buffer is relaxed over the loops entered after its allocation, and over
 *    the enclosing threads that share its storage scope (global: all threads, shared:
 *    threadIdx and vthread, warp: threadIdx.x, local and fragments: none). Views declared
 *    later (`T.decl_buffer(data=B.data)`) count as accesses of B made at B's definition depth.
 *  - Accesses under a provably false condition do not count. Conditions that bound a loop
 *    variable by a constant tighten its range; other conditions go to affine iter-map
 *    analysis with the accesses under them (sym.EstimateRegionUpperBound).
 *  - An offset may use only variables visible at the allocation; an extent must not depend
 *    on loops or data. A loop-dependent extent takes the tightest constant bound we can
 *    prove (min/max terms are bounded pairwise), a data-dependent one the original extent.
 *  - Strict mode clamps each dimension to the original extent.
 *  - The buffer stays as it is when its memory escapes: its pointer is used opaquely
 *    (`B.data`, `address_of`, `tvm_access_ptr`), a view reinterprets it (another dtype,
 *    strides, or a shape other than its own or its flattened one), or it is defined more than
 *    once. A flattened view keeps the inner dimensions whole.
 *
 * The rewrite (compact_buffers.h) consumes these records; `tvm_memplan.analysis.
 * compacted_regions` returns them to Python.
 */
#ifndef TVM_MEMPLAN_TIR_COMPACT_BUFFERS_ANALYSIS_H_
#define TVM_MEMPLAN_TIR_COMPACT_BUFFERS_ANALYSIS_H_

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ir/tir.h"

namespace tvm_memplan {
namespace tir {

/*!
 * \brief Options of CompactBufferAllocation (mirroring the stock pass's), reflected as
 *        `tvm_memplan.tir.CompactionOptions`: Python reads names, docs and defaults from here.
 */
class CompactionOptionsObj : public ffi::Object {
 public:
  /*!
   * \brief Never let a compacted extent exceed the original one (true), or size each
   *        dimension exactly to what the accesses cover, which may be larger (false).
   */
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

/*! \brief The analysis result for one allocated buffer. */
struct CompactedRegion {
  explicit CompactedRegion(ir::Buffer buffer) : buffer(std::move(buffer)) {}

  /*! \brief The allocated buffer (as found in the function). */
  ir::Buffer buffer;
  /*! \brief "alloc_buffer" (flat) or "block_alloc_buffer" (an SBlock's alloc_buffers). */
  std::string kind;
  /*! \brief The compacted shape; equal to the original shape when unchanged. */
  ffi::Array<ffi::ObjectRef> shape;
  /*! \brief Per dimension, what the rewrite subtracts from every index. */
  ffi::Array<ffi::ObjectRef> offset;
  /*! \brief Strides from `buffer_dim_align` annotations; empty for row-major. */
  ffi::Array<ffi::ObjectRef> strides;
  /*!
   * \brief Views (`decl_buffer(data=buffer.data)`) compacted with it: same element layout, or
   *        one-dimensional views of the whole buffer (then only the outermost dimension shrinks).
   */
  std::vector<ir::Buffer> views;
  /*! \brief The buffer that replaces it (and its views, in order), when it is rewritten. */
  std::optional<ir::Buffer> new_buffer;
  std::vector<ir::Buffer> new_views;
  /*! \brief Per view, what the rewrite subtracts from its indices. */
  std::vector<ffi::Array<ffi::ObjectRef>> view_offsets;
  /*! \brief Why the buffer stays as it is; empty when it is rewritten. */
  std::string reason;
  /*! \brief Notes on dimensions kept at their original extent although the rest compacts. */
  std::vector<std::string> notes;

  bool rewritten() const { return reason.empty(); }
};

/*! \brief What Python, the report and the tests read of a CompactedRegion, reflected as
 *         `tvm_memplan.tir.CompactedRegion`. */
class CompactedRegionRecordObj : public ffi::Object {
 public:
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
  /*! \brief ir::AllocatedBytes before and after; None when symbolic. */
  ffi::Optional<int64_t> original_bytes;
  ffi::Optional<int64_t> compacted_bytes;
  /*! \brief The same as int64 expressions of the shape variables (IntImm when static). */
  ffi::Optional<ffi::ObjectRef> original_size;
  ffi::Optional<ffi::ObjectRef> compacted_size;

  static void RegisterReflection();
  TVM_FFI_DECLARE_OBJECT_INFO_FINAL("tvm_memplan.tir.CompactedRegion", CompactedRegionRecordObj,
                                    ffi::Object);
};

/*! \brief The record of `region`. */
ffi::ObjectRef ToRecord(const CompactedRegion& region);

/*! \brief One record per allocated buffer, in definition order. */
std::vector<CompactedRegion> AnalyzeCompaction(const ir::PrimFunc& func,
                                               const CompactionOptions& options);

}  // namespace tir
}  // namespace tvm_memplan

#endif  // TVM_MEMPLAN_TIR_COMPACT_BUFFERS_ANALYSIS_H_
