/*!
 * \file tir/compact_buffers_finalize.cc
 * \brief From collected ranges to a CompactedRegion (see compact_buffers_finalize.h).
 */
#include "tir/compact_buffers_finalize.h"

#include <tvm/ffi/extra/structural_equal.h>

#include <algorithm>
#include <limits>
#include <string>
#include <utility>
#include <vector>

namespace tvm_memplan {
namespace tir {

using namespace ir;

namespace {

class Finalizer {
 public:
  Finalizer(const TrackedAllocation& t, const FinalizeScope& scope)
      : t_(t), scope_(scope), analyzer_(scope.analyzer) {}

  CompactedRegion Run() {
    const Buffer& buffer = t_.site.buffer;
    std::vector<Buffer> views = t_.views;
    views.insert(views.end(), t_.flat_views.begin(), t_.flat_views.end());
    Describe(views);
    Array<ObjectRef> shape = buffer.shape();
    if (!t_.give_up.empty()) return Unchanged(t_.give_up);
    Array<ObjectRef> new_shape, offset;
    bool moved = false;
    for (size_t d = 0; d < t_.dims.size(); ++d) {
      auto [o, e] = Dimension(d, shape[d]);
      std::optional<int64_t> c = AsConstInt(o);
      moved |= !(c && *c == 0);
      offset.push_back(o);
      new_shape.push_back(e);
    }
    Array<ObjectRef> strides = AlignedStrides(new_shape);
    bool same_shape = true;
    for (size_t d = 0; d < shape.size(); ++d) {
      if (!SameExtent(shape[d], new_shape[d])) same_shape = false;
    }
    // Shifting a buffer of the same size gains nothing, except that non-strict mode promises
    // exactly the accessed region.
    if (same_shape && (scope_.options->is_strict || !moved) &&
        ffi::StructuralEqual::Equal(strides, buffer.strides())) {
      return Unchanged(t_.accessed ? "the accesses cover the whole buffer" : "it is not accessed");
    }
    std::optional<Buffer> new_buffer = buffer.WithShape(new_shape, strides);
    if (!new_buffer) return Unchanged("it has a layout other than the default row-major one");
    std::vector<BufferReplacement> replacements{{buffer, *new_buffer, offset}};
    for (size_t v = 0; v < views.size(); ++v) {
      const Buffer& view = views[v];
      bool is_flat = v >= t_.views.size();  // the flat views come last
      std::optional<Buffer> new_view;
      Array<ObjectRef> view_offset = offset;
      if (!is_flat) {
        new_view = view.WithShape(new_shape, strides);
      } else if (strides.empty()) {
        // The rows [offset0, offset0 + extent0) of the buffer, flattened.
        ObjectRef row = IntConst(new_shape[0], t_.row_size);
        new_view = view.WithShape({Mul(new_shape[0], row)});
        view_offset = {Mul(offset[0], IntConst(offset[0], t_.row_size))};
      }
      if (!new_view) return Unchanged("view `" + view.name() + "` cannot follow the new layout");
      replacements.push_back({view, *new_view, view_offset});
    }
    result_->replacements = std::move(replacements);
    return Compacted(new_shape, offset, strides);
  }

 private:
  /*! \brief The record's fields that hold whatever is decided. */
  void Describe(const std::vector<Buffer>& views) {
    const Buffer& buffer = t_.site.buffer;
    result_->name = buffer.name();
    result_->kind = AllocationKindName(t_.site.kind);
    result_->dtype = DTypeToString(buffer.dtype());
    result_->original_shape = IntsWhereConstant(buffer.shape());
    result_->original_strides = IntsWhereConstant(buffer.strides());
    for (const Buffer& view : views) result_->views.push_back(String(view.name()));
    for (const std::string& loop : t_.relaxed_over) result_->relaxed_over.push_back(String(loop));
    if (std::optional<int64_t> bytes = buffer.ConstSizeBytes()) result_->original_bytes = *bytes;
    if (std::optional<ObjectRef> size =
            AllocatedBytesExpr(buffer.shape(), buffer.strides(), buffer.dtype())) {
      result_->original_size = *size;
    }
  }

  /*! \brief The record with the layout it ends with. */
  CompactedRegion Compacted(const Array<ObjectRef>& shape, const Array<ObjectRef>& offset,
                            const Array<ObjectRef>& strides) {
    DLDataType dtype = t_.site.buffer.dtype();
    result_->shape = IntsWhereConstant(shape);
    result_->offset = IntsWhereConstant(offset);
    result_->strides = IntsWhereConstant(strides);
    if (std::optional<int64_t> bytes = AllocatedBytes(shape, strides, dtype)) {
      result_->compacted_bytes = *bytes;
    }
    if (std::optional<ObjectRef> size = AllocatedBytesExpr(shape, strides, dtype)) {
      result_->compacted_size = *size;
    }
    return std::move(result_);
  }

  CompactedRegion Unchanged(const std::string& reason) {
    result_->reason = String(reason);
    result_->replacements.clear();
    Array<ObjectRef> zeros;
    for (const ObjectRef& extent : t_.site.buffer.shape()) zeros.push_back(IntConst(extent, 0));
    return Compacted(t_.site.buffer.shape(), zeros, t_.site.buffer.strides());
  }

  static bool SameExtent(const ObjectRef& a, const ObjectRef& b) {
    std::optional<int64_t> ca = AsConstInt(a), cb = AsConstInt(b);
    if (ca && cb) return *ca == *cb;
    return ffi::StructuralEqual::Equal(a, b);
  }

  /*! \brief (offset, extent) of dimension `d`. */
  std::pair<ObjectRef, ObjectRef> Dimension(size_t d, const ObjectRef& extent) {
    const DimState& dim = t_.dims[d];
    const CompactionOptions& options = scope_.options;
    DLDataType dtype = dim.has_dtype ? dim.index_dtype : DTypeOf(extent);
    auto full = [&](const std::string& why) {
      result_->notes.push_back(String("dim " + std::to_string(d) + " keeps its extent: " + why));
      return std::make_pair(IntConst(dtype, 0), extent);
    };
    if (!dim.unknown.empty()) return full(dim.unknown);
    std::optional<int64_t> const_extent = AsConstInt(extent);
    if (dim.ranges.empty()) {
      // Never accessed (or only in unreachable code): one element is enough.
      if (options->is_strict && !(const_extent && *const_extent >= 1)) {
        return std::make_pair(IntConst(dtype, 0), extent);
      }
      return std::make_pair(IntConst(dtype, 0), IntConst(extent, 1));
    }
    std::vector<const Bound*> los, his;
    for (const DimRange& r : dim.ranges) {
      los.push_back(&r.lo);
      his.push_back(&r.hi);
    }
    Bound lo = Combine(los, /*take_min=*/true, dtype);
    Bound hi = Combine(his, /*take_min=*/false, dtype);
    if (options->is_strict) {
      // Clamp to [0, extent - 1]: accesses outside the original buffer were out of bounds.
      auto [lo_min, lo_max] = ConstBounds(lo, dtype);
      if (lo_max <= 0 || (lo.affine && lo.affine->IsConstant() && lo_min < 0)) {
        lo = Bound{Affine{{}, std::max<int64_t>(lo_max, 0)}, {}};
        if (lo_max < 0) lo.affine->constant = 0;
      } else if (lo_min < 0) {
        // max(0, lo): the argument order TVM's pass writes, so before/expected tests written
        // against it keep passing.
        lo = MakeBound(analyzer_->Simplify(Max(IntConst(dtype, 0), BoundExpr(lo, dtype))));
      }
      if (const_extent) {
        int64_t last = *const_extent - 1;
        auto [hi_min, hi_max] = ConstBounds(hi, dtype);
        if (hi_min >= last || (hi.affine && hi.affine->IsConstant() && hi_max > last)) {
          hi = Bound{Affine{{}, std::min(hi_min, last)}, {}};
        } else if (hi_max > last) {
          hi = MakeBound(analyzer_->Simplify(Min(BoundExpr(hi, dtype), IntConst(dtype, last))));
        }
      } else {
        ObjectRef last = Sub(extent, IntConst(extent, 1));
        if (!analyzer_->CanProve(LE(BoundExpr(hi, dtype), last))) {
          hi = MakeBound(analyzer_->Simplify(Min(BoundExpr(hi, dtype), last)));
        }
      }
    }
    ObjectRef offset = BoundExpr(lo, dtype);
    if (!OffsetVisible(offset)) {
      return full("offset uses a loop variable that non-opaque block `" + t_.opaque_block +
                  "` may not use");
    }
    // The extent: constant when the bounds move together; otherwise the tightest constant
    // bound we can prove; a symbolic extent only when it names no loop and reads no memory.
    // A constant extent the buffer's extent type cannot hold keeps the extent (no
    // compaction), rather than failing the pass.
    auto constant = [&](int64_t e) {
      if (!FitsIn(DTypeOf(extent), e)) return full("its extent overflows the extent type");
      return std::make_pair(offset, IntConst(extent, std::max<int64_t>(e, 1)));
    };
    if (lo.affine && hi.affine && lo.affine->SameTerms(*hi.affine)) {
      int64_t e = hi.affine->constant - lo.affine->constant + 1;
      if (options->is_strict && const_extent) e = std::min(e, *const_extent);
      return constant(e);
    }
    ObjectRef span = analyzer_->Simplify(
        Add(Sub(BoundExpr(hi, dtype), BoundExpr(lo, dtype)), IntConst(dtype, 1)));
    if (std::optional<int64_t> c = AsConstInt(span)) return constant(*c);
    if (!LoopOrDataDependent(span)) return {offset, span};
    // min(a, ...) - max(b, ...) <= a - b for any terms a, b: bound each pair of accesses.
    int64_t bound = analyzer_->ConstBound(span).second;
    int64_t pairwise = std::numeric_limits<int64_t>::min();
    for (const DimRange& a : dim.ranges) {
      for (const DimRange& b : dim.ranges) {
        pairwise = std::max(pairwise, PairwiseBound(a.hi, b.lo));
      }
    }
    if (pairwise != kNoBound) bound = std::min(bound, pairwise + 1);
    if (options->is_strict && const_extent) bound = std::min(bound, *const_extent);
    if (bound == kNoBound) return full("extent depends on a loop and has no constant bound");
    // A data-dependent range is bounded only by its type (2**31 - 1 for int32): a bound in the
    // upper half of the extent type's range says nothing of the buffer, and a buffer that large
    // would overflow its flattened size. A symbolic extent then stays.
    DLDataType extent_type = DTypeOf(extent);
    bool type_bound =
        !FitsIn(extent_type, bound) ||
        (bound > 0 && !FitsIn(extent_type, bound > kNoBound / 2 ? kNoBound : 2 * bound));
    if (!const_extent && type_bound) {
      return full("the constant bound " + std::to_string(bound) +
                  " of a loop-dependent extent is its type's, not the buffer's");
    }
    return {offset, IntConst(extent, std::max<int64_t>(bound, 1))};
  }

  /*! \brief min (or max) over bounds: affine forms with the same terms fold to one constant. */
  Bound Combine(const std::vector<const Bound*>& bounds, bool take_min, DLDataType dtype) const {
    const Bound& first = *bounds[0];
    if (first.affine) {
      Affine folded = *first.affine;
      bool all_affine = true;
      for (const Bound* b : bounds) {
        if (!b->affine || !b->affine->SameTerms(folded)) {
          all_affine = false;
          break;
        }
        folded.constant = take_min ? std::min(folded.constant, b->affine->constant)
                                   : std::max(folded.constant, b->affine->constant);
      }
      if (all_affine) return Bound{std::move(folded), {}};
    }
    // Drop bounds another one provably dominates, so the offset stays readable.
    std::vector<ObjectRef> kept;
    auto dominates = [&](const ObjectRef& a, const ObjectRef& b) {  // a makes b redundant
      return analyzer_->CanProve(take_min ? LE(a, b) : GE(a, b));
    };
    for (const Bound* b : bounds) {
      ObjectRef e = BoundExpr(*b, dtype);
      if (std::any_of(kept.begin(), kept.end(),
                      [&](const ObjectRef& k) { return dominates(k, e); })) {
        continue;
      }
      kept.erase(std::remove_if(kept.begin(), kept.end(),
                                [&](const ObjectRef& k) { return dominates(e, k); }),
                 kept.end());
      kept.push_back(e);
    }
    ObjectRef expr;
    for (const ObjectRef& e : kept) {
      expr = !expr.defined() ? e : (take_min ? Min(expr, e) : Max(expr, e));
    }
    return MakeBound(kept.size() == 1 ? expr : analyzer_->Simplify(expr));
  }

  /*! \brief A constant bound of hi - lo from their bound terms; kNoBound when there is none. */
  static int64_t PairwiseBound(const Bound& hi, const Bound& lo) {
    auto terms = [](const Bound& b) {
      return b.affine ? BoundTerms{{*b.affine}, {*b.affine}} : BoundTermsOf(b.expr);
    };
    return ConstDifferenceBound(terms(hi), terms(lo));
  }

  /*! \brief Whether `expr` uses a loop variable (an extent must not) or reads memory. */
  bool LoopOrDataDependent(const ObjectRef& expr) const {
    ExprFacts facts = ScanExpr(expr);
    if (facts.reads_memory || facts.calls) return true;
    for (const ObjectRef& v : facts.vars) {
      if (!scope_.function_vars->count(v.get())) return true;
    }
    return false;
  }

  /*!
   * \brief Constant bounds of a bound: in C++ for an affine form over loops with constant
   *        ranges (the loops enclosing the allocation), through the analyzer otherwise.
   */
  std::pair<int64_t, int64_t> ConstBounds(const Bound& b, DLDataType dtype) const {
    if (b.affine) {
      const LoopRanges& loops = *scope_.enclosing;
      int64_t lo = b.affine->constant, hi = b.affine->constant;
      bool known = true;
      for (const auto& [var, coeff] : b.affine->terms) {
        int k = loops.IndexOf(var.get());
        if (k < 0 || !loops.constant[k] || loops.lo[k] > loops.hi[k] ||
            !AddScaledRange(coeff, loops.lo[k], loops.hi[k], &lo, &hi)) {
          known = false;
          break;
        }
      }
      if (known) return {lo, hi};
    }
    return analyzer_->ConstBound(BoundExpr(b, dtype));
  }

  /*! \brief Whether the offset names only loops visible wherever it is used. */
  bool OffsetVisible(const ObjectRef& offset) const {
    if (t_.first_visible_loop == 0) return true;
    for (const ObjectRef& v : ScanExpr(offset).vars) {
      int k = scope_.enclosing->IndexOf(v.get());
      if (k >= 0 && static_cast<size_t>(k) < t_.first_visible_loop) return false;
    }
    return true;
  }

  /*! \brief Strides that realize `buffer_dim_align` for `shape` (TVM's storage_align rule). */
  Array<ObjectRef> AlignedStrides(const Array<ObjectRef>& shape) const {
    if (t_.dim_aligns.empty()) return {};
    std::vector<std::pair<int64_t, int64_t>> align(shape.size(), {0, 0});
    for (const auto& [dim, factor, offset] : t_.dim_aligns) align[dim] = {factor, offset};
    std::vector<ObjectRef> strides(shape.size());
    ObjectRef stride = IntConst(shape[0], 1);
    for (size_t i = shape.size(); i-- > 0;) {
      auto [factor, offset] = align[i];
      if (factor != 0) {
        ObjectRef f = IntConst(stride, factor), o = IntConst(stride, offset);
        stride = Add(stride, FloorMod(Sub(Add(f, o), FloorMod(stride, f)), f));
      }
      strides[i] = stride;
      stride = Mul(stride, shape[i]);
    }
    return Array<ObjectRef>(strides.begin(), strides.end());
  }

  const TrackedAllocation& t_;
  const FinalizeScope& scope_;
  Analyzer* analyzer_;
  CompactedRegion result_ = ffi::make_object<CompactedRegionObj>();
};

}  // namespace

CompactedRegion FinalizeRegion(const TrackedAllocation& t, const FinalizeScope& scope) {
  return Finalizer(t, scope).Run();
}

}  // namespace tir
}  // namespace tvm_memplan
